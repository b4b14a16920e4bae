"""The NVSwitch fabric: does this host need NVIDIA's fabric manager, and is its fabric up?

HGX/DGX baseboards put their GPUs behind NVSwitches. Their NVLinks carry traffic only once
NVIDIA's fabric manager (``nvidia-fabricmanager.service``, at exactly the driver's version)
has set the fabric up; on NVLink 5 boards (HGX B200/B300/B100) it also needs the NVLink
subnet manager (nvlsm) and the InfiniBand modules. Every fact about that world (NVSwitch PCI
ids per generation, how the fourth generation shows up instead, NVML's fabric states and
nvidia-smi's spelling of them, the unit's name) is in the vendor catalogue, section
``nvswitch_devices``, with its source. This file reads:

* ``parse_fabric_xml`` / ``parse_fabric_text``: the ``<fabric>`` element of ``nvidia-smi -q
  -x`` and the "Fabric" block of ``nvidia-smi -q`` (state, status, CliqueId, ClusterUUID,
  health summary), per GPU;
* ``parse_nvlink_status``: ``nvidia-smi nvlink -s`` (``--status``): per GPU, per link, a
  speed in GB/s or ``<inactive>``;
* ``topo_nvlinks``: the NVLinks per GPU that ``nvidia-smi topo -m`` shows (``NV18``), from
  ``nvidia_smi.parse_topo``'s matrix;
* ``nvswitches_on_pci`` / ``scan_nvlink5_bridges``: NVSwitches among ``pci_gpus.scan``'s
  NVIDIA bridges, and the ConnectX-7 management functions of an NVLink 5 board (their VPD
  carries ``SW_MNG``), from sysfs;

and decides:

* ``pci_requirements``: what PCI alone says, before any driver;
* ``pci_facts``: the ``nvidia_pci`` fact (the scan, lspci's names, ``pci_requirements``),
  which nvidia_pci_facts returns, and nvidia_smi_facts too with ``pci_facts: true``;
* ``fabric_requirements``: the host's fabric: NVSwitches, per-GPU fabric state, NVLinks up,
  whether it needs the fabric manager and NVLink 5's extras, one reason and the evidence;
* ``fabric_health``: problems in the shape of ``nvidia_smi.health`` (codes
  ``nvlink-down``, ``fabric-state-not-completed``, ``fabric-state-failed``,
  ``fabric-manager-version-mismatch``, ``fabric-manager-missing``);
* ``collect``: the calls ``nvidia_smi_facts`` makes for all of this, through its runner.

The output formats parsed here were read from public captures (catalogue sources
``smi_fabric_text``, ``smi_nvlink_status``, ``fm_version_text``, ``nv_fm_guide``); the
project's one real capture (tests/fixtures/captures/h200, one H200 alone) has every fabric
field "N/A" and no NVLink.

Runs on target hosts: Python 3.8 compatible, standard library only.
"""

from __future__ import annotations

import os
import re
import shutil
import xml.etree.ElementTree as ET
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible.module_utils.command import Runner
from ansible.module_utils.gpu_compat import _token_pattern
from ansible.module_utils.nvidia_smi import (
    _issue,
    _label,
    classify_error,
    clean,
    normalize_bus_id,
)
from ansible.module_utils.pci_gpus import lspci_name
from ansible.module_utils.pci_gpus import scan as pci_scan
from ansible.module_utils.stack_plan import fabric_manager_packages
from ansible.module_utils.vendor_catalogue import CATALOGUE

PCI_ROOT = "/sys/bus/pci/devices"

#: States that mean a GPU takes part in an NVLink fabric (NVML's probe ran or is running).
ATTACHED_STATES = ("not_started", "in_progress", "completed", "unknown")

#: The VPD of a PCI function is at most 32 KiB (PCI spec); never read more.
_VPD_LIMIT = 32768


