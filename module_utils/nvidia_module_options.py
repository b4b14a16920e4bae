"""The NVIDIA kernel-module options the plan sets, against those the loaded module runs with.

The host's plan carries the options NVIDIA documents for its GPUs and branch
(``packages.module_options``, module_utils/stack_plan.py ``module_options``): today
``NVreg_CoherentGPUMemoryMode=driver`` on Grace coherent platforms from branch 580. The
nvidia_driver role writes them to one modprobe.d file before it installs the driver's
packages, so that the first load of the module reads them
(roles/nvidia_driver/tasks/module-options.yml). A module that already runs keeps the values
it was loaded with until it is loaded again: a reboot.

What the loaded module runs with is in ``/proc/driver/nvidia/params``, one
``Name: value`` line per registry key, without the ``NVreg_`` prefix and with string values
quoted (``CoherentGPUMemoryMode: "driver"``; ``""`` when unset). ``/sys/module/nvidia/parameters``
has no entry for them: NVIDIA's module registers its parameters with permission 0
(``NV_MODULE_STRING_PARAMETER(x) module_param(x, charp, 0)`` in nv-linux.h), which sysfs does
not show. Only options of the ``nvidia`` module are compared; that file is its alone.

Decisions, pure: ``mismatches`` (the planned options the loaded module does not run with),
``reboot_reason`` (the configure step's reboot request) and ``verify_problem`` (verify's
judgement with its remedy).

Runs on target hosts and on the controller: Python 3.8, standard library only.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

#: The nvidia module's registry, as loaded.
PARAMS = "/proc/driver/nvidia/params"
#: The module whose values PARAMS lists.
MODULE = "nvidia"
PREFIX = "NVreg_"


def parse_params(text: str) -> Dict[str, str]:
    """``/proc/driver/nvidia/params`` -> {name: value}, quotes taken off string values."""
    found: Dict[str, str] = {}
    for line in (text or "").splitlines():
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        found[name.strip()] = value
    return found


def param_name(option: str) -> str:
    """The option's name in PARAMS: NVreg_CoherentGPUMemoryMode -> CoherentGPUMemoryMode."""
    return option[len(PREFIX) :] if option.startswith(PREFIX) else option


def _same(wanted: str, loaded: str) -> bool:
    if wanted == loaded:
        return True
    try:  # a number given in hex or octal in modprobe.d, shown in decimal
        return int(wanted, 0) == int(loaded, 0)
    except ValueError:
        return False


def mismatches(options: List[Dict[str, Any]], params_text: str) -> List[Dict[str, Any]]:
    """The planned options of the nvidia module that the loaded module does not run with.

    Each: option, line, wanted, loaded (None where PARAMS does not list the option: a module
    of a branch that does not know it).
    """
    loaded = parse_params(params_text)
    out: List[Dict[str, Any]] = []
    for option in options or []:
        if option.get("module") != MODULE:
            continue
        wanted = str(option.get("value"))
        now = loaded.get(param_name(str(option.get("option"))))
        if now is None or not _same(wanted, now):
            out.append(
                {
                    "option": option.get("option"),
                    "line": option.get("line"),
                    "wanted": wanted,
                    "loaded": now,
                }
            )
    return out


def _describe(found: List[Dict[str, Any]]) -> str:
    return ", ".join(
        f"{m['option']}={m['wanted']} (loaded: "
        + ("unset" if not m["loaded"] else m["loaded"])
        + (", not listed in " + PARAMS if m["loaded"] is None else "")
        + ")"
        for m in found
    )


def reboot_reason(
    options: List[Dict[str, Any]],
    params_text: Optional[str],
    path: str,
    file_changed: bool,
    module_loaded: bool,
    skipped: Optional[List[str]] = None,
) -> str:
    """Why the planned module options need a reboot, or "" when they do not.

    ``options``: the options the role's file sets (the plan's, less those left out);
    ``params_text``: PARAMS as read now (None: not read); ``file_changed``: the role wrote or
    removed its file in this run; ``module_loaded``: the nvidia module runs (a module loaded
    later reads the file, and needs no reboot for it); ``skipped``: the plan's options the
    user left to the module's default (nvidia_driver_module_options_skip).

    Read, the loaded values decide, in every run of the same boot alike: the request stands
    until the reboot, and none is filed where the module already runs with the options (set
    by another file, say). Unread, a change of the file decides. A removed file is judged
    by the change alone: what the module should run with then is its own default.
    """
    if not module_loaded:
        return ""
    if options and params_text is not None:
        found = mismatches(options, params_text)
        if not found:
            return ""
        return (
            f"the loaded nvidia module runs without {_describe(found)}, which {path} sets: "
            "the module reads it when it is loaded again, at the reboot"
        )
    if not file_changed:
        return ""
    if options:
        lines = "; ".join(str(o.get("line")) for o in options)
        return (
            f"{path} changed ({lines}): the loaded nvidia module takes the options when it is "
            "loaded again, at the reboot"
        )
    left = (
        f" ({', '.join(skipped)} left to the module's default by nvidia_driver_module_options_skip)"
        if skipped
        else ""
    )
    return (
        f"Kindling's module options file {path} was removed{left}: the loaded nvidia module "
        "keeps the options it was loaded with until it is loaded again, at the reboot"
    )


def verify_problem(
    options: List[Dict[str, Any]],
    params_text: Optional[str],
    path: str,
    reboot_pending: bool = False,
    reboot_reasons: Optional[List[str]] = None,
) -> str:
    """The planned options the loaded module does not run with, and the remedy; "" when
    every one is in effect, or when PARAMS was not read (the module is not loaded)."""
    if not options or params_text is None:
        return ""
    found = mismatches(options, params_text)
    if not found:
        return ""
    message = (
        f"The nvidia kernel module runs without the option(s) planned for this host's GPUs: "
        f"{_describe(found)}; {path} sets them."
    )
    if reboot_pending:
        return message + (
            f" A reboot is pending ({'; '.join(reboot_reasons or [])}): reboot the host, then "
            "run this playbook again."
        )
    names = "|".join(str(m["option"]) for m in found)
    return message + (
        " Reboot the host: the module reads the file when it is loaded. If the option is still "
        f"not in effect after a reboot, another modprobe.d file or the initramfs's copy sets it "
        f"(modprobe -c | grep -E '{names}'; update-initramfs -u)."
    )
