#!/usr/bin/python
"""Ansible module: what apt would install of some packages (apt-cache policy). Read-only."""

from __future__ import annotations

from ansible.module_utils.apt_policy import policy
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import CommandError, run

DOCUMENTATION = r"""
---
module: apt_policy_facts
short_description: The installed and candidate versions apt reports for some packages
description:
  - Runs C(apt-cache policy -- <packages>) once, as an argument list with C(LC_ALL=C), and
    reads its output in Python (module_utils/apt_policy.py) - each package's installed
    version, candidate and version table with priorities and sources.
  - A package apt does not know is listed with C(known) false; one apt knows that no
    enabled source offers (or that a negative pin forbids) has a null C(candidate).
  - Fails when apt-cache exits non-zero (a damaged package index, say).
  - Sets C(ansible_facts.apt_policy). Never changes the host; runs the same way in check
    mode (it reads the package index as it is - sources added in check mode are not in it).
version_added: "0.5.0"
author:
  - Kindling maintainers
options:
  packages:
    description:
      - Package names, in the order the result lists them. For the host's own architecture
        give the bare name (apt prints C(bash:amd64) as C(bash)).
    type: list
    elements: str
    required: true
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
  facts:
    support: full
"""

EXAMPLES = r"""
- name: Ask apt which version of the driver it would install
  apt_policy_facts:
    packages: [nvidia-driver, nvidia-kernel-dkms]

- name: Stop when apt offers none of branch 535
  ansible.builtin.assert:
    that: >-
      ansible_facts['apt_policy']['packages'] | map(attribute='candidate') | select('string')
      | select('match', '535[.]') | list | length > 0
"""

RETURN = r"""
ansible_facts:
  description:
    - C(apt_policy) with C(packages), one entry per asked name in the order given - C(name),
      C(known) (apt printed a block for it), C(installed) and C(candidate) (null for apt's
      C((none))), C(pin) (the C(Package pin) line of older apt, else null) and C(versions)
      (each C(version), C(priority), C(installed) and C(sources), each with C(priority) and
      C(source)).
    - C(command), the argument list that ran.
  returned: always
  type: dict
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={"packages": {"type": "list", "elements": "str", "required": True}},
        supports_check_mode=True,
    )
    names = module.params["packages"]
    if not names:  # apt-cache policy alone prints the sources' priorities instead
        module.exit_json(
            changed=False, ansible_facts={"apt_policy": {"packages": [], "command": []}}
        )
    command = [module.get_bin_path("apt-cache", required=True), "policy", "--", *names]
    try:
        rc, out, err = run(command, 300, env_update={"LC_ALL": "C", "LANG": "C", "LANGUAGE": "C"})
    except CommandError as exc:
        module.fail_json(msg=str(exc))
    if rc != 0:
        module.fail_json(
            msg=f"{' '.join(command)} failed (exit {rc}): {err.strip() or out.strip()}",
            rc=rc,
            stdout=out,
            stderr=err,
        )
    module.exit_json(
        changed=False,
        ansible_facts={"apt_policy": {"packages": policy(names, out), "command": command}},
    )


if __name__ == "__main__":
    main()