def _section(catalogue: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    return (catalogue or CATALOGUE)["nvswitch_devices"]


def nvlink_command(smi: str) -> List[str]:
    return [smi, "nvlink", "-s"]


# ---------------------------------------------------------------------------
# Fabric state: nvidia-smi -q -x <fabric> and nvidia-smi -q "Fabric"
# ---------------------------------------------------------------------------


def state_key(text: Optional[str], catalogue: Optional[Dict[str, Any]] = None) -> Optional[str]:
    """nvidia-smi's fabric state text -> "not_supported", "not_started", "in_progress",
    "completed", "unknown" (text nvidia-smi may print that the catalogue lacks), or None
    (no fabric state reported at all)."""
    if text is None:
        return None
    raw = " ".join(text.split()).lower()
    for row in _section(catalogue)["fabric_states"]:
        if raw in (t.lower() for t in row["nvidia_smi"]):
            return row["key"]
    return "not_supported" if clean(text) is None else "unknown"


def _entry(
    index: int,
    bus_id: Optional[str],
    values: Dict[str, Optional[str]],
    catalogue: Optional[Dict[str, Any]],
) -> Dict[str, Any]:
    state_text = values.get("state")
    return {
        "gpu": index,
        "pci_bus_id": normalize_bus_id(bus_id),
        "state": state_key(state_text, catalogue),
        "state_text": clean(state_text),
        "status": clean(values.get("status")),
        "clique_id": clean(values.get("clique_id")),
        "cluster_uuid": clean(values.get("cluster_uuid")),
        "health_summary": clean(values.get("health_summary")),
    }


def _text(elem: Optional[ET.Element], path: str) -> Optional[str]:
    found = None if elem is None else elem.find(path)
    return None if found is None else (found.text or "")


def parse_fabric_xml(text: str, catalogue: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """Per GPU of ``nvidia-smi -q -x``: its ``<fabric>`` (state None where the driver prints
    no ``<fabric>`` element). Raises ValueError when the text is not XML."""
    try:
        root = ET.fromstring(text.strip().encode("utf-8"))
    except ET.ParseError as exc:
        raise ValueError(f"nvidia-smi -q -x output is not XML: {exc}") from exc
    out = []
    for index, gpu in enumerate(root.findall("gpu")):
        fabric = gpu.find("fabric")
        values = {
            "state": _text(fabric, "state"),
            "status": _text(fabric, "status"),
            "clique_id": _text(fabric, "cliqueId"),
            "cluster_uuid": _text(fabric, "clusterUuid"),
            "health_summary": _text(fabric, "health/summary"),
        }
        bus = _text(gpu, "pci/pci_bus_id") or gpu.get("id")
        out.append(_entry(index, bus, values, catalogue))
    return out


_TEXT_KEYS = {
    "state": "state",
    "status": "status",
    "cliqueid": "clique_id",
    "clusteruuid": "cluster_uuid",
}


def parse_fabric_text(
    text: str, catalogue: Optional[Dict[str, Any]] = None
) -> List[Dict[str, Any]]:
    """Per GPU of ``nvidia-smi -q`` (text): its "Fabric" block, as parse_fabric_xml."""
    out: List[Dict[str, Any]] = []
    bus: Optional[str] = None
    values: Dict[str, Optional[str]] = {}
    fabric_indent: Optional[int] = None
    in_health = False

    def close() -> None:
        if bus is not None:
            out.append(_entry(len(out), bus, values, catalogue))

    for line in text.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        stripped = line.strip()
        gpu = re.match(r"^GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f])\s*$", line)
        if gpu:
            close()
            bus, values, fabric_indent, in_health = gpu.group(1), {}, None, False
            continue
        if bus is None:
            continue
        if stripped == "Fabric" and ":" not in line:
            fabric_indent, in_health = indent, False
            continue
        if fabric_indent is None:
            continue
        if indent <= fabric_indent:
            fabric_indent = None
            continue
        key, sep, value = stripped.partition(":")
        name = " ".join(key.split()).lower()
        if not sep:
            in_health = name == "health"
            continue
        if in_health and name == "summary":
            values["health_summary"] = value.strip()
        elif not in_health and name in _TEXT_KEYS:
            values[_TEXT_KEYS[name]] = value.strip()
    close()
    return out


# ---------------------------------------------------------------------------
# nvidia-smi nvlink -s, and topo -m's NV# counts
# ---------------------------------------------------------------------------

_NVLINK_GPU = re.compile(r"^GPU (\d+): (.*?)(?: \(UUID: ([^)]*)\))?\s*$")
_NVLINK_LINK = re.compile(r"^\s+Link (\d+): (.+?)\s*$")
_SPEED = re.compile(r"^([\d.]+)\s*GB/s$", re.IGNORECASE)


def parse_nvlink_status(text: str, catalogue: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """``nvidia-smi nvlink -s`` -> {"gpus": [{index, name, uuid, links: [{link, active,
    speed_gbps}], links_total, links_up, all_inactive}], "all_inactive": bool}.

    A GPU line followed by "Unable to retrieve NVLink information as all links are
    inActive" has ``all_inactive`` and no link rows; the same line with no GPU before it
    sets the top-level ``all_inactive``. No output (a host without NVLink) gives no GPU.
    """
    words = _section(catalogue)["nvlink_status_text"]
    inactive = words["inactive_link"].lower()
    all_inactive = words["all_links_inactive"].lower()
    gpus: List[Dict[str, Any]] = []
    everything_inactive = False
    for line in text.splitlines():
        gpu = _NVLINK_GPU.match(line)
        if gpu:
            gpus.append(
                {
                    "index": int(gpu.group(1)),
                    "name": gpu.group(2).strip() or None,
                    "uuid": (gpu.group(3) or "").strip() or None,
                    "links": [],
                    "all_inactive": False,
                }
            )
            continue
        if all_inactive in line.lower():
            if gpus:
                gpus[-1]["all_inactive"] = True
            else:
                everything_inactive = True
            continue
        link = _NVLINK_LINK.match(line)
        if link and gpus:
            value = link.group(2)
            speed = _SPEED.match(value)
            gpus[-1]["links"].append(
                {
                    "link": int(link.group(1)),
                    "active": bool(speed) and value.lower() != inactive,
                    "speed_gbps": float(speed.group(1)) if speed else None,
                }
            )
    for gpu in gpus:
        gpu["links_total"] = len(gpu["links"])
        gpu["links_up"] = sum(1 for link in gpu["links"] if link["active"])
    return {"gpus": gpus, "all_inactive": everything_inactive}


def topo_nvlinks(topology: Optional[Dict[str, Any]]) -> Dict[int, int]:
    """GPU index -> the largest NV# that ``topo -m`` shows towards a peer (0: none)."""
    out: Dict[int, int] = {}
    for label, links in ((topology or {}).get("matrix") or {}).items():
        match = re.match(r"^GPU(\d+)$", label)
        if not match:
            continue
        counts = [int(v[2:]) for v in links.values() if re.match(r"^NV\d+$", v or "")]
        out[int(match.group(1))] = max(counts) if counts else 0
    return out


# ---------------------------------------------------------------------------
# PCI: NVSwitches and NVLink 5 management bridges (sysfs, no driver needed)
# ---------------------------------------------------------------------------


def _generation_of(device: str, catalogue: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    for row in _section(catalogue)["generations"]:
        if device in (d.lower() for d in row["pci_device_ids"]):
            return row
    return None


def nvswitches_on_pci(
    scan: Optional[Dict[str, Any]], catalogue: Optional[Dict[str, Any]] = None
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """(NVSwitches, other NVIDIA bridges) among ``pci_gpus.scan``'s class-0680 devices.

    Only device ids the catalogue lists count as NVSwitches; another NVIDIA bridge is
    returned apart (it triggers nothing)."""
    switches: List[Dict[str, Any]] = []
    others: List[Dict[str, Any]] = []
    for dev in (scan or {}).get("nvswitches") or []:
        device = (dev.get("pci_device_id") or "")[:4].lower()
        row = _generation_of(device, catalogue) if device else None
        entry = {
            "pci_slot": dev.get("pci_slot"),
            "device": device,
            "name": dev.get("name") or "",
            "generation": row["generation"] if row else None,
        }
        (switches if row else others).append(entry)
    return switches, others


def _read(path: str, limit: int = 64) -> Optional[bytes]:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit)
    except OSError:
        return None


def scan_nvlink5_bridges(
    root: str = PCI_ROOT, catalogue: Optional[Dict[str, Any]] = None
) -> Dict[str, List[str]]:
    """Mellanox (15b3) PCI functions, and those whose VPD marks them as an NVLink 5
    board's management bridge (value SW_MNG), from ``<root>/<slot>/{vendor,vpd}``.

    Returns {"functions": [...], "management": [...], "unreadable": [...]} (slots);
    ``unreadable`` lists functions with a VPD file that could not be read (not root)."""
    bridge = _section(catalogue)["nvlink5_bridge"]
    vendor = "0x" + bridge["pci_vendor"].lower()
    marker = bridge["vpd_value"].encode("ascii")
    found: Dict[str, List[str]] = {"functions": [], "management": [], "unreadable": []}
    try:
        slots = sorted(os.listdir(root))
    except OSError:
        return found
    for slot in slots:
        base = os.path.join(root, slot)
        raw_vendor = _read(os.path.join(base, "vendor"))
        if raw_vendor is None or raw_vendor.decode("ascii", "replace").strip().lower() != vendor:
            continue
        found["functions"].append(slot)
        vpd_path = os.path.join(base, "vpd")
        if not os.path.exists(vpd_path):
            continue
        vpd = _read(vpd_path, _VPD_LIMIT)
        if vpd is None:
            found["unreadable"].append(slot)
        elif marker in vpd:
            found["management"].append(slot)
    return found


def pci_requirements(
    scan: Optional[Dict[str, Any]],
    bridges: Optional[Dict[str, List[str]]] = None,
    catalogue: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """What the PCI bus alone says, before any driver exists.

    ``fabric_manager_needed_by_pci`` is True with a known NVSwitch or an NVLink 5
    management bridge, False without either, and None when Mellanox functions are there
    whose VPD could not be read (an HGX B200's NVSwitches are no PCI devices, so only that
    VPD would tell)."""
    switches, others = nvswitches_on_pci(scan, catalogue)
    bridges = bridges or {"functions": [], "management": [], "unreadable": []}
    management = list(bridges.get("management") or [])
    unreadable = list(bridges.get("unreadable") or [])
    generation = max((s["generation"] for s in switches), default=None)
    evidence: List[str] = []
    if switches:
        rows = {s["generation"] for s in switches}
        systems = [
            "/".join(r["systems"])
            for r in _section(catalogue)["generations"]
            if r["generation"] in rows
        ]
        ids = ", ".join(sorted({s["device"] for s in switches}))
        evidence.append(
            f"{len(switches)} NVSwitch(es) on the PCI bus ({ids}, generation {generation}: "
            f"{'; '.join(systems)})"
        )
    for other in others:
        evidence.append(
            f"NVIDIA bridge {other['pci_slot']} (device {other['device']}) is no NVSwitch the "
            "catalogue knows; not counted"
        )
    if management:
        generation = 4
        evidence.append(
            f"{len(management)} NVLink 5 management function(s) (VPD SW_MNG) at "
            f"{', '.join(management)}: an HGX B200-class board, whose NVSwitches are not on the "
            "PCI bus"
        )
    if unreadable:
        evidence.append(
            f"the VPD of Mellanox function(s) {', '.join(unreadable)} could not be read (run as "
            "root to tell an NVLink 5 board's management bridge from a NIC)"
        )
    if switches or management:
        needed: Optional[bool] = True
    elif unreadable:
        needed = None
    else:
        needed = False
    if management:
        reason = (
            "an NVLink 5 board (HGX B200/B300/B100): it needs the fabric manager, NVLSM and the "
            "InfiniBand modules"
        )
    elif switches:
        reason = (
            f"{len(switches)} NVSwitch(es) of generation {generation} on the PCI bus: the host "
            "needs the fabric manager at the driver's exact version"
        )
    elif needed is None:
        reason = (
            "no NVSwitch on the PCI bus, but Mellanox VPD was unreadable: NVLink 5 not ruled out"
        )
    else:
        reason = "no NVSwitch and no NVLink 5 management bridge on the PCI bus"
    return {
        "nvswitch_count": len(switches),
        "nvswitch_generation": generation,
        "nvswitches": switches,
        "other_nvidia_bridges": others,
        "nvlink5_bridges": management,
        "fabric_manager_needed_by_pci": needed,
        "nvlink5_needed_by_pci": bool(management) if needed is not None else None,
        "reason": reason,
        "evidence": evidence,
    }


def pci_facts(
    root: str = PCI_ROOT, run_command: Optional[Callable[[List[str]], Tuple[int, str, str]]] = None
) -> Dict[str, Any]:
    """The ``nvidia_pci`` fact: NVIDIA GPUs and NVSwitches from sysfs under ``root``, named
    by ``lspci -mm -s <slot>`` (through ``run_command``, which returns rc, stdout, stderr)
    when lspci is on PATH, and what the PCI bus alone says about the fabric.

    Needs no driver and changes nothing. nvidia_pci_facts returns exactly this, and so does
    nvidia_smi_facts with ``pci_facts: true``."""
    lspci = shutil.which("lspci") if run_command is not None else None

    def name_of(slot: str) -> str:
        if not lspci or run_command is None:
            return ""
        try:
            rc, out, _err = run_command([lspci, "-mm", "-s", slot])
        except OSError:  # CommandError: lspci could not run or hung; the name stays empty
            return ""
        return lspci_name(out.splitlines()[0]) if rc == 0 and out.strip() else ""

    found = pci_scan(root, name_of)
    fabric = pci_requirements(found, scan_nvlink5_bridges(root))
    return {
        "gpus": found["gpus"],
        "gpu_count": len(found["gpus"]),
        "nvswitches": found["nvswitches"],
        "present": bool(found["gpus"]),
        "nvswitch_count": fabric["nvswitch_count"],
        "nvswitch_generation": fabric["nvswitch_generation"],
        "nvlink5_bridges": fabric["nvlink5_bridges"],
        "fabric_manager_needed_by_pci": fabric["fabric_manager_needed_by_pci"],
        "nvlink5_needed_by_pci": fabric["nvlink5_needed_by_pci"],
        "fabric_reason": fabric["reason"],
        "fabric_evidence": fabric["evidence"],
    }


# ---------------------------------------------------------------------------
# The decision
# ---------------------------------------------------------------------------


def _matches(name: Optional[str], tokens: List[str]) -> bool:
    text = " ".join(str(name or "").lower().split())
    return any(_token_pattern(t).search(text) for t in tokens)


def _gpu_ranges(indices: List[int]) -> str:
    """[0, 1, 2, 3, 5] -> "GPUs 0-3, 5"; [3] -> "GPU 3"."""
    ordered = sorted(set(indices))
    runs: List[str] = []
    start = prev = None
    for i in [*ordered, None]:
        if start is not None and (i is None or i != prev + 1):
            runs.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if i is not None and start is None:
            start = i
        prev = i
    return ("GPUs " if len(ordered) > 1 else "GPU ") + ", ".join(runs)


def fabric_requirements(
    pci_scan: Optional[Dict[str, Any]] = None,
    smi_facts: Optional[Dict[str, Any]] = None,
    nvlink_status: Optional[Dict[str, Any]] = None,
    catalogue: Optional[Dict[str, Any]] = None,
    fabric: Optional[List[Dict[str, Any]]] = None,
    nvlink5_bridges: Optional[Dict[str, List[str]]] = None,
) -> Dict[str, Any]:
    """Whether the host needs the fabric manager (and NVLink 5's extras), and why.

    A host needs it when it has NVSwitches on the PCI bus, an NVLink 5 management bridge,
    or GPUs reporting a fabric state other than N/A / not supported. It needs NVLink 5's
    extras (nvlsm, infiniband-diags, mlx5_core and ib_umad) on a fourth-generation board:
    one with the management bridge, or whose GPUs report a fabric state and are of the
    fourth generation's GPUs (B200, B300, B100) with no older NVSwitch on the bus. A single
    GPU with no NVSwitch and fabric state N/A (the H200 capture) needs neither.

    ``fabric`` is ``parse_fabric_xml``'s list; ``smi_facts`` the ``nvidia_smi`` fact (its
    ``gpus`` and ``topology``); ``nvlink_status`` ``parse_nvlink_status``'s result.
    """
    section = _section(catalogue)
    pci = pci_requirements(pci_scan, nvlink5_bridges, catalogue)
    gpus = list((smi_facts or {}).get("gpus") or [])
    by_index = {g.get("index"): g for g in gpus}
    fabric = list(fabric or [])
    evidence = list(pci["evidence"])

    attached = [f for f in fabric if f["state"] in ATTACHED_STATES]
    if attached:
        states = sorted({f["state_text"] or f["state"] for f in attached})
        evidence.append(
            f"{_gpu_ranges([f['gpu'] for f in attached])}: NVLink fabric state {', '.join(states)}"
        )
    elif fabric:
        evidence.append("no GPU reports an NVLink fabric state (N/A or not supported)")

    up: Dict[str, int] = {}
    total: Dict[str, int] = {}
    for gpu in (nvlink_status or {}).get("gpus") or []:
        up[str(gpu["index"])] = gpu["links_up"]
        total[str(gpu["index"])] = gpu["links_total"]
    expected = {str(k): v for k, v in topo_nvlinks((smi_facts or {}).get("topology")).items()}
    switched = pci["nvswitch_count"] or pci["nvlink5_bridges"] or attached
    if any(up.values()) and not switched:
        evidence.append(
            "NVLinks are up with no NVSwitch (an NVLink bridge or a direct mesh): no fabric to "
            "manage"
        )

    mig = [g["index"] for g in gpus if g.get("mig_mode")]
    if mig and section["mig"]["disables_nvlink"]:
        evidence.append(f"MIG mode is on for {_gpu_ranges(mig)}, which disables its NVLinks")

    gen4 = next(r for r in section["generations"] if r.get("nvlink5"))
    names = [g.get("name") for g in gpus]
    gen4_gpus = bool(names) and all(_matches(n, gen4["gpus"]) for n in names)
    older_switch = any((s["generation"] or 0) < gen4["generation"] for s in pci["nvswitches"])

    needs = bool(pci["nvswitch_count"] or pci["nvlink5_bridges"] or attached)
    nvlink5 = bool(pci["nvlink5_bridges"]) or (bool(attached) and gen4_gpus and not older_switch)
    generation = pci["nvswitch_generation"] or (gen4["generation"] if nvlink5 else None)
    if nvlink5 and not pci["nvlink5_bridges"]:
        evidence.append(
            f"the GPUs are {'/'.join(gen4['gpus'])}-class: a fourth-generation NVSwitch board, "
            "whose NVSwitches are not on the PCI bus"
        )
    scope = section["scope"]
    if any(_matches(n, scope["not_covered_tokens"]) for n in names):
        evidence.append(
            f"{scope['not_covered']}: outside the catalogue's sources, decided as above"
        )

    if nvlink5:
        reason = (
            "An NVLink 5 board (HGX B200/B300/B100): it needs the fabric manager at the driver's "
            "exact version, NVLSM (nvlsm) and the InfiniBand modules."
        )
    elif pci["nvswitch_count"]:
        reason = (
            f"{pci['nvswitch_count']} NVSwitch(es) of generation {generation} on the PCI bus: the "
            "host needs the fabric manager at the driver's exact version."
        )
    elif attached:
        verb = "takes" if len(attached) == 1 else "take"
        reason = (
            f"{_gpu_ranges([f['gpu'] for f in attached])} {verb} part in an NVLink fabric: the "
            "host needs the fabric manager at the driver's exact version."
        )
    elif pci["fabric_manager_needed_by_pci"] is None and not fabric:
        reason = "Undecided: Mellanox VPD was unreadable and no GPU fabric state was read."
    else:
        reason = (
            "No NVSwitch on the PCI bus and no GPU in an NVLink fabric: no fabric manager needed."
        )
    entries = []
    for f in fabric:
        gpu = by_index.get(f["gpu"], {})
        entries.append(dict(f, name=gpu.get("name")))
    return {
        "nvswitch_count": pci["nvswitch_count"],
        "nvswitch_generation": generation,
        "nvswitches": pci["nvswitches"],
        "nvlink5_bridges": pci["nvlink5_bridges"],
        "fabric": entries,
        "fabric_attached": bool(attached),
        "nvlinks_up": up,
        "nvlinks_total": total,
        "nvlinks_expected": expected,
        "needs_fabric_manager": needs,
        "needs_nvlink5": nvlink5,
        "reason": reason,
        "evidence": evidence,
    }


# ---------------------------------------------------------------------------
# Health
# ---------------------------------------------------------------------------


def parse_fabric_manager_version(text: str) -> Optional[str]:
    """The version ``nv-fabricmanager --version`` prints ("Fabric Manager version is :
    450.102.04"), as the first dotted number in the output; None without one."""
    match = re.search(r"(\d+\.\d+(?:\.\d+)*)", text or "")
    return match.group(1) if match else None


def _install_hint(driver_version: Optional[str], nvlink5: bool) -> str:
    unit = CATALOGUE["nvswitch_devices"]["fabric_manager"]["unit"]
    try:
        plan = fabric_manager_packages(driver_version, driver_version) if driver_version else None
    except (ValueError, StopIteration, TypeError):
        plan = None
    if plan:
        what = f"{' '.join(plan['packages'])} at version {plan['version']}"
        extra = plan["nvlink5_packages"] if nvlink5 else []
        modules = plan["nvlink5_kernel_modules"] if nvlink5 else []
    else:
        what = "the fabric manager package at exactly the driver's version"
        extra, modules = [], []
    text = f"install {what}"
    if nvlink5:
        text += (
            f" with {' '.join(extra) or 'nvlsm and infiniband-diags'} and the "
            f"{' and '.join(modules) or 'InfiniBand'} kernel modules loaded"
        )
    return f"{text}, then systemctl enable --now {unit}"


def fabric_manager_version_issue(
    fabric_manager_version: Optional[str], driver_version: Optional[str]
) -> Optional[Dict[str, Any]]:
    """``fabric-manager-version-mismatch`` when both versions are known and differ."""
    if not fabric_manager_version or not driver_version:
        return None
    if fabric_manager_version.strip() == driver_version.strip():
        return None
    unit = CATALOGUE["nvswitch_devices"]["fabric_manager"]["unit"]
    return _issue(
        "fabric-manager-version-mismatch",
        {},
        f"The fabric manager is {fabric_manager_version} but the driver is {driver_version}; "
        f"{unit} refuses to start on a different driver version: install the fabric manager "
        f"at exactly {driver_version} (hold it with the driver), then restart {unit}.",
    )


def _nvlink_down(
    requirements: Dict[str, Any], gpus: Dict[Any, Dict[str, Any]]
) -> List[Dict[str, Any]]:
    up = {int(k): v for k, v in (requirements.get("nvlinks_up") or {}).items()}
    expected = {int(k): v for k, v in (requirements.get("nvlinks_expected") or {}).items()}
    mig = {i for i, g in gpus.items() if g.get("mig_mode")}
    candidates = {i: n for i, n in up.items() if i not in mig}
    if not candidates or (len(up) < 2 and not any(expected.values())):
        return []
    unit = CATALOGUE["nvswitch_devices"]["fabric_manager"]["unit"]
    peak = max(candidates.values())
    issues = []
    for index in sorted(candidates):
        count = candidates[index]
        want = max(peak, expected.get(index, 0))
        if count >= want or want == 0:
            continue
        why = []
        if peak > count:
            why.append(f"its peers have {peak}")
        if expected.get(index, 0) > count:
            why.append(f"topo -m shows NV{expected[index]}")
        if requirements.get("needs_fabric_manager"):
            fix = (
                f"stop its jobs and {unit}, reset it (nvidia-smi -r), start {unit} again, and have "
                "the baseboard serviced if the links stay down"
            )
        else:
            fix = (
                f"reset it (nvidia-smi -r -i {index}) and, if the links stay down, reseat the "
                "NVLink bridge or have the host serviced"
            )
        gpu = gpus.get(index, {"index": index})
        issues.append(
            _issue(
                "nvlink-down",
                gpu,
                f"{_label(gpu)}: {count} NVLink(s) active, fewer than expected "
                f"({'; '.join(why)}): {fix}.",
            )
        )
    return issues


def fabric_health(
    requirements: Dict[str, Any],
    gpus: Optional[List[Dict[str, Any]]] = None,
    fabric_manager: Optional[Dict[str, Any]] = None,
    driver_version: Optional[str] = None,
    catalogue: Optional[Dict[str, Any]] = None,
) -> List[Dict[str, Any]]:
    """Fabric problems as ``{"code", "gpu", "message"}`` (one line each, naming the fix).

    ``fabric_manager`` is ``{"found": bool, "version": str|None}`` (``collect`` fills it);
    without it the fabric manager's own checks are skipped."""
    section = _section(catalogue)
    unit = section["fabric_manager"]["unit"]
    by_index = {g.get("index"): g for g in gpus or []}
    issues = _nvlink_down(requirements, by_index)
    needs = requirements.get("needs_fabric_manager")
    nvlink5 = bool(requirements.get("needs_nvlink5"))
    ok_status = {s.lower() for s in section["fabric_status"]["ok"]}
    bad_summary = {s.lower() for s in section["fabric_health_summary"]["problems"]}
    extras = " with nvlsm and the ib_umad module" if nvlink5 else ""
    restart = (
        f"stop its jobs and {unit}, reset the GPUs (nvidia-smi -r), start {unit} again, and "
        "have the host serviced if it persists"
    )
    why = str(requirements.get("reason") or "").rstrip(".")
    completed_all = True
    attached_any = False
    for entry in requirements.get("fabric") or []:
        gpu = by_index.get(entry["gpu"], {"index": entry["gpu"], "pci_bus_id": entry["pci_bus_id"]})
        state = entry["state"]
        if state in ATTACHED_STATES:
            attached_any = True
        if state in ("not_started", "in_progress", "unknown") and needs:
            completed_all = False
            issues.append(
                _issue(
                    "fabric-state-not-completed",
                    gpu,
                    f"{_label(gpu)}: NVLink fabric state is {entry['state_text'] or state}, "
                    "not Completed: the fabric manager is not running or has not finished, and "
                    f"CUDA cannot start until it does; start it{extras} (systemctl enable --now "
                    f"{unit}) and read journalctl -u {unit.rsplit('.', 1)[0]}.",
                )
            )
        elif state == "completed":
            status = entry.get("status")
            summary = entry.get("health_summary")
            if status and status.lower() not in ok_status:
                issues.append(
                    _issue(
                        "fabric-state-failed",
                        gpu,
                        f"{_label(gpu)}: NVLink fabric registration completed with status "
                        f"'{status}': the GPU has no NVLink peer-to-peer; {restart}.",
                    )
                )
            elif summary and summary.lower() in bad_summary:
                issues.append(
                    _issue(
                        "fabric-state-failed",
                        gpu,
                        f"{_label(gpu)}: NVLink fabric health summary is '{summary}': {restart}.",
                    )
                )
    if needs and fabric_manager is not None:
        if not fabric_manager.get("found"):
            if not (attached_any and completed_all):
                issues.append(
                    _issue(
                        "fabric-manager-missing",
                        {},
                        f"This host needs NVIDIA's fabric manager ({why}) and nv-fabricmanager "
                        f"is not installed: {_install_hint(driver_version, nvlink5)}.",
                    )
                )
        else:
            mismatch = fabric_manager_version_issue(fabric_manager.get("version"), driver_version)
            if mismatch:
                issues.append(mismatch)
    return issues


# ---------------------------------------------------------------------------
# For nvidia_smi_facts
# ---------------------------------------------------------------------------


def collect(
    xml_text: str,
    smi_facts: Dict[str, Any],
    run: Runner,
    smi: str,
    find_binary: Callable[[str], Optional[str]],
    pci_root: str = PCI_ROOT,
) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """The ``fabric`` fact and its health issues, for ``nvidia_smi_facts``.

    Runs ``nvidia-smi nvlink -s`` only with more than one GPU or a fabric-attached GPU,
    and ``nv-fabricmanager --version`` only on a host that needs the fabric manager. A
    failed call is recorded (``nvlink_error``, ``fabric_manager.error``), never raised.
    """
    try:
        fabric = parse_fabric_xml(xml_text)
    except ValueError:
        fabric = []
    scan = pci_scan(pci_root)
    bridges = scan_nvlink5_bridges(pci_root)
    status: Optional[Dict[str, Any]] = None
    nvlink_error: Optional[str] = None
    attached = any(f["state"] in ATTACHED_STATES for f in fabric)
    if (smi_facts.get("gpu_count") or 0) > 1 or attached:
        rc, out, err = run(nvlink_command(smi))
        if rc == 0:
            status = parse_nvlink_status(out)
        elif rc == -1:
            nvlink_error = f"{' '.join(nvlink_command(smi))}: {err}"
        else:
            nvlink_error = classify_error(out, err, rc)["message"]
    requirements = fabric_requirements(
        scan, smi_facts, status, fabric=fabric, nvlink5_bridges=bridges
    )
    manager: Optional[Dict[str, Any]] = None
    if requirements["needs_fabric_manager"]:
        binary = CATALOGUE["nvswitch_devices"]["fabric_manager"]["binary"]
        path = find_binary(binary)
        manager = {"found": bool(path), "path": path, "version": None, "error": None}
        if path:
            flag = CATALOGUE["nvswitch_devices"]["fabric_manager"]["version_flag"]
            rc, out, err = run([path, flag])
            manager["version"] = parse_fabric_manager_version(out + "\n" + err) if rc == 0 else None
            if manager["version"] is None:
                manager["error"] = (
                    f"{path} {flag} (rc={rc}): {(err or out).strip()[:200] or 'no version'}"
                )
    issues = fabric_health(
        requirements, smi_facts.get("gpus"), manager, smi_facts.get("driver_version")
    )
    fact = dict(requirements, nvlink_error=nvlink_error, fabric_manager=manager)
    return fact, issues
