#!/usr/bin/python
"""Ansible module: the nvidia-persistenced command line that keeps persistence mode on."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import CommandError, run
from ansible.module_utils.persistenced import dropin, exec_start_argv, persistence_on
from ansible.module_utils.vendor_catalogue import CATALOGUE

DOCUMENTATION = r"""
---
module: nvidia_persistenced_plan
short_description: Work out nvidia-persistenced's command line with persistence mode on
description:
  - Reads the unit's ExecStart (C(systemctl show)), drops the flags the vendor catalogue
    says turn persistence mode off (C(--no-persistence-mode), which Ubuntu's packaged unit
    passes), adds the one that turns it on, and returns the drop-in that starts it so.
  - Read-only; runs the same way in check mode.
version_added: "0.2.0"
author:
  - Kindling maintainers
options:
  unit:
    description: The unit.
    type: str
    default: nvidia-persistenced.service
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Work out the command line
  nvidia_persistenced_plan:
  register: persistenced
"""

RETURN = r"""
argv:
  description: The unit's command now (empty when it has none).
  returned: always
  type: list
wanted_argv:
  description: The command with persistence mode on.
  returned: always
  type: list
disabled_by_unit:
  description: Whether the unit's command turns persistence mode off.
  returned: always
  type: bool
dropin:
  description: The drop-in content (empty when the unit has no command).
  returned: always
  type: str
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={"unit": {"type": "str", "default": "nvidia-persistenced.service"}},
        supports_check_mode=True,
    )
    try:
        rc, out, err = run(["systemctl", "show", "-p", "ExecStart", module.params["unit"]], 60)
    except CommandError as exc:
        module.fail_json(msg=str(exc))
    if rc != 0:
        module.fail_json(msg=f"systemctl show {module.params['unit']} failed: {err.strip()}")
    facts = CATALOGUE["persistenced"]
    argv = exec_start_argv(out)
    wanted = persistence_on(argv, facts["disables_persistence"], facts["enables_persistence"])
    module.exit_json(
        changed=False,
        argv=argv,
        wanted_argv=wanted if argv else [],
        disabled_by_unit=any(a in facts["disables_persistence"] for a in argv),
        dropin=dropin(wanted) if argv else "",
    )


if __name__ == "__main__":
    main()
