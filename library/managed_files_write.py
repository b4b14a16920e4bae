#!/usr/bin/python
"""Ansible module: write small files the controller rendered, in one module run."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.managed_files import ACTION_SPEC, write

DOCUMENTATION = r"""
---
module: managed_files_write
short_description: Write small rendered files in one module run, each only when it differs
description:
  - Writes each file of O(files) whose bytes differ from O(files[].content), atomically (a
    temporary file in the same directory, then a rename), and sets owner, group and mode
    with Ansible's own file-attribute code (module_utils/managed_files.py).
  - For the roles' few small files (profile.d snippets, an ld.so.conf.d entry), rendered on
    the controller with C(lookup('ansible.builtin.template', ...)). ansible.builtin.template
    costs two module runs even when nothing changes (stat, then file); this costs one.
  - Check mode reports what would change and writes nothing; diff mode shows each change.
  - The directory must exist.
  - With O(current), the files as an earlier module run of the same stage read them, the
    controller compares and runs nothing on the host when every file already has its
    content, owner, group and mode (action_plugins/managed_files_write.py).
version_added: "0.9.0"
author:
  - Kindling maintainers
options:
  files:
    description: The files to write.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: Where the file goes.
        type: path
        required: true
      content:
        description: Its whole content.
        type: str
        required: true
      owner:
        description: Its owner (unchanged when omitted).
        type: str
      group:
        description: Its group (unchanged when omitted).
        type: str
      mode:
        description: Its mode, quoted octal such as V("0644") (unchanged when omitted).
        type: raw
  current:
    description:
      - Each file as read earlier in the same stage (module_utils/managed_files.py
        C(describe), e.g. cuda_toolkit_plan's RV(files)), with C(path), C(regular),
        C(sha256), C(owner), C(owner_id), C(group), C(group_id) and C(mode).
      - When every file of O(files) is as wanted by that read, nothing runs on the host
        and the task reports no change. A file it does not describe is written as usual.
      - Pass it only when nothing in between can have changed the files.
    type: list
    elements: dict
attributes:
  check_mode:
    support: full
    description: Reports, writes nothing.
  diff_mode:
    support: full
    description: Each changed file's content before and after.
"""

EXAMPLES = r"""
- name: Write the login-shell environment and the linker path
  managed_files_write:
    files:
      - path: /etc/profile.d/cuda.sh
        content: "{{ lookup('ansible.builtin.template', 'cuda.sh.j2') }}"
        owner: root
        group: root
        mode: "0644"
"""

RETURN = r"""
files:
  description:
    - Per file, C(path), whether it C(changed) (content or attributes) and whether it was
      C(created).
  returned: always
  type: list
  elements: dict
diff:
  description: Each changed file's C(before) and C(after) content, with headers.
  returned: always
  type: list
  elements: dict
"""


def main() -> None:
    # current is the controller side's (action_plugins/managed_files_write.py); here it is unused.
    module = AnsibleModule(argument_spec=ACTION_SPEC, supports_check_mode=True)
    module.exit_json(**write(module))


if __name__ == "__main__":
    main()
