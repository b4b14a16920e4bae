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
  observations that are not problems. Every code is in ``gpu_health.HEALTH_CODES``.
* ``xid_events``: the driver's Xid events of this boot (parsed from the kernel log by
  ``gpu_health.parse_kernel_log``), counted per GPU and code and classified by the
  catalogue's Xid table; ``failing`` ones are health problems, the others notes.
* Memory errors: retired pages (470-era ``retired_pages/*/retired_count``), rows remapped
  for uncorrectable errors, banks without spare rows, the lifetime uncorrectable ECC count
  and the SRAM threshold flag; a count above zero is a note, past the catalogue's
  ``memory_error_limits`` a problem.

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
from ansible.module_utils.gpu_health import (
    FAILING,
    MEMORY_LIMITS,
    UNLISTED_XID,
    issue,
    parse_kernel_log,
    xid_code,
    xid_row,
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


def _power_default_limit(gpu: ET.Element) -> Optional[float]:
    """The board's default power limit (W): a limit below it was lowered on this host."""
    for block_tag in ("gpu_power_readings", "power_readings"):
        block = gpu.find(block_tag)
        if block is not None:
            return to_number(_find_text(block, "default_power_limit"))
    return None


def _processes(gpu: ET.Element) -> List[Dict[str, Any]]:
    """The processes nvidia-smi lists on the GPU: pid, type (C, G, C+G), name, memory.

    In a container nvidia-smi may list a pid of another PID namespace (one /proc here does
    not have) or no name; the module decides what this host can see, not the parser.
    """
    found: List[Dict[str, Any]] = []
    block = gpu.find("processes")
    if block is None:
        return found
    for proc in block.findall("process_info"):
        found.append(
            {
                "pid": to_int(_find_text(proc, "pid")),
                "type": clean(_find_text(proc, "type")),
                "name": clean(_find_text(proc, "process_name")),
                "used_memory_mib": to_int(_find_text(proc, "used_memory")),
            }
        )
    return found


def _retired_pages_pending(gpu: ET.Element) -> Optional[bool]:
    block = gpu.find("retired_pages")
    if block is None:
        return None
    pending = to_flag(_find_text(block, "pending_retirement"))
    if pending is None:
        pending = to_flag(_find_text(block, "pending_blacklist"))
    return pending


def _retired_count(gpu: ET.Element, cause: str) -> Optional[int]:
    """Pages retired for one cause (``multiple_single_bit_retirement`` or ``double_bit_...``)."""
    return to_int(_find_text(gpu, f"retired_pages/{cause}/retired_count"))


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
        "ecc_sram_threshold_exceeded": to_flag(
            _find_text(gpu, "ecc_errors/aggregate/sram_threshold_exceeded")
        ),
        "retired_pages_pending": _retired_pages_pending(gpu),
        "retired_pages_sbe": _retired_count(gpu, "multiple_single_bit_retirement"),
        "retired_pages_dbe": _retired_count(gpu, "double_bit_retirement"),
        "remapped_rows_pending": to_flag(_find_text(remap, "remapped_row_pending")),
        "remapped_rows_failure": to_flag(_find_text(remap, "remapped_row_failure")),
        "remapped_rows_correctable": to_int(_find_text(remap, "remapped_row_corr")),
        "remapped_rows_uncorrectable": to_int(_find_text(remap, "remapped_row_unc")),
        "row_remap_banks_low": to_int(
            _find_text(remap, "row_remapper_histogram/row_remapper_histogram_low")
        ),
        "row_remap_banks_none": to_int(
            _find_text(remap, "row_remapper_histogram/row_remapper_histogram_none")
        ),
        "pcie_gen_current": to_int(_find_text(link, "pcie_gen/current_link_gen")),
        "pcie_gen_max": to_int(_find_text(link, "pcie_gen/max_link_gen")),
        "pcie_width_current": to_int(_find_text(link, "link_widths/current_link_width")),
        "pcie_width_max": to_int(_find_text(link, "link_widths/max_link_width")),
        "temperature_c": to_int(_find_text(gpu, "temperature/gpu_temp")),
        "power_limit_w": power_limit,
        "power_default_limit_w": _power_default_limit(gpu),
        "power_draw_w": power_draw,
        "utilization_gpu_pct": to_int(_find_text(gpu, "utilization/gpu_util")),
        "utilization_memory_pct": to_int(_find_text(gpu, "utilization/memory_util")),
        "processes": _processes(gpu),
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
    return issue(code, gpu.get("index"), message)


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


def _retired_pages(gpu: Dict[str, Any]) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """Retired pages (pre-Ampere): a note above zero, a problem at the catalogue's limit."""
    sbe, dbe = gpu.get("retired_pages_sbe"), gpu.get("retired_pages_dbe")
    known = [n for n in (sbe, dbe) if n is not None]
    total = sum(known)
    if not total:
        return [], []
    limits = MEMORY_LIMITS["retired_pages"]
    counts = (
        f"{total} retired page(s) ({sbe or 0} for single-bit, {dbe or 0} for double-bit errors)"
    )
    if total >= limits["failing_at"]:
        return [
            _issue(
                "retired-pages-limit",
                gpu,
                f"{_label(gpu)} has {counts}, at or past the limit of {limits['failing_at']} "
                f"(at most {limits['max_retirements']} fit): drain it and ask the provider to "
                "replace the GPU.",
            )
        ], []
    soft = limits["dbe_soft_limit"]
    extra = (
        f"; more than {soft} are for double-bit errors, so a further one within a week "
        "fails DCGM's check"
        if (dbe or 0) > soft
        else ""
    )
    return [], [
        _issue(
            "retired-pages",
            gpu,
            f"{_label(gpu)} has {counts}, below the limit of {limits['failing_at']}{extra}: "
            "watch the count.",
        )
    ]


def _remapped_rows(gpu: Dict[str, Any]) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """Rows remapped for uncorrectable errors, and banks without spare rows (Ampere+)."""
    problems: List[Dict[str, Any]] = []
    notes: List[Dict[str, Any]] = []
    rows = gpu.get("remapped_rows_uncorrectable")
    limit = MEMORY_LIMITS["remapped_rows_uncorrectable"]["failing_at"]
    if rows and rows >= limit:
        problems.append(
            _issue(
                "remapped-rows-limit",
                gpu,
                f"{_label(gpu)} has {rows} rows remapped for uncorrectable errors, NVIDIA's "
                f"limit of {limit}: drain it and ask the provider to replace the GPU.",
            )
        )
    elif rows:
        notes.append(
            _issue(
                "remapped-rows-uncorrectable",
                gpu,
                f"{_label(gpu)} has {rows} row(s) remapped for uncorrectable errors (the limit "
                f"is {limit}): the memory stays usable; watch the count.",
            )
        )
    banks = gpu.get("row_remap_banks_none")
    if banks:
        notes.append(
            _issue(
                "row-remap-bank-exhausted",
                gpu,
                f"{_label(gpu)} has {banks} memory bank(s) with no spare rows left: another "
                "uncorrectable error there cannot be remapped (the GPU would then need replacing).",
            )
        )
    return problems, notes


def _ecc_lifetime(gpu: Dict[str, Any]) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """The SRAM threshold flag (a problem) and the lifetime uncorrectable count (a note)."""
    problems: List[Dict[str, Any]] = []
    notes: List[Dict[str, Any]] = []
    if gpu.get("ecc_sram_threshold_exceeded"):
        problems.append(
            _issue(
                "sram-threshold-exceeded",
                gpu,
                f"{_label(gpu)} has its SRAM error threshold exceeded, NVIDIA's RMA criterion for "
                "SRAM errors: drain it and ask the provider to replace the GPU.",
            )
        )
    errors = gpu.get("ecc_uncorrected_aggregate")
    if errors:
        notes.append(
            _issue(
                "ecc-uncorrected-aggregate",
                gpu,
                f"{_label(gpu)} has {errors} uncorrectable ECC error(s) in its lifetime: no limit "
                "applies to this count; the remap and retirement findings say when to replace it.",
            )
        )
    return problems, notes


def _memory(gpu: Dict[str, Any]) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    problems: List[Dict[str, Any]] = []
    notes: List[Dict[str, Any]] = []
    for check in (_retired_pages, _remapped_rows, _ecc_lifetime):
        more_problems, more_notes = check(gpu)
        problems.extend(more_problems)
        notes.extend(more_notes)
    return problems, notes


# ---------------------------------------------------------------------------
# Xid events from the kernel log
# ---------------------------------------------------------------------------


def _bus_key(bus_id: Optional[str]) -> Optional[str]:
    """A PCI address without its function, as the Xid lines print it: "00000000:18:00"."""
    text = normalize_bus_id(bus_id)
    return re.sub(r"\.[0-7]$", "", text) if text else None


def _new_group(event: Dict[str, Any], gpu: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    row = xid_row(event["xid"]) or {}
    return {
        "xid": event["xid"],
        "code": xid_code(event["xid"]),
        "mnemonic": row.get("mnemonic"),
        "description": row.get("description"),
        "severity": row.get("severity", "informational"),
        "action": row.get("action"),
        "gpu": gpu.get("index") if gpu else None,
        "pci_bus_id": gpu.get("pci_bus_id") if gpu else normalize_bus_id(event["pci"]),
        "count": 0,
        "first_seen": event["timestamp"],
        "last_seen": event["timestamp"],
        "message": event["message"],
        "processes": [],
    }


def xid_events(kernel_text: Optional[str], gpus: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The kernel log's Xid events, one entry per (PCI address, code), in the order first seen.

    Each entry: xid, code (``xid-79``), mnemonic, description, severity, action (from the
    catalogue; None for an unlisted code), gpu (index, None when no GPU of ``gpus`` has that
    address), pci_bus_id, count, first_seen / last_seen (as logged), message (the first
    one), processes (the names logged, once each).
    """
    by_bus = {_bus_key(g.get("pci_bus_id")): g for g in gpus if g.get("pci_bus_id")}
    groups: Dict[Tuple[Optional[str], int], Dict[str, Any]] = {}
    for event in parse_kernel_log(kernel_text):
        bus = _bus_key(event["pci"])
        key = (bus, event["xid"])
        if key not in groups:
            groups[key] = _new_group(event, by_bus.get(bus) if bus else None)
        group = groups[key]
        group["count"] += 1
        group["last_seen"] = event["timestamp"] or group["last_seen"]
        if event["process"] and event["process"] not in group["processes"]:
            group["processes"].append(event["process"])
    return list(groups.values())


def _xid_subject(group: Dict[str, Any], gpus: List[Dict[str, Any]]) -> str:
    gpu = next((g for g in gpus if g.get("index") == group["gpu"]), None)
    if gpu is not None and group["gpu"] is not None:
        return _label(gpu)
    if group["pci_bus_id"]:
        return f"The GPU at {group['pci_bus_id']} (not listed by nvidia-smi)"
    return "A GPU (the log line names no PCI address)"


def _xid_message(group: Dict[str, Any], gpus: List[Dict[str, Any]]) -> str:
    row = xid_row(group["xid"])
    times = f"{group['count']} time(s) since boot"
    if group["first_seen"]:
        times += f" (first {group['first_seen']}, last {group['last_seen']})"
    what = f"Xid {group['xid']}"
    if row:
        what += f" {row['mnemonic']} ({row['description']})"
        advice = row["remediation"]
    else:
        advice = "this code is not in Kindling's table: look it up in NVIDIA's Xid catalogue"
    return f"{_xid_subject(group, gpus)} logged {what} {times}: {advice}."


def _xid_issues(
    groups: List[Dict[str, Any]], gpus: List[Dict[str, Any]]
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    problems: List[Dict[str, Any]] = []
    notes: List[Dict[str, Any]] = []
    for group in groups:
        found = issue(group["code"], group["gpu"], _xid_message(group, gpus))
        if group["code"] != UNLISTED_XID and group["severity"] == FAILING:
            problems.append(found)
        else:
            notes.append(found)
    return problems, notes


def health(
    gpus: List[Dict[str, Any]],
    expect_mig: bool = False,
    xid_groups: Optional[List[Dict[str, Any]]] = None,
) -> List[Dict[str, Any]]:
    """Problems the owner must act on, each ``{"code", "gpu", "message"}``.

    ``xid_groups`` (from ``xid_events``) adds the failing Xid events of the kernel log.
    """
    problems: List[Dict[str, Any]] = []
    for gpu in gpus:
        problems.extend(_gpu_problems(gpu, expect_mig))
    problems.extend(_xid_issues(xid_groups or [], gpus)[0])
    return problems


def _gpu_problems(gpu: Dict[str, Any], expect_mig: bool) -> List[Dict[str, Any]]:
    problems: List[Dict[str, Any]] = []
    problems.extend(_pcie(gpu)[0])
    problems.extend(_memory_flags(gpu))
    problems.extend(_memory(gpu)[0])
    problems.extend(_clocks(gpu)[0])
    problems.extend(_mig(gpu, expect_mig))
    return problems


def _memory_flags(gpu: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Row remap failure or pending, pages pending retirement, volatile uncorrected ECC."""
    problems: List[Dict[str, Any]] = []
    label = _label(gpu)
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
    return problems


def power_limit_lowered(gpu: Dict[str, Any]) -> bool:
    """The enforced power limit is more than 10% below the board's default."""
    limit = gpu.get("power_limit_w")
    default = gpu.get("power_default_limit_w")
    return bool(limit and default and limit < 0.9 * default)


def _clocks(gpu: Dict[str, Any]) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """Clock-event reasons told apart: (problems, notes).

    Thermal slowdown, the hardware power brake and hw_slowdown are problems. The software
    power cap (sw_power_cap) only says that the draw reached the power limit, which a GPU at
    full load does: a note, never a fault by itself. A power limit lowered below the
    board's default is a note too (an owner may cap power on purpose); the throughput check
    names it as a cause when a mode is slow.
    """
    problems: List[Dict[str, Any]] = []
    notes: List[Dict[str, Any]] = []
    label = _label(gpu)
    active = gpu.get("clock_event_reasons_active") or []
    thermal = [r for r in active if r in THERMAL_REASONS]
    if thermal:
        problems.append(
            _issue(
                "thermal-slowdown",
                gpu,
                f"{label} clocks are slowed for heat ({', '.join(thermal)}) at "
                f"{gpu.get('temperature_c')} C: check fans, airflow and inlet temperature.",
            )
        )
    if "hw_power_brake_slowdown" in active:
        problems.append(
            _issue(
                "power-brake",
                gpu,
                f"{label} clocks are slowed by the hardware power brake "
                "(hw_power_brake_slowdown, an external signal from the chassis or power "
                "supply): check the PSU and the chassis power-brake signal with the provider.",
            )
        )
    if "hw_slowdown" in active:
        problems.append(
            _issue(
                "hw-slowdown",
                gpu,
                f"{label} has hardware slowdown engaged (hw_slowdown: thermal or external "
                "power brake): check cooling and the chassis power supply.",
            )
        )
    if "sw_power_cap" in active:
        util = gpu.get("utilization_gpu_pct")
        load = f" at {util}% utilisation" if util is not None else ""
        notes.append(
            _issue(
                "power-cap-reached",
                gpu,
                f"{label} draws its {gpu.get('power_limit_w')} W power limit{load} "
                "(sw_power_cap): normal for a GPU under full load, not a power fault.",
            )
        )
    if power_limit_lowered(gpu):
        notes.append(
            _issue(
                "power-limit-lowered",
                gpu,
                f"{label} has its power limit lowered to {gpu.get('power_limit_w')} W of the "
                f"default {gpu.get('power_default_limit_w')} W: it cannot reach full clocks "
                f"under load (nvidia-smi -i {gpu.get('index')} -pl "
                f"{gpu.get('power_default_limit_w')} restores it).",
            )
        )
    return problems, notes


def _mig(gpu: Dict[str, Any], expect_mig: bool) -> List[Dict[str, Any]]:
    """MIG on when not expected (or off when expected), and a pending MIG change."""
    problems: List[Dict[str, Any]] = []
    label = _label(gpu)
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


def health_notes(
    gpus: List[Dict[str, Any]],
    xid_groups: Optional[List[Dict[str, Any]]] = None,
    xid_error: Optional[str] = None,
) -> List[Dict[str, Any]]:
    """Informational observations that are not problems (e.g. idle PCIe downtraining).

    With ``xid_groups``, the informational Xid events; with ``xid_error`` (the kernel log
    could not be read), a ``kernel-log-unreadable`` note.
    """
    notes: List[Dict[str, Any]] = []
    for gpu in gpus:
        notes.extend(_pcie(gpu)[1])
        notes.extend(_memory(gpu)[1])
        notes.extend(_clocks(gpu)[1])
    notes.extend(_xid_issues(xid_groups or [], gpus)[1])
    if xid_error:
        notes.append(
            issue(
                "kernel-log-unreadable",
                None,
                f"Xid events are unknown: {xid_error}. Run the module as root (become: true), "
                "or set read_kernel_log: false.",
            )
        )
    return notes


def kernel_log_facts(
    kernel_log: Optional[Dict[str, Any]], gpus: List[Dict[str, Any]]
) -> Dict[str, Any]:
    """``xid_events``, ``kernel_log_source`` and ``xid_error`` from a kernel-log read.

    ``kernel_log`` is ``{"text", "source", "error"}`` as the module read it, or None when
    it was not read (``read_kernel_log: false``, or no nvidia-smi).
    """
    if not kernel_log:
        return {"xid_events": [], "kernel_log_source": None, "xid_error": None}
    return {
        "xid_events": xid_events(kernel_log.get("text"), gpus),
        "kernel_log_source": kernel_log.get("source"),
        "xid_error": kernel_log.get("error"),
    }


# ---------------------------------------------------------------------------
# All together
# ---------------------------------------------------------------------------


def build_facts(
    xml_text: str,
    query_text: Optional[str] = None,
    topo_text: Optional[str] = None,
    expect_mig: bool = False,
    kernel_log: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """The ``nvidia_smi`` fact from the outputs of -q -x, --query-gpu and topo -m.

    ``kernel_log`` (``{"text", "source", "error"}``) adds the kernel log's Xid events.
    """
    parsed = parse_xml(xml_text)
    gpus = parsed["gpus"]
    if query_text:
        merge_query(gpus, parse_query_csv(query_text))
    topology = parse_topo(topo_text) if topo_text else None
    klog = kernel_log_facts(kernel_log, gpus)
    return {
        "present": True,
        "driver_version": parsed["driver_version"],
        "cuda_driver_version": parsed["cuda_driver_version"],
        "gpu_count": parsed["gpu_count"],
        "gpus": gpus,
        "topology": topology,
        "health": health(gpus, expect_mig=expect_mig, xid_groups=klog["xid_events"]),
        "health_notes": health_notes(gpus, klog["xid_events"], klog["xid_error"]),
        "reboot_required": False,
        "reboot_reason": None,
        "error": None,
        "query_error": None,
        "topology_error": None,
        **klog,
    }


def absent_facts(
    error: Optional[Dict[str, Any]] = None,
    present: bool = False,
    kernel_log: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """The ``nvidia_smi`` fact when nvidia-smi is missing (or failed: pass its error).

    A failed nvidia-smi still reports the kernel log's Xid events (``kernel_log``): a GPU
    that fell off the bus (Xid 79) is often why it failed.
    """
    klog = kernel_log_facts(kernel_log, [])
    return {
        "present": present,
        "driver_version": None,
        "cuda_driver_version": None,
        "gpu_count": 0,
        "gpus": [],
        "topology": None,
        "health": health([], xid_groups=klog["xid_events"]),
        "health_notes": health_notes([], klog["xid_events"], klog["xid_error"]),
        "reboot_required": bool(error and error.get("reboot_required")),
        "reboot_reason": error.get("reboot_reason") if error else None,
        "error": error,
        "query_error": None,
        "topology_error": None,
        **klog,
    }
