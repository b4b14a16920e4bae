#!/usr/bin/python
"""Ansible module: a downloaded OpenPGP key's fingerprints, and the pinned key as a keyring."""

from __future__ import annotations

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.openpgp import (
    OpenPGPError,
    keyring,
    normalize_fingerprint,
    primary_keys,
)

DOCUMENTATION = r"""
---
module: openpgp_key
short_description: Read a repository key's fingerprints, and write the pinned key as a keyring
description:
  - Reads an OpenPGP public key file (ASCII armor or binary) in Python with
    module_utils/openpgp.py: no gpg on the host, no shell parsing its output.
  - Returns the fingerprints of its primary keys, and whether the pinned one is among them.
  - With O(dest), writes the pinned key alone, in the binary form apt's C(signed-by)
    reads, when it differs from what is there; nothing is written when the key is not the
    pinned one. The caller decides what a mismatch means (the roles refuse to trust it).
version_added: "0.6.0"
author:
  - Kindling maintainers
options:
  src:
    description: The downloaded key file on the host.
    type: path
    required: true
  fingerprint:
    description: The pinned fingerprint (spaces and case are ignored).
    type: str
    required: true
  dest:
    description: Where to write the pinned key as a binary keyring (mode 0644); none when empty.
    type: path
    default: ""
attributes:
  check_mode:
    support: full
    description: Reads in check mode and reports whether O(dest) would change.
  diff_mode:
    support: none
    description: The keyring is binary.
"""

EXAMPLES = r"""
- name: Read the key's fingerprint and keep the pinned key for apt
  openpgp_key:
    src: /var/lib/kindling/nvidia_driver/cuda-archive-keyring.pub
    fingerprint: EB693B3035CD5710E231E123A4B469963BF863CC
    dest: /var/lib/kindling/nvidia_driver/cuda-archive-keyring.pub.gpg
  register: key
"""

RETURN = r"""
fingerprints:
  description: The fingerprints of the file's primary keys, upper case, without spaces.
  returned: always
  type: list
  elements: str
matched:
  description: Whether the pinned fingerprint is among them.
  returned: always
  type: bool
error:
  description: Why the file could not be read as an OpenPGP key; null when it could.
  returned: always
  type: str
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "src": {"type": "path", "required": True},
            "fingerprint": {"type": "str", "required": True},
            "dest": {"type": "path", "default": ""},
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        with open(p["src"], "rb") as handle:
            data = handle.read()
    except OSError as exc:
        module.fail_json(msg=f"openpgp_key: can't read {p['src']}: {exc}")
    wanted = normalize_fingerprint(p["fingerprint"])
    result = {"changed": False, "fingerprints": [], "matched": False, "error": None}
    try:
        result["fingerprints"] = [str(k["fingerprint"]) for k in primary_keys(data)]
    except OpenPGPError as exc:
        # Not a key (an HTML error page, say): no fingerprint, so the caller refuses it.
        result["error"] = str(exc)
        module.exit_json(**result)
    result["matched"] = wanted in result["fingerprints"]
    if result["matched"] and p["dest"]:
        wanted_bytes = keyring(data, wanted)
        try:
            with open(p["dest"], "rb") as handle:
                current = handle.read()
        except OSError:
            current = None
        if current != wanted_bytes:
            result["changed"] = True
            if not module.check_mode:
                tmp = f"{p['dest']}.kindling-tmp"
                with open(tmp, "wb") as handle:
                    handle.write(wanted_bytes)
                os.chmod(tmp, 0o644)
                module.atomic_move(tmp, p["dest"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
