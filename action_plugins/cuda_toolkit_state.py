"""Controller side of the cuda_toolkit_state module: plan from an earlier read of the host.

In adopt mode the cuda role's stack entry point runs the module with ``adopt`` in the
preflight: which release the toolkit at cuda_home is, and for that release every nvcc,
the link and the files a plan needs (module_utils/toolkit_state.py adopt_reads). The
stage's own call passes that as ``read``; when it covers every argument
(toolkit_state.answer), the plan is made here and nothing runs on the host. Otherwise,
or without ``read``, the module runs on the host, reads there and plans.
"""

from __future__ import annotations

import ansible.module_utils
from ansible import constants as C
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

for _path in C.DEFAULT_MODULE_UTILS_PATH or []:
    if _path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(_path)

from ansible.module_utils import toolkit_state  # noqa: E402


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        validated = ArgumentSpecValidator(
            toolkit_state.ARGUMENT_SPEC,
            mutually_exclusive=toolkit_state.MUTUALLY_EXCLUSIVE,
            required_by=toolkit_state.REQUIRED_BY,
            required_one_of=toolkit_state.REQUIRED_ONE_OF,
        ).validate(args)
        if validated.error_messages:
            result.update(
                failed=True, msg="cuda_toolkit_state: " + "; ".join(validated.error_messages)
            )
            return result
        params = validated.validated_parameters
        read = params.get("read")
        args.pop("read", None)
        answered = None
        if read is not None:
            try:
                answered = toolkit_state.answer(params, read)
            except ValueError as exc:
                result.update(failed=True, msg=f"cuda_toolkit_state: {exc}")
                return result
        if answered is None:
            result.update(
                self._execute_module(
                    module_name="cuda_toolkit_state", module_args=args, task_vars=task_vars
                )
            )
            return result
        result.update(changed=False, reused_read=True, **answered)
        return result
