"""Controller side of the cuda_toolkit_plan module: plan from an earlier read of the host.

In adopt mode the cuda role's stack entry point runs the module with ``adopt`` in the
preflight: which release the toolkit at cuda_home is, and for that release every nvcc,
the link and the files a plan needs (module_utils/toolkit_state.py adopt_reads). The
stage's own call passes that as ``read``; when it covers every argument
(toolkit_state.answer), the plan is made here and nothing runs on the host. Otherwise,
or without ``read``, the module runs on the host, reads there and plans.
"""

from __future__ import annotations

from typing import ClassVar

import ansible.module_utils
from ansible import constants as C
from ansible.plugins.action import ActionBase

# Controller-side Python does not see ansible.cfg's module_utils folder the way modules do
# (AnsiballZ ships it to them); make the same modules importable here.
for _path in C.DEFAULT_MODULE_UTILS_PATH or []:
    if _path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(_path)

from ansible.module_utils import toolkit_state  # noqa: E402
from ansible.module_utils.controller_answer import ControllerAnswer  # noqa: E402


class ActionModule(ControllerAnswer, ActionBase):
    MODULE = "cuda_toolkit_plan"
    SPEC = toolkit_state.ARGUMENT_SPEC
    CONSTRAINTS: ClassVar[dict] = {
        "mutually_exclusive": toolkit_state.MUTUALLY_EXCLUSIVE,
        "required_by": toolkit_state.REQUIRED_BY,
        "required_one_of": toolkit_state.REQUIRED_ONE_OF,
    }
    CONTROLLER_ONLY = ("read",)

    def answer(self, params):
        """Planned here from the stack entry point's read when it covers every argument."""
        read = params.get("read")
        answered = None if read is None else toolkit_state.answer(params, read)
        return None if answered is None else dict(answered, changed=False, reused_read=True)
