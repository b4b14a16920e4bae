#!/usr/bin/python
"""Ansible module: the conda_pytorch role's command lines, and whether torch is installed."""

from __future__ import annotations

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import CommandError, run
from ansible.module_utils.torch_env_plan import (
    ARGUMENT_SPEC,
    pip_list_argv,
    pip_list_versions,
    plan_for,
)

DOCUMENTATION = r"""
---
module: torch_env_plan
short_description: Build the conda_pytorch role's command lines and compare torch's versions
description:
  - Decides with module_utils/torch_env_plan.py, from the role's settings, every command line
    of the conda_pytorch role's install step as an argv list - the Miniforge installer's path
    and invocation, the environment's creation and the torch install - and the versions that
    must be installed, as C(pip list) reports them.
  - The pip method installs C(name==version+<variant>) from O(index_url) (and
    O(extra_index_url)); the conda method installs C(pytorch==version) from the pytorch
    channel with C(cpuonly) for the C(cpu) variant, C(cudatoolkit=X.Y -c conda-forge) for
    releases before O(pytorch_cuda_since), C(pytorch-cuda=X.Y -c nvidia) from it on.
  - With O(read_installed), runs the environment's C(python -m pip list --format=json)
    (read-only, also in check mode) and says which wanted packages are missing or at another
    version; the conda method compares without the local tag (C(+cu116)). An interpreter that
    does not exist yet, or a pip list that fails, means nothing is installed.
  - Never changes the host; runs the same way in check mode.
version_added: "0.6.0"
author:
  - Kindling maintainers
options:
  install_method:
    description: C(conda_pytorch_install_method).
    type: str
    choices: [pip, conda]
    required: true
  mode:
    description:
      - The role's resolved mode (C(conda_pytorch_mode)). C(conda) creates a conda env; the
        other modes get the venv command line (adopt mode runs none of the lines).
    type: str
    choices: [conda, venv, adopt]
    required: true
  cuda_variant:
    description: The wheel variant, C(cuXYZ) or C(cpu) (C(conda_pytorch_cuda_variant)).
    type: str
    required: true
  torch_version:
    description: torch's release, without a local tag (C(conda_pytorch_version)).
    type: str
    required: true
  install_torchvision:
    description: Whether torchvision is installed.
    type: bool
    default: true
  torchvision_version:
    description: torchvision's release; required when O(install_torchvision) is set.
    type: str
    default: ""
  install_torchaudio:
    description: Whether torchaudio is installed.
    type: bool
    default: false
  torchaudio_version:
    description: torchaudio's release; required when O(install_torchaudio) is set.
    type: str
    default: ""
  conda_prefix:
    description: Where Miniforge is (or will be) installed (C(conda_pytorch_conda_prefix)).
    type: str
    required: true
  env_dir:
    description: The environment's directory (C(conda_pytorch_env_dir)).
    type: str
    required: true
  env_python:
    description: The environment's interpreter (C(conda_pytorch_env_python)).
    type: str
    required: true
  venv_python:
    description: The interpreter that creates a venv (C(conda_pytorch_venv_python)).
    type: str
    required: true
  python_version:
    description:
      - The conda env's Python, C(3.N) (C(conda_pytorch_python_version)); may be empty
        unless O(mode) is C(conda).
    type: str
    default: ""
  index_url:
    description: The wheel index (pip method; C(conda_pytorch_index_url)).
    type: str
    required: true
  extra_index_url:
    description: An extra index (pip method); empty for none.
    type: str
    default: ""
  pytorch_cuda_since:
    description:
      - The first torch release whose conda packages take C(pytorch-cuda=X.Y) from the nvidia
        channel; earlier ones take C(cudatoolkit=X.Y) from conda-forge
        (C(conda_pytorch_pytorch_cuda_since)).
    type: str
    required: true
  miniforge_url:
    description: The Miniforge installer's URL; its path's file name is the installer's name.
    type: str
    required: true
  download_dir:
    description: Where the installer is downloaded to (C(conda_pytorch_download_dir)).
    type: str
    required: true
  read_installed:
    description:
      - Run O(env_python)'s C(pip list --format=json) and compare the installed versions with
        the wanted ones. Off, or with O(installed) given, nothing runs.
    type: bool
    default: false
  installed:
    description:
      - The installed packages, name to version as C(pip list) reports them, instead of reading
        them (O(read_installed) is then ignored).
    type: dict
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Build the command lines and read the installed torch packages
  torch_env_plan:
    install_method: "{{ conda_pytorch_install_method }}"
    mode: "{{ conda_pytorch_mode }}"
    cuda_variant: "{{ conda_pytorch_cuda_variant }}"
    torch_version: "{{ conda_pytorch_version }}"
    install_torchvision: "{{ conda_pytorch_install_torchvision }}"
    torchvision_version: "{{ conda_pytorch_torchvision_version }}"
    install_torchaudio: "{{ conda_pytorch_install_torchaudio }}"
    torchaudio_version: "{{ conda_pytorch_torchaudio_version }}"
    conda_prefix: "{{ conda_pytorch_conda_prefix }}"
    env_dir: "{{ conda_pytorch_env_dir }}"
    env_python: "{{ conda_pytorch_env_python }}"
    venv_python: "{{ conda_pytorch_venv_python }}"
    python_version: "{{ conda_pytorch_python_version }}"
    index_url: "{{ conda_pytorch_index_url }}"
    extra_index_url: "{{ conda_pytorch_extra_index_url }}"
    pytorch_cuda_since: "{{ conda_pytorch_pytorch_cuda_since }}"
    miniforge_url: "{{ conda_pytorch_miniforge_url }}"
    download_dir: "{{ conda_pytorch_download_dir }}"
    read_installed: true
  register: conda_pytorch__plan

- name: The seed articles' stack with the conda method, against a given package list
  torch_env_plan:
    install_method: conda
    mode: conda
    cuda_variant: cu116
    torch_version: "1.12.1"
    torchvision_version: "0.13.1"
    conda_prefix: /opt/conda
    env_dir: /opt/conda/envs/pytorch
    env_python: /opt/conda/envs/pytorch/bin/python
    venv_python: /usr/bin/python3
    python_version: "3.10"
    index_url: https://download.pytorch.org/whl/cu116
    pytorch_cuda_since: "1.13"
    miniforge_url: https://github.com/conda-forge/miniforge/releases/download/26.1.1-3/Miniforge3-26.1.1-3-Linux-x86_64.sh
    download_dir: /var/cache/kindling
    installed: {torch: "1.12.1", torchvision: "0.13.0"}
  # commands.torch_install: [/opt/conda/bin/conda, install, --yes, --quiet, --prefix,
  #   /opt/conda/envs/pytorch, pytorch==1.12.1, torchvision==0.13.1, cudatoolkit=11.6,
  #   -c, pytorch, -c, conda-forge]; other_version: {torchvision: "0.13.0"}
"""

