#!/usr/bin/python
"""Ansible module: the release of each pinned Python package that suits an interpreter."""

from __future__ import annotations

from typing import Any, Dict, List

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import runner
from ansible.module_utils.python_interpreter import read_interpreter, summary
from ansible.module_utils.stack_plan import (
    python_package_pin,
    python_package_problem,
    python_package_releases,
)

DOCUMENTATION = r"""
---
module: python_package_pins_plan
short_description: Pick (or check) Python package releases for an interpreter
description:
  - For each package, an explicit C(version) is checked against the Requires-Python of its
    wheels as the vendor catalogue records it from PyPI; an empty C(version) becomes the
    newest catalogued release that suits the interpreter.
  - Asks the interpreter for its version (C(python -c ...)); never changes the host.
  - Fails, naming the variable and the release that would fit, when a pin can't be
    installed into that Python (ipykernel 7.4.0 needs Python 3.11, say).
version_added: "0.2.0"
author:
  - Kindling maintainers
options:
  python:
    description: The interpreter the packages are installed for.
    type: path
    required: true
  python_version:
    description:
      - Its version when the interpreter does not exist yet (check mode on a fresh host).
    type: str
  packages:
    description: Each C(name), C(version) (empty to derive) and the C(variable) that sets it.
    type: list
    elements: dict
    required: true
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: The ipykernel release for the PyTorch environment's Python
  python_package_pins_plan:
    python: /opt/conda/envs/pytorch/bin/python
    packages:
      - {name: ipykernel, version: "", variable: jupyter_ipykernel_version}
  register: pins
"""

RETURN = r"""
python_version:
  description: The interpreter's major.minor (or the given one), null when unknown.
  returned: always
  type: str
pins:
  description: Package name -> release to install.
  returned: always
  type: dict
derived:
  description: The packages whose release was derived (not pinned by a variable).
  returned: always
  type: list
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "python": {"type": "path", "required": True},
            "python_version": {"type": "str"},
            "packages": {"type": "list", "elements": "dict", "required": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    # The interpreter there reports its own version (module_utils/python_interpreter.py);
    # before it exists, the version it will have.
    found = read_interpreter(p["python"], runner(60))
    if found["error"] or (found["exists"] and not found["executable"]):
        module.fail_json(msg=summary(found))
    python_version = found["version"] or p["python_version"] or None
    pins: Dict[str, Any] = {}
    derived: List[str] = []
    problems = []
    for item in p["packages"]:
        name, version = str(item["name"]), str(item.get("version") or "")
        variable = str(item.get("variable") or name)
        if version:
            pins[name] = version
            if python_version:
                problem = python_package_problem(name, version, python_version, variable)
                if problem:
                    problems.append(problem)
            continue
        releases = python_package_releases(name)
        if not releases:
            module.fail_json(
                msg=f"{variable} is empty and the vendor catalogue lists no {name} release; set it."
            )
        pick = (
            python_package_pin(name, python_version) if python_version else releases[0]["version"]
        )
        if pick is None:
            oldest = releases[-1]
            module.fail_json(
                msg=(
                    f"No catalogued {name} release suits Python {python_version} ({p['python']}): "
                    f"the oldest listed, {oldest['version']}, requires Python "
                    f"{oldest['requires_python']}; set {variable} to a release that does."
                )
            )
        pins[name] = pick
        derived.append(name)
    result = {"changed": False, "python_version": python_version, "pins": pins, "derived": derived}
    if problems:
        module.fail_json(
            msg=" ".join(f"{x['message']}" for x in problems), problems=problems, **result
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
