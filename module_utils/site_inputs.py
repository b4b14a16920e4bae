"""The site's own inputs and the checks across roles, in stage 1 of site.yml.

role_inputs checks each role's variables alone. This checks what belongs to no one role:

- ``kindling_serial``, the batch size of every stage play (Ansible's ``serial``): a
  ``Count`` (input_types.py), so a word, 0, a negative number or 150% is refused here,
  before any change, instead of ending a later stage in a raw Ansible exception;
- the ports of Kindling's listeners on one host (``LISTENERS``): two on one port are
  refused, since the second service would fail to start after the stages before it ran.

Each message names one variable, its value and the fix.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from ansible.module_utils.input_types import Count, Shape, check_all, problem_message

SITE_SHAPES: Dict[str, Shape] = {
    "kindling_serial": Count("hosts per batch", '"25%"'),
}

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


def check_site(values: Dict[str, Any], effective: Dict[str, Any]) -> List[str]:
    """Every problem with the site's own inputs (values) and across the roles' (effective)."""
    messages = [message for _, message in check_all(SITE_SHAPES, values)]
    return messages + port_clashes(effective or {})
