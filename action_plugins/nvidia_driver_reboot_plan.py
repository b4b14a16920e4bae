"""Controller side of the nvidia_driver_reboot_plan module: decide here when nothing is
left to read on the host.

The decision (module_utils/driver_state.py reboot_plan) is pure; what it reads on the host,
the role's changed.json and the boot id, nvidia_driver_plan already read in the stage's
preflight and passes as ``change_record``. Then the answer is computed here and no module
runs on the host, which is most of a task's cost. Without ``change_record`` the module runs
there and reads them itself.
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
    MODULE = "nvidia_driver_reboot_plan"
    SPEC = driver_state.REBOOT_PLAN_SPEC

    def answer(self, params):
        """Decided here given the change record; without it the module reads the host."""
        if params.get("change_record") is None:
            return None
        return dict(driver_state.reboot_plan_for(params), changed=False)
