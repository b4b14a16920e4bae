"""Controller side of the managed_files_write module: run nothing on the host when an earlier
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
from ansible.plugins.action import ActionBase

# Controller-side Python does not see ansible.cfg's module_utils folder the way modules do
# (AnsiballZ ships it to them); make the same modules importable here.
for _path in C.DEFAULT_MODULE_UTILS_PATH or []:
    if _path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(_path)

from ansible.module_utils import managed_files  # noqa: E402
from ansible.module_utils.controller_answer import ControllerAnswer  # noqa: E402


class ActionModule(ControllerAnswer, ActionBase):
    MODULE = "managed_files_write"
    SPEC = managed_files.ACTION_SPEC
    CONTROLLER_ONLY = ("current",)

    def answer(self, params):
        """Answered here when the earlier read shows every file as wanted."""
        current = params.get("current")
        if current is None or managed_files.pending(params["files"], current):
            return None
        files = params["files"]
        return {
            "changed": False,
            "files": [{"path": f["path"], "changed": False, "created": False} for f in files],
            "diff": [],
            "msg": f"{len(files)} file(s) as wanted, as read earlier in this stage",
        }
