#!/usr/bin/python
"""Ansible module: validate a planned driver/CUDA/cuDNN/torch/Python stack (pure check)."""

from __future__ import annotations

from typing import Any, Dict, List

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_compat import (
    PLAN_KEYS,
    cuda_for_driver,
    cudnn_packages,
    min_driver_for_cuda,
    torch_release,
)
from ansible.module_utils.stack_plan import (
    MODULE_FLAVOURS,
    PACKAGE_FLAVORS,
    check_plan,
    cuda_repository_location,
    distro_toolkit_plan,
    plan_packages,
    python_package_problem,
    repository_arch,
    repository_id,
    repository_notes,
)

DOCUMENTATION = r"""
---
module: gpu_stack_check
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
    description: V(cuda-drivers) or V(nvidia-driver) (C(nvidia_driver_package_flavor)).
    type: str
    choices: [cuda-drivers, nvidia-driver]
    default: cuda-drivers
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
  gpu_stack_check:
    driver_branch: "{{ nvidia_driver_branch }}"
    cuda_version: "{{ cuda_version }}"
    cudnn_version: "{{ cuda_cudnn_version }}"
    torch_version: "{{ conda_pytorch_version }}"
    torch_cuda_variant: "{{ conda_pytorch_cuda_variant }}"
    python_version: "{{ conda_pytorch_python_version }}"
    gpus: "{{ ansible_facts.nvidia_smi.gpus | default([]) }}"

- name: Report only (the seed articles' stack on an H100)
  gpu_stack_check:
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
msg:
  description: Summary; on failure, every problem with its fix.
  returned: always
  type: str
"""


def _render(problems: List[Dict[str, Any]]) -> str:
    lines = [f"{len(problems)} problem(s) with the planned GPU stack:"]
    for p in problems:
        fix = ", ".join(p["fix"]) if p["fix"] else "see the message"
        lines.append(f"- [{p['code']}] {p['message']} Fix: {fix}")
    return "\n".join(lines)


def main() -> None:
    spec: Dict[str, Any] = {key: {"type": "str"} for key in PLAN_KEYS}
    spec.update(
        cuda_versions_extra={"type": "list", "elements": "str", "default": []},
        os={"type": "str"},
        arch={"type": "str"},
        os_release={"type": "str"},
        distribution={"type": "str"},
        distribution_version={"type": "str"},
        machine={"type": "str"},
        install_method={"type": "str", "choices": ["cuda_repo", "distro"], "default": "cuda_repo"},
        toolkit_method={"type": "str", "choices": ["cuda_repo", "distro"], "default": "cuda_repo"},
        kernel_modules={
            "type": "str",
            "choices": ["auto", *MODULE_FLAVOURS],
            "default": "auto",
        },
        package_flavor={"type": "str", "choices": list(PACKAGE_FLAVORS), "default": "cuda-drivers"},
        python_packages={"type": "list", "elements": "dict", "default": []},
        gpus={"type": "list", "elements": "dict", "default": []},
        repository_overrides={"type": "dict", "default": {}},
        fail_on_problems={"type": "bool", "default": True},
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    params = module.params

    plan: Dict[str, Any] = {key: params[key] for key in PLAN_KEYS}
    plan["cuda_versions_extra"] = params["cuda_versions_extra"]
    repo = params["os"] or None
    arch = params["arch"] or None
    os_release = params["os_release"] or None
    if params["distribution"] and params["distribution_version"]:
        repo = repo or repository_id(params["distribution"], params["distribution_version"])
        if not os_release:
            version = str(params["distribution_version"])
            os_release = version.split(".")[0] if params["distribution"] == "Debian" else version
    if params["machine"] and not arch:
        arch = repository_arch(params["machine"])
    problems = check_plan(plan, params["gpus"], repo, arch)
    notes: List[str] = repository_notes(plan, repo, arch)
    derived: Dict[str, Any] = dict(plan)
    cuda = plan.get("cuda_version")
    driver = plan.get("driver_version") or plan.get("driver_branch")
    try:
        derived["min_driver_for_cuda"] = min_driver_for_cuda(cuda) if cuda else None
        derived["max_cuda_for_driver"] = cuda_for_driver(driver) if driver else None
    except ValueError:  # already reported as invalid-version
        derived["min_driver_for_cuda"] = derived["max_cuda_for_driver"] = None
    release = torch_release(plan["torch_version"]) if plan.get("torch_version") else None
    derived["torch_variants"] = sorted(release["variants"]) if release else None
    cudnn = None
    if plan.get("cudnn_version") and cuda:
        try:
            cudnn = cudnn_packages(plan["cudnn_version"], cuda)
        except ValueError:  # already reported as a problem
            cudnn = None
    derived["cudnn_packages"] = cudnn

    packages: Dict[str, Any] = {"driver": None, "toolkit": [], "cudnn": cudnn}
    invalid = any(p["code"] == "invalid-version" for p in problems)
    if repo and not invalid:
        cudas = [str(v) for v in [cuda, *plan["cuda_versions_extra"]] if v]
        planned, package_problems = plan_packages(
            repo,
            plan.get("driver_branch") or (driver.split(".")[0] if driver else None),
            plan.get("driver_version"),
            params["install_method"],
            params["kernel_modules"],
            params["package_flavor"],
            params["gpus"],
            cudas,
            os_release,
        )
        packages.update(planned)
        problems.extend(package_problems)
    if params["toolkit_method"] == "distro" and params["distribution"]:
        # The toolkit comes from the distribution: NVIDIA's repository's toolkit range says nothing.
        # Without a distribution (gpu_preflight on a host without a GPU) nothing is planned.
        problems = [p for p in problems if p["code"] != "cuda-not-in-repository"]
        toolkit, toolkit_problems = distro_toolkit_plan(
            params["distribution"] or "", os_release, cuda, plan["cuda_versions_extra"]
        )
        problems.extend(toolkit_problems)
        packages["toolkit"] = [toolkit["package"]] if toolkit else []
        packages["distro_toolkit"] = toolkit
    if params["install_method"] == "distro":
        # The branch comes from the distribution's archive, whatever NVIDIA's repository serves.
        problems = [p for p in problems if p["code"] != "driver-branch-not-in-repository"]
    python = plan.get("python_version")
    for item in params["python_packages"]:
        if python and item.get("version"):
            problem = python_package_problem(
                str(item["name"]), str(item["version"]), str(python), str(item.get("variable"))
            )
            if problem:
                problems.append(problem)

    # A GPU the table doesn't know is reported, never fatal: the checks that need its
    # compute capability are skipped.
    blocking = [p for p in problems if p["code"] != "unknown-gpu"]
    result = {
        "changed": False,
        "ok": not blocking,
        "problems": problems,
        "plan": derived,
        "packages": packages,
        "repository": {
            "os": repo,
            "arch": arch,
            "release": os_release,
            "cuda": cuda_repository_location(
                repo,
                arch,
                **{
                    key: str(params["repository_overrides"].get(key) or "")
                    for key in ("base_url", "key_url", "fingerprint", "keyring")
                },
            ),
        },
        "notes": notes,
        "msg": _render(problems) if problems else "the planned GPU stack is consistent",
    }
    if blocking and params["fail_on_problems"]:
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
