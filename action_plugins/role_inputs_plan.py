"""Controller side of the role_inputs_plan module: collect and check a role's effective inputs.

Inside a role, the task variables hold every variable's effective value: the user's
(inventory, play, extra vars) or the role's default. This reads the role's
meta/argument_specs.yml, templates the value of each option it lists, and checks them
with module_utils/role_inputs.py right here on the controller (argument_specs, shapes,
rules). Only the checks that must look at the host (unit names, secret directories) run
there, through library/role_inputs_plan.py, with just the values they need. Nothing changes.

Inputs are checked once a run: site.yml's stage 1 checks every role, and each role checks
its own again as its first step (so a stage playbook run alone is checked too), passing
stage 1's result as ``reuse``. When the role's effective values are the ones stage 1
checked, stage 1's check stands and nothing is checked again; when any differs (a play's
vars can differ from the inventory), or a no_log option is set (its value is never kept in
a result, so it cannot be compared), the whole role is checked again.
"""

from __future__ import annotations

import json
import os
import re

import ansible.module_utils
from ansible import constants as C
from ansible.errors import AnsibleError, AnsibleUndefinedVariable
from ansible.plugins.action import ActionBase

# Controller-side Python does not see ansible.cfg's module_utils folder the way modules
# do (AnsiballZ ships it to them); make the same modules importable here.
for _path in C.DEFAULT_MODULE_UTILS_PATH or []:
    if _path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(_path)

from ansible.module_utils import role_inputs  # noqa: E402
from ansible.module_utils.controller_answer import ControllerAnswer  # noqa: E402

# The first variable a default's template reads: "{{ cuda_version | default('13.0') }}".
_REFERENCE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)")


def is_set(value):
    """Whether an option has a value (a no_log one left empty holds nothing secret)."""
    return value is not None and value != ""


def same_check(reuse, checked):
    """Whether ``reuse`` (an earlier result of this task) passed and checked what
    ``checked`` holds: the same role, entry point, effective values and context, and no
    no_log option set then or now."""
    return (
        isinstance(reuse, dict)
        and not reuse.get("failed")
        and not checked["secret_set"]
        and {name: reuse.get(name) for name in checked} == checked
    )


class ActionModule(ControllerAnswer, ActionBase):
    MODULE = "role_inputs_plan"
    SPEC = role_inputs.ARGUMENT_SPEC

    def answer(self, params):
        task_vars = self._task_vars
        role = params["role"] or task_vars.get("role_name")
        role_path = params["role_path"] or task_vars.get("role_path")
        entry = params["entry_point"]
        if not role or not role_path:
            raise ValueError("it runs inside a role (role_name and role_path are not set)")
        spec_file = os.path.join(role_path, "meta", "argument_specs.yml")
        options = (
            (self._loader.load_from_file(spec_file) or {}).get("argument_specs", {}).get(entry, {})
        )
        options = options.get("options", {})
        values, problems = {}, []
        for name in options:
            if name not in task_vars:
                continue
            try:
                values[name] = self._templar.template(task_vars[name])
            except AnsibleUndefinedVariable as err:
                problems.append(
                    f"{name}: its value refers to a variable that is not defined ({err})"
                )
        secret = sorted(n for n, o in options.items() if o.get("no_log"))
        context = {"machine": (task_vars.get("ansible_facts") or {}).get("architecture")}
        for name in params["context_vars"]:
            if name in task_vars:
                context[name] = self._templar.template(task_vars[name])
        # What a check of these values is (no no_log value in it), as a result carries it
        # through its JSON round trip and a later check compares it.
        checked = json.loads(
            json.dumps(
                {
                    "role": role,
                    "entry_point": entry,
                    "effective": {k: v for k, v in values.items() if k not in secret},
                    "context": context,
                    "secret_set": [n for n in secret if is_set(values.get(n))],
                }
            )
        )
        if not problems and same_check(params["reuse"], checked):
            return dict(
                checked,
                changed=False,
                problems=[],
                reused=True,
                msg=f"{role}: {len(values)} inputs checked in stage 1, the same values now",
            )
        if not problems:
            problems = self._check(role, options, values, secret, context)
        if problems:
            problems = self._name_the_source(problems, role_path)
            return dict(
                failed=True,
                problems=problems,
                msg=f"{role}: {len(problems)} input(s) refused before any change:\n"
                + "\n".join(problems),
            )
        result = dict(
            checked,
            changed=False,
            problems=[],
            reused=False,
            msg=f"{role}: {len(values)} inputs checked",
        )
        warnings = role_inputs.listener_warnings(role, values)
        if warnings:
            result["warnings"] = warnings
        return result

    def _check(self, role, options, values, secret, context):
        """Every problem with the role's values: here, then on the host what must be."""
        spec = {
            name: {k: v for k, v in option.items() if k != "default"}
            for name, option in options.items()
        }
        problems = role_inputs.check_role(
            role, spec, values, secret=secret, context=context, host=False
        )
        on_host = {k: v for k, v in values.items() if k in role_inputs.host_checked(role)}
        if problems or not on_host:
            return problems
        module_result = self.run_on_host(
            {
                "role": role,
                "spec": {k: v for k, v in spec.items() if k in on_host},
                "values": {k: v for k, v in on_host.items() if k not in secret},
                "secret_values": {k: v for k, v in on_host.items() if k in secret},
                "context": context,
                "checks": "host",
            }
        )
        if module_result.get("failed"):
            return module_result.get("problems") or [module_result.get("msg", "role_inputs failed")]
        return []

    def _name_the_source(self, problems, role_path):
        """Say which variable a refused default was taken from.

        A role's default may be another role's variable (cuda_repo_base_url is
        nvidia_driver_repo_base_url's value): a message about the default then names the
        variable the user set, which is the one to fix.
        """
        task_vars = self._task_vars
        defaults_file = os.path.join(role_path, "defaults", "main.yml")
        try:
            defaults = self._loader.load_from_file(defaults_file) or {}
        except AnsibleError:
            return problems
        named = []
        for message in problems:
            name = message.split(" ", 1)[0]
            raw = task_vars.get(name)
            default = defaults.get(name)
            sources = []
            if isinstance(raw, str) and raw == default and "{{" in raw:
                sources = [
                    v
                    for v in dict.fromkeys(_REFERENCE.findall(raw))
                    if v in task_vars and v != name
                ]
            if sources:
                message += (
                    f" ({name} was not set: its value is the role's default, taken from "
                    f"{sources[0]}; fix that)"
                )
            named.append(message)
        return named
