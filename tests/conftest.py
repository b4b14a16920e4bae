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