RETURN = r"""
commands:
  description: The role's command lines (the fact C(conda_pytorch_commands)).
  returned: always
  type: dict
  contains:
    installer_path:
      description: Where the Miniforge installer is downloaded to.
      type: str
      sample: /var/cache/kindling/Miniforge3-26.1.1-3-Linux-x86_64.sh
    miniforge_install:
      description: The installer's argv.
      type: list
      elements: str
      sample: [/bin/bash, /var/cache/kindling/Miniforge3-26.1.1-3-Linux-x86_64.sh, -b, -p,
               /opt/conda]
    env_create:
      description: The argv that creates the environment (conda create, or python -m venv).
      type: list
      elements: str
      sample: [/opt/conda/bin/conda, create, --yes, --quiet, --prefix, /opt/conda/envs/pytorch,
               python=3.12]
    wanted:
      description: Name to version of each package to install, as pip list reports it.
      type: dict
      sample: {torch: 2.11.0+cu130, torchvision: 0.26.0+cu130}
    torch_install:
      description: The argv that installs torch (pip install or conda install).
      type: list
      elements: str
      sample: [/opt/conda/envs/pytorch/bin/python, -m, pip, install, --no-input,
               --disable-pip-version-check, --index-url, "https://download.pytorch.org/whl/cu130",
               torch==2.11.0+cu130, torchvision==0.26.0+cu130]
installed:
  description:
    - Name (lower case) to version of every package pip lists in the environment, plus each
      wanted package that is missing as an empty string; conda method - without local tags.
  returned: always
  type: dict
  sample: {pip: "24.2", torch: 2.11.0+cu130, torchvision: ""}
installed_read:
  description: Whether the installed packages were read or given (else all count as missing).
  returned: always
  type: bool
missing:
  description: Wanted packages that are not installed.
  returned: always
  type: list
  elements: str
  sample: [torchvision]
other_version:
  description: Wanted packages installed at another version, name to the installed version.
  returned: always
  type: dict
  sample: {torch: 2.11.0+cu126}
install_needed:
  description: Whether the torch install runs (a wanted package is missing or at another version).
  returned: always
  type: bool
summary:
  description: One line saying what is wanted and what differs.
  returned: always
  type: str
  sample: "wanted torch 2.11.0+cu130, torchvision 0.26.0+cu130: install (torchvision missing)"
"""


def read_installed(module: AnsibleModule, python: str):
    """The environment's packages from pip list; {} when its interpreter is not there or
    pip list fails (nothing installed yet)."""
    if not os.access(python, os.X_OK):
        return {}
    try:
        rc, out, _err = run(list(pip_list_argv(python)), 300)
    except CommandError as exc:
        module.fail_json(msg=f"torch_env_plan: {exc}")
    if rc != 0:
        return {}
    try:
        return pip_list_versions(out)
    except ValueError as exc:
        module.fail_json(msg=f"torch_env_plan: {python}: {exc}", stdout=out)


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    installed = p["installed"]
    if installed is None and p["read_installed"]:
        installed = read_installed(module, p["env_python"])
    try:
        result = plan_for(p, installed)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
