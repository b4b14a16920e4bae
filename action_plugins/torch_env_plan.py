"""Controller side of the torch_env_plan module: the plan is made here unless the host must
be read.

The command lines and the comparison are pure (module_utils/torch_env_plan.py). Only
``read_installed`` (the environment's pip list) needs the host, and then the module runs
there as before. Otherwise (adopt mode, or ``installed`` given) the answer is computed here
and no module runs on the host, which is most of a task's cost.
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

from ansible.module_utils import torch_env_plan  # noqa: E402
from ansible.module_utils.controller_answer import ControllerAnswer  # noqa: E402


class ActionModule(ControllerAnswer, ActionBase):
    MODULE = "torch_env_plan"
    SPEC = torch_env_plan.ARGUMENT_SPEC

    def answer(self, params):
        """Planned here unless the environment's pip list must be read on the host."""
        if torch_env_plan.needs_host(params):
            return None
        return dict(torch_env_plan.plan_for(params, params["installed"]), changed=False)
