"""Parse nvidia-smi output and decide what it means. No subprocess calls here.

The library module ``nvidia_smi_facts`` runs the commands; this file turns their
output into facts:

* ``parse_xml``: ``nvidia-smi -q -x`` for several driver generations of the schema
  (470-era ``clocks_throttle_reasons``/``power_readings``/single- and double-bit ECC
  counters; 525-era ``sram_``/``dram_`` ECC counters; 535+ ``clocks_event_reasons``,
  ``gpu_power_readings``, ``remapped_rows``). "N/A" and similar become None.
* ``parse_query_csv``: ``--query-gpu=... --format=csv`` (with or without header or
  units), for the compute capability the XML lacks.
* ``parse_topo``: ``nvidia-smi topo -m`` into a GPU-to-GPU link-type matrix.
* ``classify_error``: nvidia-smi failures ("couldn't communicate with the NVIDIA
  driver", "Driver/library version mismatch", ...) into a kind plus reboot advice.
* ``health`` / ``health_notes``: problems the owner must act on, and informational
  observations that are not problems.

Idle PCIe downtraining. GPUs may drop their PCIe link *generation* when idle to save
power (the link retrains to full speed under load). A generation below max while the
"gpu_idle" clock-event reason is active is therefore reported in ``health_notes``
(code ``pcie-gen-idle-downtrain``), not in ``health``. A generation drop while the GPU
is busy, or any link *width* below max, is a health problem. (The real H200 capture
in tests/fixtures/captures/h200 held gen 5 of 5 at idle; other GPUs drop to gen 1.)

Runs on target hosts: Python 3.8 compatible, standard library only.
"""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Optional, Tuple

from ansible.module_utils.gpu_compat import (
    architecture_for,
    compute_capability_for,
    normalize_cc,
)

#: Values nvidia-smi prints for "no value".
NA_VALUES = frozenset(
    {
        "",
        "n/a",
        "[n/a]",
        "not supported",
        "[not supported]",
        "unknown error",
        "[unknown error]",
        "none",
        "requested functionality has been deprecated",
        "insufficient permissions",
        "[insufficient permissions]",
    }
)

#: Fields the module asks ``--query-gpu`` for (compute_cap is not in the XML).
QUERY_FIELDS = ["index", "pci.bus_id", "uuid", "compute_cap"]

THERMAL_REASONS = ("hw_thermal_slowdown", "sw_thermal_slowdown")
POWER_REASONS = ("sw_power_cap", "hw_power_brake_slowdown")
GENERIC_SLOWDOWN_REASONS = ("hw_slowdown",)


# ---------------------------------------------------------------------------
# Commands (built here so the module and the tests agree on them)
# ---------------------------------------------------------------------------


def xml_command(smi: str) -> List[str]:
    return [smi, "-q", "-x"]


def query_command(smi: str, fields: Optional[List[str]] = None) -> List[str]:
    return [smi, "--query-gpu=" + ",".join(fields or QUERY_FIELDS), "--format=csv"]


def topo_command(smi: str) -> List[str]:
    return [smi, "topo", "-m"]


# ---------------------------------------------------------------------------
# Small value helpers
# ---------------------------------------------------------------------------


def clean(value: Optional[str]) -> Optional[str]:
    """Stripped text, or None for nvidia-smi's "N/A"-like values."""
    if value is None:
        return None
    text = " ".join(value.split())
    return None if text.lower() in NA_VALUES else text


def to_number(value: Optional[str]) -> Optional[float]:
    """Leading number of "143771 MiB", "36 C", "700.00 W", "16x"; None when absent."""
    text = clean(value)
    if text is None:
        return None
    match = re.match(r"^[-+]?\d+(?:\.\d+)?", text)
    return float(match.group(0)) if match else None


def to_int(value: Optional[str]) -> Optional[int]:
    number = to_number(value)
    return int(number) if number is not None else None


def to_flag(value: Optional[str]) -> Optional[bool]:
    """Enabled/Yes/Active/On -> True; Disabled/No/Not Active/Off -> False; else None."""
    text = clean(value)
    if text is None:
        return None
    lower = text.lower()
    if lower in ("enabled", "yes", "active", "on", "true"):
        return True
    if lower in ("disabled", "no", "not active", "off", "false"):
        return False
    return None


