#!/usr/bin/python
"""Ansible module: a host's plan, computed once in stage 1 (module_utils/host_plan.py).

action_plugins/host_plan.py answers it on the controller (the plan reads nothing on the
host), so this module runs only where that plugin is not loaded.
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.host_plan import ARGUMENT_SPEC, answer

DOCUMENTATION = r"""
---
module: host_plan
short_description: Compute a host's whole plan once, from every role's inputs and the GPUs
description:
  - The plan gpu_preflight publishes as the fact C(gpu_preflight_host_plan) and writes to the
    controller's C(reports/<host>/plan.json); every stage reads its part of it.
  - Keys are C(inputs) (every role's effective inputs, under their own names), C(gpus)
    (nvidia-smi's when it lists any, else the PCI bus's) with C(gpus_from), C(gpu_present),
    C(driver_version) (nvidia-smi's in stage 1) and C(stack) (the whole-stack check's
    arguments). Stage 1 adds C(catalogue), that check's answer (repository, packages,
    problems), before it writes plan.json.
  - Refuses a retired variable (module_utils/host_plan.py's C(RENAMED) table) with the name
    to set instead.
  - Runs on the controller's data only and never changes the host.
version_added: "0.9.0"
author:
  - Kindling maintainers
options:
  inputs:
    description:
      - Every role's effective inputs (stage 1's C(kindling_effective_inputs)).
      - The action plugin adds those the plan reads that are missing (a stage run alone).
    type: dict
    default: {}
  nvidia_pci:
    description: The PCI bus's NVIDIA devices (C(ansible_facts.nvidia_pci)).
    type: dict
    default: {}
  nvidia_smi:
    description: What nvidia-smi reported (C(ansible_facts.nvidia_smi)).
    type: dict
    default: {}
  host:
    description: The host's inventory name, recorded in the plan.
    type: str
    default: ""
  defined:
    description:
      - Variable names set for the host; the action plugin fills them in.
      - A retired one is refused with its new name.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Compute this host's plan
  host_plan:
    inputs: "{{ kindling_effective_inputs | default({}) }}"
    nvidia_pci: "{{ ansible_facts.nvidia_pci }}"
    nvidia_smi: "{{ ansible_facts.nvidia_smi }}"
    host: "{{ inventory_hostname }}"
  register: plan
"""

RETURN = r"""
plan:
  description: The plan (keys inputs, gpus, gpus_from, gpu_present, driver_version, stack).
  returned: success
  type: dict
problems:
  description: One line per retired variable set.
  returned: failure
  type: list
  elements: str
"""


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    result = answer(module.params)
    if result.get("failed"):
        module.fail_json(**{k: v for k, v in result.items() if k != "failed"})
    module.exit_json(**result)


if __name__ == "__main__":
    main()
