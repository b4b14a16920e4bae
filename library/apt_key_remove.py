#!/usr/bin/python
"""Ansible module: remove a key from an OpenPGP keyring of apt, in Python (no apt-key)."""

from __future__ import annotations

import os
import shutil

from ansible.module_utils.apt_keyring import OpenPGPError, normalize_id, without
from ansible.module_utils.atomic_file import write_atomic
from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
---
module: apt_key_remove
short_description: Remove a key from apt's legacy keyring without apt-key
description:
  - Reads a binary OpenPGP keyring such as C(/etc/apt/trusted.gpg), the one C(apt-key add)
    wrote, in Python (module_utils/apt_keyring.py, module_utils/openpgp.py), so neither
    C(apt-key) (gone from Debian 13 and Ubuntu 24.04) nor C(gpg) is needed.
  - A key matches when its primary fingerprint ends with I(id), as C(apt-key del) matches.
    The keyring is rewritten without the matching keys' packets (the other keys' bytes are
    kept as they were, the file's owner and mode too) and the old file is kept as
    C(<keyring>~), as C(apt-key del) leaves it. When the key was the only one, the keyring
    is moved to C(<keyring>~), as C(apt-key del) does.
  - A missing keyring holds no key; nothing changes. One that is no OpenPGP keyring (a
    GnuPG keybox) is left alone with a warning.
  - Only removal - a key apt should trust is added with apt_repository_trust.
  - In check mode it reports whether the key is there (changed) and writes nothing.
version_added: "0.5.0"
author:
  - Kindling maintainers
options:
  id:
    description:
      - The key's fingerprint (40 hex digits, 64 for a v5 or v6 key), or its 16- or 8-digit key
        id; spaces, case and a leading C(0x) are ignored. Prefer the fingerprint - an 8-digit
        id is easy to collide with.
    type: str
    required: true
  keyring:
    description: The keyring file.
    type: path
    default: /etc/apt/trusted.gpg
  state:
    description: C(absent) removes the key; there is no other state.
    type: str
    choices: [absent]
    default: absent
attributes:
  check_mode:
    support: full
    description: Reports whether the key would be removed and writes nothing.
  diff_mode:
    support: none
    description: The keyring is binary.
"""

EXAMPLES = r"""
- name: Remove NVIDIA's pre-2022 key 7fa2af80
  apt_key_remove:
    keyring: /etc/apt/trusted.gpg
    id: AE09FE4BBD223A84B2CCFCE3F60F4B3D7FA2AF80
    state: absent
"""

RETURN = r"""
found:
  description: The primary fingerprints of the keys I(id) names that the keyring held.
  returned: always
  type: list
  elements: str
keys_left:
  description: How many keys the keyring holds afterwards (null when it could not be read).
  returned: always
  type: int
readable:
  description: >-
    The keyring is missing, empty or an OpenPGP keyring (false for anything else, which is
    left alone).
  returned: always
  type: bool
backup:
  description: Where the keyring as it was is kept (C(<keyring>~)), empty when nothing changed.
  returned: always
  type: str
keyring_removed:
  description: The key was the keyring's only one, so the keyring was moved to its backup.
  returned: always
  type: bool
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "id": {"type": "str", "required": True},
            "keyring": {"type": "path", "default": "/etc/apt/trusted.gpg"},
            "state": {"type": "str", "choices": ["absent"], "default": "absent"},
        },
        supports_check_mode=True,
    )
    path = module.params["keyring"]
    try:
        normalize_id(module.params["id"])
    except ValueError as exc:
        module.fail_json(msg=f"id: {exc}")
    result = {
        "changed": False,
        "found": [],
        "keys_left": 0,
        "readable": True,
        "backup": "",
        "keyring_removed": False,
    }
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        module.exit_json(**result)
    except OSError as exc:
        module.fail_json(msg=f"cannot read {path}: {exc}", **result)
    try:
        rest, found, left = without(data, module.params["id"])
    except OpenPGPError as exc:
        module.warn(f"{path} is no OpenPGP keyring ({exc}); it is left alone")
        result.update(readable=False, keys_left=None)
        module.exit_json(**result)
    result.update(found=found, keys_left=left, changed=bool(found))
    if not found:
        module.exit_json(**result)
    backup = path + "~"
    result["backup"] = backup
    result["keyring_removed"] = left == 0
    if module.check_mode:
        module.exit_json(**result)
    if left == 0:
        os.replace(path, backup)
    else:
        shutil.copy2(path, backup)
        write_atomic(path, rest)  # keeps the keyring's owner and mode
    module.exit_json(**result)


if __name__ == "__main__":
    main()