def normalize_bus_id(bus_id: Optional[str]) -> Optional[str]:
    """ "0000:3B:00.0" / "00000000:3b:00.0" -> "00000000:3B:00.0" (as -q -x prints it)."""
    text = clean(bus_id)
    if text is None:
        return None
    parts = text.upper().split(":")
    if len(parts) == 3:
        parts[0] = parts[0].zfill(8)[-8:]
    return ":".join(parts)


def _find_text(elem: Optional[ET.Element], path: str) -> Optional[str]:
    if elem is None:
        return None
    found = elem.find(path)
    return None if found is None else (found.text or "")


# ---------------------------------------------------------------------------
# nvidia-smi -q -x
# ---------------------------------------------------------------------------


def _ecc_uncorrected(block: Optional[ET.Element]) -> Optional[int]:
    """Uncorrected ECC count in an ``ecc_errors/volatile`` (or aggregate) block.

    470-era: ``double_bit/total``. Later: the sum of every ``*uncorrectable*`` counter
    (``sram_uncorrectable``; ``sram_uncorrectable_parity`` + ``_secded``;
    ``dram_uncorrectable``). None when every counter is N/A.
    """
    if block is None:
        return None
    double_bit = block.find("double_bit")
    if double_bit is not None:
        total = to_int(_find_text(double_bit, "total"))
        if total is not None:
            return total
        values = [to_int(child.text) for child in double_bit if child.tag != "total"]
        known = [v for v in values if v is not None]
        return sum(known) if known else None
    values = [to_int(child.text) for child in block if "uncorrectable" in child.tag]
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _clock_reasons(gpu: ET.Element) -> Tuple[List[str], Optional[str]]:
    """Active clock-event (throttle) reasons, short names like "gpu_idle"; and the schema."""
    for block_tag, prefix in (
        ("clocks_event_reasons", "clocks_event_reason_"),
        ("clocks_throttle_reasons", "clocks_throttle_reason_"),
        ("clocks_reasons", "clocks_reason_"),
    ):
        block = gpu.find(block_tag)
        if block is None:
            continue
        active = []
        for child in block:
            if to_flag(child.text):
                tag = child.tag
                active.append(tag[len(prefix) :] if tag.startswith(prefix) else tag)
        return active, block_tag
    return [], None


def _power_limit(gpu: ET.Element) -> Tuple[Optional[float], Optional[float]]:
    """(power limit W, power draw W) from gpu_power_readings (535+) or power_readings."""
    block = gpu.find("gpu_power_readings")
    if block is not None:
        limit = to_number(_find_text(block, "current_power_limit"))
        if limit is None:
            limit = to_number(_find_text(block, "enforced_power_limit"))
        draw = to_number(_find_text(block, "instant_power_draw"))
        if draw is None:
            draw = to_number(_find_text(block, "average_power_draw"))
        if draw is None:
            draw = to_number(_find_text(block, "power_draw"))
        return limit, draw
    block = gpu.find("power_readings")
    if block is not None:
        limit = to_number(_find_text(block, "enforced_power_limit"))
        if limit is None:
            limit = to_number(_find_text(block, "power_limit"))
        return limit, to_number(_find_text(block, "power_draw"))
    return None, None


def _retired_pages_pending(gpu: ET.Element) -> Optional[bool]:
    block = gpu.find("retired_pages")
    if block is None:
        return None
    pending = to_flag(_find_text(block, "pending_retirement"))
    if pending is None:
        pending = to_flag(_find_text(block, "pending_blacklist"))
    return pending


def _mig_devices(gpu: ET.Element) -> List[Dict[str, Any]]:
    devices = []
    block = gpu.find("mig_devices")
    if block is None:
        return devices
    for dev in block.findall("mig_device"):
        devices.append(
            {
                "index": to_int(_find_text(dev, "index")),
                "gpu_instance_id": to_int(_find_text(dev, "gpu_instance_id")),
                "compute_instance_id": to_int(_find_text(dev, "compute_instance_id")),
                "multiprocessor_count": to_int(
                    _find_text(dev, "device_attributes/shared/multiprocessor_count")
                ),
                "memory_total_mib": to_int(_find_text(dev, "fb_memory_usage/total")),
                "memory_used_mib": to_int(_find_text(dev, "fb_memory_usage/used")),
            }
        )
    return devices


