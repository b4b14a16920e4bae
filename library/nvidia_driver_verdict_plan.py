#!/usr/bin/python
"""Ansible module: say what is wrong with the NVIDIA driver after the stage, if anything."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.driver_state import VERDICT_SPEC, verdict_for

DOCUMENTATION = r"""
---
module: nvidia_driver_verdict_plan
short_description: Explain what is wrong with the NVIDIA driver after the nvidia_driver stage
description:
  - Judges the facts the stage gathered (nvidia_smi_facts, nvidia_kernel_module_facts)
    with module_utils/driver_state.py's C(verify_problem), and returns one message, empty
    when the driver works.
  - nvidia-smi missing, nvidia-smi failing, or a driver of another branch than the one asked
    for (unless adopted; the old module is still loaded) are problems; each message says
    where the kernel module stands and whether a reboot is pending.
  - Reads nothing on the host; supports check mode. The judgement needs only its arguments,
    so action_plugins/nvidia_driver_verdict_plan.py makes it on the controller, and this module
    runs only where that plugin is not loaded.
version_added: "0.6.0"
author:
  - Kindling maintainers
options:
  nvidia_smi:
    description: The nvidia_smi facts (C(ansible_facts.nvidia_smi)).
    type: dict
    required: true
  kernel_module:
    description: The nvidia_kernel_module facts (C(ansible_facts.nvidia_kernel_module)).
    type: dict
    required: true
  outcome:
    description: The role's outcome (install, present, adopted); empty when unknown.
    type: str
    default: ""
  branch:
    description: The driver branch asked for (C(nvidia_driver_branch)).
    type: str
    required: true
  reboot_pending:
    description: Whether the reboot coordinator holds a request.
    type: bool
    default: false
  reboot_reasons:
    description: The reboot requests' reasons.
    type: list
    elements: str
    default: []
  module_options:
    description:
      - The kernel-module options the role wrote (the plan's C(packages.module_options), less
        those left to the module's default), each with C(module), C(option), C(value) and
        C(line).
      - Where the driver works and O(module_params) was read, an option of the nvidia module
        that the loaded module does not run with is the problem, with its remedy
        (module_utils/nvidia_module_options.py C(verify_problem)).
    type: list
    elements: dict
    default: []
  module_params:
    description:
      - C(/proc/driver/nvidia/params) as read after the stage; omitted when not read (the
        module is not loaded, or no option is planned), and then no option is checked.
    type: str
  module_options_file:
    description: The modprobe.d file the role writes them to, for the message.
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
- name: Explain what is wrong with the driver, if anything
  nvidia_driver_verdict_plan:
    nvidia_smi: "{{ ansible_facts['nvidia_smi'] }}"
    kernel_module: "{{ ansible_facts['nvidia_kernel_module'] }}"
    outcome: install
    branch: "580"
  register: verdict
"""

RETURN = r"""
problem:
  description: What is wrong, in one message; empty when the driver works.
  returned: always
  type: str
"""


def main() -> None:
    module = AnsibleModule(argument_spec=VERDICT_SPEC, supports_check_mode=True)
    module.exit_json(**verdict_for(module.params))


if __name__ == "__main__":
    main()
