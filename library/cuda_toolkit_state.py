#!/usr/bin/python
"""Ansible module: where the cuda role's toolkits stand, and what it installs."""

from __future__ import annotations

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.cuda_link import state as link_state
from ansible.module_utils.managed_files import describe
from ansible.module_utils.toolkit_state import nvcc_path, plan

DOCUMENTATION = r"""
---
module: cuda_toolkit_state
short_description: Decide which CUDA toolkits are present and which the cuda role installs
description:
  - Asks each wanted toolkit's C(nvcc --version) (read-only) and decides with
    module_utils/toolkit_state.py where each nvcc is, which toolkits are present (their
    nvcc reports the release, installed earlier or preinstalled) and which are missing.
  - Returns each toolkit's package, cuDNN's packages, the ld.so.conf.d file and the cuDNN
    header, from gpu_stack_check's results (the vendor catalogue's names).
  - Never changes the host; runs the same way in check mode.
version_added: "0.6.0"
author:
  - Kindling maintainers
options:
  versions:
    description:
      - The wanted toolkits, the default one first (C(cuda_version), C(cuda_versions_extra)).
    type: list
    elements: str
    required: true
  stack:
    description: gpu_stack_check's loop results, one per toolkit (C(item) and C(packages)).
    type: list
    elements: dict
    required: true
  method:
    description: The toolkit's install method (C(cuda_install_method)).
    type: str
    required: true
  prefix:
    description: Where NVIDIA's toolkits live (C(cuda_toolkit_prefix)).
    type: path
    default: /usr/local
  cudnn_install:
    description: Whether the role installs cuDNN.
    type: bool
    default: true
  cudnn_method:
    description: cuDNN's install method (C(cuda_cudnn_install_method)).
    type: str
    default: apt
  cudnn_version:
    description: cuDNN's version (C(cuda_cudnn_version)).
    type: str
    default: ""
  machine:
    description: The host's architecture (C(ansible_facts.architecture)).
    type: str
    required: true
  link:
    description:
      - Also read, in the same run, how this link (C(cuda_home)) is selected and which
        ld.so.conf.d entries are stale, and return it as RV(link), what cuda_link_state
        returns (module_utils/cuda_link.py). The entries kept are this result's
        RV(ld_conf) with the C(cuda_repo) method. The role reads it again only after a
        toolkit was installed.
    type: path
  link_path:
    description: The toolkit the link should select (cuda_link_state's C(path)), with O(link).
    type: path
  files:
    description:
      - Also describe, in the same run, these files and, with the C(cuda_repo) method, the
        RV(ld_conf) file (module_utils/managed_files.py C(describe)), returned as RV(files).
        The configure step hands that to managed_files as its C(current), so a re-run writes
        nothing and runs no module for them.
    type: list
    elements: path
    default: []
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Work out what to install
  cuda_toolkit_state:
    versions: ["12.4"]
    stack: "{{ cuda__stack.results }}"
    method: cuda_repo
    machine: "{{ ansible_facts['architecture'] }}"
    cudnn_version: "9.14.0"
  register: cuda__toolkits
"""

RETURN = r"""
link:
  description: With O(link), cuda_link_state's result for O(link) and O(link_path).
  returned: when link is given
  type: dict
nvcc_paths:
  description: Each toolkit's nvcc.
  returned: always
  type: dict
present:
  description: Toolkits whose nvcc reports their release.
  returned: always
  type: list
missing:
  description: Toolkits the role installs.
  returned: always
  type: list
toolkit_packages:
  description: Each toolkit's package, from the vendor catalogue.
  returned: always
  type: dict
cudnn_packages:
  description: cuDNN's runtime and dev packages and version for the default toolkit.
  returned: always
  type: dict
ld_conf:
  description: The ld.so.conf.d file of the default toolkit.
  returned: always
  type: str
cudnn_header:
  description: The cuDNN version header verify reads; null without a cuDNN version.
  returned: always
  type: str
summary:
  description: One line saying what the role will install and what is there.
  returned: always
  type: str
files:
  description:
    - Each file of O(files), then the RV(ld_conf) file with the C(cuda_repo) method, as
      managed_files' C(current) takes it - C(path), C(regular), C(sha256), C(owner),
      C(owner_id), C(group), C(group_id), C(mode).
  returned: always
  type: list
  elements: dict
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "versions": {"type": "list", "elements": "str", "required": True},
            "stack": {"type": "list", "elements": "dict", "required": True},
            "method": {"type": "str", "required": True},
            "prefix": {"type": "path", "default": "/usr/local"},
            "cudnn_install": {"type": "bool", "default": True},
            "cudnn_method": {"type": "str", "default": "apt"},
            "cudnn_version": {"type": "str", "default": ""},
            "machine": {"type": "str", "required": True},
            "link": {"type": "path"},
            "link_path": {"type": "path"},
            "files": {"type": "list", "elements": "path", "default": []},
        },
        supports_check_mode=True,
    )
    p = module.params
    by_version = {str(r.get("item")): r for r in p["stack"]}
    answers = {}
    for version in p["versions"]:
        pkgs = (by_version.get(version) or {}).get("packages") or {}
        path = nvcc_path(version, p["method"], p["prefix"], pkgs.get("distro_toolkit"))
        if not os.access(path, os.X_OK):
            answers[version] = {"rc": None, "stdout": ""}
            continue
        rc, out, _err = module.run_command([path, "--version"])
        answers[version] = {"rc": rc, "stdout": out}
    try:
        result = plan(
            p["versions"],
            p["stack"],
            answers,
            p["method"],
            p["prefix"],
            {
                "install": p["cudnn_install"],
                "method": p["cudnn_method"],
                "version": p["cudnn_version"],
            },
            p["machine"],
        )
    except ValueError as exc:
        module.fail_json(msg=f"cuda_toolkit_state: {exc}")
    if p["link"]:
        result["link"] = link_state(
            p["link"],
            p["link_path"],
            # rc 2 (no such link group) is an answer, as in cuda_link_state.
            lambda argv: module.run_command(argv, handle_exceptions=False),
            binary=module.get_bin_path("update-alternatives"),
            ld_conf_keep=result["ld_conf"] if p["method"] == "cuda_repo" else None,
        )
    described = list(p["files"]) + ([result["ld_conf"]] if p["method"] == "cuda_repo" else [])
    result["files"] = [describe(path) for path in described]
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
