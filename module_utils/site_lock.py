"""The per-host run lock of the site_lock role: take it, or say who holds it; release it.

One Kindling run per host at a time. The lock is a directory made with mkdir (atomic: of two
runs, one gets it) holding ``owner.json`` (run id, playbook, controller and its
ansible-playbook pid, start time). A lock held by another run is taken over only when
``site_lock_break`` is set, when it is older than ``site_lock_stale_after``, or when the
controller found the holder's ansible-playbook process gone (``dead_runs``: that check needs
the controller, so the role makes it and asks again). Python 3.8, standard library only.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable, Dict, Iterable, Optional

from ansible.module_utils.atomic_file import write_atomic

OWNER = "owner.json"
POLL_SECONDS = 5.0
UNKNOWN_OWNER = {"run_id": "unknown (no owner.json)", "epoch": 0}


def read_owner(path: str) -> Dict[str, Any]:
    try:
        with open(os.path.join(path, OWNER), encoding="utf-8") as handle:
            owner = json.load(handle)
    except (OSError, ValueError):
        return dict(UNKNOWN_OWNER)
    return owner if isinstance(owner, dict) else dict(UNKNOWN_OWNER)


def write_owner(path: str, owner: Dict[str, Any]) -> None:
    write_atomic(os.path.join(path, OWNER), json.dumps(owner), mode=0o600)


def takeover_reason(
    holder: Dict[str, Any],
    now: float,
    stale_after: int,
    break_lock: bool,
    dead_runs: Iterable[str],
) -> Optional[str]:
    """Why a lock held by ``holder`` may be taken over; None when it may not."""
    if break_lock:
        return "site_lock_break is true"
    if holder.get("run_id") in set(dead_runs):
        return "its ansible-playbook process on this controller is gone"
    try:
        age = now - float(holder.get("epoch") or 0)
    except (TypeError, ValueError):
        age = float("inf")
    if age >= stale_after:
        return "older than site_lock_stale_after"
    return None


def take(
    path: str,
    owner: Dict[str, Any],
    wait_seconds: float,
    stale_after: int,
    break_lock: bool = False,
    dead_runs: Iterable[str] = (),
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> Dict[str, Any]:
    """Take the lock, waiting up to ``wait_seconds`` while another run holds it.

    Returns ``taken`` (bool), ``took_over`` (the reason, when a holder's lock was taken),
    ``holder`` (the other run's owner.json, when it holds or held the lock) and ``age``.
    """
    parent = os.path.dirname(path.rstrip("/"))
    if parent and not os.path.isdir(parent):
        os.makedirs(parent, mode=0o755, exist_ok=True)
    deadline = clock() + max(0.0, float(wait_seconds))
    while True:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        else:
            write_owner(path, owner)
            return {"taken": True, "took_over": None, "holder": None, "age": None}
        holder = read_owner(path)
        if holder.get("run_id") == owner.get("run_id"):
            return {"taken": True, "took_over": None, "holder": None, "age": None}
        now = clock()
        age = int(now - float(holder.get("epoch") or 0)) if holder.get("epoch") else None
        reason = takeover_reason(holder, now, stale_after, break_lock, dead_runs)
        if reason:
            write_owner(path, owner)
            return {"taken": True, "took_over": reason, "holder": holder, "age": age}
        if now >= deadline:
            return {"taken": False, "took_over": None, "holder": holder, "age": age}
        sleep(min(POLL_SECONDS, deadline - now))


def release(path: str, run_id: str) -> bool:
    """Remove the lock when this run holds it; True when it was removed."""
    if read_owner(path).get("run_id") != run_id:
        return False
    for name in os.listdir(path):
        os.remove(os.path.join(path, name))
    os.rmdir(path)
    return True
