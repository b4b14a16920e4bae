#!/usr/bin/python
"""Ansible module: NVIDIA GPUs and NVSwitches on the PCI bus, from sysfs."""

from __future__ import annotations

import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_fabric import pci_requirements, scan_nvlink5_bridges
from ansible.module_utils.pci_gpus import lspci_name, scan

DOCUMENTATION = r"""
---
module: nvidia_pci_facts
short_description: List NVIDIA GPUs and NVSwitches on the PCI bus
description:
  - Reads /sys/bus/pci/devices (vendor 0x10de; class 0x03 display controllers are GPUs,
    class 0x0680 bridges are NVSwitches), so it works before a driver is installed, in
    check mode and without lspci. Names come from C(lspci -mm) when it is installed.
  - Sets C(ansible_facts.nvidia_pci) with C(gpus), C(gpu_count), C(nvswitches), C(present).
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


def main() -> None:
    module = AnsibleModule(
        argument_spec={"sysfs_root": {"type": "path", "default": "/sys/bus/pci/devices"}},
        supports_check_mode=True,
    )
    lspci = shutil.which("lspci")

    def name_of(slot: str) -> str:
        if not lspci:
            return ""
        rc, out, _err = module.run_command([lspci, "-mm", "-s", slot])
        return lspci_name(out.splitlines()[0]) if rc == 0 and out.strip() else ""

    found = scan(module.params["sysfs_root"], name_of)
    fabric = pci_requirements(found, scan_nvlink5_bridges(module.params["sysfs_root"]))
    facts = {
        "gpus": found["gpus"],
        "gpu_count": len(found["gpus"]),
        "nvswitches": found["nvswitches"],
        "present": bool(found["gpus"]),
        "nvswitch_count": fabric["nvswitch_count"],
        "nvswitch_generation": fabric["nvswitch_generation"],
        "nvlink5_bridges": fabric["nvlink5_bridges"],
        "fabric_manager_needed_by_pci": fabric["fabric_manager_needed_by_pci"],
        "nvlink5_needed_by_pci": fabric["nvlink5_needed_by_pci"],
        "fabric_reason": fabric["reason"],
        "fabric_evidence": fabric["evidence"],
    }
    module.exit_json(changed=False, ansible_facts={"nvidia_pci": facts})


if __name__ == "__main__":
    main()
