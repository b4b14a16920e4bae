"""gpg for the tests that check Kindling's OpenPGP code against gpg itself (real keys,
real keyrings): run it in a throwaway home, and read its colon listings."""

from __future__ import annotations

import shutil
import subprocess
from typing import List, Optional

import pytest

GPG = shutil.which("gpg")


def gpg(home, *args, data: Optional[bytes] = None) -> bytes:
    """gpg's stdout; the test fails with gpg's stderr when gpg fails or is missing."""
    if GPG is None:
        pytest.fail("gpg is not installed on this machine (apt-get install gnupg): make apt-deps")
    run = subprocess.run(
        [GPG, "--batch", "--quiet", "--homedir", str(home), *args],
        input=data,
        capture_output=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr.decode()
    return run.stdout


def primary_fingerprints(colon_listing: bytes) -> List[str]:
    """The primary keys' fingerprints in a ``--with-colons`` listing (not the subkeys')."""
    fprs, primary = [], False
    for line in colon_listing.decode().splitlines():
        fields = line.split(":")
        if fields[0] == "pub":
            primary = True
        elif fields[0] == "fpr" and primary:
            fprs.append(fields[9])
            primary = False
    return fprs
