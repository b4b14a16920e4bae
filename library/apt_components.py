#!/usr/bin/python
"""Ansible module: the archive components a host's apt sources lack, as a deb822 file."""

from __future__ import annotations

from ansible.module_utils.apt_sources import plan
from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
---
module: apt_components
short_description: Work out which archive components to enable for a release's suites
description:
  - Reads C(sources.list), C(sources.list.d/*.list) and C(sources.list.d/*.sources)
    (one-line and deb822 formats) and, for every enabled C(deb) entry of the given suites that
    carries C(main), lists the wanted components not yet enabled for the same URI and suite.
  - Returns the deb822 content of a file that adds exactly those, each stanza with the
    C(Signed-By) of the entry it extends. The role writes it with M(ansible.builtin.copy).
  - Read-only; runs the same way in check mode.
version_added: "0.3.0"
author:
  - Kindling maintainers
options:
  suites:
    description: The release's suites, e.g. C(bookworm), C(bookworm-updates), C(bookworm-security).
    type: list
    elements: str
    required: true
  components:
    description: The components the packages need, e.g. C(non-free), C(contrib).
    type: list
    elements: str
    required: true
  exclude:
    description: Files left out of the scan (the file the role writes).
    type: list
    elements: path
    default: []
  etc_apt:
    description: apt's configuration directory.
    type: path
    default: /etc/apt
  header:
    description: Comment lines put at the top of the content.
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
- name: Which of non-free, non-free-firmware and contrib are missing
  apt_components:
    suites: [bookworm, bookworm-updates, bookworm-security]
    components: [non-free, non-free-firmware, contrib]
    exclude: [/etc/apt/sources.list.d/kindling-nvidia-distro.sources]
  register: components
"""

RETURN = r"""
missing:
  description: Per URI and suite, the components that are missing and the Signed-By reused.
  returned: always
  type: list
content:
  description: The deb822 file adding them; empty when nothing is missing.
  returned: always
  type: str
release_entries:
  description: How many enabled deb entries of the suites were found.
  returned: always
  type: int
summary:
  description: One line saying what is missing or that nothing is.
  returned: always
  type: str
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "suites": {"type": "list", "elements": "str", "required": True},
            "components": {"type": "list", "elements": "str", "required": True},
            "exclude": {"type": "list", "elements": "path", "default": []},
            "etc_apt": {"type": "path", "default": "/etc/apt"},
            "header": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    p = module.params
    result = plan(p["etc_apt"], p["suites"], p["components"], p["exclude"], p["header"])
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
