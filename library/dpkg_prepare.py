#!/usr/bin/python
"""Ansible module: wait (bounded) for dpkg's locks, then finish an interrupted dpkg run."""

from __future__ import annotations

from typing import Any, Dict, List

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import CommandError, Result, run
from ansible.module_utils.dpkg_state import (
    DPKG_LOCKS,
    DPKG_UPDATES_DIR,
    interrupted_updates,
    lock_timeout_message,
    needs_repair,
    parse_audit,
    wait_for_locks,
)

DOCUMENTATION = r"""
---
module: dpkg_prepare
short_description: Make sure dpkg can be used before installing packages
description:
  - Waits, up to O(timeout) seconds, while another process (unattended-upgrades,
    apt-daily, a second apt) holds dpkg's or apt's locks, and then fails with a message
    that names the holder, instead of letting apt fail with "Could not get lock".
  - Finds a dpkg run that was killed part way (pending entries in /var/lib/dpkg/updates,
    or packages C(dpkg --audit) reports as half-installed or half-configured) and, with
    O(repair=true), finishes it with C(dpkg --configure -a).
  - Reads only, and waits, in check mode; reports what it would repair.
options:
  timeout:
    description: Seconds to wait for the locks to come free. 0 checks once.
    type: int
    default: 300
  timeout_variable:
    description: The inventory variable that sets O(timeout), named in the failure message.
    type: str
    default: ""
  repair:
    description: Run C(dpkg --configure -a) when an interrupted run is found.
    type: bool
    default: true
  locks:
    description: The lock files to wait for.
    type: list
    elements: path
    default: [/var/lib/dpkg/lock-frontend, /var/lib/dpkg/lock, /var/lib/apt/lists/lock,
              /var/cache/apt/archives/lock]
author: Kindling
"""

EXAMPLES = r"""
- name: Wait for unattended-upgrades, finish an interrupted dpkg run
  dpkg_prepare:
    timeout: "{{ nvidia_driver_apt_lock_timeout }}"
    timeout_variable: nvidia_driver_apt_lock_timeout
"""

RETURN = r"""
waited:
  description: Seconds spent waiting for the locks.
  type: float
  returned: always
interrupted:
  description: Whether an interrupted dpkg run was found.
  type: bool
  returned: always
pending_updates:
  description: Journal entries dpkg left in /var/lib/dpkg/updates.
  type: list
  elements: str
  returned: always
unfinished_packages:
  description: Packages C(dpkg --audit) reported before the repair.
  type: list
  elements: str
  returned: always
repair_output:
  description: The output of C(dpkg --configure -a), when it ran.
  type: str
  returned: when repaired
unfinished_after_repair:
  description: Packages still half-installed after the repair; the role's apt task reinstalls them.
  type: list
  elements: str
  returned: when repaired
"""


#: dpkg --configure -a may build DKMS modules for several kernels; an hour bounds a hang.
DPKG_TIMEOUT = 3600


def run_dpkg(args: List[str]) -> Result:
    """dpkg with ``args``; CommandError when it cannot run or runs past DPKG_TIMEOUT."""
    return run(
        ["dpkg", *args],
        DPKG_TIMEOUT,
        env={
            "LC_ALL": "C",
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            "DEBIAN_FRONTEND": "noninteractive",
        },
    )


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "timeout": {"type": "int", "default": 300},
            "timeout_variable": {"type": "str", "default": ""},
            "repair": {"type": "bool", "default": True},
            "locks": {"type": "list", "elements": "path", "default": list(DPKG_LOCKS)},
        },
        supports_check_mode=True,
    )
    params = module.params
    if params["timeout"] < 0:
        module.fail_json(
            msg=(
                f"timeout is {params['timeout']}; "
                "give the seconds to wait for dpkg's locks (0 or more)"
            )
        )

    waited = wait_for_locks(params["locks"], timeout=params["timeout"])
    if waited.busy:
        module.fail_json(
            msg=lock_timeout_message(waited, params["timeout"], params["timeout_variable"]),
            waited=waited.waited,
            holders=[holder.describe() for holder in waited.busy],
        )

    try:
        check_and_repair(module, waited.waited)
    except CommandError as exc:
        module.fail_json(msg=str(exc))


def check_and_repair(module: AnsibleModule, waited: float) -> None:
    params = module.params
    updates = interrupted_updates(DPKG_UPDATES_DIR)
    audit = run_dpkg(["--audit"])
    unfinished = parse_audit(audit.stdout)
    result: Dict[str, Any] = {
        "changed": False,
        "waited": round(waited, 1),
        "interrupted": needs_repair(updates, audit.stdout),
        "pending_updates": updates,
        "unfinished_packages": unfinished,
    }
    if not result["interrupted"] or not params["repair"]:
        module.exit_json(**result)
    result["changed"] = True
    if module.check_mode:
        result["msg"] = "would run dpkg --configure -a to finish an interrupted dpkg run"
        module.exit_json(**result)

    repair = run_dpkg(["--configure", "-a"])
    result["repair_output"] = (repair.stdout + repair.stderr).strip()
    if repair.rc != 0:
        module.fail_json(
            msg=(
                "An earlier dpkg run was interrupted, and `dpkg --configure -a` could not finish "
                f"it (rc {repair.rc}): {result['repair_output'][-800:]}. Fix the package "
                "named there (its maintainer script failed), then re-run."
            ),
            **result,
        )
    if interrupted_updates(DPKG_UPDATES_DIR):
        module.fail_json(
            msg=(
                "`dpkg --configure -a` ran but dpkg's journal (/var/lib/dpkg/updates) is still "
                "not empty. Run `dpkg --audit` on the host to see why, then re-run."
            ),
            **result,
        )
    # Packages killed while unpacking stay half-installed after --configure -a; the role's
    # apt task that follows installs them again.
    left = parse_audit(run_dpkg(["--audit"]).stdout)
    result["unfinished_after_repair"] = left
    module.warn(
        "An earlier dpkg run had been interrupted ("
        + (", ".join(unfinished) or f"{len(updates)} pending journal entries")
        + "); finished it with dpkg --configure -a"
        + (f"; apt reinstalls the half-installed {', '.join(left)}" if left else "")
        + "."
    )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
