#!/usr/bin/python
"""Ansible module: does CUDA initialise on this host (cuInit through libcuda)? Read-only."""

from __future__ import annotations

import sys

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import CommandError, run
from ansible.module_utils.cuda_init import LIBRARY, interpret, probe_command

DOCUMENTATION = r"""
---
module: cuda_init_facts
short_description: Whether CUDA initialises (cuInit) on the host, and why not
description:
  - Loads C(libcuda.so.1) with ctypes in a child Python, calls C(cuInit(0)) and, when it
    succeeds, C(cuDriverGetVersion) and C(cuDeviceGetCount) (module_utils/cuda_init.py).
  - Sets C(ansible_facts.cuda_init) with C(state) (C(ok), C(failed), C(no_library),
    C(timeout), C(error)), the CUDA error's code, name and description, the host-side fix
    the vendor catalogue knows for it (C(CUDA_ERROR_SYSTEM_NOT_READY), 802, is the fabric
    manager's), and a one-line message.
  - nvidia-smi can list every GPU while CUDA fails (an NVSwitch host without its fabric
    manager); this is the check that tells.
  - Never changes the host; runs the same way in check mode.
version_added: "0.4.0"
author:
  - Kindling maintainers
options:
  library:
    description: The CUDA driver library to load.
    type: str
    default: libcuda.so.1
  timeout:
    description: Seconds the child may take before it is killed (a hung driver).
    type: int
    default: 60
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
- name: Does CUDA initialise?
  cuda_init_facts:

- name: Stop when it does not
  ansible.builtin.fail:
    msg: "{{ ansible_facts['cuda_init']['message'] }}"
  when: ansible_facts['cuda_init']['state'] != 'ok'
"""

RETURN = r"""
ansible_facts:
  description: >-
    C(cuda_init): state, message, library, and by state code/name/description/meaning/fix
    (failed), device_count/driver_api_version/driver_api (ok), error (no_library).
  returned: always
  type: dict
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "library": {"type": "str", "default": LIBRARY},
            "timeout": {"type": "int", "default": 60},
        },
        supports_check_mode=True,
    )
    cmd = probe_command(sys.executable, module.params["library"])
    try:
        rc, out, err = run(cmd, module.params["timeout"])
    except CommandError as exc:
        if not exc.timed_out:
            module.fail_json(msg=str(exc))
        rc, out, err = -1, "", f"timed out after {module.params['timeout']} s"
    module.exit_json(changed=False, ansible_facts={"cuda_init": interpret(rc, out, err)})


if __name__ == "__main__":
    main()
