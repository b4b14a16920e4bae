"""Where the NVIDIA kernel module stands for the running kernel, and the next step.

A driver installed from packages is two things: the userspace (nvidia-smi, libcuda) and a
kernel module that DKMS builds for each kernel whose headers are installed (or a
precompiled module package). Right after an install the module is usually built but not
loaded, and sometimes not built for the kernel that runs: the headers of the running
kernel are missing, the build failed, or (in a container) the kernel is the host's. The
states, from what ``dkms status``, ``modinfo -k <kernel>`` and ``/proc/driver/nvidia``
say:

- ``loaded``: the module runs (``/proc/driver/nvidia/version``); ``loaded_version`` says
  which, and ``stale`` is true when it is not the installed module's version (the old
  module still runs: reboot);
- ``built``: a module for the running kernel is installed but not loaded (reboot, or
  ``modprobe nvidia`` where nothing else holds the GPU);
- ``not_built``: the userspace is there but no module for the running kernel: DKMS added
  it but built it for no kernel or only for others (a reboot into one of those helps);
- ``absent``: neither DKMS nor modinfo knows an nvidia module.

Runs on target hosts: Python 3.8, standard library only.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional

from ansible.module_utils.command import CommandError, run

#: Seconds ``dkms status`` and ``modinfo`` may take; past it their answer counts as empty.
READ_TIMEOUT = 120

# dkms 3: "nvidia-current/535.261.03, 6.1.0-28-amd64, x86_64: installed" or "name/ver: added"
# dkms 2: "nvidia, 470.82.01, 5.4.0-91-generic, x86_64: installed" or "nvidia, 470.82.01: added"
_DKMS3 = re.compile(
    r"^(?P<name>[^/,\s]+)/(?P<version>[^,:\s]+)(?:,\s*(?P<kernel>[^,\s]+),\s*(?P<arch>[^:\s]+))?:\s*(?P<state>[A-Za-z]+)"
)
_DKMS2 = re.compile(
    r"^(?P<name>[^/,\s]+),\s*(?P<version>[^,:\s]+)(?:,\s*(?P<kernel>[^,\s]+),\s*(?P<arch>[^:\s]+))?:\s*(?P<state>[A-Za-z]+)"
)


def parse_dkms_status(text: str) -> List[Dict[str, Optional[str]]]:
    """``dkms status`` -> one row per line: name, version, kernel (None when only added), state."""
    rows: List[Dict[str, Optional[str]]] = []
    for raw in text.splitlines():
        line = raw.strip()
        match = _DKMS3.match(line) or _DKMS2.match(line)
        if not match:
            continue
        rows.append(
            {
                "name": match.group("name"),
                "version": match.group("version"),
                "kernel": match.group("kernel"),
                "state": match.group("state").lower(),
            }
        )
    return rows


def nvidia_rows(rows: List[Dict[str, Optional[str]]]) -> List[Dict[str, Optional[str]]]:
    """The DKMS modules of the NVIDIA driver (nvidia, nvidia-current, nvidia-srv, ...)."""
    return [r for r in rows if (r["name"] or "").startswith("nvidia")]


def _kernel_key(kernel: str) -> List[Any]:
    """Sort key for kernel releases by their numbers: 5.15.0-101-generic after 5.15.0-91-generic."""
    return [int(part) if part.isdigit() else part for part in re.split(r"([0-9]+)", kernel)]


def decide(
    running_kernel: str,
    dkms_text: str,
    modinfo_version: str = "",
    loaded_version: str = "",
    headers_present: bool = False,
    in_container: bool = False,
) -> Dict[str, Any]:
    """The state of the module for ``running_kernel``, with the reason and the next step."""
    rows = nvidia_rows(parse_dkms_status(dkms_text))
    built_for = sorted(
        # "built" is compiled but not installed into /lib/modules: only "installed" loads.
        {r["kernel"] for r in rows if r["kernel"] and r["state"] == "installed"},
        key=_kernel_key,
    )
    dkms_versions = sorted({r["version"] for r in rows if r["version"]})
    result: Dict[str, Any] = {
        "running_kernel": running_kernel,
        "dkms": rows,
        "dkms_versions": dkms_versions,
        "built_for": built_for,
        "module_version": modinfo_version or None,
        "loaded_version": loaded_version or None,
        "headers_present": headers_present,
        "stale": False,
    }
    if loaded_version:
        stale = bool(modinfo_version) and modinfo_version != loaded_version
        result.update(
            state="loaded",
            stale=stale,
            reason=(
                f"module {loaded_version} is loaded, but the installed module for "
                f"{running_kernel} is {modinfo_version}"
                if stale
                else f"module {loaded_version} is loaded"
            ),
            next_step="reboot to load the installed module" if stale else "",
        )
        return result
    if modinfo_version or running_kernel in built_for:
        version = modinfo_version or ", ".join(dkms_versions)
        result.update(
            state="built",
            reason=(
                f"module {version} is built for the running kernel {running_kernel} but not loaded"
            ),
            next_step="reboot the host (or modprobe nvidia where nothing else holds the GPU)",
        )
        return result
    if not rows:
        result.update(
            state="absent",
            reason=f"no NVIDIA kernel module is installed for {running_kernel} (DKMS knows none)",
            next_step="install the driver's kernel-module package",
        )
        return result
    versions = ", ".join(dkms_versions)
    why = (
        "this is a container, which runs the host's kernel"
        if in_container
        else f"the headers of {running_kernel} are not installed"
        if not headers_present
        else "the DKMS build did not produce it (see /var/lib/dkms/*/*/build/make.log)"
    )
    elsewhere = f"; it is built for {', '.join(built_for)}" if built_for else ""
    if in_container:
        step = (
            "the host's kernel needs the driver: install it on the host; a real host reboots once "
            "after the headers of its kernel are installed and DKMS has built the module"
        )
    elif built_for:
        step = (
            f"reboot into {built_for[-1]}, or install linux-headers-{running_kernel} and run "
            "dkms autoinstall"
        )
    else:
        step = (
            f"install linux-headers-{running_kernel}, run dkms autoinstall -k {running_kernel}, "
            "then reboot"
        )
    result.update(
        state="not_built",
        reason=(
            f"driver userspace installed, kernel module {versions} not built for the running "
            f"kernel {running_kernel}: {why}{elsewhere}"
        ),
        next_step=step,
    )
    return result


_PROC = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+([0-9]+(?:\.[0-9]+)+)")


def parse_proc_version(text: str) -> str:
    """``/proc/driver/nvidia/version`` -> the loaded module's version ("" when unreadable).

    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03  Release Build ..." or
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build ...".
    """
    match = _PROC.search(text or "")
    return match.group(1) if match else ""


def read(module: Any, in_container: bool = False, name: str = "nvidia") -> Dict[str, Any]:
    """Read the host and decide: ``dkms status``, ``modinfo -k <running kernel> -F version``,
    /proc/driver/nvidia/version and the running kernel's build directory.

    ``module`` is the AnsibleModule (its get_bin_path); nvidia_kernel_module_facts
    and nvidia_driver_plan (``kernel_module_facts``) both read through here.
    """
    kernel = os.uname().release
    dkms_text = ""
    dkms = module.get_bin_path("dkms")
    if dkms:
        try:
            rc, out, _err = run([dkms, "status"], READ_TIMEOUT)
        except CommandError:
            rc, out = 1, ""
        dkms_text = out if rc == 0 else ""
    modinfo_version = ""
    modinfo = module.get_bin_path("modinfo")
    if modinfo:
        try:
            rc, out, _err = run([modinfo, "-k", kernel, "-F", "version", name], READ_TIMEOUT)
        except CommandError:
            rc, out = 1, ""
        modinfo_version = out.strip() if rc == 0 else ""
    loaded = ""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8", errors="replace") as handle:
            loaded = parse_proc_version(handle.read())
    except OSError:
        pass
    return decide(
        kernel,
        dkms_text,
        modinfo_version=modinfo_version,
        loaded_version=loaded,
        headers_present=os.path.isdir(f"/lib/modules/{kernel}/build"),
        in_container=in_container,
    )
