#!/usr/bin/python
"""Ansible module: judge what a working NVIDIA driver serves - persistence mode, the fabric,
CUDA."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.driver_state import SERVICE_VERDICT_SPEC, service_verdict_for

DOCUMENTATION = r"""
---
module: nvidia_driver_service_verdict_plan
short_description: Judge what a working NVIDIA driver serves, after the nvidia_driver stage
description:
  - Runs after nvidia_driver_verdict_plan found nothing wrong with the driver itself, on the
    facts the stage read since (module_utils/driver_state.py C(service_verdict)).
  - Persistence mode must be on on every GPU where the role started nvidia-persistenced
    (O(persistence_expected)); the fabric manager must run at the driver's version and the
    fabric be configured (the nvidia_fabric_manager_plan result, on NVSwitch hosts); CUDA
    must initialise (the C(cuda_init) fact). Each failed check is one message in
    RV(problems); RV(report) is the one line that describes the working driver.
  - Reads nothing on the host; supports check mode. The judgement needs only its arguments,
    so action_plugins/nvidia_driver_service_verdict_plan.py makes it on the controller, and this
    module runs only where that plugin is not loaded.
version_added: "0.10.0"
author:
  - Kindling maintainers
options:
  nvidia_smi:
    description: The nvidia_smi facts (C(ansible_facts.nvidia_smi)), read after the stage.
    type: dict
    required: true
  persistence_expected:
    description:
      - The role started nvidia-persistenced with persistence mode on (a systemd host with
        C(nvidia_driver_persistenced)), so every GPU must report it on.
    type: bool
    default: false
  fabric_manager:
    description:
      - The registered result of nvidia_fabric_manager_plan after the stage (its
        C(outcome), C(message) and C(fix)). Omitted, or a skipped task, where the host needs
        no fabric manager.
    type: dict
  cuda_init:
    description:
      - The C(cuda_init) fact of cuda_init_facts (its C(state) and C(message)); omitted
        where CUDA was not tried.
    type: dict
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Judge persistence mode, the fabric and CUDA's initialisation
  nvidia_driver_service_verdict_plan:
    nvidia_smi: "{{ ansible_facts['nvidia_smi'] }}"
    persistence_expected: true
    fabric_manager: "{{ fabric_manager_result }}"
    cuda_init: "{{ ansible_facts['cuda_init'] | default(omit) }}"
  register: service
"""

RETURN = r"""
problems:
  description: One message per failed check, in the order checked; empty when all pass.
  returned: always
  type: list
  elements: str
report:
  description:
    - The working driver in one line - its version and CUDA version, the GPUs, persistence
      mode, the fabric manager's message when it runs, and CUDA's initialisation.
  returned: always
  type: str
"""


def main() -> None:
    module = AnsibleModule(argument_spec=SERVICE_VERDICT_SPEC, supports_check_mode=True)
    module.exit_json(**service_verdict_for(module.params))


if __name__ == "__main__":
    main()
