"""NVIDIA devices on the PCI bus, read from sysfs (no driver, no package needed).

A GPU is a device of vendor 0x10de whose class is a display controller (0x03xxxx); an
NVSwitch is vendor 0x10de with class 0x0680xx (bridge, other). Works before any driver
is installed, in check mode, and on images without lspci.
Runs on target hosts: Python 3.8, standard library only.
"""

from __future__ import annotations

import os
import re
from typing import Callable, Dict, List, Optional

NVIDIA_VENDOR = "0x10de"


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def scan(
    root: str = "/sys/bus/pci/devices", name_of: Optional[Callable[[str], str]] = None
) -> Dict[str, List[Dict[str, str]]]:
    """{"gpus": [...], "nvswitches": [...]}: each with pci_slot, pci_device_id, name."""
    gpus: List[Dict[str, str]] = []
    switches: List[Dict[str, str]] = []
    try:
        slots = sorted(os.listdir(root))
    except OSError:
        slots = []
    for slot in slots:
        base = os.path.join(root, slot)
        if _read(os.path.join(base, "vendor")).lower() != NVIDIA_VENDOR:
            continue
        klass = _read(os.path.join(base, "class")).lower()
        device = _read(os.path.join(base, "device")).lower()
        entry = {
            "pci_slot": slot,
            "pci_device_id": device.replace("0x", "").upper() + "10DE" if device else "",
            "name": (name_of(slot) if name_of else "") or "",
        }
        if klass.startswith("0x03"):
            gpus.append(entry)
        elif klass.startswith("0x0680"):
            switches.append(entry)
    return {"gpus": gpus, "nvswitches": switches}


_LSPCI_MM = re.compile(r'"([^"]*)"')


def lspci_name(line: str) -> str:
    """The device name from one ``lspci -mm`` line ('00:06.0 "3D controller" "NVIDIA
    Corporation" "GH100 [H200 SXM 141GB]" ...' -> "GH100 [H200 SXM 141GB]")."""
    fields = _LSPCI_MM.findall(line)
    return fields[2] if len(fields) >= 3 else ""
