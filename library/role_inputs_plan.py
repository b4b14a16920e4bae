#!/usr/bin/python
"""Ansible module: check one role's effective inputs before any change (read-only)."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.role_inputs import ARGUMENT_SPEC, check_role, host_findings

DOCUMENTATION = r"""
---
module: role_inputs_plan
short_description: Check a role's variables against its argument_specs, Kindling's shapes and rules
description:
  - Run it with no arguments as the first task of a role (or of C(tasks/inputs.yml)); its
    action plugin (action_plugins/role_inputs_plan.py) reads the role's
    C(meta/argument_specs.yml) on the controller, collects the effective value of every
    variable it lists (the user's, or the role's default), and passes them here.
  - Checks, in order, argument_specs' types and choices, the shape of each variable
    (module_utils/input_types.py, assigned in module_utils/role_inputs.py), the role's
    rules that relate variables, and the host (a unit name already taken by a unit
    Kindling did not write; a secret's directory that someone other than root could plant
    a link in). Fails with one line per wrong variable, naming it, its value and the fix.
  - Reads only; supports check mode.
version_added: "0.4.0"
author:
  - Kindling maintainers
options:
  role:
    description: The role whose variables these are; the action plugin fills in the running role's.
    type: str
  role_path:
    description: Where that role is; the action plugin fills in the running role's.
    type: path
  context_vars:
    description:
      - Role constants (from vars/main.yml) the rules read.
      - The action plugin passes their values in C(context).
    type: list
    elements: str
    default: []
  entry_point:
    description: The argument_specs entry point to check.
    type: str
    default: main
  spec:
    description:
      - The entry point's options, from meta/argument_specs.yml.
      - The action plugin fills it in.
    type: dict
  values:
    description: The effective values of the options that are not no_log.
    type: dict
    default: {}
  secret_values:
    description: The effective values of the no_log options.
    type: dict
    default: {}
  context:
    description: The host's architecture (C(machine)) and role constants the rules read.
    type: dict
    default: {}
  reuse:
    description:
      - This task's result from earlier in the run (C(<role>__inputs), site.yml's stage 1).
        When it passed and the role's effective values and context are the ones it
        checked (RV(effective), RV(context)), and no no_log option is set then or now
        (RV(secret_set)), the action plugin returns at once (RV(reused)), checking nothing
        again. Otherwise it checks the whole role.
      - The module itself does not use it.
    type: dict
  checks:
    description:
      - C(all) checks everything here.
      - C(host) checks only the host (unit names, secret directories); the action plugin asks for
        that after it has checked the rest on the controller.
    type: str
    choices: [all, host]
    default: all
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Check this role's inputs before any change
  role_inputs_plan:
"""

RETURN = r"""
problems:
  description: One message per wrong variable.
  returned: always
  type: list
  elements: str
effective:
  description: The effective values that were checked (no_log ones left out).
  returned: success
  type: dict
role:
  description: The role whose inputs these are (from the action plugin).
  returned: success, through the action plugin
  type: str
entry_point:
  description: The argument_specs entry point checked (from the action plugin).
  returned: success, through the action plugin
  type: str
context:
  description: The context the rules were given (the host's architecture, O(context_vars)).
  returned: success, through the action plugin
  type: dict
secret_set:
  description:
    - The no_log options that have a value (names only; their values are never kept).
      While one is set, a later check of the role checks it all again.
  returned: success, through the action plugin
  type: list
  elements: str
reused:
  description:
    - True when the check of the same values earlier in the run (O(reuse), site.yml's stage
      1) stands and nothing was checked again.
  returned: success, through the action plugin
  type: bool
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        supports_check_mode=True,
    )
    p = module.params
    if not p["role"] or p["spec"] is None:
        module.fail_json(
            msg="role_inputs_plan runs through its action plugin, inside a role "
            "(no role or spec given)"
        )
    values = dict(p["values"], **p["secret_values"])
    if p["checks"] == "host":
        problems = [message for _, message in host_findings(p["role"], values)]
    else:
        problems = check_role(
            p["role"], p["spec"], values, secret=sorted(p["secret_values"]), context=p["context"]
        )
    if problems:
        module.fail_json(
            msg=f"{p['role']}: {len(problems)} input(s) refused before any change:\n"
            + "\n".join(problems),
            problems=problems,
        )
    module.exit_json(
        changed=False,
        msg=f"{p['role']}: {len(p['spec'])} inputs checked",
        problems=[],
        effective=p["values"],
    )


if __name__ == "__main__":
    main()
