#!/usr/bin/python
"""Ansible module: a random token in a root-only file, safe against planted links."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.secret_files import SecretPathError, ensure_token

DOCUMENTATION = r"""
---
module: secret_token_create
short_description: Keep a random token in a root-only file that no planted link can redirect
description:
  - Creates I(path) with a new random token (24 bytes, hex) when it is missing, and keeps an
    existing one. Sets owner root:root and mode 0600 through the open file, never by path.
  - Refuses, before writing, a path whose directories someone other than root could change (a
    link, a directory not owned by root, or one writable by group or others) and a file that is
    a link. Missing directories are created root-only (0700).
  - The token is never returned; read it with M(ansible.builtin.slurp) and C(no_log).
version_added: "0.4.0"
author:
  - Kindling maintainers
options:
  path:
    description: Where the token lives.
    type: path
    required: true
attributes:
  check_mode:
    support: full
    description: Reports what it would do.
  diff_mode:
    support: none
    description: A secret has no diff to show.
"""

EXAMPLES = r"""
- name: Generate the access token once, readable by root only
  secret_token_create:
    path: /etc/jupyter/token
  no_log: true
"""

RETURN = r"""
done:
  description: What was done (or would be, in check mode); never the token.
  returned: always
  type: list
  elements: str
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={"path": {"type": "path", "required": True}}, supports_check_mode=True
    )
    try:
        result = ensure_token(module.params["path"], check_mode=module.check_mode)
    except SecretPathError as err:
        module.fail_json(
            msg=f"Refusing to write a secret: {err}. Keep it in a root-owned directory that "
            "only root can write, such as /etc/jupyter."
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
