"""Controller side of the gpu_stack_check module: the stack check runs here, not on the host.

The check is pure (its arguments and the vendor catalogue; module_utils/stack_check.py),
so running it as a module would only add a module run on the host, the largest part of a
task's cost. The arguments are validated against the module's own argument spec, and the
result is the module's, JSON included (the same round trip a module's result takes).
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

from ansible.module_utils import stack_check  # noqa: E402


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars or {})
        validated = ArgumentSpecValidator(stack_check.ARGUMENT_SPEC).validate(dict(self._task.args))
        if validated.error_messages:
            result.update(
                failed=True,
                msg="gpu_stack_check: " + "; ".join(validated.error_messages),
            )
            return result
        checked = json.loads(json.dumps(stack_check.check_or_reuse(validated.validated_parameters)))
        result.update(checked)
        return result
