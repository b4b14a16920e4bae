"""Keys in apt's legacy keyring (/etc/apt/trusted.gpg), found and removed in Python.

Before 2022 NVIDIA's CUDA repository was trusted with ``apt-key add``, which put NVIDIA's key
7fa2af80 into /etc/apt/trusted.gpg, a binary OpenPGP keyring: the transferable public keys,
one after another (the key packet, its user ids, subkeys and signatures, and the trust
packets gpg writes into such a keyring). ``apt-key`` is gone from Debian 13 and Ubuntu 24.04,
so the key is found here with module_utils/openpgp.py, and removed the way ``apt-key del``
removed it:

- a key matches when its primary fingerprint ends with the id asked for (a full
  fingerprint, or the 16- or 8-digit key id), as ``apt-key del`` matches;
- the keyring without it is every other key's bytes, unchanged and in order; the file as it
  was is kept as ``<keyring>~`` (gpg's backup, which ``apt-key del`` leaves too);
- when the key was the only one, the keyring is moved to ``<keyring>~`` (apt-key does that
  instead of leaving an empty keyring).

Runs on target hosts: Python 3.8, standard library only.
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple, cast

from ansible.module_utils.openpgp import OpenPGPError, dearmor, normalize_fingerprint, primary_keys

_HEX = re.compile(r"^(?:[0-9A-F]{8}|[0-9A-F]{16}|[0-9A-F]{40}|[0-9A-F]{64})$")


def normalize_id(key_id: str) -> str:
    """``"0x7fa2af80"``, ``"F60F 4B3D 7FA2 AF80"`` -> upper-case hex; ValueError unless it is
    an 8- or 16-digit key id or a v4 (40) or v5/v6 (64) fingerprint."""
    text = normalize_fingerprint(key_id)
    if text.startswith("0X"):
        text = text[2:]
    if not _HEX.match(text):
        raise ValueError(
            f"{key_id!r} is no key id: give the fingerprint (40 hex digits) or the 16- or "
            "8-digit key id"
        )
    return text


def keys(data: bytes) -> List[Dict[str, object]]:
    """The keyring's primary keys (``fingerprint``, ``start``, ``end`` in its binary form);
    [] for an empty file. OpenPGPError when it is no OpenPGP keyring (a GnuPG keybox)."""
    if not data.strip():
        return []
    return primary_keys(data)


def without(data: bytes, key_id: str) -> Tuple[bytes, List[str], int]:
    """``(keyring without the keys key_id names, their fingerprints, keys left)``. The other
    keys' packets (and any packets before the first key) are kept byte for byte."""
    wanted = normalize_id(key_id)
    binary = dearmor(data)
    found = keys(binary)
    removed = [k for k in found if str(k["fingerprint"]).endswith(wanted)]
    if not removed:
        return data, [], len(found)
    kept = []
    pos = 0
    for key in removed:
        kept.append(binary[pos : cast(int, key["start"])])
        pos = cast(int, key["end"])
    kept.append(binary[pos:])
    return b"".join(kept), [str(k["fingerprint"]) for k in removed], len(found) - len(removed)


__all__ = ["OpenPGPError", "keys", "normalize_id", "without"]
