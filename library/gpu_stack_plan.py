#!/usr/bin/python
"""Ansible module: validate a planned driver/CUDA/cuDNN/torch/Python stack (pure check).

The check is module_utils/stack_check.py; action_plugins/gpu_stack_plan.py runs it on the
controller, so this module runs only where that plugin is not loaded.
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.stack_check import ARGUMENT_SPEC, check

DOCUMENTATION = r"""
---
module: gpu_stack_plan
short_description: Check a planned NVIDIA driver, CUDA, cuDNN, PyTorch and Python stack
description:
  - Wraps C(check_stack) of module_utils/gpu_compat.py, Kindling's one compatibility
    matrix, so a role can validate its variables before installing anything.
  - Returns every incompatibility with a stable C(code), a one-sentence C(message) with the
    numbers, and a C(fix) list of role variables with suggested values.
  - Catches, among others, driver 470 with CUDA 11.6 (which needs the 510 branch), CUDA 11.6 or
    torch 1.12 on sm_90 (H100/H200), a torch release without a wheel for the chosen CUDA
    variant, a Python outside torch's range, an unknown CUDA version, a cuDNN major that
    does not match CUDA, and GPUs the table does not know (reported, not fatal).
  - Quote version numbers in YAML ("3.10", "12.0"); unquoted, 3.10 becomes 3.1.
  - Runs on the controller's data only and never changes the host.
version_added: "0.1.0"
author:
  - Kindling maintainers
options:
  driver_branch:
    description: Planned driver branch (role variable C(nvidia_driver_branch)), e.g. V("580").
    type: str
  driver_version:
    description: Planned or installed driver version (C(nvidia_driver_version)).
    type: str
  cuda_version:
    description: Planned CUDA toolkit major.minor (C(cuda_version)), e.g. V("13.0").
    type: str
  cudnn_version:
    description: Planned cuDNN version (C(cuda_cudnn_version)), e.g. V("9.19.0").
    type: str
  torch_version:
    description: Planned torch release (C(conda_pytorch_version)), e.g. V("2.11.0").
    type: str
  torch_cuda_variant:
    description: Planned wheel variant (C(conda_pytorch_cuda_variant)), e.g. V("cu130").
    type: str
  python_version:
    description: Planned Python of the torch environment (C(conda_pytorch_python_version)).
    type: str
  cuda_versions_extra:
    description: More toolkits installed side by side (C(cuda_versions_extra)).
    type: list
    elements: str
    default: []
  os:
    description:
      - NVIDIA's repository the plan installs from, e.g. V(ubuntu2204) or V(debian12)
        (C(nvidia_driver_repo_distro)). With it, a plan the vendor catalogue says cannot
        exist there is refused, and every fix names only what the repository serves.
    type: str
  arch:
    description: The repository's architecture path, V(x86_64) or V(sbsa).
    type: str
  distribution:
    description:
      - The host's distribution (C(ansible_facts.distribution)); with C(distribution_version),
        derives C(os) and C(os_release) when they are not given.
    type: str
  distribution_version:
    description: The distribution's version (C(ansible_facts.distribution_version)).
    type: str
  machine:
    description: The host's machine (C(ansible_facts.architecture)); derives C(arch).
    type: str
  os_release:
    description: The distribution release (V("12"), V("22.04")), for the V(distro) method.
    type: str
  install_method:
    description: How the driver is installed (C(nvidia_driver_install_method)).
    type: str
    choices: [cuda_repo, distro]
    default: cuda_repo
  toolkit_method:
    description:
      - How the CUDA toolkit is installed (C(cuda_install_method)). V(distro) plans the
        distribution's own toolkit package (Debian 12's nvidia-cuda-toolkit, CUDA 11.8)
        instead of NVIDIA's cuda-toolkit-X-Y, and refuses another version.
    type: str
    choices: [cuda_repo, distro]
    default: cuda_repo
  kernel_modules:
    description:
      - Kernel-module flavour (C(nvidia_driver_kernel_modules)). V(auto) picks open where
        a GPU needs it (Blackwell, Grace Hopper), proprietary where a GPU can't run open
        (before Turing), else NVIDIA's default for the branch.
    type: str
    choices: [auto, open, proprietary]
    default: auto
  package_flavor:
    description:
      - V(auto), V(cuda-drivers) or V(nvidia-driver) (C(nvidia_driver_package_flavor)). V(auto)
        takes cuda-drivers where the repository serves it with the kernel modules the plan
        needs, else nvidia-driver; the plan's C(packages.driver.why) says which and why.
    type: str
    choices: [auto, cuda-drivers, nvidia-driver]
    default: auto
  python_packages:
    description:
      - Python packages pinned into the planned environment, each C(name), C(version) and
        the C(variable) that sets it; a pin whose wheels need another Python is refused.
    type: list
    elements: dict
    default: []
  gpus:
    description:
      - Detected or planned GPUs, each a dict with C(name) and/or C(compute_capability).
        C(ansible_facts.nvidia_smi.gpus) can be passed as is.
    type: list
    elements: dict
    default: []
  repository_overrides:
    description:
      - Overrides of the catalogue's C(cuda_repository) facts for the returned
        C(repository.cuda) location, each empty for the catalogue's value - C(base_url),
        C(key_url), C(fingerprint), C(keyring) (the C(nvidia_driver_repo_*) variables).
    type: dict
    default: {}
  fail_on_problems:
    description:
      - Fail, listing every problem with its fix, when any is found. With V(false) the
        problems are only returned.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: A pure check; it runs the same way in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
