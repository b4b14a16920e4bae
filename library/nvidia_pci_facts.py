#!/usr/bin/python
"""Ansible module: NVIDIA GPUs and NVSwitches on the PCI bus, from sysfs."""

from __future__ import annotations

import shutil

from ansible.module_utils.basic import AnsibleModule
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
  description: C(nvidia_pci) with C(gpus) (pci_slot, pci_device_id, name), C(gpu_count),
    C(nvswitches) and C(present).
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
    facts = {
        "gpus": found["gpus"],
        "gpu_count": len(found["gpus"]),
        "nvswitches": found["nvswitches"],
        "present": bool(found["gpus"]),
    }
    module.exit_json(changed=False, ansible_facts={"nvidia_pci": facts})


if __name__ == "__main__":
    main()
