"""GPU health: every finding's code, the Xid events of the kernel log, memory-error limits.

* ``HEALTH_CODES``: every code ``nvidia_smi_facts`` reports in ``health`` (severity
  ``failing``: act on it) or ``health_notes`` (``informational``), with what it means and
  what to do. It covers module_utils/nvidia_smi.py and module_utils/gpu_fabric.py, and one
  ``xid-<N>`` code per row of the catalogue's ``xid_events`` table. docs/HEALTH_CODES.md
  is generated from it (tools/health_codes.py); a unit test fails when a module emits a
  code that is not here.
* Xid events: ``parse_kernel_log`` reads the driver's ``NVRM: Xid (PCI:...): N, ...``
  lines out of ``journalctl -k`` or ``dmesg`` output (with or without pid/name, with
  journald, syslog, ``dmesg`` and ``dmesg -T`` prefixes); ``xid_row`` classifies a code.
* ``MEMORY_LIMITS``: the catalogue's ``memory_error_limits`` (retired pages, remapped rows).
* Reports: ``report_codes`` turns ``health`` and ``health_notes`` into the rows that the
  throughput report (roles/gpu_check, through the gpu_throughput_measure module's ``health_codes``)
  and the fleet report (tools/fleet_report.py) show next to their verdict: failing first,
  each with its severity and the registry's remediation; ``health_line`` says them in one
  line.

The facts (NVIDIA's Xid catalogue, the memory limits and their sources) live in
data/vendor_catalogue.yml; this file only reads them. No subprocess calls here.

Runs on target hosts: Python 3.8 compatible, standard library only.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ansible.module_utils.vendor_catalogue import CATALOGUE

FAILING = "failing"
INFORMATIONAL = "informational"

#: The catalogue's Xid table, keyed by code.
XID_TABLE: Dict[int, Dict[str, Any]] = {int(row["xid"]): row for row in CATALOGUE["xid_events"]}

#: The catalogue's memory-error limits.
MEMORY_LIMITS: Dict[str, Any] = CATALOGUE["memory_error_limits"]

UNLISTED_XID = "xid-unlisted"


def xid_code(xid: int) -> str:
    """The health code of an Xid: ``xid-79``, or ``xid-unlisted`` for a code not in the table."""
    return f"xid-{xid}" if xid in XID_TABLE else UNLISTED_XID


def xid_row(xid: int) -> Optional[Dict[str, Any]]:
    """The catalogue row of an Xid code, or None."""
    return XID_TABLE.get(xid)


def issue(code: str, gpu_index: Optional[int], message: str) -> Dict[str, Any]:
    """One finding, the shape of every ``health`` / ``health_notes`` entry."""
    return {"code": code, "gpu": gpu_index, "message": message}


# ---------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------


def _code(severity: str, meaning: str, remediation: str, emitted_by: str) -> Dict[str, str]:
    return {
        "severity": severity,
        "meaning": meaning,
        "remediation": remediation,
        "emitted_by": emitted_by,
    }


_SMI = "module_utils/nvidia_smi.py"
_PAGE_LIMIT = MEMORY_LIMITS["retired_pages"]["failing_at"]
_PAGE_MAX = MEMORY_LIMITS["retired_pages"]["max_retirements"]
_REMAP_LIMIT = MEMORY_LIMITS["remapped_rows_uncorrectable"]["failing_at"]
_FABRIC = "module_utils/gpu_fabric.py"

_STATIC_CODES: Dict[str, Dict[str, str]] = {
    # PCIe
    "pcie-link-degraded": _code(
        FAILING,
        "The PCIe link runs narrower than its maximum width, or at a lower generation while the "
        "GPU is busy.",
        "Reseat the GPU or riser, check the slot and the BIOS PCIe settings.",
        _SMI,
    ),
    "pcie-gen-idle-downtrain": _code(
        INFORMATIONAL,
        "The PCIe link generation is below its maximum while the GPU is idle (power saving).",
        "None: the link retrains to full speed under load.",
        _SMI,
    ),
    # Memory: row remapping (Ampere and later)
    "row-remap-failure": _code(
        FAILING,
        "A memory row could not be remapped (nvidia-smi's remapped_row_failure); NVIDIA's RMA "
        "criteria are met once its field diagnostic confirms it.",
        "Drain the GPU and ask the provider to replace it.",
        _SMI,
    ),
    "row-remap-pending": _code(
        FAILING,
        "A memory row is marked for remapping; the remap takes effect at the next GPU reset.",
        "Reset the GPU (nvidia-smi -r -i N) or reboot.",
        _SMI,
    ),
    "remapped-rows-uncorrectable": _code(
        INFORMATIONAL,
        "Rows were remapped for uncorrectable errors (remapped_row_unc above zero, below "
        f"NVIDIA's limit of {_REMAP_LIMIT}).",
        "None now; watch the count. Row remapping keeps the memory usable.",
        _SMI,
    ),
    "remapped-rows-limit": _code(
        FAILING,
        f"The rows remapped for uncorrectable errors reached NVIDIA's limit of {_REMAP_LIMIT}.",
        "Drain the GPU and ask the provider to replace it.",
        _SMI,
    ),
    "row-remap-bank-exhausted": _code(
        INFORMATIONAL,
        "Some memory banks have no spare rows left (row_remapper_histogram 'none' above zero): the "
        "next uncorrectable error in such a bank cannot be remapped.",
        "None now; a later remap failure (row-remap-failure) is the replacement signal.",
        _SMI,
    ),
    # Memory: page retirement (Volta and older)
    "retired-pages-pending": _code(
        FAILING,
        "Memory pages are waiting to be retired (pending blacklist); they are applied at the next "
        "driver load.",
        "Reboot (or reset the GPU) so the bad pages are blacklisted.",
        _SMI,
    ),
    "retired-pages": _code(
        INFORMATIONAL,
        "Pages were retired for single-bit or double-bit errors, below the limit of "
        f"{_PAGE_LIMIT}.",
        "None now; watch the count.",
        _SMI,
    ),
    "retired-pages-limit": _code(
        FAILING,
        f"Retired pages (single-bit plus double-bit) reached {_PAGE_LIMIT}, DCGM's limit that "
        f"matches NVIDIA's field diagnostic ({_PAGE_MAX} retirements is the most a GPU holds).",
        "Drain the GPU and ask the provider to replace it.",
        _SMI,
    ),
    # Memory: ECC counters
    "ecc-uncorrected-volatile": _code(
        FAILING,
        "Uncorrectable ECC errors since the driver loaded.",
        "Drain the GPU's jobs and reset it; replace it if they recur.",
        _SMI,
    ),
    "ecc-uncorrected-aggregate": _code(
        INFORMATIONAL,
        "The GPU's lifetime count of uncorrectable ECC errors is above zero. NVIDIA gives no "
        "limit for this count.",
        "None now; the remap, retirement and SRAM findings say when the GPU must be replaced.",
        _SMI,
    ),
    "sram-threshold-exceeded": _code(
        FAILING,
        "nvidia-smi's SRAM Threshold Exceeded flag is set: NVIDIA's RMA criterion for "
        "uncorrectable SRAM errors.",
        "Drain the GPU and ask the provider to replace it.",
        _SMI,
    ),
    # Clocks
    "thermal-slowdown": _code(
        FAILING,
        "Clocks are slowed for heat (hw_thermal_slowdown or sw_thermal_slowdown).",
        "Check the fans, the airflow and the inlet temperature.",
        _SMI,
    ),
    "power-brake": _code(
        FAILING,
        "Clocks are slowed by the hardware power brake (hw_power_brake_slowdown), an external "
        "signal from the chassis or power supply.",
        "Check the PSU and the chassis power-brake signal with the provider.",
        _SMI,
    ),
    "power-cap-reached": _code(
        INFORMATIONAL,
        "The power draw reached the power limit (sw_power_cap): normal for a GPU under full "
        "load, not a power fault.",
        "None by itself. If another process loads the GPU, that process is the cause.",
        _SMI,
    ),
    "power-limit-lowered": _code(
        INFORMATIONAL,
        "The enforced power limit is more than 10% below the board's default: the GPU cannot "
        "reach full clocks under load.",
        "Restore it (nvidia-smi -i N -pl <default W>) unless the cap is intended.",
        _SMI,
    ),
    "hw-slowdown": _code(
        FAILING,
        "Hardware slowdown is engaged (thermal or an external power brake).",
        "Check the cooling and the chassis power supply.",
        _SMI,
    ),
    # MIG
    "mig-enabled-unexpected": _code(
        FAILING,
        "MIG is enabled, which hides the full GPU from training jobs.",
        "Disable it (nvidia-smi -i N -mig 0, then reset the GPU) or set expect_mig: true.",
        _SMI,
    ),
    "mig-not-enabled": _code(
        FAILING,
        "MIG is disabled but expect_mig is true.",
        "Enable it (nvidia-smi -i N -mig 1, then reset the GPU).",
        _SMI,
    ),
    "mig-change-pending": _code(
        FAILING,
        "A MIG mode change waits for a GPU reset.",
        "Reset the GPU or reboot.",
        _SMI,
    ),
    # The kernel log
    UNLISTED_XID: _code(
        INFORMATIONAL,
        "The kernel log holds an Xid whose code is not in Kindling's table.",
        "Look the code up in NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors).",
        _SMI,
    ),
    "kernel-log-unreadable": _code(
        INFORMATIONAL,
        "Neither journalctl nor dmesg could be read, so Xid events are unknown (xid_error "
        "says why).",
        "Run the module as root (become: true), or allow reading the kernel log; "
        "read_kernel_log: false turns the check off.",
        _SMI,
    ),
    # The NVLink fabric (module_utils/gpu_fabric.py)
    "nvlink-down": _code(
        FAILING,
        "A GPU has fewer active NVLinks than its peers or than expected.",
        "Reset the GPU or reboot; if links stay down, have the provider check the NVLink "
        "connections (nvidia-smi nvlink -s).",
        _FABRIC,
    ),
    "fabric-state-not-completed": _code(
        FAILING,
        "On an NVSwitch host the GPU's fabric state is not Completed: the fabric manager is not "
        "running or has not finished, and CUDA cannot use the GPU until it has.",
        "Start nvidia-fabricmanager (systemctl start nvidia-fabricmanager) and wait for it; check "
        "journalctl -u nvidia-fabricmanager.",
        _FABRIC,
    ),
    "fabric-state-failed": _code(
        FAILING,
        "The GPU's fabric registration finished with an error status.",
        "Read journalctl -u nvidia-fabricmanager, restart the fabric manager, reset the GPUs or "
        "reboot; contact the provider if it persists.",
        _FABRIC,
    ),
    "fabric-manager-version-mismatch": _code(
        FAILING,
        "The fabric manager's version differs from the driver's; it refuses to run with another "
        "driver version.",
        "Install the fabric manager of exactly the driver's version (the nvidia_driver role pins "
        "both).",
        _FABRIC,
    ),
    "fabric-manager-missing": _code(
        FAILING,
        "An NVSwitch host has no running fabric manager.",
        "Install and start nvidia-fabricmanager at the driver's version.",
        _FABRIC,
    ),
}


def _xid_codes() -> Dict[str, Dict[str, str]]:
    codes = {}
    for xid, row in sorted(XID_TABLE.items()):
        entry = _code(
            row["severity"],
            f"Xid {xid} {row['mnemonic']}: {row['description']} (NVIDIA's bucket "
            f"{row['resolution']}).",
            row["remediation"][:1].upper() + row["remediation"][1:] + ".",
            _SMI,
        )
        entry["action"] = row["action"]
        entry["source"] = row["source"]
        codes[f"xid-{xid}"] = entry
    return codes


#: Every health code: severity, meaning, remediation, the file that emits it.
HEALTH_CODES: Dict[str, Dict[str, str]] = {}
HEALTH_CODES.update(_STATIC_CODES)
HEALTH_CODES.update(_xid_codes())


# ---------------------------------------------------------------------------
# The findings in reports
# ---------------------------------------------------------------------------


def gpu_label(gpu_index: Any) -> str:
    """``GPU 3``, or ``no GPU index`` for a finding about no GPU that nvidia-smi lists."""
    return f"GPU {gpu_index}" if isinstance(gpu_index, int) else "no GPU index"


def _rows(findings: Any, severity: str) -> List[Dict[str, Any]]:
    rows = []
    for finding in findings or []:
        if not isinstance(finding, dict) or not finding.get("code"):
            continue
        code = str(finding["code"])
        gpu = finding.get("gpu")
        rows.append(
            {
                "code": code,
                "gpu": gpu,
                "where": gpu_label(gpu),
                "severity": severity,
                "message": finding.get("message") or "",
                "remediation": (HEALTH_CODES.get(code) or {}).get("remediation"),
            }
        )
    return rows


def report_codes(health: Any, notes: Any = None) -> List[Dict[str, Any]]:
    """The findings a report shows next to its verdict, failing first.

    ``health`` and ``notes`` are ``nvidia_smi.health`` and ``nvidia_smi.health_notes``.
    Each row is ``{code, gpu, where, severity, message, remediation}``: ``severity`` is
    ``failing`` for a ``health`` entry and ``informational`` for a note (the list a finding
    is in is what the module decided); ``where`` is ``gpu_label(gpu)``; ``remediation`` is
    the registry's one-line remedy (None for a code the registry lacks). The facts' order
    is kept within each severity; anything that is not a finding is skipped.
    """
    return _rows(health, FAILING) + _rows(notes, INFORMATIONAL)


def code_list(rows: List[Dict[str, Any]]) -> str:
    """``xid-79 (GPU 3), nvlink-down (GPUs 1, 2), fabric-manager-missing``: codes in order."""
    where: Dict[str, List[int]] = {}
    for row in rows:
        gpus = where.setdefault(row["code"], [])
        if isinstance(row.get("gpu"), int) and row["gpu"] not in gpus:
            gpus.append(row["gpu"])
    parts = []
    for code, gpus in where.items():
        if len(gpus) == 1:
            parts.append(f"{code} (GPU {gpus[0]})")
        elif gpus:
            parts.append(f"{code} (GPUs {', '.join(str(g) for g in gpus)})")
        else:
            parts.append(code)
    return ", ".join(parts)


def health_line(rows: Optional[List[Dict[str, Any]]]) -> str:
    """One line for the play's output and the reports, e.g.

    ``GPU health: FAILING xid-79 (GPU 3); notes: pcie-gen-idle-downtrain (GPU 1)``,
    ``GPU health: no findings``, or, with ``rows`` None (no nvidia_smi facts),
    ``GPU health: unknown (no nvidia_smi facts)``.
    """
    if rows is None:
        return "GPU health: unknown (no nvidia_smi facts)"
    failing = [r for r in rows if r["severity"] == FAILING]
    notes = [r for r in rows if r["severity"] != FAILING]
    if not rows:
        return "GPU health: no findings"
    line = f"GPU health: FAILING {code_list(failing)}" if failing else "GPU health: no failing code"
    if notes:
        line += f"; notes: {code_list(notes)}"
    return line


# ---------------------------------------------------------------------------
# The kernel log
# ---------------------------------------------------------------------------


def journal_command(journalctl: str) -> List[str]:
    """This boot's kernel messages, with the seconds since boot in front of each."""
    return [journalctl, "-k", "-b", "0", "--no-pager", "-o", "short-monotonic"]


