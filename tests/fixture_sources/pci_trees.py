#!/usr/bin/env python3
"""Build sysfs PCI trees (/sys/bus/pci/devices) from the listings in tests/fixtures/pci/.

A listing line is one PCI function (tests/fixtures/pci/README.md):

    <slot> <vendor> <device> <class> [vpd=<text>|vpd=unreadable]

Each becomes ``<slot>/vendor``, ``device`` and ``class`` files ("0x10de\\n") and, with
``vpd=``, a binary ``vpd`` file holding the text inside a VPD-like frame (``vpd=unreadable``
makes ``vpd`` a folder, so reading it fails as it does for a user who is not root).

Used by the unit tests (a tree per test) and by the fixture build, which writes every case to
``<out>/sysfs/<case>/`` so that a Molecule host can mount one over its
/sys/bus/pci/devices (molecule/nvidia_driver: an HGX H100 baseboard).

    pci_trees.py --out DIR      write DIR/sysfs/<case>/ for every listing
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

LISTINGS = Path(__file__).resolve().parents[1] / "fixtures" / "pci"


def vpd_frame(text: str) -> bytes:
    payload = text.encode("ascii")
    return b"\x82\x0a\x00ConnectX-7\x90" + bytes([len(payload)]) + b"\x00" + payload + b"\x78"


def build_tree(listing: Path, root: Path) -> Path:
    """Write the functions of one listing under ``root`` (made fresh); returns ``root``."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for line in listing.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        slot, vendor, device, klass, *rest = line.split()
        function = root / slot
        function.mkdir()
        (function / "vendor").write_text(vendor + "\n")
        (function / "device").write_text(device + "\n")
        (function / "class").write_text(klass + "\n")
        for extra in rest:
            key, _, value = extra.partition("=")
            if key == "vpd" and value == "unreadable":
                (function / "vpd").mkdir()
            elif key == "vpd":
                (function / "vpd").write_bytes(vpd_frame(value))
    return root


def build_all(out: Path) -> list:
    """Every listing to ``out/sysfs/<case>/``; returns the case names."""
    cases = []
    for listing in sorted(LISTINGS.glob("*.txt")):
        build_tree(listing, out / "sysfs" / listing.stem)
        cases.append(listing.stem)
    return cases


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    cases = build_all(args.out)
    where = args.out / "sysfs"
    print(f"kindling fixtures: {len(cases)} sysfs PCI trees in {where}: {', '.join(cases)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
