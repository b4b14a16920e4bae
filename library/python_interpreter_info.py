#!/usr/bin/python
"""Ansible module: whether a path is a Python interpreter, and its version (read-only)."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import runner
from ansible.module_utils.python_interpreter import read_interpreter, summary

DOCUMENTATION = r"""
---
module: python_interpreter_info
short_description: Read whether a Python interpreter exists and runs, and its version
description:
  - One read with module_utils/python_interpreter.py - whether O(path) exists, whether it is
    an executable file, and, when it is, its major.minor version (C(3.12)), from running
    C(<path> -c 'import sys; print(...)') as an argv list (no shell).
  - A missing or non-executable path is not an error here - C(exists) or C(executable) is
    false and C(version) null, so that the caller refuses it with its own message.
  - Fails, saying why, when the path is an executable file that does not run or does not
    print a Python version (a broken environment, a script that exits non-zero, a file
    without a shebang).
  - Returns plain values to register (no C(ansible_facts)), so that two reads of two
    interpreters in one play do not overwrite each other.
  - Never changes the host; runs the same way in check mode.
version_added: "0.7.0"
author:
  - Kindling maintainers
options:
  path:
    description: The interpreter to read, e.g. an environment's bin/python.
    type: path
    required: true
attributes:
  check_mode:
    support: full
    description: Read-only; it runs the same way in check mode.
  diff_mode:
    support: none
    description: Nothing changes.
seealso:
  - module: torch_env_plan
  - module: python_package_pins_plan
"""

EXAMPLES = r"""
- name: Read the interpreter that makes the venv
  python_interpreter_info:
    path: /usr/bin/python3
  register: base_python

- name: Refuse a missing interpreter
  ansible.builtin.assert:
    that: base_python.exists and base_python.executable
    fail_msg: "{{ base_python.interpreter }} is not an executable interpreter"

- name: Show its version
  ansible.builtin.debug:
    msg: "Python {{ base_python.version }}"
"""

RETURN = r"""
interpreter:
  description:
    - O(path), as given. Not returned as C(path), which would make Ansible add the file's
      owner, mode and size to the result.
  returned: always
  type: str
  sample: /usr/bin/python3
exists:
  description: Whether the path exists (a dangling link does not).
  returned: always
  type: bool
executable:
  description: Whether it is a regular file this user may execute.
  returned: always
  type: bool
version:
  description: The interpreter's major.minor; null when it is missing or not executable.
  returned: always
  type: str
  sample: "3.12"
msg:
  description: One line - the version, or what is wrong with the path.
  returned: always
  type: str
  sample: /usr/bin/python3 is Python 3.12
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={"path": {"type": "path", "required": True}},
        supports_check_mode=True,
    )
    path = module.params["path"]

    # A CommandError (an OSError: ENOEXEC, say) reaches read_interpreter, which words it.
    found = read_interpreter(path, runner(60))
    error = found.pop("error")
    result = {"changed": False, "msg": summary({**found, "error": error}), **found}
    if error:
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
