"""Controller side of the role_inputs module: collect and check a role's effective inputs.

Inside a role, the task variables hold every variable's effective value: the user's
(inventory, play, extra vars) or the role's default. This reads the role's
meta/argument_specs.yml, templates the value of each option it lists, and checks them
with module_utils/role_inputs.py right here on the controller (argument_specs, shapes,
rules). Only the checks that must look at the host (unit names, secret directories) run
there, through library/role_inputs.py, with just the values they need. Nothing changes.
"""

from __future__ import annotations

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

# The first variable a default's template reads: "{{ cuda_version | default('13.0') }}".
_REFERENCE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)")


def secret_in(values, secret):
    """Whether any of ``values`` is a no_log option's."""
    return any(name in secret for name in values)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = self._task.args
        role = args.get("role") or task_vars.get("role_name")
        role_path = args.get("role_path") or task_vars.get("role_path")
        entry = args.get("entry_point", "main")
        if not role or not role_path:
            raise AnsibleError(
                "role_inputs runs inside a role (role_name and role_path are not set)"
            )
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
        spec = {
            name: {k: v for k, v in option.items() if k != "default"}
            for name, option in options.items()
        }
        context = {"machine": (task_vars.get("ansible_facts") or {}).get("architecture")}
        for name in args.get("context_vars", []):
            if name in task_vars:
                context[name] = self._templar.template(task_vars[name])
        if not problems:
            problems = role_inputs.check_role(
                role, spec, values, secret=secret, context=context, host=False
            )
        host_vars = role_inputs.host_checked(role)
        checked = {k: v for k, v in values.items() if k in host_vars}
        # The host checks this run already made of the same values (site.yml's stage 1 checks
        # every role; the role checks again as its first step): a secret among them is never
        # kept in a result, so those are checked again.
        reuse = args.get("reuse") or {}
        host_reused = (
            bool(host_vars)
            and not secret_in(checked, secret)
            and isinstance(reuse, dict)
            and not reuse.get("failed")
            and reuse.get("role") == role
            and reuse.get("host_checked") == checked
        )
        if not problems and host_vars and not host_reused:
            module_result = self._execute_module(
                module_name="role_inputs",
                module_args={
                    "role": role,
                    "spec": {k: v for k, v in spec.items() if k in checked},
                    "values": {k: v for k, v in checked.items() if k not in secret},
                    "secret_values": {k: v for k, v in checked.items() if k in secret},
                    "context": context,
                    "checks": "host",
                },
                task_vars=task_vars,
            )
            if module_result.get("failed"):
                problems = module_result.get("problems") or [
                    module_result.get("msg", "role_inputs failed")
                ]
        if problems:
            problems = self._name_the_source(problems, role_path, task_vars)
            result.update(
                failed=True,
                problems=problems,
                msg=f"{role}: {len(problems)} input(s) refused before any change:\n"
                + "\n".join(problems),
            )
            return result
        warnings = role_inputs.listener_warnings(role, values)
        if warnings:
            result["warnings"] = warnings
        result.update(
            changed=False,
            problems=[],
            role=role,
            effective={k: v for k, v in values.items() if k not in secret},
            host_checked=None if secret_in(checked, secret) else checked,
            host_reused=host_reused,
            msg=f"{role}: {len(values)} inputs checked"
            + (", the host's as earlier in this run" if host_reused else ""),
        )
        return result

    def _name_the_source(self, problems, role_path, task_vars):
        """Say which variable a refused default was taken from.

        A role's default may be another role's variable (cuda_repo_base_url is
        nvidia_driver_repo_base_url's value): a message about the default then names the
        variable the user set, which is the one to fix.
        """
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
