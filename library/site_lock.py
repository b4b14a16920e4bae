#!/usr/bin/python
"""Ansible module: take or release the per-host run lock (module_utils/site_lock.py)."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.site_lock import release, take

DOCUMENTATION = r"""
---
module: site_lock
short_description: Take or release Kindling's per-host run lock
description:
  - One Kindling run per host at a time. V(held) makes the lock directory (mkdir, atomic)
    and writes C(owner.json), waiting up to O(wait_seconds) while another run holds it.
  - A held lock is taken over when O(break_lock) is set, when it is older than
    O(stale_after), or when its run is in O(dead_runs) (the controller found that run's
    ansible-playbook gone; the role checks that on the controller and asks again).
  - V(released) removes the lock only when this run (O(run_id)) holds it.
  - Decisions in module_utils/site_lock.py, with pytest cases.
version_added: "0.7.0"
author:
  - Kindling maintainers
options:
  path:
    description: The lock directory (C(site_lock_dir)).
    type: path
    required: true
  state:
    description: V(held) takes the lock, V(released) gives it back.
    type: str
    choices: [held, released]
    default: held
  run_id:
    description: This run's id.
    type: str
    required: true
  owner:
    description: What C(owner.json) records besides the run id (playbook, controller, pid, start).
    type: dict
    default: {}
  wait_seconds:
    description: Seconds to wait for another run's lock before giving up.
    type: int
    default: 0
  stale_after:
    description: A lock older than this many seconds is taken over.
    type: int
    default: 10800
  break_lock:
    description: Take the lock even when another run holds it.
    type: bool
    default: false
  dead_runs:
    description: Run ids whose ansible-playbook process the controller found gone.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: none
    description: The role does not take the lock in check mode.
  diff_mode:
    support: none
    description: Nothing to show.
"""

EXAMPLES = r"""
- name: Take the run lock
  site_lock:
    path: /var/lib/kindling/site.lock
    run_id: "{{ site_lock__run_id }}"
    owner: {playbook: site.yml, controller: ctl, controller_pid: 4242}
  register: lock
"""

RETURN = r"""
taken:
  description: Whether this run holds the lock now (V(held)).
  returned: always
  type: bool
took_over:
  description: Why another run's lock was taken over; null when it was free.
  returned: always
  type: str
holder:
  description: The other run's owner.json, when it held the lock.
  returned: always
  type: dict
age:
  description: Seconds since the other run took the lock.
  returned: always
  type: int
released:
  description: Whether the lock was removed (V(released)).
  returned: always
  type: bool
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "state": {"type": "str", "choices": ["held", "released"], "default": "held"},
            "run_id": {"type": "str", "required": True},
            "owner": {"type": "dict", "default": {}},
            "wait_seconds": {"type": "int", "default": 0},
            "stale_after": {"type": "int", "default": 10800},
            "break_lock": {"type": "bool", "default": False},
            "dead_runs": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=False,
    )
    p = module.params
    result = {"changed": False, "taken": False, "took_over": None, "holder": None, "age": None}
    if p["state"] == "released":
        result["released"] = release(p["path"], p["run_id"])
        module.exit_json(**result)
    owner = dict(p["owner"], run_id=p["run_id"])
    result.update(
        take(p["path"], owner, p["wait_seconds"], p["stale_after"], p["break_lock"], p["dead_runs"])
    )
    result["released"] = False
    module.exit_json(**result)


if __name__ == "__main__":
    main()
