#!/usr/bin/python
"""Ansible module stub: site_inputs_plan runs on the controller
(action_plugins/site_inputs_plan.py)."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.site_inputs import ARGUMENT_SPEC

DOCUMENTATION = r"""
---
module: site_inputs_plan
short_description: Check the site's own inputs (kindling_serial) and the roles' inputs together
description:
  - Runs on the controller (action_plugins/site_inputs_plan.py) in stage 1 of site.yml, after
    every role's own input check. Refuses a kindling_serial that is not a count (a whole
    number 1 or more, 1%-100%, or a list of those), and two Kindling listeners on one port
    of one host (module_utils/site_inputs.py).
  - Reads only; supports check mode.
version_added: "0.4.0"
author:
  - Kindling maintainers
options:
  effective:
    description: The effective value of every role's inputs (kindling_effective_inputs).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Check the site's own inputs and the roles' together
  site_inputs_plan:
    effective: "{{ kindling_effective_inputs }}"
"""

RETURN = r"""
problems:
  description: One message per refused variable.
  returned: always
  type: list
  elements: str
"""


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC)
    module.fail_json(msg="site_inputs_plan runs on the controller through its action plugin")


if __name__ == "__main__":
    main()
