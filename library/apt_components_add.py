#!/usr/bin/python
"""Ansible module: the archive components a host's apt sources lack, added in one deb822 file."""

from __future__ import annotations

import os

from ansible.module_utils.apt_sources import plan, refusal
from ansible.module_utils.atomic_file import write_atomic
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import CommandError, run

DOCUMENTATION = r"""
---
module: apt_components_add
short_description: Work out which archive components to enable for a release's suites
description:
  - Reads C(sources.list), C(sources.list.d/*.list) and C(sources.list.d/*.sources)
    (one-line and deb822 formats) and, for every enabled C(deb) entry of the given suites that
    carries C(main), lists the wanted components not yet enabled for the same URI and suite.
  - Returns the deb822 content of a file that adds exactly those, each stanza with the
    C(Signed-By) of the entry it extends (no new trust).
  - With O(dest), the module is the whole step, in one call from either role (nvidia_driver
    for the distribution's driver, cuda for its toolkit), and it fails before any change when
    no entry of the suites is enabled, or when components are missing and O(enable) is
    false; otherwise it writes O(dest) (or removes it once nothing is missing without it)
    and updates apt's package index after a change.
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
  dest:
    description:
      - The deb822 file that adds the missing components (left out of the scan, so the
        answer is the same on every run). Empty - read-only, return the content only.
    type: path
    default: ""
  enable:
    description: May the module add missing components (with O(dest))?
    type: bool
    default: true
  enable_variable:
    description: The role variable behind O(enable), named when components are missing.
    type: str
    default: ""
  update_cache:
    description: Run C(apt-get update) after O(dest) changed (not in check mode).
    type: bool
    default: true
  exclude:
    description: Files left out of the scan (besides O(dest)).
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
    description: Reports whether O(dest) would be written or removed, changing nothing.
  diff_mode:
    support: none
    description: Not reported.
"""

EXAMPLES = r"""
- name: Which of non-free, non-free-firmware and contrib are missing
  apt_components_add:
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
written:
  description: Whether O(dest) was (or, in check mode, would be) written.
  returned: always
  type: bool
removed:
  description: Whether O(dest) was (or would be) removed.
  returned: always
  type: bool
"""

#: Seconds apt-get update may take.
APT_UPDATE_TIMEOUT = 900


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "suites": {"type": "list", "elements": "str", "required": True},
            "components": {"type": "list", "elements": "str", "required": True},
            "dest": {"type": "path", "default": ""},
            "enable": {"type": "bool", "default": True},
            "enable_variable": {"type": "str", "default": ""},
            "update_cache": {"type": "bool", "default": True},
            "exclude": {"type": "list", "elements": "path", "default": []},
            "etc_apt": {"type": "path", "default": "/etc/apt"},
            "header": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    p = module.params
    exclude = p["exclude"] + ([p["dest"]] if p["dest"] else [])
    result = plan(p["etc_apt"], p["suites"], p["components"], exclude, p["header"])
    result.update(changed=False, written=False, removed=False)
    if not p["dest"]:
        module.exit_json(**result)
    problem = refusal(result, p["components"], p["enable"], p["enable_variable"], p["dest"])
    if problem:
        module.fail_json(msg=problem, **result)
    try:
        with open(p["dest"], encoding="utf-8") as handle:
            current = handle.read()
    except OSError:
        current = None
    if result["missing"]:
        result["written"] = current != result["content"]
    else:
        result["removed"] = current is not None
    result["changed"] = result["written"] or result["removed"]
    if result["changed"] and not module.check_mode:
        if result["written"]:
            write_atomic(p["dest"], result["content"], mode=0o644)
        else:
            os.remove(p["dest"])
        if p["update_cache"]:
            try:
                rc, out, err = run(
                    ["apt-get", "update", "-q"], APT_UPDATE_TIMEOUT, env_update={"LC_ALL": "C"}
                )
            except CommandError as exc:
                rc, out, err = -1, "", str(exc)
            if rc != 0:
                module.fail_json(
                    msg=f"{p['dest']} changed, but apt-get update failed: {err or out}", **result
                )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
