"""Controller side of the managed_files module: run nothing on the host when an earlier
read shows every file already written.

A role whose state module read its files earlier in the same stage (their bytes' sha256,
owner, group and mode: module_utils/managed_files.py describe) passes that read as
``current``. When module_utils/managed_files.py pending finds nothing to write, the answer
is given here, changed false, and no module runs on the host, which is most of a task's
cost. Otherwise, or without ``current``, the module runs on the host and compares there.
"""

from __future__ import annotations

import ansible.module_utils
from ansible import constants as C
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

for _path in C.DEFAULT_MODULE_UTILS_PATH or []:
    if _path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(_path)

from ansible.module_utils import managed_files  # noqa: E402


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        validated = ArgumentSpecValidator(managed_files.ACTION_SPEC).validate(args)
        if validated.error_messages:
            result.update(failed=True, msg="managed_files: " + "; ".join(validated.error_messages))
            return result
        params = validated.validated_parameters
        current = params.get("current")
        args.pop("current", None)
        if current is None or managed_files.pending(params["files"], current):
            result.update(
                self._execute_module(
                    module_name="managed_files", module_args=args, task_vars=task_vars
                )
            )
            return result
        result.update(
            changed=False,
            files=[
                {"path": f["path"], "changed": False, "created": False} for f in params["files"]
            ],
            diff=[],
            msg=f"{len(params['files'])} file(s) as wanted, as read earlier in this stage",
        )
        return result
