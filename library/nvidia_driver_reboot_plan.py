#!/usr/bin/python
"""Ansible module: whether the NVIDIA driver needs a reboot, and why."""

from __future__ import annotations

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.driver_state import reboot_plan

DOCUMENTATION = r"""
---
module: nvidia_driver_reboot_plan
short_description: Decide whether the NVIDIA driver needs a reboot, with the reason to file
description:
  - Reads the boot id and the role's record of driver package changes (C(changed.json)
    under C(state_dir)), read-only, and decides with module_utils/driver_state.py's
    C(reboot_plan) whether the host needs a reboot for the driver, and the one reason the
    reboot coordinator's request carries.
  - nvidia-smi reporting that the driver is installed but not loaded comes first; then a
    driver change in this boot (now, or recorded by an earlier run of this boot); then
    C(policy) C(always).
  - Reads only; supports check mode.
version_added: "0.6.0"
author:
  - Kindling maintainers
options:
  changed_now:
    description: The stage installed or removed driver packages (or would, in check mode).
    type: bool
    required: true
  state_dir:
    description:
      - The role's state directory (C(nvidia_driver_state_dir)).
      - The record is C(nvidia_driver/changed.json) in it.
    type: path
    required: true
  nvidia_smi:
    description: The nvidia_smi facts.
    type: dict
    required: true
  kernel_module:
    description: The nvidia_kernel_module facts.
    type: dict
    required: true
  policy:
    description: C(nvidia_driver_reboot_policy).
    type: str
    required: true
  packages:
    description: The driver packages of this plan, for the reason when no record names them.
    type: list
    elements: str
    default: []
  version_glob:
    description: The driver version glob of this plan, for the reason.
    type: str
    default: ""
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Decide whether the driver needs a reboot
  nvidia_driver_reboot_plan:
    changed_now: "{{ install_result is changed }}"
    state_dir: /var/lib/kindling
    nvidia_smi: "{{ ansible_facts['nvidia_smi'] }}"
    kernel_module: "{{ ansible_facts['nvidia_kernel_module'] }}"
    policy: coordinated
  register: reboot
"""

RETURN = r"""
reboot_needed:
  description: Whether the driver needs a reboot.
  returned: always
  type: bool
reason:
  description: Why (or why not), in one sentence.
  returned: always
  type: str
changed_this_boot:
  description: The driver packages changed in this boot (now or recorded earlier).
  returned: always
  type: bool
smi_reboot:
  description: nvidia-smi says the driver is installed but not loaded.
  returned: always
  type: bool
"""

BOOT_ID = "/proc/sys/kernel/random/boot_id"


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "changed_now": {"type": "bool", "required": True},
            "state_dir": {"type": "path", "required": True},
            "nvidia_smi": {"type": "dict", "required": True},
            "kernel_module": {"type": "dict", "required": True},
            "policy": {"type": "str", "required": True},
            "packages": {"type": "list", "elements": "str", "default": []},
            "version_glob": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    p = module.params
    text = _read(os.path.join(p["state_dir"], "nvidia_driver", "changed.json"))
    try:
        record = json.loads(text) if text.strip() else None
    except ValueError:
        record = None  # a damaged record counts as none: nothing recorded in this boot
    result = reboot_plan(
        p["changed_now"],
        record,
        _read(BOOT_ID),
        p["nvidia_smi"],
        p["kernel_module"],
        p["policy"],
        p["packages"],
        p["version_glob"],
    )
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