def _parse_gpu(index: int, gpu: ET.Element) -> Dict[str, Any]:
    name = clean(_find_text(gpu, "product_name"))
    reasons, reasons_schema = _clock_reasons(gpu)
    power_limit, power_draw = _power_limit(gpu)
    remap = gpu.find("remapped_rows")
    link = gpu.find("pci/pci_gpu_link_info")
    cc = compute_capability_for(name)
    product_arch = clean(_find_text(gpu, "product_architecture"))
    return {
        "index": index,
        "name": name,
        "uuid": clean(_find_text(gpu, "uuid")),
        "pci_bus_id": normalize_bus_id(_find_text(gpu, "pci/pci_bus_id") or gpu.get("id")),
        "product_architecture": product_arch,
        "compute_capability": cc,
        "compute_capability_source": "name" if cc else None,
        "architecture": architecture_for(cc) if cc else product_arch,
        "memory_total_mib": to_int(_find_text(gpu, "fb_memory_usage/total")),
        "memory_used_mib": to_int(_find_text(gpu, "fb_memory_usage/used")),
        "persistence_mode": to_flag(_find_text(gpu, "persistence_mode")),
        "mig_mode": to_flag(_find_text(gpu, "mig_mode/current_mig")),
        "mig_mode_pending": to_flag(_find_text(gpu, "mig_mode/pending_mig")),
        "mig_devices": _mig_devices(gpu),
        "ecc_mode": to_flag(_find_text(gpu, "ecc_mode/current_ecc")),
        "ecc_uncorrected_volatile": _ecc_uncorrected(gpu.find("ecc_errors/volatile")),
        "ecc_uncorrected_aggregate": _ecc_uncorrected(gpu.find("ecc_errors/aggregate")),
        "retired_pages_pending": _retired_pages_pending(gpu),
        "remapped_rows_pending": to_flag(_find_text(remap, "remapped_row_pending")),
        "remapped_rows_failure": to_flag(_find_text(remap, "remapped_row_failure")),
        "pcie_gen_current": to_int(_find_text(link, "pcie_gen/current_link_gen")),
        "pcie_gen_max": to_int(_find_text(link, "pcie_gen/max_link_gen")),
        "pcie_width_current": to_int(_find_text(link, "link_widths/current_link_width")),
        "pcie_width_max": to_int(_find_text(link, "link_widths/max_link_width")),
        "temperature_c": to_int(_find_text(gpu, "temperature/gpu_temp")),
        "power_limit_w": power_limit,
        "power_draw_w": power_draw,
        "clocks_sm_mhz": to_int(_find_text(gpu, "clocks/sm_clock")),
        "clocks_max_sm_mhz": to_int(_find_text(gpu, "max_clocks/sm_clock")),
        "performance_state": clean(_find_text(gpu, "performance_state")),
        "clock_event_reasons_active": reasons,
        "clock_event_reasons_schema": reasons_schema,
    }


def parse_xml(text: str) -> Dict[str, Any]:
    """Parse ``nvidia-smi -q -x``: driver_version, cuda_driver_version, gpu_count, gpus.

    Raises ValueError when the text is not an nvidia_smi_log XML document.
    """
    try:
        root = ET.fromstring(text.strip().encode("utf-8"))
    except ET.ParseError as exc:
        raise ValueError(f"nvidia-smi -q -x output is not XML: {exc}") from exc
    if root.tag != "nvidia_smi_log":
        raise ValueError(f"nvidia-smi -q -x output has root <{root.tag}>, not <nvidia_smi_log>")
    gpus = [_parse_gpu(i, gpu) for i, gpu in enumerate(root.findall("gpu"))]
    attached = to_int(_find_text(root, "attached_gpus"))
    return {
        "driver_version": clean(_find_text(root, "driver_version")),
        "cuda_driver_version": clean(_find_text(root, "cuda_version")),
        "gpu_count": attached if attached is not None else len(gpus),
        "gpus": gpus,
    }


