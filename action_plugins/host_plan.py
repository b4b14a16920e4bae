"""Controller side of the host_plan module: the plan reads nothing on the host.

Besides the task's arguments it reads the task variables for two things only: the names
set for the host (a retired one is refused with its new name), and, for a stage run alone
(no stage 1 before it, so no kindling_effective_inputs), the inputs the plan reads that
are missing: the user's value, else the owning role's argument_specs default.
"""

from __future__ import annotations

import os

import ansible.module_utils
from ansible import constants as C
from ansible.plugins.action import ActionBase

# Controller-side Python does not see ansible.cfg's module_utils folder the way modules do
# (AnsiballZ ships it to them); make the same modules importable here.
for _path in C.DEFAULT_MODULE_UTILS_PATH or []:
    if _path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(_path)

from ansible.module_utils import host_plan  # noqa: E402
from ansible.module_utils.controller_answer import ControllerAnswer  # noqa: E402


class ActionModule(ControllerAnswer, ActionBase):
    MODULE = "host_plan"
    SPEC = host_plan.ARGUMENT_SPEC

    def run(self, tmp=None, task_vars=None):
        self._plan_vars = task_vars or {}
        return super().run(tmp, task_vars)

    def _role_default(self, name):
        """The argument_specs default of the role that owns ``name`` (None if templated)."""
        roles_dir = os.path.dirname(self._plan_vars.get("role_path") or "")
        if not roles_dir:
            return None
        owners = [d for d in os.listdir(roles_dir) if name.startswith(d + "_")]
        for owner in sorted(owners, key=len, reverse=True):
            spec_file = os.path.join(roles_dir, owner, "meta", "argument_specs.yml")
            if not os.path.exists(spec_file):
                continue
            specs = self._loader.load_from_file(spec_file) or {}
            option = specs.get("argument_specs", {}).get("main", {}).get("options", {}).get(name)
            if option and "default" in option:
                default = option["default"]
                if isinstance(default, str) and "{{" in default:
                    return None
                return default
        return None

    def answer(self, params):
        inputs = dict(params["inputs"])
        for name in host_plan.PLAN_INPUTS:
            if name in inputs:
                continue
            if name in self._plan_vars:
                inputs[name] = self._templar.template(self._plan_vars[name])
            else:
                default = self._role_default(name)
                if default is not None:
                    inputs[name] = default
        params = dict(params, inputs=inputs)
        params["defined"] = list(params["defined"]) + [
            n for n in self._plan_vars if n in host_plan.RENAMED
        ]
        return host_plan.answer(params)
