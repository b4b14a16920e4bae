#!/usr/bin/python
"""Ansible module: read the driver packages' dpkg state and decide install, present or adopt."""

from __future__ import annotations

from typing import Any, Dict

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.driver_state import (
    decide,
    query_dpkg,
    read_change_record,
    read_secure_boot,
)
from ansible.module_utils.kernel_module_state import read as read_kernel_module

DOCUMENTATION = r"""
---
module: nvidia_driver_plan
short_description: Decide whether the NVIDIA driver is installed, kept or adopted
description:
  - Reads the dpkg status of the wanted driver packages and of the layout's
    branch-selecting packages (C(dpkg-query), read-only), and decides with
    module_utils/driver_state.py what the nvidia_driver role does.
  - C(install) when a wanted package is missing, at another version, or left unfinished
    by a killed dpkg run; C(present) when all are installed at the wanted version;
    C(adopted) when a driver Kindling did not install works and meets the minimum.
  - Never changes the host; runs the same way in check mode.
version_added: "0.2.0"
author:
  - Kindling maintainers
options:
  packages:
    description: The wanted driver packages (gpu_stack_plan's C(packages.driver.packages)).
    type: list
    elements: str
    required: true
  version_regex:
    description: A regex an installed Debian version of the wanted driver matches.
    type: str
    required: true
  selection:
    description: dpkg patterns of the layout's branch- or flavour-selecting packages.
    type: list
    elements: str
    default: []
  branch:
    description: The requested branch (C(nvidia_driver_branch)).
    type: str
    required: true
  version:
    description: The requested exact version, if any (C(nvidia_driver_version)).
    type: str
    default: ""
  smi_version:
    description: The driver version nvidia-smi reports (empty when none works).
    type: str
    default: ""
  adopt_newer:
    description: Adopt a working driver of a newer branch that meets C(minimum).
    type: bool
    default: true
  adopt_any_branch:
    description: Adopt any working driver that meets C(minimum) (preinstalled hosts).
    type: bool
    default: false
  minimum:
    description: The lowest driver version that may be adopted.
    type: str
    default: ""
  keep:
    description:
      - More wanted packages that are not version-matched (NVIDIA's branch-pinning
        package); they are never listed as unwanted.
    type: list
    elements: str
    default: []
  efivars_path:
    description:
      - Where efivarfs is; its C(SecureBoot-*) variable says whether Secure Boot is on
        (C(mokutil --sb-state) too, when installed). Returned as C(secure_boot).
    type: path
    default: /sys/firmware/efi/efivars
  kernel_module_facts:
    description:
      - Also read where the kernel module stands for the running kernel, in the same run, and
        return it as C(ansible_facts.nvidia_kernel_module), what nvidia_kernel_module_facts
        returns (module_utils/kernel_module_state.py). The role reads it again only after
        packages changed.
    type: bool
    default: false
  in_container:
    description: The host is a container, running another host's kernel (O(kernel_module_facts)).
    type: bool
    default: false
  state_dir:
    description:
      - The role's state directory (C(nvidia_driver_state_dir)). Given, the role's record of a
        driver change (C(nvidia_driver/changed.json)) and this boot's id are read too and
        returned as RV(change_record), for nvidia_driver_reboot_plan's C(change_record).
    type: path
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Decide what to do with the driver
  nvidia_driver_plan:
    packages: "{{ plan.packages.driver.packages }}"
    version_regex: "{{ plan.packages.driver.version_regex }}"
    selection: "{{ plan.packages.driver.selection }}"
    branch: "580"
    smi_version: "{{ ansible_facts.nvidia_smi.driver_version | default('', true) }}"
  register: driver_state
"""

RETURN = r"""
change_record:
  description: With O(state_dir), C(record) (changed.json, parsed, or null) and C(boot_id).
  returned: when state_dir is given
  type: dict
ansible_facts:
  description: C(nvidia_kernel_module), as nvidia_kernel_module_facts returns it.
  returned: when kernel_module_facts is true
  type: dict
secure_boot:
  description: C(enabled), the C(source) that said so (efi variable, mokutil) and a C(detail).
  returned: always
  type: dict
outcome:
  description: install, present or adopted.
  returned: always
  type: str
reason:
  description: One sentence saying why.
  returned: always
  type: str
installed:
  description: Installed packages of those queried, with version and held.
  returned: always
  type: dict
unfinished:
  description: Packages a killed dpkg run left unpacked or half-configured.
  returned: always
  type: list
unwanted:
  description: Installed branch/flavour-selecting packages the plan does not want.
  returned: always
  type: list
unwanted_held:
  description: Those of C(unwanted) that are held.
  returned: always
  type: list
wanted_present:
  description: Whether every wanted package is installed at the wanted version.
  returned: always
  type: bool
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "packages": {"type": "list", "elements": "str", "required": True},
            "version_regex": {"type": "str", "required": True},
            "selection": {"type": "list", "elements": "str", "default": []},
            "branch": {"type": "str", "required": True},
            "version": {"type": "str", "default": ""},
            "smi_version": {"type": "str", "default": ""},
            "adopt_newer": {"type": "bool", "default": True},
            "adopt_any_branch": {"type": "bool", "default": False},
            "minimum": {"type": "str", "default": ""},
            "keep": {"type": "list", "elements": "str", "default": []},
            "efivars_path": {"type": "path", "default": "/sys/firmware/efi/efivars"},
            "kernel_module_facts": {"type": "bool", "default": False},
            "in_container": {"type": "bool", "default": False},
            "state_dir": {"type": "path"},
        },
        supports_check_mode=True,
    )
    p = module.params
    names = list(dict.fromkeys(p["packages"] + p["keep"] + p["selection"]))
    dpkg = query_dpkg(module, names)
    result: Dict[str, Any] = decide(
        packages=p["packages"],
        version_regex=p["version_regex"],
        selection_patterns=p["selection"],
        dpkg=dpkg,
        smi_version=p["smi_version"] or None,
        branch=p["branch"],
        version=p["version"] or None,
        adopt_newer=p["adopt_newer"],
        minimum=p["minimum"] or None,
        adopt_any_branch=p["adopt_any_branch"],
        keep=p["keep"],
    )
    result["secure_boot"] = read_secure_boot(module, p["efivars_path"])
    if p["state_dir"]:
        result["change_record"] = read_change_record(p["state_dir"])
    if p["kernel_module_facts"]:
        result["ansible_facts"] = {
            "nvidia_kernel_module": read_kernel_module(module, p["in_container"])
        }
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
