"""The default stack per OS, and keeping a converged host's stack (issue 35).

The catalogue's ``default_stacks`` (data/vendor_catalogue.yml) holds, per NVIDIA repository,
the newest stack that the repository serves, that runs on every GPU from Turing on and whose
torch has a torchvision on PyPI, with its reasons and sources. ``for_repository`` and
``for_host`` give it under the role variables' own names; the host's plan names it
(``catalogue.default_stack``, module_utils/host_plan.py).

``keep`` is the decision of a safe way to a new default: a host that Kindling converged
records the stack each stage left (``stack_record.RECORD_FILES``, in the stage's state directory:
roles/*/tasks/stack_record.yml). On the next run, for each stack variable the user did not
set (not in their inventory or extra vars: site_inputs' user_variable_names), the recorded
value is kept instead of the role's default, unless ``kindling_stack_upgrade`` is true; the
run says once per host that a newer default exists and what an upgrade would change. A
value the user set is theirs, recorded or not. The records themselves (their format, and
reading them, or what stands for them on a host converged before them) are
module_utils/stack_record.py's, kept apart from the catalogue for the module that reads them.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional

from ansible.module_utils.stack_plan import repository_id
from ansible.module_utils.stack_record import STACK_VARIABLES, _bool, _text
from ansible.module_utils.vendor_catalogue import CATALOGUE

DEFAULT_STACKS: Dict[str, Dict[str, Any]] = CATALOGUE.get("default_stacks") or {}

# The catalogue's keys -> the role variables that hold them (one name per value).
VARIABLES: Dict[str, str] = {
    "driver_branch": "nvidia_driver_branch",
    "cuda": "cuda_version",
    "cudnn": "cuda_cudnn_version",
    "torch": "conda_pytorch_version",
    "torchvision": "conda_pytorch_torchvision_version",
    "torch_variant": "conda_pytorch_cuda_variant",
    "python": "conda_pytorch_python_version",
}

UPGRADE_VARIABLE = "kindling_stack_upgrade"


def repositories() -> List[str]:
    return sorted(DEFAULT_STACKS)


def for_repository(repo: Any) -> Optional[Dict[str, Any]]:
    """The default stack for NVIDIA's repository ``repo`` (``ubuntu2204``), or None."""
    row = DEFAULT_STACKS.get(_text(repo))
    if not row:
        return None
    return {
        "repository": _text(repo),
        "variables": {VARIABLES[key]: _text(row[key]) for key in VARIABLES},
        "leaves_out": [dict(item) for item in row.get("leaves_out") or []],
        "reasons": [dict(item) for item in row.get("reasons") or []],
    }


def for_host(
    repo: Any = None, distribution: Any = None, distribution_version: Any = None
) -> Optional[Dict[str, Any]]:
    """The default stack for a host: its repository (``nvidia_driver_repo_distro``), else the
    one for its distribution and version; None for an OS with no default (unsupported)."""
    return for_repository(_text(repo) or repository_id(distribution, distribution_version))


def chosen(
    inputs: Mapping[str, Any], defaults: Mapping[str, Any], named: Iterable[str]
) -> List[str]:
    """The stack variables someone chose for this run, so that no record overrides them:
    those ``named`` - in the user's inventory or extra vars (site_inputs'
    user_variable_names), or by the playbook (a play's, a block's or the task's vars, a role
    or include parameter: action_plugins/host_plan.py) - and those whose effective value is
    not the role's default (``defaults``: each role's argument_specs default), wherever else
    it was set (vars_files, include_vars). A kept value is a fact, which would outrank all of
    these but the extra vars."""
    out = set(named) & set(STACK_VARIABLES)
    for name in STACK_VARIABLES:
        default = defaults.get(name)
        if name in inputs and default is not None and _text(inputs[name]) != _text(default):
            out.add(name)
    return sorted(out)


def keep(
    inputs: Mapping[str, Any],
    recorded: Mapping[str, Any],
    user_set: Iterable[str],
    upgrade: Any = False,
) -> Dict[str, Any]:
    """Which recorded stack values a run keeps instead of the role defaults.

    ``inputs``: the effective inputs (each stack variable at the user's value or the role's
    default); ``recorded``: recorded_values of the host's records; ``user_set``: the names
    someone chose (``chosen``); ``upgrade``: kindling_stack_upgrade.

    Returns ``kept`` (variable -> the recorded value the roles must see: only where the user
    did not set it, the record differs from the default, and no upgrade was asked for),
    ``upgrade`` (variable -> {"now", "default"}: what an upgrade changes, or changes in this
    run when asked for), ``pinned`` (the user's values that differ from the record) and
    ``notice`` (one message for the run, "" when there is nothing to say).
    """
    user = set(user_set)
    asked = _bool(upgrade)
    kept: Dict[str, str] = {}
    changes: Dict[str, Dict[str, str]] = {}
    pinned: Dict[str, Dict[str, str]] = {}
    for name in STACK_VARIABLES:
        was = _text(recorded.get(name))
        if not was or name not in inputs:
            continue
        now = _text(inputs.get(name))
        if was == now:
            continue
        if name in user:
            pinned[name] = {"now": was, "set": now}
            continue
        changes[name] = {"now": was, "default": now}
        if not asked:
            kept[name] = was
    return {
        "kept": kept,
        "upgrade": changes,
        "upgrading": asked and bool(changes),
        "pinned": pinned,
        "notice": notice(changes, asked),
    }


def notice(changes: Mapping[str, Mapping[str, str]], asked: bool) -> str:
    """One sentence for the run: a newer default exists and what an upgrade would change."""
    if not changes:
        return ""
    what = ", ".join(f"{name} {c['now']} -> {c['default']}" for name, c in sorted(changes.items()))
    if asked:
        return (
            f"kindling_stack_upgrade is true: this run upgrades the stack this host was "
            f"converged with to Kindling's current default ({what})"
        )
    reboot = (
        " (a new driver branch: the driver stage reboots the host)"
        if ("nvidia_driver_branch" in changes)
        else ""
    )
    return (
        "A newer default stack exists; this host keeps the stack it was converged with. "
        f"An upgrade would change: {what}{reboot}. To upgrade, set "
        f"{UPGRADE_VARIABLE}: true (or set these variables yourself)."
    )