def dmesg_command(dmesg: str) -> List[str]:
    """The kernel ring buffer (what it still holds of this boot), read only."""
    return [dmesg]


def journal_has_entries(text: str) -> bool:
    """Whether journalctl printed any message ("-- No entries --" alone is none)."""
    return any(line.strip() and not line.startswith("-- ") for line in text.splitlines())


_XID_LINE = re.compile(r"NVRM: Xid \((?P<device>[^)]*)\):\s*(?P<xid>\d+)\b,?\s*(?P<rest>.*)$")
_XID_PCI = re.compile(
    r"^(?:PCI:)?(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)$"
)
_XID_PID = re.compile(r"^pid=(?P<pid>'?<unknown>'?|\d+),?\s*")
_XID_NAME = re.compile(r"^name=(?P<name>[^,]*),?\s*")
#: Timestamps in front of a kernel message, wall clock first, then seconds since boot.
_TIMESTAMPS = (
    re.compile(r"^(?P<ts>[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2})\s"),  # syslog / journalctl
    re.compile(r"(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[^\s\]]*)"),  # ISO 8601
    re.compile(r"\[(?P<ts>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4})\]"),  # -T
    re.compile(r"\[\s*(?P<ts>\d+\.\d+)\]"),  # dmesg, journalctl -o short-monotonic
)