# ---------------------------------------------------------------------------
# nvidia-smi --query-gpu=... --format=csv
# ---------------------------------------------------------------------------


def parse_query_csv(
    text: str, fields: Optional[List[str]] = None
) -> List[Dict[str, Optional[str]]]:
    """Rows of ``--query-gpu`` CSV as dicts keyed by field name (units dropped).

    With ``--format=csv`` the header line names the columns ("memory.total [MiB]"
    becomes "memory.total"). For ``csv,noheader`` output pass ``fields``. Values such
    as "[N/A]" become None. Raises ValueError for header-less text without ``fields``.
    """
    rows = [r for r in csv.reader(io.StringIO(text), skipinitialspace=True) if any(r)]
    if not rows:
        return []
    first = [re.sub(r"\s*\[[^\]]*\]$", "", cell.strip()) for cell in rows[0]]
    is_header = all(re.match(r"^[a-z_][a-z0-9_.]*$", cell) for cell in first)
    if fields is None and not is_header:
        raise ValueError("--query-gpu CSV has no header line; pass fields")
    names = first if is_header else list(fields or [])
    body = rows[1:] if is_header else rows
    result = []
    for row in body:
        values = [clean(v) for v in row]
        result.append(
            {name: values[i] if i < len(values) else None for i, name in enumerate(names)}
        )
    return result


def merge_query(gpus: List[Dict[str, Any]], rows: List[Dict[str, Optional[str]]]) -> None:
    """Fill compute_capability (and architecture) of XML ``gpus`` from query rows, in place.

    A row is matched by its PCI bus id; a row without one by its index, and a row with
    neither by position. A row that matches no GPU is ignored. A compute capability
    from nvidia-smi wins over the name-table guess.
    """
    by_bus = {g["pci_bus_id"]: g for g in gpus if g.get("pci_bus_id")}
    by_index = {g["index"]: g for g in gpus}
    for position, row in enumerate(rows):
        bus = normalize_bus_id(row.get("pci.bus_id"))
        index = str(row.get("index") or "")
        if bus is not None:
            gpu = by_bus.get(bus)
        elif index.isdigit():
            gpu = by_index.get(int(index))
        else:
            gpu = gpus[position] if position < len(gpus) else None
        if gpu is None:
            continue
        if index.isdigit():
            gpu["index"] = int(index)
        cc = normalize_cc(row.get("compute_cap"))
        if cc:
            gpu["compute_capability"] = cc
            gpu["compute_capability_source"] = "nvidia-smi"
            gpu["architecture"] = architecture_for(cc) or gpu.get("product_architecture")


# ---------------------------------------------------------------------------
# nvidia-smi topo -m
# ---------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_DEVICE_LABEL = re.compile(r"^(GPU\d+|NIC\d+|mlx\d+_\d+|CPU\d+)$")


