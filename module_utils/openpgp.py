"""OpenPGP public keys, read in Python: the fingerprints of a key file, and the one key apt
should trust, as a binary keyring for ``signed-by``.

The roles that trust a vendor's apt repository (nvidia_driver, dcgm_exporter) download the
vendor's key and trust it only when its fingerprint is the pinned one. This module reads
the key file itself (ASCII armor or binary, RFC 4880 and RFC 9580), so no ``gpg`` runs on
the host and no shell parses its output:

- :func:`dearmor` turns an ASCII-armored block into its binary packets;
- :func:`primary_keys` lists each transferable public key: its fingerprint (v4: SHA-1 over
  0x99, a 2-byte length and the key packet; v5: SHA-256 with 0x9A and a 4-byte length; v6:
  SHA-256 with 0x9B and a 4-byte length) and where its packets are;
- :func:`keyring` returns the packets of the key with a given fingerprint (the key, its
  user ids, subkeys and signatures), as ``gpg --export FPR`` would.

Python 3.8, standard library only.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from typing import Dict, List, Tuple

PUBLIC_KEY = 6
# Marker (10) and trust (12) packets carry no key material; gpg --export leaves them out.
SKIPPED = (10, 12)
ARMOR_BEGIN = b"-----BEGIN PGP PUBLIC KEY BLOCK-----"
ARMOR_END = b"-----END PGP PUBLIC KEY BLOCK-----"


class OpenPGPError(ValueError):
    """The file is not an OpenPGP public key (or is damaged)."""


def normalize_fingerprint(text: str) -> str:
    """``"EB69 3B30 ..."`` or lower case -> ``"EB693B30..."``."""
    return re.sub(r"\s", "", str(text)).upper()


def dearmor(data: bytes) -> bytes:
    """The binary packets of an ASCII-armored public key block; binary input is returned."""
    start = data.find(ARMOR_BEGIN)
    if start < 0:
        return data
    end = data.find(ARMOR_END, start)
    if end < 0:
        raise OpenPGPError("the ASCII armor has no END line")
    lines = data[start + len(ARMOR_BEGIN) : end].replace(b"\r", b"").split(b"\n")
    # Armor headers ("Version: ...") hold a colon, which base64 never does; the checksum
    # line starts with "=".
    body = [
        line.strip()
        for line in lines
        if line.strip() and b":" not in line and not line.strip().startswith(b"=")
    ]
    try:
        return base64.b64decode(b"".join(body), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise OpenPGPError(f"the ASCII armor is not valid base64 ({exc})") from exc


def packets(data: bytes) -> List[Tuple[int, int, int, int]]:
    """Every packet as ``(tag, start, body_start, end)`` offsets into ``data``."""
    out = []
    pos = 0
    size = len(data)
    while pos < size:
        head = data[pos]
        if not head & 0x80:
            raise OpenPGPError(f"not an OpenPGP packet at byte {pos}")
        if head & 0x40:  # new format
            tag = head & 0x3F
            if pos + 1 >= size:
                raise OpenPGPError("truncated packet header")
            first = data[pos + 1]
            if first < 192:
                length, body = first, pos + 2
            elif first < 224:
                if pos + 2 >= size:
                    raise OpenPGPError("truncated packet header")
                length, body = ((first - 192) << 8) + data[pos + 2] + 192, pos + 3
            elif first == 255:
                if pos + 5 >= size:
                    raise OpenPGPError("truncated packet header")
                length, body = int.from_bytes(data[pos + 2 : pos + 6], "big"), pos + 6
            else:
                raise OpenPGPError("partial body lengths do not occur in key files")
        else:  # old format
            tag = (head >> 2) & 0x0F
            kind = head & 0x03
            if kind == 3:
                raise OpenPGPError("indeterminate packet lengths do not occur in key files")
            width = 1 << kind
            if pos + width >= size:
                raise OpenPGPError("truncated packet header")
            length = int.from_bytes(data[pos + 1 : pos + 1 + width], "big")
            body = pos + 1 + width
        end = body + length
        if end > size:
            raise OpenPGPError(f"packet at byte {pos} runs past the end of the file")
        out.append((tag, pos, body, end))
        pos = end
    return out


def fingerprint(key_packet_body: bytes) -> str:
    """The fingerprint of a public key packet's body (versions 4, 5 and 6)."""
    if not key_packet_body:
        raise OpenPGPError("empty public key packet")
    version = key_packet_body[0]
    n = len(key_packet_body)
    if version == 4:
        digest = hashlib.sha1(b"\x99" + n.to_bytes(2, "big") + key_packet_body)
    elif version == 5:
        digest = hashlib.sha256(b"\x9a" + n.to_bytes(4, "big") + key_packet_body)
    elif version == 6:
        digest = hashlib.sha256(b"\x9b" + n.to_bytes(4, "big") + key_packet_body)
    else:
        raise OpenPGPError(f"public key packet version {version} is not supported")
    return digest.hexdigest().upper()


def primary_keys(data: bytes) -> List[Dict[str, object]]:
    """Each transferable public key of a key file (armored or binary): its fingerprint and
    the byte range of its packets in the binary form (``binary``)."""
    binary = dearmor(data)
    found: List[Dict[str, object]] = []
    for tag, start, body, end in packets(binary):
        if tag in SKIPPED and not found:
            continue
        if tag == PUBLIC_KEY:
            if found:
                found[-1]["end"] = start
            found.append({"fingerprint": fingerprint(binary[body:end]), "start": start, "end": end})
        elif found:
            found[-1]["end"] = end
        else:
            raise OpenPGPError("the file does not start with a public key packet")
    if not found:
        raise OpenPGPError("no public key in the file")
    return found


def keyring(data: bytes, wanted: str) -> bytes:
    """The binary packets of the key whose fingerprint is ``wanted`` (spaces and case
    ignored); OpenPGPError when the file holds no such key."""
    binary = dearmor(data)
    target = normalize_fingerprint(wanted)
    for key in primary_keys(binary):
        if key["fingerprint"] == target:
            start, end = int(key["start"]), int(key["end"])  # type: ignore[call-overload]
            block = binary[start:end]
            return b"".join(
                block[p_start:p_end]
                for tag, p_start, _body, p_end in packets(block)
                if tag not in SKIPPED
            )
    raise OpenPGPError(f"no key with fingerprint {target} in the file")
