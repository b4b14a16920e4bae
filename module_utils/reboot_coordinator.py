"""The reboot coordinator's decision: which reboot requests are pending, and whether to reboot now.

Roles file requests (role, needed, policy, reason) during a run; a request that could not be
carried out is recorded on the host in ``reboot-required.json`` with the boot id, so a later
run of the same boot still knows it, and one after a reboot does not. Python 3.8, standard
library only.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

REBOOTING_POLICIES = ("auto", "always")


def parse_record(text: Optional[str]) -> Dict[str, Any]:
    """reboot-required.json, or {} when there is none or it is not a record."""
    if not text:
        return {}
    try:
        record = json.loads(text)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def pending_requests(
    earlier: Dict[str, Any], boot_id: str, requests: Sequence[Dict[str, Any]]
) -> List[Dict[str, Any]]:
    """The requests still open: this boot's recorded ones that no role answered again in this
    run (a reboot since then cleared them), then this run's requests that need a reboot."""
    answered = {str(r.get("role")) for r in requests}
    recorded = earlier.get("requests") or [] if earlier.get("boot_id") == boot_id else []
    kept = [r for r in recorded if isinstance(r, dict) and str(r.get("role")) not in answered]
    return kept + [dict(r) for r in requests if r.get("needed")]


def suppressed_reason(
    allowed: bool,
    connection: str,
    virtualization_type: str,
    virtualization_role: str,
    container_types: Sequence[str],
) -> str:
    """Why the host must not be rebooted by Kindling; empty when it may be."""
    if not allowed:
        return "reboot_coordinator_allowed is false"
    if connection == "local":
        return "this is the controller (local connection); Kindling never reboots it"
    if virtualization_type in container_types and virtualization_role == "guest":
        return f"the host is a {virtualization_type} container"
    return ""


def plan(
    boot_id: str,
    record_text: Optional[str],
    requests: Sequence[Dict[str, Any]],
    allowed: bool,
    connection: str,
    virtualization_type: str,
    virtualization_role: str,
    container_types: Sequence[str],
) -> Dict[str, Any]:
    earlier = parse_record(record_text)
    pending = pending_requests(earlier, boot_id, requests)
    wanted = any(r.get("policy") in REBOOTING_POLICIES for r in pending)
    suppressed = suppressed_reason(
        allowed, connection, virtualization_type, virtualization_role, container_types
    )
    reboot_now = wanted and not suppressed
    return {
        "boot_id": boot_id,
        "earlier": earlier,
        "recorded": record_text is not None,
        "pending": pending,
        "wanted": wanted,
        "suppressed_reason": suppressed,
        "reboot_now": reboot_now,
        # What is written to reboot-required.json when the reboot is not done now.
        "record": {"boot_id": boot_id, "requests": pending} if pending and not reboot_now else None,
        "required": bool(pending) and not reboot_now,
        "reasons": [str(r.get("reason", "")) for r in pending],
    }