def parse_topo(text: str) -> Dict[str, Any]:
    """``nvidia-smi topo -m`` -> link matrix, affinities and NIC legend.

    Returns ``{"gpus": ["GPU0", ...], "matrix": {"GPU0": {"GPU1": "NV18"}},
    "nic_links": {"GPU0": {"NIC0": "PXB"}}, "cpu_affinity": {"GPU0": "0-55"},
    "numa_affinity": {"GPU0": "0"}, "nics": {"NIC0": "mlx5_0"}, "link_types": [...],
    "all_nvlink": bool}``. Self entries ("X") are left out of the matrix.
    """
    lines = [_ANSI.sub("", line).rstrip("\r\n") for line in text.splitlines()]
    header: Optional[List[str]] = None
    columns: List[str] = []
    extra: List[str] = []
    rows: Dict[str, Dict[str, str]] = {}
    extras: Dict[str, Dict[str, str]] = {}
    nics: Dict[str, str] = {}
    in_nic_legend = False
    for line in lines:
        stripped = line.strip()
        if header is None:
            cells = [c.strip() for c in line.split("\t") if c.strip()]
            if cells and _DEVICE_LABEL.match(cells[0]) and not line.startswith(cells[0]):
                header = cells
                columns = [c for c in cells if _DEVICE_LABEL.match(c)]
                extra = [c for c in cells if not _DEVICE_LABEL.match(c)]
            continue
        if stripped.startswith("NIC Legend"):
            in_nic_legend = True
            continue
        if in_nic_legend:
            match = re.match(r"^(NIC\d+):\s*(\S+)$", stripped)
            if match:
                nics[match.group(1)] = match.group(2)
            continue
        if not stripped or stripped.startswith("Legend"):
            continue
        cells = line.split("\t")
        label = cells[0].strip()
        if not _DEVICE_LABEL.match(label):
            continue
        values = [c.strip() for c in cells[1:]]
        links = values[: len(columns)]
        rest = [v for v in values[len(columns) :] if v != ""]
        rows[label] = dict(zip(columns, links))
        extras[label] = dict(zip(extra, rest))
    gpus = [c for c in columns if c.startswith("GPU")]
    matrix: Dict[str, Dict[str, str]] = {}
    nic_links: Dict[str, Dict[str, str]] = {}
    for gpu in gpus:
        row = rows.get(gpu, {})
        matrix[gpu] = {o: row[o] for o in gpus if o != gpu and o in row}
        nic_links[gpu] = {o: row[o] for o in columns if not o.startswith("GPU") and o in row}
    link_types = sorted({v for links in matrix.values() for v in links.values()})
    pairs = [v for links in matrix.values() for v in links.values()]
    return {
        "gpus": gpus,
        "matrix": matrix,
        "nic_links": nic_links,
        "cpu_affinity": {g: extras.get(g, {}).get("CPU Affinity") for g in gpus},
        "numa_affinity": {g: extras.get(g, {}).get("NUMA Affinity") for g in gpus},
        "nics": nics,
        "link_types": link_types,
        "all_nvlink": bool(pairs) and all(v.startswith("NV") for v in pairs),
    }


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------

_ERROR_PATTERNS: List[Tuple[str, str, bool, str]] = [
    # (regex, kind, reboot_required, reason/advice)
    (
        r"Driver/library version mismatch",
        "driver_library_mismatch",
        True,
        "the loaded NVIDIA kernel module is older than the user-space driver library "
        "(the driver was upgraded without a reboot); reboot to load the new module",
    ),
    (
        r"couldn't communicate with the NVIDIA driver",
        "driver_not_loaded",
        True,
        "the NVIDIA kernel module is not loaded (usual right after a driver install, or "
        "after a kernel upgrade); reboot, and if it persists check `dkms status`, "
        "Secure Boot module signing and `lsmod | grep nvidia`",
    ),
    (
        r"GPU is lost|fallen off the bus",
        "gpu_lost",
        True,
        "a GPU fell off the bus (Xid 79); reboot to recover it, and have the host checked "
        "if it happens again",
    ),
    (
        r"No devices were found",
        "no_devices",
        False,
        "the driver is loaded but sees no GPU (passthrough, PCIe or power problem)",
    ),
    (
        r"couldn't find libnvidia-ml\.so|NVML Shared Library Not Found",
        "nvml_missing",
        False,
        "the NVML library (libnvidia-ml.so) is missing: reinstall the driver's user-space packages",
    ),
    (
        r"Insufficient Permissions|Permission denied",
        "permission_denied",
        False,
        "nvidia-smi lacks permission on /dev/nvidia*; run as root or fix device permissions",
    ),
    (
        r"is not a valid field to query",
        "invalid_field",
        False,
        "this driver's nvidia-smi does not know a requested --query-gpu field",
    ),
    (
        r"Failed to initialize NVML: Unknown Error",
        "nvml_unknown_error",
        False,
        "NVML failed to initialise (in containers: the device cgroup does not allow /dev/nvidia*)",
    ),
]


