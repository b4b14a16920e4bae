#!/usr/bin/python
"""Ansible module: where the NVIDIA kernel module stands for the running kernel."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.kernel_module_state import read

DOCUMENTATION = r"""
---
module: nvidia_kernel_module_facts
short_description: Whether the NVIDIA kernel module is built and loaded for the running kernel
description:
  - Reads C(dkms status), C(modinfo -k <running kernel> -F version nvidia) and
    C(/proc/driver/nvidia/version), and returns C(ansible_facts.nvidia_kernel_module) with a
    C(state) (C(loaded), C(built), C(not_built), C(absent)), the reason and the next step
    (module_utils/kernel_module_state.py).
  - Read-only; runs the same way in check mode.
version_added: "0.3.0"
author:
  - Kindling maintainers
options:
  in_container:
    description: The host is a container (it runs another host's kernel).
    type: bool
    default: false
  module:
    description: The kernel module asked about.
    type: str
    default: nvidia
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
  facts:
    support: full
"""

EXAMPLES = r"""
- name: Is the module built for the running kernel?
  nvidia_kernel_module_facts:
    in_container: "{{ ansible_facts['virtualization_role'] == 'guest' }}"
"""

RETURN = r"""
ansible_facts:
  description: C(nvidia_kernel_module) with state, reason, next_step, running_kernel, built_for,
    dkms (rows of dkms status), module_version, loaded_version, headers_present, stale.
  returned: always
  type: dict
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "in_container": {"type": "bool", "default": False},
            "module": {"type": "str", "default": "nvidia"},
        },
        supports_check_mode=True,
    )
    state = read(module, module.params["in_container"], module.params["module"])
    module.exit_json(changed=False, ansible_facts={"nvidia_kernel_module": state})


if __name__ == "__main__":
    main()
