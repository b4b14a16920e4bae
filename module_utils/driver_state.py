"""The nvidia_driver role's one decision: install, keep (present) or adopt the driver.

Inputs are facts the role has already read (the dpkg status of the layout's driver
packages, the driver nvidia-smi reports) and the plan (the packages and version glob
that stack_plan.driver_packages returned, the branch, the adopt rules). The outcome:

- ``install``: the wanted packages are missing, at another version, or a killed dpkg run
  left a driver package unfinished (dpkg_prepare finishes it, the install repairs it);
- ``present``: every wanted package is installed at the wanted version;
- ``adopted``: a driver Kindling did not install works (nvidia-smi reports it) and meets
  the minimum: nothing is installed.

Runs on target hosts: Python 3.8, standard library only.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from typing import Any, Dict, List, Optional

from ansible.module_utils import nvidia_module_options
from ansible.module_utils.command import CommandError, run
from ansible.module_utils.gpu_compat import driver_branch, version_cmp

#: Seconds mokutil and dpkg-query may take.
READ_TIMEOUT = 120

FINISHED = ("installed", "not-installed", "config-files")


SECURE_BOOT_VAR = "SecureBoot-"


def secure_boot(efivar: Optional[bytes], mokutil_output: Optional[str]) -> Dict[str, Any]:
    """Whether UEFI Secure Boot is on, from the SecureBoot EFI variable or ``mokutil --sb-state``.

    The variable (efivarfs: 4 bytes of attributes, then the value) holds 1 when Secure Boot
    is enforcing. mokutil says "SecureBoot enabled". Either one saying so is enough: a VM
    without efivarfs may still have mokutil, and a host without mokutil still has the variable.
    """
    by_var = bool(efivar) and len(efivar) >= 5 and efivar[-1:] == b"\x01"
    by_mokutil = bool(mokutil_output) and "SecureBoot enabled" in str(mokutil_output)
    source = "efi variable" if by_var else "mokutil" if by_mokutil else None
    if efivar is None and mokutil_output is None:
        detail = (
            "no SecureBoot EFI variable and no mokutil: taken as off (BIOS boot or a container)"
        )
    else:
        detail = f"enabled ({source})" if source else "off"
    return {"enabled": by_var or by_mokutil, "source": source, "detail": detail}


def read_secure_boot(module: Any, efivars_path: str) -> Dict[str, Any]:
    """secure_boot() from the host: the first SecureBoot-* variable, and mokutil if installed."""
    efivar = None
    try:
        names = sorted(n for n in os.listdir(efivars_path) if n.startswith(SECURE_BOOT_VAR))
    except OSError:
        names = []
    if names:
        try:
            with open(os.path.join(efivars_path, names[0]), "rb") as handle:
                efivar = handle.read()
        except OSError:
            efivar = None
    mokutil_output = None
    mokutil = module.get_bin_path("mokutil")
    if mokutil:
        try:
            _rc, out, err = run([mokutil, "--sb-state"], READ_TIMEOUT)
            mokutil_output = out + err
        except CommandError:
            mokutil_output = None  # the EFI variable, when there is one, still answers
    return secure_boot(efivar, mokutil_output)


def query_dpkg(module: Any, names: List[str]) -> Dict[str, Dict[str, Any]]:
    """Run ``dpkg-query -W`` for ``names`` through an AnsibleModule; parse_dpkg_status() of it.

    Unknown packages are simply absent (dpkg-query exits 1 for them); worse fails the module.
    """
    if not names:
        return {}
    try:
        rc, out, err = run(
            ["dpkg-query", "-W", "--showformat=${Package}\\t${Version}\\t${Status}\\n", *names],
            READ_TIMEOUT,
            env_update={"LC_ALL": "C"},
        )
    except CommandError as exc:
        module.fail_json(msg=str(exc))
    if rc > 1:
        module.fail_json(msg=f"dpkg-query failed (rc {rc}): {err.strip()}")
    return parse_dpkg_status(out.splitlines())


def parse_dpkg_status(lines: List[str]) -> Dict[str, Dict[str, Any]]:
    """``dpkg-query -W -f '${Package}\\t${Version}\\t${Status}\\n'`` lines -> per package.

    Each value: version, want (install/hold/deinstall/purge), state (installed,
    half-configured, unpacked, ...), held.
    """
    out: Dict[str, Dict[str, Any]] = {}
    for line in lines:
        fields = line.rstrip("\n").split("\t")
        if len(fields) != 3 or not fields[0]:
            continue
        name, version, status = fields
        words = status.split()
        want = words[0] if words else ""
        state = words[-1] if words else ""
        out[name] = {"version": version, "want": want, "state": state, "held": want == "hold"}
    return out


def decide(
    packages: List[str],
    version_regex: str,
    selection_patterns: List[str],
    dpkg: Dict[str, Dict[str, Any]],
    smi_version: Optional[str],
    branch: Any,
    version: Optional[str] = None,
    adopt_newer: bool = True,
    minimum: Optional[str] = None,
    adopt_any_branch: bool = False,
    keep: Optional[List[str]] = None,
) -> Dict[str, Any]:
    """Everything the role needs to act; see the module docstring for the outcomes.

    ``adopt_any_branch``: adopt any working driver that meets ``minimum`` (the
    preinstalled path, where the minimum comes from the torch that is there), not only
    the requested branch or a newer one. ``keep``: more packages the plan wants that are
    not version-matched (NVIDIA's branch-pinning package, versioned like "590-1ubuntu1"),
    never listed as unwanted.
    """
    installed = {
        name: {"version": info["version"], "held": info["held"]}
        for name, info in dpkg.items()
        if info["state"] == "installed"
    }
    unfinished = sorted(name for name, info in dpkg.items() if info["state"] not in FINISHED)
    wanted_present = all(
        name in installed and re.search(version_regex, installed[name]["version"])
        for name in packages
    )
    selection = [n for n in installed if any(fnmatch.fnmatchcase(n, p) for p in selection_patterns)]
    wanted = set(packages) | set(keep or [])
    unwanted = sorted(n for n in selection if n not in wanted)
    want_branch = driver_branch(branch)
    exact = (version or "").split("-", 1)[0]
    smi = (smi_version or "").strip()
    floor = minimum or want_branch

    if unfinished:
        outcome = "install"
        why = f"dpkg left {', '.join(unfinished)} unfinished; the install path repairs it"
    elif wanted_present:
        outcome = "present"
        why = f"{', '.join(packages)} installed at the wanted version"
    elif smi and adopt_any_branch and version_cmp(smi, floor) >= 0 and not exact:
        outcome = "adopted"
        why = f"nvidia-smi reports driver {smi}, which meets the minimum {floor}"
    elif smi and driver_branch(smi) == want_branch and (not exact or smi == exact):
        outcome = "adopted"
        why = f"nvidia-smi reports driver {smi}, which is branch {want_branch}"
    elif (
        smi
        and adopt_newer
        and not exact
        and int(driver_branch(smi)) > int(want_branch)
        and version_cmp(smi, floor) >= 0
    ):
        outcome = "adopted"
        why = f"nvidia-smi reports driver {smi}, newer than branch {want_branch} and >= {floor}"
    else:
        outcome = "install"
        missing = [n for n in packages if n not in installed]
        if missing:
            why = f"{', '.join(missing)} not installed"
        else:
            why = "installed at another version: " + ", ".join(
                f"{n} {installed[n]['version']}" for n in packages
            )
        if smi:
            why += f"; nvidia-smi reports {smi}, which is not adopted"
    held = sorted(n for n, info in installed.items() if info["held"])
    return {
        "outcome": outcome,
        "reason": why,
        "installed": installed,
        "unfinished": unfinished,
        "unwanted": unwanted,
        "unwanted_held": sorted(n for n in unwanted if n in held),
        "wanted_present": bool(wanted_present),
        "smi_version": smi,
        "minimum": floor,
    }


# The nvidia_driver_verdict_plan module's arguments; it runs on the controller
# (action_plugins/nvidia_driver_verdict_plan.py): the judgement reads nothing on the host.
VERDICT_SPEC: Dict[str, Any] = {
    "nvidia_smi": {"type": "dict", "required": True},
    "kernel_module": {"type": "dict", "required": True},
    "outcome": {"type": "str", "default": ""},
    "branch": {"type": "str", "required": True},
    "reboot_pending": {"type": "bool", "default": False},
    "reboot_reasons": {"type": "list", "elements": "str", "default": []},
    # The plan's kernel-module options the role wrote, and /proc/driver/nvidia/params as
    # read after the stage (None: not read). module_utils/nvidia_module_options.py.
    "module_options": {"type": "list", "elements": "dict", "default": []},
    "module_params": {"type": "str"},
    "module_options_file": {"type": "str", "default": ""},
}


def verdict_for(params: Dict[str, Any]) -> Dict[str, Any]:
    """The nvidia_driver_verdict_plan result for VERDICT_SPEC's validated params: the
    driver's problem, else the planned module options the loaded module does not run with."""
    problem = verify_problem(
        params["nvidia_smi"],
        params["kernel_module"],
        params["outcome"],
        params["branch"],
        params["reboot_pending"],
        params["reboot_reasons"],
    )
    if not problem:
        problem = nvidia_module_options.verify_problem(
            params.get("module_options") or [],
            params.get("module_params"),
            params.get("module_options_file") or "",
            params["reboot_pending"],
            params["reboot_reasons"],
        )
    return {"changed": False, "problem": problem}


def verify_problem(
    smi: Dict[str, Any],
    kernel_module: Dict[str, Any],
    outcome: str,
    branch: str,
    reboot_pending: bool = False,
    reboot_reasons: Optional[List[str]] = None,
) -> str:
    """What is wrong with the driver after the stage, in one message; "" when it works.

    ``smi`` is the nvidia_smi facts, ``kernel_module`` the nvidia_kernel_module facts,
    ``outcome`` the role's (install, present, adopted). A driver of another branch than the
    one asked for is a problem unless it was adopted: the old module is still loaded.
    """
    reason = str(kernel_module.get("reason") or "unknown")
    step = kernel_module.get("next_step")
    after = f" Kernel module: {reason}" + (f" (next: {step})." if step else ".")
    if reboot_pending:
        after += (
            f" A reboot is pending ({'; '.join(reboot_reasons or [])}): reboot the host, then "
            "run this playbook again."
        )
    else:
        after += " No reboot is pending; look at dmesg and the DKMS build log (dkms status)."
    if not smi.get("present"):
        return (
            "nvidia-smi is not installed: the NVIDIA driver is not on this host "
            f"(nvidia_driver_outcome {outcome or 'unknown'})."
        )
    error = smi.get("error")
    if error:
        message = str(error.get("message") or "").strip()
        return f"nvidia-smi fails ({error.get('kind')}): {message}.{after}"
    version = str(smi.get("driver_version") or "")
    if outcome != "adopted" and version.split(".")[0] != str(branch):
        return (
            f"nvidia-smi reports driver {version}, not branch {branch}: the old module is "
            f"still loaded.{after}"
        )
    return ""


# What a working driver serves, checked after the stage by nvidia_driver_service_verdict_plan,
# which runs on the controller (action_plugins/nvidia_driver_service_verdict_plan.py).
SERVICE_VERDICT_SPEC: Dict[str, Any] = {
    "nvidia_smi": {"type": "dict", "required": True},
    "persistence_expected": {"type": "bool", "default": False},
    "fabric_manager": {"type": "dict"},
    "cuda_init": {"type": "dict"},
}


def persistence_problem(smi: Dict[str, Any]) -> str:
    """The GPUs whose persistence mode is off although the role started nvidia-persistenced
    with --persistence-mode, in one message; "" when every GPU has it on."""
    off = [str(g.get("index")) for g in smi.get("gpus") or [] if not g.get("persistence_mode")]
    if not off:
        return ""
    return (
        f"Persistence mode is off on GPU(s) {', '.join(off)} although the role started "
        "nvidia-persistenced with --persistence-mode: check `systemctl cat "
        "nvidia-persistenced` for another drop-in, and the daemon's journal."
    )


def _checked(result: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """A registered task result, or None where the task was skipped or not given."""
    if not result or result.get("skipped"):
        return None
    return result


def service_verdict(
    smi: Dict[str, Any],
    persistence_expected: bool = False,
    fabric_manager: Optional[Dict[str, Any]] = None,
    cuda_init: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """What a driver that works (verify_problem found nothing) serves, judged once:
    persistence mode on every GPU where the role started nvidia-persistenced
    (``persistence_expected``), the fabric manager's check (nvidia_fabric_manager_plan's
    result, None or skipped where the host needs none) and CUDA's initialisation (the
    ``cuda_init`` fact, None where it was not read). Returns ``problems``, each one message
    in the order they were checked, and ``report``, the one line that describes the driver.
    """
    fabric = _checked(fabric_manager)
    cuda = _checked(cuda_init)
    problems: List[str] = []
    if persistence_expected:
        persistence = persistence_problem(smi)
        if persistence:
            problems.append(persistence)
    # module_utils/fabric_manager.py decide names a fix exactly where something needs one.
    if fabric and fabric.get("fix"):
        problems.append(f"{fabric.get('message', '')} Fix: {fabric.get('fix', '')}.")
    if cuda and cuda.get("state", "ok") != "ok":
        problems.append(f"nvidia-smi works, but {cuda.get('message', '')}")
    gpus = smi.get("gpus") or []
    on = all(g.get("persistence_mode") for g in gpus)
    report = (
        f"nvidia-smi works: driver {smi.get('driver_version')} (CUDA "
        f"{smi.get('cuda_driver_version')}), {smi.get('gpu_count', len(gpus))} GPU(s): "
        f"{', '.join(str(g.get('name')) for g in gpus)}; persistence mode "
        f"{'on' if on else 'off'}"
    )
    if fabric and fabric.get("outcome") == "ok":
        report += f"; {fabric.get('message', '')}"
    if cuda:
        report += f"; {cuda.get('message', '')}"
    return {"problems": problems, "report": report}


def service_verdict_for(params: Dict[str, Any]) -> Dict[str, Any]:
    """The nvidia_driver_service_verdict_plan result for SERVICE_VERDICT_SPEC's validated params."""
    return dict(
        changed=False,
        **service_verdict(
            params["nvidia_smi"],
            params["persistence_expected"],
            params.get("fabric_manager"),
            params.get("cuda_init"),
        ),
    )


def reboot_plan(
    changed_now: bool,
    record: Optional[Dict[str, Any]],
    boot_id: str,
    smi: Dict[str, Any],
    kernel_module: Dict[str, Any],
    policy: str,
    packages: List[str],
    version_glob: str,
    options_reason: str = "",
) -> Dict[str, Any]:
    """Whether the driver needs a reboot, and the one reason the reboot request files.

    ``changed_now``: the stage installed or removed driver packages (or would, in check
    mode). ``record`` is the role's changed.json (``{boot_id, packages, version}``) from an
    earlier run: a change recorded in this boot (``boot_id``) still needs its reboot, and
    its packages name the reason, so that a later run (or an adopting one) files the same.
    nvidia-smi's own ``reboot_required`` (the driver is installed but not loaded) comes
    first; ``policy`` ``always`` asks for a reboot anyway. ``options_reason``
    (nvidia_module_options.reboot_reason) asks for one where the loaded module does not run
    with the planned kernel-module options; it joins the reason of a driver change.
    """
    record = record if isinstance(record, dict) else {}
    recorded_now = bool(record) and str(record.get("boot_id") or "").strip() == boot_id.strip()
    changed_this_boot = bool(changed_now or recorded_now)
    smi_reboot = bool(smi.get("reboot_required"))
    module_reason = str(kernel_module.get("reason") or "unknown")
    if smi_reboot:
        reason = (
            f"nvidia-smi fails: {smi.get('reboot_reason') or 'the driver is not loaded'}. "
            f"Kernel module: {module_reason} (next: {kernel_module.get('next_step') or 'reboot'})"
        )
    elif changed_this_boot:
        what = ", ".join(record.get("packages") or packages)
        version = record.get("version") or version_glob
        reason = (
            f"the NVIDIA driver packages changed in this boot ({what} {version}); the new "
            f"kernel module is loaded by a reboot ({module_reason})"
        )
    elif options_reason:
        reason = options_reason
    elif policy == "always":
        reason = "nvidia_driver_reboot_policy is always"
    else:
        reason = f"the NVIDIA driver is loaded ({smi.get('driver_version') or 'none'})"
    if options_reason and (smi_reboot or changed_this_boot):
        reason += f"; also, {options_reason}"
    needed = changed_this_boot or smi_reboot or bool(options_reason) or policy == "always"
    return {
        "changed_this_boot": changed_this_boot,
        "smi_reboot": smi_reboot,
        "reboot_needed": needed,
        "reason": reason,
    }


BOOT_ID = "/proc/sys/kernel/random/boot_id"

# nvidia_driver_reboot_plan's options: the module's and its action plugin's one spec.
REBOOT_PLAN_SPEC: Dict[str, Any] = {
    "changed_now": {"type": "bool", "required": True},
    "state_dir": {"type": "path"},
    "change_record": {"type": "dict"},
    "nvidia_smi": {"type": "dict", "required": True},
    "kernel_module": {"type": "dict", "required": True},
    "policy": {"type": "str", "required": True},
    "packages": {"type": "list", "elements": "str", "default": []},
    "version_glob": {"type": "str", "default": ""},
    # The kernel-module options the role's modprobe.d file sets, whether this run wrote or
    # removed it, /proc/driver/nvidia/params as read (None: not read) and the options left
    # to the module's default: module_utils/nvidia_module_options.py reboot_reason.
    "module_options": {"type": "list", "elements": "dict", "default": []},
    "module_options_file": {"type": "str", "default": ""},
    "module_options_changed": {"type": "bool", "default": False},
    "module_options_skipped": {"type": "list", "elements": "str", "default": []},
    "module_params": {"type": "str"},
}


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


def read_change_record(state_dir: str, boot_id_path: Optional[str] = None) -> Dict[str, Any]:
    """The role's record of a driver change (``<state_dir>/nvidia_driver/changed.json``,
    parsed, or None) and this boot's id: what reboot_plan needs from the host.

    nvidia_driver_plan reads it in the stage's preflight (``state_dir``); the record is
    written again only when the stage changes packages, and then ``changed_now`` decides.
    """
    text = _read(os.path.join(state_dir, "nvidia_driver", "changed.json"))
    try:
        record = json.loads(text) if text.strip() else None
    except ValueError:
        record = None  # a damaged record counts as none: nothing recorded in this boot
    return {
        "record": record if isinstance(record, dict) else None,
        "boot_id": _read(boot_id_path or BOOT_ID),
    }


def reboot_plan_for(params: Dict[str, Any]) -> Dict[str, Any]:
    """reboot_plan for REBOOT_PLAN_SPEC's validated ``params``.

    With ``change_record`` (what nvidia_driver_plan read) nothing is read, so the action
    plugin answers on the controller; with only ``state_dir`` the host is read here.
    """
    found = params.get("change_record")
    if found is None:
        if not params.get("state_dir"):
            raise ValueError("one of state_dir or change_record is required")
        found = read_change_record(params["state_dir"])
    options_reason = nvidia_module_options.reboot_reason(
        params.get("module_options") or [],
        params.get("module_params"),
        params.get("module_options_file") or "",
        bool(params.get("module_options_changed")),
        params["kernel_module"].get("state") == "loaded",
        params.get("module_options_skipped") or [],
    )
    return reboot_plan(
        params["changed_now"],
        found.get("record"),
        str(found.get("boot_id") or ""),
        params["nvidia_smi"],
        params["kernel_module"],
        params["policy"],
        params["packages"],
        params["version_glob"],
        options_reason,
    )
