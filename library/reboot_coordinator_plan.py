#!/usr/bin/python
"""Ansible module: the reboot coordinator's decision (module_utils/reboot_coordinator.py)."""

from __future__ import annotations

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.reboot_coordinator import plan

DOCUMENTATION = r"""
---
module: reboot_coordinator_plan
short_description: Decide which reboot requests are pending and whether to reboot now
description:
  - Reads the boot id and the reboot recorded earlier (C(reboot-required.json)) and merges
    this run's requests with those of the same boot that no role answered again.
  - Decides whether a reboot is wanted (a pending request with policy V(auto) or
    V(always)) and why it must not happen here (not allowed, the controller, a container).
  - Read-only; runs the same way in check mode. The role writes the record and reboots.
version_added: "0.7.0"
author:
  - Kindling maintainers
options:
  state_dir:
    description: Where C(reboot-required.json) is kept.
    type: path
    required: true
  requests:
    description: This run's requests, each C(role), C(needed), C(policy) and C(reason).
    type: list
    elements: dict
    default: []
  allowed:
    description: C(reboot_coordinator_allowed).
    type: bool
    default: true
  connection:
    description: The host's connection (C(local) is the controller, never rebooted).
    type: str
    default: ssh
  virtualization_type:
    description: C(ansible_virtualization_type).
    type: str
    default: ""
  virtualization_role:
    description: C(ansible_virtualization_role).
    type: str
    default: ""
  container_types:
    description: Virtualisation types that are containers (C(reboot_coordinator_container_types)).
    type: list
    elements: str
    default: []
  boot_id_path:
    description: The kernel's boot id.
    type: path
    default: /proc/sys/kernel/random/boot_id
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Decide whether to reboot now
  reboot_coordinator_plan:
    state_dir: /var/lib/kindling
    requests: [{role: nvidia_driver, needed: true, policy: auto, reason: the driver changed}]
    connection: ssh
  register: plan
"""

RETURN = r"""
pending:
  description: The open requests, this boot's recorded ones first.
  returned: always
  type: list
wanted:
  description: Whether a pending request's policy asks for a reboot.
  returned: always
  type: bool
suppressed_reason:
  description: Why Kindling must not reboot this host; empty when it may.
  returned: always
  type: str
reboot_now:
  description: wanted and not suppressed.
  returned: always
  type: bool
record:
  description: What reboot-required.json should hold when the reboot is not done now; null for none.
  returned: always
  type: dict
recorded:
  description: Whether a record was there.
  returned: always
  type: bool
required:
  description: Whether a reboot is still needed after this stage.
  returned: always
  type: bool
reasons:
  description: The pending requests' reasons.
  returned: always
  type: list
"""


def read(path: str):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return None


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "state_dir": {"type": "path", "required": True},
            "requests": {"type": "list", "elements": "dict", "default": []},
            "allowed": {"type": "bool", "default": True},
            "connection": {"type": "str", "default": "ssh"},
            "virtualization_type": {"type": "str", "default": ""},
            "virtualization_role": {"type": "str", "default": ""},
            "container_types": {"type": "list", "elements": "str", "default": []},
            "boot_id_path": {"type": "path", "default": "/proc/sys/kernel/random/boot_id"},
        },
        supports_check_mode=True,
    )
    p = module.params
    boot_id = (read(p["boot_id_path"]) or "").strip()
    if not boot_id:
        module.fail_json(msg=f"could not read the boot id from {p['boot_id_path']}")
    result = plan(
        boot_id,
        read(os.path.join(p["state_dir"], "reboot-required.json")),
        p["requests"],
        p["allowed"],
        p["connection"],
        p["virtualization_type"],
        p["virtualization_role"],
        p["container_types"],
    )
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
