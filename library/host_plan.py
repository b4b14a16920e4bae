#!/usr/bin/python
"""Ansible module: a host's plan, computed once in stage 1 (module_utils/host_plan.py).

action_plugins/host_plan.py answers it on the controller, after the adopt-mode reads it
makes on the host; this module runs only where that plugin is not loaded, and then plans
from the reads it is given (O(reads)).
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.host_plan import ARGUMENT_SPEC, REQUIRED_TOGETHER, answer

DOCUMENTATION = r"""
---
module: host_plan
short_description: Work out a host's whole plan once, or give a stage its part of it
description:
  - The plan gpu_preflight publishes as the fact C(gpu_preflight_host_plan) and writes to the
    controller's C(reports/<host>/plan.json); every stage reads its part of it.
  - Keys are C(inputs) (every role's effective inputs, under their own names), C(gpus)
    (nvidia-smi's when it lists any, else the PCI bus's) with C(gpus_from), C(gpu_present),
    C(driver_version) (nvidia-smi's when the plan was made), C(facts) (the host's
    distribution and architecture), C(reads) (what adopt mode read on the host), C(stack)
    (the whole-stack check's arguments), C(catalogue) (the vendor catalogue's answer for the
    whole stack - repository, packages, problems, notes - judged on every host, with or
    without a GPU) and C(stages) (each GPU stage's part - whether it runs, what it will
    leave, and the catalogue's answer for that).
  - The action plugin reads on the host only what an input asks for, each read once - the
    torch C(nvidia_driver_adopt_torch_python) names (torch_cuda_facts, depth build), the
    toolkit C(cuda_home) holds with C(cuda_adopt_existing) (cuda_toolkit_plan, adopt), the
    interpreter that makes or is conda_pytorch's environment (python_interpreter_info, unless
    the torch read ran the same one).
  - With O(part), answers a stage's part of O(plan), checked again only when O(driver_version)
    (nvidia-smi's now) differs from the plan's, that is when the driver stage changed the
    driver in this run; fails with the catalogue's message on a blocking problem.
  - Refuses a retired variable (module_utils/host_plan.py's C(RENAMED) table) with the name
    to set instead. Never changes the host.
version_added: "0.9.0"
author:
  - Kindling maintainers
options:
  inputs:
    description:
      - Inputs to take over the ones the action plugin collects (stage 1's
        C(kindling_effective_inputs); without stage 1, each input as the task variables hold
        it, else the owning role's default).
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
  facts:
    description: The host's C(distribution), C(distribution_version) and C(architecture).
    type: dict
    default: {}
  reads:
    description:
      - Adopt-mode reads already made (C(torch), C(toolkit), C(interpreter)); the action
        plugin makes the missing ones that an input asks for.
    type: dict
    default: {}
  stages:
    description: The GPU stages whose part is worked out.
    type: list
    elements: str
    default: [nvidia_driver, cuda, conda_pytorch]
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
  part:
    description: Answer this stage's part of O(plan) instead of working out a plan.
    type: str
    choices: [nvidia_driver, cuda, conda_pytorch]
  plan:
    description: The host's plan (C(gpu_preflight_host_plan)), with O(part).
    type: dict
  driver_version:
    description:
      - With O(part), the driver nvidia-smi reports now; a different one than the plan's
        means the part is checked again against it.
    type: str
    default: ""
  report_path:
    description:
      - Where the action plugin writes the plan as JSON on the controller (rewritten only
        when it differs, also in check mode). A module run on the host leaves it.
    type: str
"""

EXAMPLES = r"""
- name: Work out this host's plan
  host_plan:
    nvidia_pci: "{{ ansible_facts.nvidia_pci }}"
    nvidia_smi: "{{ ansible_facts.nvidia_smi }}"
    facts:
      distribution: "{{ ansible_facts.distribution }}"
      distribution_version: "{{ ansible_facts.distribution_version }}"
      architecture: "{{ ansible_facts.architecture }}"
    host: "{{ inventory_hostname }}"
  register: plan

- name: Take the cuda stage's part, checked again if the driver changed
  host_plan:
    part: cuda
    plan: "{{ gpu_preflight_host_plan }}"
    driver_version: "{{ ansible_facts.nvidia_smi.driver_version | default('', true) }}"
  register: cuda_part
"""

RETURN = r"""
plan:
  description: >-
    The plan (keys inputs, gpus, gpus_from, gpu_present, driver_version, facts, reads, stack,
    catalogue, stages; and stack_keep, the action plugin's answer of what stack the stages
    left on the host and which of it this run keeps - module_utils/default_stack.py).
  returned: without part
  type: dict
part:
  description: The stage's part of the plan (checked again when RV(rechecked)).
  returned: with part
  type: dict
report_path:
  description: The controller file the plan was written to (with O(report_path)).
  returned: with report_path, by the action plugin
  type: str
rechecked:
  description: Whether the part was checked again against a driver that changed since the plan.
  returned: with part
  type: bool
record_file:
  description: >-
    The stage's stack record as stage 1 read it (module_utils/managed_files.py describe), for
    managed_files_write's current; null where stage 1 did not read it.
  returned: with part
  type: dict
problems:
  description: >-
    One line per retired variable set; with O(part), the catalogue's blocking problems
    (each with code, message and fix).
  returned: failure
  type: list
  elements: raw
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC, required_together=REQUIRED_TOGETHER, supports_check_mode=True
    )
    result = answer(module.params)
    if result.get("failed"):
        module.fail_json(**{k: v for k, v in result.items() if k != "failed"})
    module.exit_json(**result)


if __name__ == "__main__":
    main()
