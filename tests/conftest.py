"""Shared pytest set-up: make the repo's module_utils and library importable.

Ansible exposes ``module_utils/`` as ``ansible.module_utils.<name>`` at run time
(ansible.cfg's ``module_utils`` setting). Plain pytest does not, so this adds the
folder to that package's search path; tests then import exactly what the modules
import, and ``library/`` modules can be imported by name.
"""

from __future__ import annotations

import sys
from pathlib import Path

import ansible.module_utils
import pytest
from ansible.module_utils import _internal as _ansible_internal

# Whether this process counts as Ansible's controller, read before any test file is
# imported (see _fresh_module_warnings).
_MODULE_HOST_MARK = _ansible_internal.is_controller

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_CAPTURES = REPO_ROOT.parent / "shared" / "fixtures" / "h200"
CAPTURES = REPO_ROOT / "tests" / "fixtures" / "captures" / "h200"

if str(REPO_ROOT / "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(REPO_ROOT / "module_utils"))
for extra in (REPO_ROOT / "library",):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))


@pytest.fixture(scope="module")
def controller_mode():
    """Run a test file in controller mode, and leave target mode behind (a file that renders
    the roles' templates takes it: ``pytestmark = pytest.mark.usefixtures("controller_mode")``).

    Importing Ansible's templating (ansible._internal) switches module_utils into
    controller mode for the whole process: warn() then goes to the controller's display,
    not into a module's result. The module tests that run in-process later in the session
    (dpkg_prepare, gpu_throughput_measure, ...) need target mode, so put it back afterwards.
    """
    from ansible.module_utils import _internal
    from ansible.module_utils._internal import _traceback

    names = ("is_controller", "get_controller_serialize_map", "import_controller_module")
    saved = {name: getattr(_internal, name) for name in names}
    saved_traceback = _traceback._is_traceback_enabled
    import ansible._internal as controller  # after saving what its import changes
    import ansible.utils.display as display

    _internal.is_controller = True
    _internal.get_controller_serialize_map = controller.get_controller_serialize_map
    _internal.import_controller_module = controller.import_controller_module
    _traceback._is_traceback_enabled = display._is_controller_traceback_enabled
    yield
    for name, value in saved.items():
        setattr(_internal, name, value)
    _traceback._is_traceback_enabled = saved_traceback


@pytest.fixture(autouse=True)
def _fresh_module_warnings():
    """Modules run in-process keep warnings in a global; start every test without them.

    Otherwise a warning one module raised (gpu_throughput_measure's fail_on_slow=false, say)
    shows up in the next module's result in the same pytest process.
    """
    from ansible.module_utils import _internal
    from ansible.module_utils.common import warnings

    warnings._global_warnings.clear()
    warnings._global_deprecations.clear()
    # Importing any controller code (templating, a callback plugin, the inventory manager)
    # marks the whole process as the controller, and from then on a module run in-process
    # hands its warnings to the controller's display instead of returning them: every later
    # test that reads result["warnings"] failed. Every test starts, and ends, with the mark
    # as it was before any test file was imported (a file that imports controller code at
    # its top sets it while pytest collects, before any test runs).
    _internal.is_controller = _MODULE_HOST_MARK
    yield
    _internal.is_controller = _MODULE_HOST_MARK