seealso:
  - module: nvidia_smi_facts
  - module: torch_cuda_facts
"""

EXAMPLES = r"""
- name: Validate the planned stack against the GPUs that are there
  gpu_stack_plan:
    driver_branch: "{{ nvidia_driver_branch }}"
    cuda_version: "{{ cuda_version }}"
    cudnn_version: "{{ cuda_cudnn_version }}"
    torch_version: "{{ conda_pytorch_version }}"
    torch_cuda_variant: "{{ conda_pytorch_cuda_variant }}"
    python_version: "{{ conda_pytorch_python_version }}"
    gpus: "{{ ansible_facts.nvidia_smi.gpus | default([]) }}"

- name: Report only (the seed articles' stack on an H100)
  gpu_stack_plan:
    driver_branch: "470"
    cuda_version: "11.6"
    torch_version: "1.12.1"
    torch_cuda_variant: cu116
    python_version: "3.8"
    gpus:
      - name: NVIDIA H100 80GB HBM3
    fail_on_problems: false
  register: stack

- name: Show what to change
  ansible.builtin.debug:
    msg: "{{ stack.problems | map(attribute='fix') | flatten | unique | list }}"
"""

RETURN = r"""
ok:
  description: Whether no problem was found.
  returned: always
  type: bool
  sample: false
problems:
  description: Every incompatibility found, in a stable order.
  returned: always
  type: list
  elements: dict
  contains:
    code:
      description: Stable slug, e.g. driver-too-old-for-cuda, cuda-too-old-for-gpu,
        torch-arch-not-covered, torch-no-wheel-for-variant, python-unsupported-by-torch,
        unknown-cuda-version, cudnn-cuda-mismatch, unknown-gpu.
      type: str
    message:
      description: One actionable sentence with the numbers.
      type: str
    fix:
      description: Role variables with suggested values, meant to be applied together.
      type: list
      elements: str
      sample: ['nvidia_driver_branch: "510"']
  sample:
    - code: driver-too-old-for-cuda
      message: "Driver 470 is too old for CUDA 11.6, which needs Linux driver >= 510..."
      fix: ['nvidia_driver_branch: "510"']
plan:
  description: The plan as checked, with what the table derives from it.
  returned: always
  type: dict
  sample: {"cuda_version": "13.0", "min_driver_for_cuda": "(from gpu_compat)"}
packages:
  description:
    - What each install step installs, from the vendor catalogue (with C(os)); the roles
      install exactly these and spell no package name of their own.
    - C(driver) has C(packages), C(pinning) (NVIDIA's branch-pinning package or null),
      C(version) (apt glob), C(version_regex), C(hold), C(selection) (dpkg patterns of
      the layout's branch-selecting packages); C(toolkit) lists cuda-toolkit-X-Y;
      C(cudnn) is the cuDNN apt plan; C(fabric_manager) the NVSwitch packages at the
      driver's version; C(kernel_modules) the flavour chosen and why.
  returned: always
  type: dict
repository:
  description:
    - The repository checked against (C(os), C(arch), C(release)), and C(cuda), where NVIDIA's
      CUDA repository for it is and how apt trusts it (C(url), C(key_url), C(fingerprint),
      C(keyring), C(sources_file), C(list_file); module_utils/stack_plan.py's
      cuda_repository_location), or null without a repository path.
  returned: always
  type: dict
notes:
  description: Facts that could not be confirmed from the catalogue (never fatal).
  returned: always
  type: list
  elements: str
params:
  description: The inputs it was checked with (all options but O(fail_on_problems)).
  returned: always
  type: dict
msg:
  description: Summary; on failure, every problem with its fix.
  returned: always
  type: str
"""


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    result = check(module.params)
    if result.pop("failed"):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
