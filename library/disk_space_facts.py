#!/usr/bin/python
"""Ansible module: free disk space under some paths, from os.statvfs. Read-only."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.disk_space import measure

DOCUMENTATION = r"""
---
module: disk_space_facts
short_description: Free disk space under some paths, read with statvfs
description:
  - Reads each path's filesystem with C(os.statvfs) (module_utils/disk_space.py), so no
    C(df) runs and no output is parsed.
  - A path that does not exist yet (C(/opt/conda) on a fresh host) is measured at its
    nearest existing parent, the filesystem it would be created on; C(measured) names the
    path read and C(exists) says whether it was the path itself.
  - C(free_gib) is what C(df --output=avail -BG) prints - the space an unprivileged user may
    still write, in GiB rounded up.
  - A path that cannot be read (permission denied) gets null numbers, its C(error) and a
    warning; the other paths are still measured.
  - Sets C(ansible_facts.disk_space). Never changes the host; runs the same way in check mode.
version_added: "0.5.0"
author:
  - Kindling maintainers
options:
  paths:
    description: Absolute paths to measure, in the order the result lists them.
    type: list
    elements: path
    required: true
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
- name: Measure free disk space where CUDA and conda go
  disk_space_facts:
    paths: [/usr/local, /opt/conda]

- name: Warn when a path has less than 40 GiB free
  ansible.builtin.debug:
    msg: "{{ item.path }} has only {{ item.free_gib }} GB free"
  loop: "{{ ansible_facts['disk_space']['paths'] | selectattr('free_gib', 'number') }}"
  when: item.free_gib < 40
"""

RETURN = r"""
ansible_facts:
  description:
    - C(disk_space) with C(paths), one entry per asked path in the order given - C(path)
      (as asked), C(measured) (the path read, itself or its nearest existing parent),
      C(exists), C(free_bytes), C(free_gib) (rounded up, as C(df -BG)), C(size_bytes),
      C(mount) (the mount point), C(device) and C(fstype) (from /proc/self/mountinfo,
      empty when not listed) and C(error) (empty, or why the numbers are null).
  returned: always
  type: dict
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={"paths": {"type": "list", "elements": "path", "required": True}},
        supports_check_mode=True,
    )
    found = [measure(path) for path in module.params["paths"]]
    for entry in found:
        if entry["error"]:
            module.warn(f"Free space under {entry['path']} is unknown: {entry['error']}")
    module.exit_json(changed=False, ansible_facts={"disk_space": {"paths": found}})


if __name__ == "__main__":
    main()
