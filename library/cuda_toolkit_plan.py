#!/usr/bin/python
"""Ansible module: where the cuda role's toolkits stand, and what it installs."""

from __future__ import annotations

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import CommandError, runner
from ansible.module_utils.cuda_link import state as link_state
from ansible.module_utils.managed_files import describe
from ansible.module_utils.toolkit_state import (
    ARGUMENT_SPEC,
    MUTUALLY_EXCLUSIVE,
    REQUIRED_BY,
    REQUIRED_ONE_OF,
    adopt_reads,
    answer,
    read_host,
    read_nvcc,
    wanted_reads,
)

DOCUMENTATION = r"""
---
module: cuda_toolkit_plan
short_description: Decide which CUDA toolkits are present and which the cuda role installs
description:
  - Asks each wanted toolkit's C(nvcc --version) (read-only) and decides with
    module_utils/toolkit_state.py where each nvcc is, which toolkits are present (their
    nvcc reports the release, installed earlier or preinstalled) and which are missing.
  - Returns each toolkit's package, cuDNN's packages, the ld.so.conf.d file and the cuDNN
    header, from gpu_stack_plan's results (the vendor catalogue's names).
  - With O(adopt), reads instead what the toolkit at that path is (its nvcc's release,
    RV(adopted)) and, for that release, what a later plan needs (RV(read)); the cuda role's
    stack entry point does this in adopt mode, in the preflight.
  - Its action plugin answers on the controller, running nothing on the host, when O(read)
    (an earlier RV(read) of this module) covers every argument.
  - Never changes the host; runs the same way in check mode.
version_added: "0.6.0"
author:
  - Kindling maintainers
options:
  versions:
    description:
      - The wanted toolkits, the default one first (C(cuda_version), C(cuda_versions_extra)).
      - Required without O(adopt), and not allowed with it.
    type: list
    elements: str
  stack:
    description:
      - gpu_stack_plan's loop results, one per toolkit (C(item) and C(packages)).
      - Required with O(versions).
    type: list
    elements: dict
  adopt:
    description:
      - Adopt mode's first read (C(cuda_home)) - ask C(<adopt>/bin/nvcc) which release it is
        and read, for that release, the nvcc where NVIDIA's toolkits are, the link
        (O(link), its path C(<prefix>/cuda-<release>) with the C(cuda_repo) method) and the
        files (O(files) and that release's ld.so.conf.d file). Returns RV(adopted) and
        RV(read), no plan.
    type: path
  read:
    description:
      - An earlier RV(read) of this module on this host (the stack entry point's, in adopt
        mode). When it asked every nvcc, the same link and the same files as these
        arguments need, the action plugin answers from it without running anything on the
        host; otherwise the module runs. The module itself does not use it.
    type: dict
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
        ld.so.conf.d entries are stale, and return it as RV(link), what cuda_link_plan
        returns (module_utils/cuda_link.py). The entries kept are this result's
        RV(ld_conf) with the C(cuda_repo) method. The role reads it again only after a
        toolkit was installed.
    type: path
  link_path:
    description: The toolkit the link should select (cuda_link_plan's C(path)), with O(link).
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
  cuda_toolkit_plan:
    versions: ["12.4"]
    stack: "{{ cuda__checks }}"
    method: cuda_repo
    machine: "{{ ansible_facts['architecture'] }}"
    cudnn_version: "9.14.0"
  register: cuda__toolkits
"""

RETURN = r"""
reused_read:
  description: True when the action plugin answered from O(read), running nothing on the host.
  returned: when O(read) covered every argument
  type: bool
adopted:
  description:
    - With O(adopt), what C(<adopt>/bin/nvcc --version) said - C(path), C(rc), C(release)
      (null when none was read), C(line) and C(error), as cuda_version_info returns it.
  returned: with adopt
  type: dict
read:
  description:
    - With O(adopt), what was read - C(nvcc) (each path's C(rc) and C(stdout)), C(link)
      (C(link), C(path), C(keep) and its C(state)) and C(files); the later plan's O(read).
  returned: with adopt
  type: dict
link:
  description: With O(link), cuda_link_plan's result for O(link) and O(link_path).
  returned: when link is given, without adopt
  type: dict
nvcc_paths:
  description: Each toolkit's nvcc.
  returned: without adopt
  type: dict
present:
  description: Toolkits whose nvcc reports their release.
  returned: without adopt
  type: list
missing:
  description: Toolkits the role installs.
  returned: without adopt
  type: list
toolkit_packages:
  description: Each toolkit's package, from the vendor catalogue.
  returned: without adopt
  type: dict
cudnn_packages:
  description: cuDNN's runtime and dev packages and version for the default toolkit.
  returned: without adopt
  type: dict
ld_conf:
  description: The ld.so.conf.d file of the default toolkit.
  returned: without adopt
  type: str
cudnn_header:
  description: The cuDNN version header verify reads; null without a cuDNN version.
  returned: without adopt
  type: str
summary:
  description: One line saying what the role will install and what is there.
  returned: without adopt
  type: str
files:
  description:
    - Each file of O(files), then the RV(ld_conf) file with the C(cuda_repo) method, as
      managed_files' C(current) takes it - C(path), C(regular), C(sha256), C(owner),
      C(owner_id), C(group), C(group_id), C(mode).
  returned: without adopt
  type: list
  elements: dict
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        mutually_exclusive=MUTUALLY_EXCLUSIVE,
        required_by=REQUIRED_BY,
        required_one_of=REQUIRED_ONE_OF,
        supports_check_mode=True,
    )
    p = module.params
    # nvcc --version and update-alternatives --query; CommandError (an OSError) when one
    # cannot be run, which read_nvcc and cuda_link word.
    run = runner(60)

    def read_link(link, path, keep):
        return link_state(
            link,
            path,
            # rc 2 (no such link group) is an answer, as in cuda_link_plan.
            run,
            binary=module.get_bin_path("update-alternatives"),
            ld_conf_keep=keep,
        )

    def read(nvcc, link, files):
        try:
            return read_host(nvcc, link, files, run, read_link, describe)
        except CommandError as exc:  # an executable nvcc that cannot be run, or hangs
            module.fail_json(msg=f"cuda_toolkit_plan: {exc}")

    if p["adopt"]:
        # The release first (read_nvcc words an nvcc that cannot be run, as
        # cuda_version_info does), then the same read as a plan of that release needs.
        answers = {}

        def run_and_keep(argv):
            rc, out, err = run(argv)
            answers[argv[0]] = {"rc": rc, "stdout": out}
            return rc, out, err

        home_nvcc = os.path.join(p["adopt"], "bin", "nvcc")
        adopted = read_nvcc(home_nvcc, run_and_keep)
        wanted = adopt_reads(p["adopt"], p, adopted["release"])
        found = read(
            [path for path in wanted["nvcc"] if path != home_nvcc], wanted["link"], wanted["files"]
        )
        found["nvcc"][home_nvcc] = answers.get(home_nvcc, {"rc": None, "stdout": ""})
        module.exit_json(changed=False, adopted=adopted, read=found)

    wanted = wanted_reads(p)
    found = read(list(wanted["nvcc"].values()), wanted["link"], wanted["files"])
    try:
        result = answer(p, found)
    except ValueError as exc:
        module.fail_json(msg=f"cuda_toolkit_plan: {exc}")
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
