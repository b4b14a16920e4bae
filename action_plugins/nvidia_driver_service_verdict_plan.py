"""Controller side of the nvidia_driver_service_verdict_plan module: the judgement is made
here, not on the host.

The service verdict (module_utils/driver_state.py service_verdict) needs only the task's
arguments, facts the stage already read, so running it as a module would only add a module
run on the host, the largest part of a task's cost. The arguments are validated against the
module's own argument spec; the result is the module's, through the same JSON round trip a
module's result takes.
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

from ansible.module_utils import driver_state  # noqa: E402
from ansible.module_utils.controller_answer import ControllerAnswer  # noqa: E402


class ActionModule(ControllerAnswer, ActionBase):
    MODULE = "nvidia_driver_service_verdict_plan"
    SPEC = driver_state.SERVICE_VERDICT_SPEC

    def answer(self, params):
        return driver_state.service_verdict_for(params)
