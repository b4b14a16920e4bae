#!/usr/bin/python
"""Ansible module: how the cuda role selects its toolkit, and which ld.so.conf.d entries it
wrote for other versions."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import runner
from ansible.module_utils.cuda_link import state

DOCUMENTATION = r"""
---
module: cuda_link_plan
short_description: Decide how the cuda role points cuda_home at its toolkit
description:
  - Asks C(update-alternatives --query cuda) (read-only) and decides with
    module_utils/cuda_link.py how the role points C(cuda_home) at the selected toolkit.
    C(alternatives) when the link group manages C(cuda_home) and lists the toolkit but does
    not select it (or C(cuda_home) does not lead there); C(link) when no group manages
    C(cuda_home) or it does not list the toolkit; C(none) when the group selects it already,
    or without C(path).
  - Lists the C(cuda-*.conf) files in the ld.so.conf.d directory that the cuda role wrote
    (their comment says C((role cuda))), other than the selected toolkit's.
  - Missing files, no update-alternatives and no link group named C(cuda) are answers, not
    failures (check mode on a fresh host).
  - Never changes the host; runs the same way in check mode.
version_added: "0.6.0"
author:
  - Kindling maintainers
options:
  link:
    description: The link that selects the toolkit (C(cuda_home)).
    type: path
    required: true
  path:
    description:
      - The toolkit to select (C(cuda_toolkit_prefix)/cuda-C(cuda_version)); without it the
        action is C(none) and update-alternatives is not asked (install method C(distro)).
    type: path
  name:
    description: The link group's name.
    type: str
    default: cuda
  admindir:
    description: update-alternatives' administrative directory; its own default when null.
    type: path
  altdir:
    description: update-alternatives' alternatives directory; its own default when null.
    type: path
  ld_conf_dir:
    description: Where the dynamic linker's configuration files are.
    type: path
    default: /etc/ld.so.conf.d
  ld_conf_keep:
    description: The selected toolkit's ld.so.conf.d file, never listed as stale.
    type: path
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Read how the cuda link is managed and which ld.so.conf.d entries the role wrote
  cuda_link_plan:
    link: /usr/local/cuda
    path: /usr/local/cuda-12.4
    ld_conf_keep: /etc/ld.so.conf.d/cuda-12-4.conf
  register: cuda__link
"""

RETURN = r"""
action:
  description: What the role does with the link, one of C(alternatives), C(link) or C(none).
  returned: always
  type: str
managed:
  description: Whether update-alternatives has the link group and its link is C(link).
  returned: always
  type: bool
listed:
  description: Whether the managing group lists C(path) as an alternative.
  returned: always
  type: bool
current:
  description: Whether C(path) is the managing group's value.
  returned: always
  type: bool
reaches:
  description: Whether C(link) leads to C(path) now.
  returned: always
  type: bool
alternatives:
  description:
    - The link group as C(update-alternatives --query) reports it (C(exists), C(rc),
      C(error), C(name), C(link), C(status), C(best), C(value), C(alternatives) with each
      one's C(path), C(priority) and C(slaves)); null without C(path).
  returned: always
  type: dict
stale_ld_conf:
  description: The ld.so.conf.d files the cuda role wrote for toolkits no longer selected.
  returned: always
  type: list
  elements: str
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "link": {"type": "path", "required": True},
            "path": {"type": "path"},
            "name": {"type": "str", "default": "cuda"},
            "admindir": {"type": "path"},
            "altdir": {"type": "path"},
            "ld_conf_dir": {"type": "path", "default": "/etc/ld.so.conf.d"},
            "ld_conf_keep": {"type": "path"},
        },
        supports_check_mode=True,
    )
    p = module.params

    # rc 2 (no such link group) is an answer; cuda_link words an update-alternatives
    # that cannot be executed (CommandError, an OSError).
    run = runner(60)

    result = state(
        p["link"],
        p["path"],
        run,
        binary=module.get_bin_path("update-alternatives"),
        name=p["name"],
        admindir=p["admindir"],
        altdir=p["altdir"],
        ld_conf_dir=p["ld_conf_dir"],
        ld_conf_keep=p["ld_conf_keep"],
    )
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