def _timestamp(prefix: str) -> Optional[str]:
    for pattern in _TIMESTAMPS:
        match = pattern.search(prefix)
        if match:
            return match.group("ts").strip()
    return None


def _pid_and_name(rest: str) -> Any:
    pid: Optional[int] = None
    name: Optional[str] = None
    match = _XID_PID.match(rest)
    if match:
        pid = int(match.group("pid")) if match.group("pid").isdigit() else None
        rest = rest[match.end() :]
        match = _XID_NAME.match(rest)
        if match:
            value = match.group("name").strip()
            name = None if value in ("", "<unknown>") else value
            rest = rest[match.end() :]
    return pid, name, rest.strip()


def parse_xid_line(line: str) -> Optional[Dict[str, Any]]:
    """One ``NVRM: Xid`` kernel message -> ``{xid, pci, pid, process, message, timestamp}``.

    ``pci`` is the address as printed ("0000:18:00"), None when the line has none; ``pid``
    and ``process`` are None when absent or ``<unknown>``; ``timestamp`` is the line's
    wall-clock time, else its seconds since boot, as printed (None without either).
    Returns None for any other line.
    """
    match = _XID_LINE.search(line)
    if not match:
        return None
    device = _XID_PCI.match(match.group("device").strip())
    pid, name, message = _pid_and_name(match.group("rest"))
    return {
        "xid": int(match.group("xid")),
        "pci": device.group("bus") if device else None,
        "pid": pid,
        "process": name,
        "message": message,
        "timestamp": _timestamp(line[: match.start()]),
    }


def parse_kernel_log(text: Optional[str]) -> List[Dict[str, Any]]:
    """Every Xid event in kernel-log text, in the order logged."""
    events = []
    for line in (text or "").splitlines():
        if "NVRM: Xid" in line:
            event = parse_xid_line(line)
            if event is not None:
                events.append(event)
    return events
