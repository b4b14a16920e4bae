"""module_utils/openpgp.py (which apt_repository_trust uses) against keys real gpg makes: the
fingerprints must be gpg's own, and the keyring written for apt must be the pinned key
that gpg reads back, from ASCII-armored and binary files, with one key or two."""

from __future__ import annotations

import os

import pytest
from ansible.module_utils.openpgp import (
    OpenPGPError,
    dearmor,
    fingerprint,
    keyring,
    normalize_fingerprint,
    packets,
    primary_keys,
)
from gpg_helpers import gpg, primary_fingerprints


def _gpg_fingerprints(home, key_file):
    return primary_fingerprints(gpg(home, "--with-colons", "--show-keys", str(key_file)))


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """Two RSA keys (one with an encryption subkey) and one ed25519 key, made by gpg."""
    home = tmp_path_factory.mktemp("gnupg")
    os.chmod(home, 0o700)
    for uid, algo in (
        ("Kindling Test A <a@kindling.invalid>", "rsa2048"),
        ("Kindling Test B <b@kindling.invalid>", "ed25519"),
    ):
        gpg(home, "--passphrase", "", "--quick-gen-key", uid, algo, "sign", "never")
    listing = gpg(home, "--with-colons", "--list-keys").decode()
    fprs = [ln.split(":")[9] for ln in listing.splitlines() if ln.startswith("fpr:")]
    a, b = fprs[0], fprs[1]
    gpg(home, "--passphrase", "", "--quick-add-key", a, "rsa2048", "encr", "never")
    out = tmp_path_factory.mktemp("keys")
    files = {
        "a.asc": gpg(home, "--armor", "--export", a),
        "a.gpg": gpg(home, "--export", a),
        "both.asc": gpg(home, "--armor", "--export", a, b),
        "b.gpg": gpg(home, "--export", b),
    }
    for name, content in files.items():
        (out / name).write_bytes(content)
    return {"home": home, "dir": out, "a": a, "b": b}


def test_fingerprints_are_gpgs(keys):
    for name in ("a.asc", "a.gpg", "both.asc", "b.gpg"):
        path = keys["dir"] / name
        ours = [k["fingerprint"] for k in primary_keys(path.read_bytes())]
        assert ours == _gpg_fingerprints(keys["home"], path), name
    assert [k["fingerprint"] for k in primary_keys((keys["dir"] / "both.asc").read_bytes())] == [
        keys["a"],
        keys["b"],
    ]


def test_armor_and_binary_hold_the_same_packets(keys):
    assert dearmor((keys["dir"] / "a.asc").read_bytes()) == (keys["dir"] / "a.gpg").read_bytes()
    # A subkey (tag 14) does not start a new key.
    tags = [t for t, *_ in packets((keys["dir"] / "a.gpg").read_bytes())]
    assert tags.count(6) == 1 and 14 in tags


def test_the_keyring_is_the_pinned_key_alone_and_gpg_reads_it(keys, tmp_path):
    out = keyring((keys["dir"] / "both.asc").read_bytes(), keys["b"].lower())
    assert out == (keys["dir"] / "b.gpg").read_bytes()
    (tmp_path / "b.keyring").write_bytes(out)
    assert _gpg_fingerprints(keys["home"], tmp_path / "b.keyring") == [keys["b"]]
    with pytest.raises(OpenPGPError, match="no key with fingerprint"):
        keyring((keys["dir"] / "a.asc").read_bytes(), keys["b"])


@pytest.mark.parametrize(
    "data, message",
    [
        (b"<html>404 Not Found</html>", "not an OpenPGP packet"),
        (b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQ!!\n", "no END line"),
        (b"\x99\x00\x10\x04", "runs past the end"),
        (b"\xb4\x03abc", "does not start with a public key"),  # a user id packet first
    ],
)
def test_what_is_not_a_key_is_refused(data, message):
    with pytest.raises(OpenPGPError, match=message):
        primary_keys(data)


def test_fingerprint_versions_and_spacing():
    assert normalize_fingerprint("eb69 3b30 35cd\t5710") == "EB693B3035CD5710"
    assert len(fingerprint(b"\x04" + b"\x00" * 10)) == 40  # v4: SHA-1
    assert len(fingerprint(b"\x06" + b"\x00" * 10)) == 64  # v6: SHA-256
    with pytest.raises(OpenPGPError, match="version 3"):
        fingerprint(b"\x03abc")
