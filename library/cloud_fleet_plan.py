#!/usr/bin/python
"""Ansible module: judge Kindling's cloud instances: running, interrupted, lost, expired."""

from __future__ import annotations

import datetime as dt

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.cloud_plan import fleet_state, run_outcome

DOCUMENTATION = r"""
---
module: cloud_fleet_plan
short_description: Judge Kindling's instances for a run report or the sweeper
description:
  - Takes the instances M(amazon.aws.ec2_instance_info) listed and judges each one that
    carries Kindling's run tag (module_utils/cloud_plan.py); instances without it are
    never in the answer, so the sweeper can not touch them.
  - A spot instance gone before Kindling released it is C(interrupted), not failed.
  - C(expired) lists the live instances past their C(kindling-expires) tag, the ones the
    sweeper terminates.
  - Reads only; supports check mode.
version_added: "0.5.0"
author:
  - Kindling maintainers
options:
  instances:
    description: The C(instances) list of M(amazon.aws.ec2_instance_info).
    type: list
    elements: dict
    required: true
  run_id:
    description: Judge only this run's instances; empty judges every Kindling instance.
    type: str
    default: ""
  stages:
    description: Each stage's result (ok, failed, skipped), for the run's one-word outcome.
    type: dict
    default: {}
  now:
    description: The time expiry is judged at (YYYY-MM-DDTHH:MM:SSZ); empty is now.
    type: str
    default: ""
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Judge every Kindling instance
  cloud_fleet_plan:
    instances: "{{ kindling_found.instances }}"
"""

RETURN = r"""
instances:
  description: >-
    Per instance id: its run, owner, expiry, state, state reason, verdict, and whether
    it expired.
  returned: always
  type: dict
expired:
  description: Live instance ids past their expiry tag.
  returned: always
  type: list
  elements: str
interrupted:
  description: Spot instances taken back before Kindling released them.
  returned: always
  type: list
  elements: str
lost:
  description: On-demand instances gone, not released by Kindling.
  returned: always
  type: list
  elements: str
running:
  description: Instances pending or running.
  returned: always
  type: list
  elements: str
unreadable_expiry:
  description: Live Kindling instances whose expiry tag can't be read (kept, reported).
  returned: always
  type: list
  elements: str
outcome:
  description: passed, interrupted or failed, from I(stages) and the verdicts.
  returned: always
  type: str
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "instances": {"type": "list", "elements": "dict", "required": True},
            "run_id": {"type": "str", "default": ""},
            "stages": {"type": "dict", "default": {}},
            "now": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    if module.params["now"]:
        now = dt.datetime.strptime(module.params["now"], "%Y-%m-%dT%H:%M:%SZ")
        now = now.replace(tzinfo=dt.timezone.utc)
    else:
        now = dt.datetime.now(dt.timezone.utc)
    state = fleet_state(module.params["instances"], now, module.params["run_id"])
    state["outcome"] = run_outcome(module.params["stages"], state)
    module.exit_json(changed=False, **state)


if __name__ == "__main__":
    main()