def classify_error(stdout: str, stderr: str, rc: int) -> Dict[str, Any]:
    """Classify a failed nvidia-smi run.

    Returns ``{"kind", "message", "reboot_required", "reboot_reason", "rc"}``.
    ``message`` quotes nvidia-smi's first line; reboot_reason says why a reboot is
    the remedy (None when it is not).
    """
    output = "\n".join(part for part in (stdout, stderr) if part and part.strip())
    first = next((line.strip() for line in output.splitlines() if line.strip()), "")
    for pattern, kind, reboot, advice in _ERROR_PATTERNS:
        if re.search(pattern, output, re.IGNORECASE):
            library = re.search(r"NVML library version:\s*([\d.]+)", output)
            if library:
                advice += f" (user-space NVML library is {library.group(1)})"
            return {
                "kind": kind,
                "message": f"nvidia-smi failed (rc={rc}): {first} -- {advice}",
                "reboot_required": reboot,
                "reboot_reason": advice if reboot else None,
                "rc": rc,
            }
    return {
        "kind": "unknown",
        "message": f"nvidia-smi failed (rc={rc}): {first or 'no output'}",
        "reboot_required": False,
        "reboot_reason": None,
        "rc": rc,
    }


# ---------------------------------------------------------------------------
# Health
# ---------------------------------------------------------------------------


def _label(gpu: Dict[str, Any]) -> str:
    return f"GPU {gpu.get('index')} ({gpu.get('name') or 'unknown'}, {gpu.get('pci_bus_id')})"


def _issue(code: str, gpu: Dict[str, Any], message: str) -> Dict[str, Any]:
    return {"code": code, "gpu": gpu.get("index"), "message": message}


def _pcie(gpu: Dict[str, Any]) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    problems: List[Dict[str, Any]] = []
    notes: List[Dict[str, Any]] = []
    gen, gen_max = gpu.get("pcie_gen_current"), gpu.get("pcie_gen_max")
    width, width_max = gpu.get("pcie_width_current"), gpu.get("pcie_width_max")
    gen_low = gen is not None and gen_max is not None and gen < gen_max
    width_low = width is not None and width_max is not None and width < width_max
    idle = "gpu_idle" in (gpu.get("clock_event_reasons_active") or [])
    link = f"gen {gen} x{width}, below its max gen {gen_max} x{width_max}"
    if width_low or (gen_low and not idle):
        problems.append(
            _issue(
                "pcie-link-degraded",
                gpu,
                f"{_label(gpu)} PCIe link runs at {link}"
                + (" while busy" if gen_low and not idle else "")
                + ": reseat the GPU or riser, check the slot and BIOS PCIe settings; "
                "host-to-device copies are capped at the lower rate.",
            )
        )
    elif gen_low:
        notes.append(
            _issue(
                "pcie-gen-idle-downtrain",
                gpu,
                f"{_label(gpu)} PCIe link is at gen {gen} of {gen_max} while idle: normal "
                "power saving; it should return to full speed under load.",
            )
        )
    return problems, notes


