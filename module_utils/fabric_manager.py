"""Where NVIDIA's fabric manager stands on a host, and what to do about it.

On an NVSwitch host (HGX/DGX A100, H100, H200; module_utils/gpu_fabric.py decides that) the
GPUs can't run CUDA until ``nvidia-fabricmanager.service`` has configured the fabric, and
the daemon refuses to start unless its version is exactly the driver's. The inputs are facts
the role has read: whether the fabric needs the fabric manager, the dpkg status of the
fabric manager packages (names from the catalogue through stack_plan), the driver's version
(nvidia-smi, or the installed driver package when the module is not loaded yet), the unit's
systemd state and, where nvidia-smi reports it, the GPUs' fabric state. The outcome:

- ``not-needed``: no NVSwitch fabric; nothing is installed (the daemon fails without one);
- ``install``: needed, and a package is missing or not at the driver's version (install mode);
- ``missing`` / ``version-mismatch``: the same where nothing is to be installed (an adopted
  driver, and verify after the stage): the message names both versions and the fix;
- ``not-running``: installed at the right version, the unit is not active;
- ``fabric-not-completed``: the unit runs, a GPU's fabric state is not Completed yet;
- ``ok``: installed at the driver's version, active, every reported fabric state Completed.

Runs on target hosts: Python 3.8, standard library only.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ansible.module_utils.gpu_fabric import ATTACHED_STATES
from ansible.module_utils.vendor_catalogue import CATALOGUE

UNIT = CATALOGUE["nvswitch_devices"]["fabric_manager"]["unit"]

# systemctl show properties the decision reads.
UNIT_PROPERTIES = ("LoadState", "ActiveState", "SubState", "UnitFileState", "Result")

OUTCOMES = (
    "not-needed",
    "install",
    "missing",
    "version-mismatch",
    "not-running",
    "fabric-not-completed",
    "ok",
)


def upstream_version(version: Optional[str]) -> str:
    """A Debian package version without its epoch and revision: 1:580.95.05-1 -> 580.95.05."""
    if not version:
        return ""
    text = version.split(":", 1)[1] if re.match(r"^\d+:", version) else version
    return text.rsplit("-", 1)[0] if "-" in text else text


def parse_systemctl_show(text: str) -> Dict[str, str]:
    """``systemctl show -p A -p B unit`` output (KEY=value lines) -> dict."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def install_command(packages: List[str], driver_version: str) -> str:
    """The apt command that installs the fabric manager at exactly the driver's version."""
    pins = " ".join(f"{name}={driver_version}-*" for name in packages)
    return f"apt-get install --allow-change-held-packages {pins}"


def _versions(packages: List[str], installed: Dict[str, Dict[str, Any]]) -> Dict[str, str]:
    return {
        name: upstream_version(installed[name]["version"]) for name in packages if name in installed
    }


def decide(
    needed: bool,
    needed_reason: str,
    packages: List[str],
    installed: Dict[str, Dict[str, Any]],
    driver_version: Optional[str],
    unit: Dict[str, str],
    fabric_states: Optional[List[Dict[str, Any]]] = None,
    install_allowed: bool = True,
) -> Dict[str, Any]:
    """The outcome, one-line message and fix; see the module docstring.

    ``installed``: driver_state.parse_dpkg_status() rows of installed packages
    ({name: {version, held, state}}). ``unit``: parse_systemctl_show() of the unit.
    ``fabric_states``: gpu_fabric.parse_fabric_xml() entries ({"gpu": index, "state":
    "completed" | "in_progress" | ..., "state_text": "In Progress"}); None or [] when
    nvidia-smi does not run.
    """
    present = {
        name: info
        for name, info in installed.items()
        if name in packages and info.get("state", "installed") == "installed"
    }
    versions = _versions(packages, present)
    missing = [name for name in packages if name not in present]
    wrong = sorted(name for name, v in versions.items() if driver_version and v != driver_version)
    active = unit.get("ActiveState") == "active"
    result: Dict[str, Any] = {
        "needed": needed,
        "needed_reason": needed_reason,
        "packages": packages,
        "installed_versions": versions,
        "driver_version": driver_version or "",
        "missing": missing,
        "mismatched": wrong,
        "held": sorted(name for name, info in present.items() if info.get("held")),
        "unit": UNIT,
        "unit_active": active,
        "unit_enabled": unit.get("UnitFileState") == "enabled",
        "fix": "",
    }
    if not needed:
        note = ""
        if present:
            note = (
                f" The fabric manager ({', '.join(sorted(present))}) is installed but this host "
                "has no NVSwitch fabric: its service fails to start here; remove it if nothing "
                "else needs it."
            )
        return dict(result, outcome="not-needed", message=needed_reason + note)
    if not driver_version:
        fix = f"install the driver first; then {install_command(packages, '<driver version>')}"
        return dict(
            result,
            outcome="install" if install_allowed else "missing",
            message=f"{needed_reason} The driver's version is not known yet.",
            fix=fix,
        )
    if missing or wrong:
        if install_allowed:
            return dict(
                result,
                outcome="install",
                message=f"{needed_reason} Installing {', '.join(packages)} at {driver_version}.",
                fix=install_command(packages, driver_version),
            )
        if missing:
            return dict(
                result,
                outcome="missing",
                message=(
                    f"{needed_reason} The fabric manager is not installed "
                    f"({', '.join(missing)} missing); the GPUs can't run CUDA until it runs "
                    "(CUDA error 802, system not yet initialized)."
                ),
                fix=f"{install_command(packages, driver_version)}; systemctl enable --now {UNIT}",
            )
        found = ", ".join(f"{name} {versions[name]}" for name in wrong)
        return dict(
            result,
            outcome="version-mismatch",
            message=(
                f"The fabric manager's version ({found}) differs from the driver's "
                f"({driver_version}): the daemon refuses to start, and CUDA fails with "
                "error 802 until both match exactly."
            ),
            fix=(
                f"{install_command(packages, driver_version)}, or install the driver of "
                f"version {versions[wrong[0]]}; then systemctl restart {UNIT}"
            ),
        )
    if not active:
        state = unit.get("ActiveState") or "unknown"
        sub = unit.get("SubState") or ""
        why = unit.get("Result") or ""
        detail = f"{state}{'/' + sub if sub else ''}{', result ' + why if why else ''}"
        return dict(
            result,
            outcome="not-running",
            message=(
                f"The fabric manager {driver_version} is installed but {UNIT} is {detail}: "
                "the GPUs can't run CUDA until it runs."
            ),
            fix=f"systemctl enable --now {UNIT}; journalctl -u {UNIT} says why it stopped",
        )
    pending = [
        s
        for s in (fabric_states or [])
        if s.get("state") in ATTACHED_STATES and s.get("state") != "completed"
    ]
    if pending:
        listed = ", ".join(
            f"GPU {s.get('gpu')} {s.get('state_text') or s.get('state')}" for s in pending
        )
        return dict(
            result,
            outcome="fabric-not-completed",
            message=(
                f"{UNIT} runs, but the NVSwitch fabric is not configured yet ({listed}): "
                "CUDA fails with error 802 until every GPU's fabric state is Completed."
            ),
            fix=f"wait; check nvidia-smi -q -d FABRIC again; if it stays, journalctl -u {UNIT}",
        )
    return dict(
        result,
        outcome="ok",
        message=f"The fabric manager {driver_version} runs at the driver's version.",
    )
