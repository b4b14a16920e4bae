"""Controller side of the torch_env_plan module: the plan is made here unless the host must
be read.

The command lines and the comparison are pure (module_utils/torch_env_plan.py). Only
``read_installed`` (the environment's pip list) needs the host, and then the module runs
there as before. Otherwise (adopt mode, or ``installed`` given) the answer is computed here
and no module runs on the host, which is most of a task's cost.
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

from ansible.module_utils import torch_env_plan  # noqa: E402


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        validated = ArgumentSpecValidator(torch_env_plan.ARGUMENT_SPEC).validate(args)
        if validated.error_messages:
            result.update(failed=True, msg="torch_env_plan: " + "; ".join(validated.error_messages))
            return result
        params = validated.validated_parameters
        if torch_env_plan.needs_host(params):
            result.update(
                self._execute_module(
                    module_name="torch_env_plan", module_args=args, task_vars=task_vars
                )
            )
            return result
        try:
            planned = torch_env_plan.plan_for(params, params["installed"])
        except ValueError as exc:
            result.update(failed=True, msg=str(exc))
            return result
        result.update(json.loads(json.dumps(dict(planned, changed=False))))
        return result
