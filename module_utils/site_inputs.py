"""The site's own inputs and the checks across roles, in stage 1 of site.yml.

role_inputs checks each role's variables alone. This checks what belongs to no one role:

- ``kindling_serial``, the batch size of every stage play (Ansible's ``serial``): a
  ``Count`` (input_types.py), so a word, 0, a negative number or 150% is refused here,
  before any change, instead of ending a later stage in a raw Ansible exception;
- the ports of Kindling's listeners on one host (``LISTENERS``): two on one port are
  refused, since the second service would fail to start after the stages before it ran.

- unknown variables (``unknown_variables``): a user's variable (inventory or extra vars)
  that starts with a role's prefix or ``kindling_`` and that nothing declares is refused,
  with the nearest declared name ("did you mean"), so that ``nvidia_driver_brach: "570"``
  stops the run instead of being ignored. Declared are: every option of every entry point
  of a role's meta/argument_specs.yml, a role's public outputs (meta/interface.yml
  ``sets``), host_plan.RENAMED (refused with its own message), ``KINDLING_GLOBALS`` below
  (with the cloud playbooks' inputs, playbooks/cloud/vars/defaults.yml), and a role's
  internal names (``<role>__<name>``). ``kindling_allow_unknown_variables`` lists names
  or prefixes (ending in ``_``) of a user's own variables to let through.

Each message names one variable, its value and the fix.
"""

from __future__ import annotations

import difflib
from typing import Any, Dict, Iterable, List, Sequence, Tuple

from ansible.module_utils.input_types import (
    Choice,
    Count,
    ListOf,
    Pattern,
    Shape,
    check_all,
    problem_message,
)

# A name, or a prefix ending in "_", of variables a user keeps under a Kindling prefix.
ALLOW_ENTRY = Pattern(
    r"[a-z][a-z0-9_]*",
    '"nvidia_driver_site_note" or "jupyter_mylab_"',
    "a variable name, or a prefix ending in _",
)

SITE_SHAPES: Dict[str, Shape] = {
    "kindling_serial": Count("hosts per batch", '"25%"'),
    "kindling_allow_unknown_variables": ListOf(ALLOW_ENTRY, unique=True),
    "kindling_stack_upgrade": Choice((True, False)),
}

# The kindling_ variables that belong to no one role, each declared once, with what it is.
# Anything else starting with kindling_ that a user sets is refused as unknown (the cloud
# playbooks' kindling_cloud_* inputs are declared in playbooks/cloud/vars/defaults.yml).
KINDLING_GLOBALS: Dict[str, str] = {
    "kindling_serial": "hosts per batch of every stage play of site.yml (Ansible's serial; "
    "a count)",
    "kindling_target_hosts": "the host pattern every play of site.yml and the stage "
    "playbooks runs on (default gpu_hosts)",
    "kindling_allow_unknown_variables": "names, or prefixes ending in _, of the user's own "
    "variables under a Kindling prefix, let through the unknown-variables check",
    "kindling_stack_upgrade": "true: a host converged by Kindling moves to the current default "
    "stack (driver branch, CUDA, cuDNN, torch); false (the default): it keeps the stack it "
    "recorded (module_utils/default_stack.py)",
    "kindling_defer_reboot": "site.yml sets it for the nouveau stage: its reboot waits for "
    "reboot_coordinator's one reboot",
    "kindling_effective_inputs": "set by stage 1: every role's effective inputs, for the "
    "stack check and the plan",
    "kindling_input_roles": "stage 1's play variable: the roles whose inputs it checks, in "
    "stage order",
    "kindling_fixture_url": "the tests' local fixture repository (Molecule scenarios and "
    "the reliability suite)",
    "kindling_platform_defaults": "Molecule's shared platform settings "
    "(.config/molecule/config.yml)",
}

# The prefixes a user's variable is held to: each role's "<role>_" and the site's.
SITE_PREFIX = "kindling_"

# Every port a Kindling service listens on, in stage order: (port variable, the variable
# that must be true for it to listen, or "" where it always does, the service).
LISTENERS: Sequence[Tuple[str, str, str]] = (
    ("jupyter_port", "", "JupyterLab"),
    ("dcgm_exporter_port", "", "dcgm-exporter's metrics endpoint"),
    ("gpu_check_multinode_port", "gpu_check_multinode", "the multi-node check's rendezvous"),
)


def port_clashes(effective: Dict[str, Any]) -> List[str]:
    """A message for each Kindling listener whose port an earlier one of this host has."""
    found, seen = [], {}
    for variable, when, service in LISTENERS:
        if variable not in effective or (when and not effective.get(when)):
            continue
        try:
            port = int(effective[variable])
        except (TypeError, ValueError):
            continue  # its own role's shape refuses it
        if port in seen:
            other, other_service = seen[port]
            found.append(
                problem_message(
                    variable,
                    effective[variable],
                    f"{other} is {port} too: {other_service} already listens on that port of "
                    f"this host, so {service} could not start; give {variable} a port of its "
                    f"own (e.g. {port + 1}), or change {other}",
                )
            )
        else:
            seen[port] = (variable, service)
    return found


def check_site(
    values: Dict[str, Any], effective: Dict[str, Any], unknown: Sequence[str] = ()
) -> List[str]:
    """Every problem with the site's own inputs (values), the unknown variables (messages
    from ``unknown_variables``) and across the roles' inputs (effective)."""
    messages = [message for _, message in check_all(SITE_SHAPES, values)]
    return messages + list(unknown) + port_clashes(effective or {})


def _allowed(name: str, allow: Iterable[str]) -> bool:
    return any(name == a or (a.endswith("_") and name.startswith(a)) for a in allow)


def unknown_variables(
    user_names: Iterable[str],
    roles: Iterable[str],
    declared: Iterable[str],
    allow: Iterable[str] = (),
) -> List[str]:
    """A message for each user variable under a Kindling prefix that nothing declares.

    ``user_names``: the names the user set (inventory and extra vars only); ``roles``: the
    role names (their prefix is "<role>_", their internal names "<role>__<name>");
    ``declared``: every declared name (argument specs, interfaces, RENAMED, globals);
    ``allow``: kindling_allow_unknown_variables.
    """
    roles = sorted(set(roles), key=len, reverse=True)
    declared = set(declared) | set(KINDLING_GLOBALS)
    allow = [str(a) for a in allow or ()]
    known = sorted(declared)
    found = []
    for name in sorted(set(user_names)):
        owner = next((r for r in roles if name.startswith(r + "_")), None)
        if owner is None and not name.startswith(SITE_PREFIX):
            continue  # not under a Kindling prefix: the user's own
        if name in declared or _allowed(name, allow):
            continue
        if owner is not None and name.startswith(owner + "__"):
            continue  # <role>__<name>: the role's internal names (meta/interface.yml)
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"did you mean {near[0]}? " if near else ""
        where = f"the {owner} role" if owner else "Kindling"
        found.append(
            f"{name} is not a variable {where} reads: {hint}Set a declared name "
            f"(docs/VARIABLES.md, docs/INPUTS.md), or, for a variable of your own under this "
            f"prefix, list it in kindling_allow_unknown_variables"
        )
    return found


# The site_inputs_plan module's arguments (library/site_inputs_plan.py documents them).
ARGUMENT_SPEC = {"effective": {"type": "dict", "default": {}}}