def health(gpus: List[Dict[str, Any]], expect_mig: bool = False) -> List[Dict[str, Any]]:
    """Problems the owner must act on, each ``{"code", "gpu", "message"}``."""
    problems: List[Dict[str, Any]] = []
    for gpu in gpus:
        label = _label(gpu)
        problems.extend(_pcie(gpu)[0])
        if gpu.get("remapped_rows_failure"):
            problems.append(
                _issue(
                    "row-remap-failure",
                    gpu,
                    f"{label} failed to remap a memory row: its memory is no longer reliable; "
                    "drain it and ask the provider to replace the GPU.",
                )
            )
        if gpu.get("remapped_rows_pending"):
            problems.append(
                _issue(
                    "row-remap-pending",
                    gpu,
                    f"{label} has a row remap pending: reset the GPU (nvidia-smi -r -i "
                    f"{gpu.get('index')}) or reboot so the remap takes effect.",
                )
            )
        if gpu.get("retired_pages_pending"):
            problems.append(
                _issue(
                    "retired-pages-pending",
                    gpu,
                    f"{label} has retired pages pending: reboot (or reset the GPU) so the bad "
                    "pages are blacklisted.",
                )
            )
        errors = gpu.get("ecc_uncorrected_volatile")
        if errors:
            problems.append(
                _issue(
                    "ecc-uncorrected-volatile",
                    gpu,
                    f"{label} reported {errors} uncorrected ECC error(s) since the driver "
                    "loaded: drain its jobs and reset the GPU; replace it if they recur.",
                )
            )
        active = gpu.get("clock_event_reasons_active") or []
        thermal = [r for r in active if r in THERMAL_REASONS]
        power = [r for r in active if r in POWER_REASONS]
        generic = [r for r in active if r in GENERIC_SLOWDOWN_REASONS]
        if thermal:
            problems.append(
                _issue(
                    "thermal-slowdown",
                    gpu,
                    f"{label} clocks are slowed for heat ({', '.join(thermal)}) at "
                    f"{gpu.get('temperature_c')} C: check fans, airflow and inlet temperature.",
                )
            )
        if power:
            problems.append(
                _issue(
                    "power-slowdown",
                    gpu,
                    f"{label} clocks are capped by power ({', '.join(power)}) at a "
                    f"{gpu.get('power_limit_w')} W limit: check the power limit "
                    "(nvidia-smi -q -d POWER) and the PSU/power-brake signal.",
                )
            )
        if generic:
            problems.append(
                _issue(
                    "hw-slowdown",
                    gpu,
                    f"{label} has hardware slowdown engaged (hw_slowdown: thermal or external "
                    "power brake): check cooling and the chassis power supply.",
                )
            )
        mig = gpu.get("mig_mode")
        if mig and not expect_mig:
            problems.append(
                _issue(
                    "mig-enabled-unexpected",
                    gpu,
                    f"{label} has MIG enabled, which hides the full GPU from training jobs: "
                    f"disable it (nvidia-smi -i {gpu.get('index')} -mig 0, then reset the GPU) "
                    "or set expect_mig: true.",
                )
            )
        elif mig is False and expect_mig:
            problems.append(
                _issue(
                    "mig-not-enabled",
                    gpu,
                    f"{label} has MIG disabled but expect_mig is true: enable it "
                    f"(nvidia-smi -i {gpu.get('index')} -mig 1, then reset the GPU).",
                )
            )
        pending = gpu.get("mig_mode_pending")
        if mig is not None and pending is not None and pending != mig:
            problems.append(
                _issue(
                    "mig-change-pending",
                    gpu,
                    f"{label} has a MIG mode change pending: reset the GPU or reboot to apply it.",
                )
            )
    return problems


def health_notes(gpus: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Informational observations that are not problems (e.g. idle PCIe downtraining)."""
    notes: List[Dict[str, Any]] = []
    for gpu in gpus:
        notes.extend(_pcie(gpu)[1])
    return notes


# ---------------------------------------------------------------------------
# All together
# ---------------------------------------------------------------------------


def build_facts(
    xml_text: str,
    query_text: Optional[str] = None,
    topo_text: Optional[str] = None,
    expect_mig: bool = False,
) -> Dict[str, Any]:
    """The ``nvidia_smi`` fact from the outputs of -q -x, --query-gpu and topo -m."""
    parsed = parse_xml(xml_text)
    gpus = parsed["gpus"]
    if query_text:
        merge_query(gpus, parse_query_csv(query_text))
    topology = parse_topo(topo_text) if topo_text else None
    return {
        "present": True,
        "driver_version": parsed["driver_version"],
        "cuda_driver_version": parsed["cuda_driver_version"],
        "gpu_count": parsed["gpu_count"],
        "gpus": gpus,
        "topology": topology,
        "health": health(gpus, expect_mig=expect_mig),
        "health_notes": health_notes(gpus),
        "reboot_required": False,
        "reboot_reason": None,
        "error": None,
        "query_error": None,
        "topology_error": None,
    }


def absent_facts(error: Optional[Dict[str, Any]] = None, present: bool = False) -> Dict[str, Any]:
    """The ``nvidia_smi`` fact when nvidia-smi is missing (or failed: pass its error)."""
    return {
        "present": present,
        "driver_version": None,
        "cuda_driver_version": None,
        "gpu_count": 0,
        "gpus": [],
        "topology": None,
        "health": [],
        "health_notes": [],
        "reboot_required": bool(error and error.get("reboot_required")),
        "reboot_reason": error.get("reboot_reason") if error else None,
        "error": error,
        "query_error": None,
        "topology_error": None,
    }
