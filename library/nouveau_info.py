#!/usr/bin/python
"""Ansible module: where nouveau stands on a host, in one read. Read-only."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.managed_files import describe
from ansible.module_utils.nouveau_state import ARGUMENT_SPEC, read

DOCUMENTATION = r"""
---
module: nouveau_info
short_description: Read where nouveau stands - kernel modules, initramfs tool, module, blacklist
description:
  - One read of what the nouveau role needs (module_utils/nouveau_state.py) - whether the
    host loads its own kernel modules (O(modprobe_dir) is there; a container has none),
    which initramfs tool it has (C(update-initramfs), C(dracut) or none), whether nouveau is
    loaded (O(module_sysfs_path)) and the blacklist file as managed_files describes it.
  - The role hands RV(blacklist) to managed_files as C(current), so writing the blacklist
    again runs nothing on the host when it is already as rendered.
  - Never changes the host; runs the same way in check mode.
version_added: "0.9.0"
author:
  - Kindling maintainers
options:
  blacklist:
    description: The blacklist file (C(nouveau_modprobe_file)).
    type: path
    required: true
  module_sysfs_path:
    description: Where a loaded nouveau shows (C(nouveau_module_sysfs_path)).
    type: path
    default: /sys/module/nouveau
  modprobe_dir:
    description: The directory modprobe reads its configuration from.
    type: path
    default: /etc/modprobe.d
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Read where nouveau stands
  nouveau_info:
    blacklist: /etc/modprobe.d/blacklist-nouveau.conf
  register: nouveau__state
"""

RETURN = r"""
modprobe_dir:
  description: The directory read.
  returned: always
  type: str
manages_modules:
  description: Whether O(modprobe_dir) is a directory - the host loads its own kernel modules.
  returned: always
  type: bool
initramfs_tool:
  description: C(update-initramfs), C(dracut), or empty when neither is installed.
  returned: always
  type: str
initramfs_command:
  description:
    - The argv that regenerates every installed kernel's initramfs with that tool
      (C(update-initramfs -u -k all), C(dracut --force --regenerate-all)); empty without a tool.
  returned: always
  type: list
  elements: str
loaded:
  description: Whether nouveau is loaded now.
  returned: always
  type: bool
blacklist:
  description:
    - The blacklist file as module_utils/managed_files.py C(describe) gives it - C(path),
      C(regular), and for a regular file C(sha256), C(owner), C(owner_id), C(group),
      C(group_id) and C(mode).
  returned: always
  type: dict
"""


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    module.exit_json(
        changed=False,
        **read(p["blacklist"], p["module_sysfs_path"], describe, modprobe_dir=p["modprobe_dir"]),
    )


if __name__ == "__main__":
    main()
