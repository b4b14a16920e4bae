#!/usr/bin/python
"""Ansible module: make a directory tree shared by a group, in one walk."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.group_share import ARGUMENT_SPEC, ShareError, run

DOCUMENTATION = r"""
---
module: group_share
short_description: Make a directory tree group-owned, group-writable, with setgid directories
description:
  - Walks O(path) once (module_utils/group_share.py) and gives every entry not in O(group)
    that group, the link itself for a symbolic link (as C(chgrp -h)), never its target.
  - A directory missing any of group read, write, execute or setgid gets them (mode
    C(| 02070)), so entries made in it later get the group. A regular file missing group
    read or write gets them (C(| 0060)). Other permission bits stay as they are.
  - Links keep their modes. Sockets, fifos and devices get the group only.
  - Links inside the tree are not followed. A link given as O(path) stands for the
    directory it points to.
  - An entry that vanishes during the walk is skipped. Any other error on an entry fails
    the module, naming the entry.
  - Check mode counts what would change and changes nothing. There a group or a tree that
    does not exist yet (an earlier task would create it) is not an error. A missing group
    counts every entry as regrouped, and a missing tree reports a change with zero counts.
version_added: "0.9.0"
author:
  - Kindling maintainers
options:
  path:
    description: The root of the tree. It must be a directory.
    type: path
    required: true
  group:
    description: The name of the group that shares the tree. It must exist.
    type: str
    required: true
attributes:
  check_mode:
    support: full
    description: Counts what would change, changes nothing.
  diff_mode:
    support: none
    description: The counts and RV(examples) say what changed.
"""

EXAMPLES = r"""
- name: Give the group pytorch the environment
  group_share:
    path: /opt/venvs/pytorch
    group: pytorch
"""

RETURN = r"""
regrouped:
  description: How many entries got the group.
  returned: always
  type: int
dirs_opened:
  description: How many directories got group read, write, execute or setgid.
  returned: always
  type: int
files_opened:
  description: How many regular files got group read or write.
  returned: always
  type: int
examples:
  description: The first changed paths, five at most.
  returned: always
  type: list
  elements: str
msg:
  description: One line naming the tree and the group, and saying what changed.
  returned: always
  type: str
"""


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    try:
        result = run(p["path"], p["group"], module.check_mode)
    except ShareError as error:
        module.fail_json(msg=str(error))
    # No path key in the result: AnsibleModule would add that path's owner, group and mode.
    module.exit_json(**result)


if __name__ == "__main__":
    main()
