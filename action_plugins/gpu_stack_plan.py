"""Controller side of the gpu_stack_plan module: the stack check runs here, not on the host.

The check is pure (its arguments and the vendor catalogue; module_utils/stack_check.py),
so running it as a module would only add a module run on the host, the largest part of a
task's cost. The arguments are validated against the module's own argument spec, and the
result is the module's, JSON included (the same round trip a module's result takes).
"""

from __future__ import annotations

import ansible.module_utils
from ansible import constants as C
from ansible.plugins.action import ActionBase

# Controller-side Python does not see ansible.cfg's module_utils folder the way modules do
# (AnsiballZ ships it to them); make the same modules importable here.
for _path in C.DEFAULT_MODULE_UTILS_PATH or []:
    if _path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(_path)

from ansible.module_utils import stack_check  # noqa: E402
from ansible.module_utils.controller_answer import ControllerAnswer  # noqa: E402


class ActionModule(ControllerAnswer, ActionBase):
    MODULE = "gpu_stack_plan"
    SPEC = stack_check.ARGUMENT_SPEC

    def answer(self, params):
        return stack_check.check(params)
