"""Controller side of the nvidia_driver_reboot_plan module: decide here when nothing is
left to read on the host.

The decision (module_utils/driver_state.py reboot_plan) is pure; what it reads on the host,
the role's changed.json and the boot id, nvidia_driver_state already read in the stage's
preflight and passes as ``change_record``. Then the answer is computed here and no module
runs on the host, which is most of a task's cost. Without ``change_record`` the module runs
there and reads them itself.
"""

from __future__ import annotations

import json

import ansible.module_utils
from ansible import constants as C
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

for _path in C.DEFAULT_MODULE_UTILS_PATH or []:
    if _path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(_path)

from ansible.module_utils import driver_state  # noqa: E402


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        validated = ArgumentSpecValidator(driver_state.REBOOT_PLAN_SPEC).validate(args)
        if validated.error_messages:
            result.update(
                failed=True,
                msg="nvidia_driver_reboot_plan: " + "; ".join(validated.error_messages),
            )
            return result
        params = validated.validated_parameters
        if params.get("change_record") is None:
            result.update(
                self._execute_module(
                    module_name="nvidia_driver_reboot_plan", module_args=args, task_vars=task_vars
                )
            )
            return result
        planned = driver_state.reboot_plan_for(params)
        result.update(json.loads(json.dumps(dict(planned, changed=False))))
        return result
