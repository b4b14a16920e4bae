"""Controller side of site_inputs: check the site's own inputs and the roles' together.

Runs in stage 1 of site.yml (playbooks/preflight.yml) after every role's own check; see
module_utils/site_inputs.py. Reads only, on the controller; nothing changes.
"""

from __future__ import annotations

import ansible.module_utils
from ansible import constants as C
from ansible.plugins.action import ActionBase

for _path in C.DEFAULT_MODULE_UTILS_PATH or []:
    if _path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(_path)

from ansible.module_utils import site_inputs  # noqa: E402


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        values = {
            name: self._templar.template(task_vars[name])
            for name in site_inputs.SITE_SHAPES
            if name in task_vars
        }
        effective = self._task.args.get("effective") or {}
        problems = site_inputs.check_site(values, effective)
        if problems:
            result.update(
                failed=True,
                problems=problems,
                msg=f"site: {len(problems)} input(s) refused before any change:\n"
                + "\n".join(problems),
            )
            return result
        result.update(changed=False, problems=[], msg=f"site: {len(values)} input(s) checked")
        return result
