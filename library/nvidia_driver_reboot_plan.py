#!/usr/bin/python
"""Ansible module: whether the NVIDIA driver needs a reboot, and why."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.driver_state import REBOOT_PLAN_SPEC, reboot_plan_for

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
  - Reads only; supports check mode. With O(change_record) it reads nothing, and
    action_plugins/nvidia_driver_reboot_plan.py decides on the controller.
  - One of O(state_dir) and O(change_record) is required.
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
      - The role's state directory (C(nvidia_driver_state_dir)), read when O(change_record)
        is not given.
      - The record is C(nvidia_driver/changed.json) in it.
    type: path
  change_record:
    description:
      - The record and this boot's id as nvidia_driver_plan read them (its C(state_dir)
        option, result C(change_record), keys C(record) and C(boot_id)). Given, nothing is
        read on the host, and the action plugin decides on the controller.
    type: dict
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
  module_options:
    description:
      - The kernel-module options the role's modprobe.d file sets (the plan's
        C(packages.module_options), less those left to the module's default), each with
        C(module), C(option), C(value) and C(line).
      - Where the nvidia module is loaded (O(kernel_module)'s C(state)) and runs without one
        of them (O(module_params)), a reboot is needed and the reason names the option; where
        O(module_params) was not read, a change of the file (O(module_options_changed)) decides
        (module_utils/nvidia_module_options.py C(reboot_reason)).
    type: list
    elements: dict
    default: []
  module_options_file:
    description: The role's modprobe.d file, for the reason.
    type: str
    default: ""
  module_options_changed:
    description: The stage wrote or removed that file in this run (or would, in check mode).
    type: bool
    default: false
  module_options_skipped:
    description: The plan's options left to the module's default, for the reason.
    type: list
    elements: str
    default: []
  module_params:
    description: C(/proc/driver/nvidia/params) as read; omitted when not read.
    type: str
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


def main() -> None:
    module = AnsibleModule(argument_spec=REBOOT_PLAN_SPEC, supports_check_mode=True)
    try:
        result = reboot_plan_for(module.params)
    except ValueError as exc:
        module.fail_json(msg=f"nvidia_driver_reboot_plan: {exc}")
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
