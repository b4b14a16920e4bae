#!/usr/bin/python
"""Ansible module: NVIDIA GPUs and NVSwitches on the PCI bus, from sysfs."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import runner
from ansible.module_utils.gpu_fabric import PCI_ROOT, pci_facts

DOCUMENTATION = r"""
---
module: nvidia_pci_facts
short_description: List NVIDIA GPUs and NVSwitches on the PCI bus
description:
  - Reads /sys/bus/pci/devices (vendor 0x10de; class 0x03 display controllers are GPUs,
    class 0x0680 bridges are NVSwitches), so it works before a driver is installed, in
    check mode and without lspci. Names come from C(lspci -mm) when it is installed.
  - Sets C(ansible_facts.nvidia_pci) with C(gpus), C(gpu_count), C(nvswitches), C(present).
  - The same read (module_utils/gpu_fabric.py, C(pci_facts)) is in M(nvidia_smi_facts) with
    C(pci_facts=true), which saves a module run where both are wanted.
  - Decides from PCI alone whether the host needs NVIDIA's fabric manager
    (C(fabric_manager_needed_by_pci)), before any driver exists - NVSwitches of a known
    generation (module_utils/gpu_fabric.py, the catalogue's C(nvswitch_devices)) on the bus,
    or the NVLink 5 management functions of an HGX B200-class board, whose NVSwitches are no
    PCI devices. Those are ConnectX-7 functions whose VPD carries C(SW_MNG); reading the VPD
    needs root, and without it the answer is null (unknown) when such functions are there.
version_added: "0.2.0"
author:
  - Kindling maintainers
options:
  sysfs_root:
    description: Where the PCI devices are; tests point it at a copy.
    type: path
    default: /sys/bus/pci/devices
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Find NVIDIA GPUs before a driver is there
  nvidia_pci_facts:
"""

RETURN = r"""
ansible_facts:
  description:
    - C(nvidia_pci) with C(gpus) (pci_slot, pci_device_id, name), C(gpu_count),
      C(nvswitches) (every NVIDIA class-0680 function) and C(present).
    - C(nvswitch_count) (the NVSwitches among them whose device id the catalogue lists),
      C(nvswitch_generation) (1-4, null without one), C(nvlink5_bridges) (slots of NVLink 5
      management functions), C(fabric_manager_needed_by_pci) and C(nvlink5_needed_by_pci)
      (true, false, or null when a Mellanox function's VPD could not be read),
      C(fabric_reason) (one sentence) and C(fabric_evidence) (list).
  returned: always
  type: dict
"""

#: Seconds one ``lspci -mm -s <slot>`` may take.
LSPCI_TIMEOUT = 30


def main() -> None:
    module = AnsibleModule(
        argument_spec={"sysfs_root": {"type": "path", "default": PCI_ROOT}},
        supports_check_mode=True,
    )
    facts = pci_facts(module.params["sysfs_root"], runner(LSPCI_TIMEOUT))
    module.exit_json(changed=False, ansible_facts={"nvidia_pci": facts})


if __name__ == "__main__":
    main()
