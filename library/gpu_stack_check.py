#!/usr/bin/python
"""Ansible module: validate a planned driver/CUDA/cuDNN/torch/Python stack (pure check)."""

from __future__ import annotations

from typing import Any, Dict, List

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_compat import (
    PLAN_KEYS,
    check_stack,
    cuda_for_driver,
    cudnn_packages,
    min_driver_for_cuda,
    torch_release,
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
  gpus:
    description:
      - Detected or planned GPUs, each a dict with C(name) and/or C(compute_capability).
        C(ansible_facts.nvidia_smi.gpus) can be passed as is.
    type: list
    elements: dict
    default: []
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
    spec["gpus"] = {"type": "list", "elements": "dict", "default": []}
    spec["fail_on_problems"] = {"type": "bool", "default": True}
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)

    plan = {key: module.params[key] for key in PLAN_KEYS}
    problems = check_stack(plan, module.params["gpus"])
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
    derived["cudnn_packages"] = None
    if plan.get("cudnn_version") and cuda:
        try:
            derived["cudnn_packages"] = cudnn_packages(plan["cudnn_version"], cuda)
        except ValueError:  # already reported as a problem
            derived["cudnn_packages"] = None

    # A GPU the table doesn't know is reported, never fatal: the checks that need its
    # compute capability are skipped.
    blocking = [p for p in problems if p["code"] != "unknown-gpu"]
    result = {
        "changed": False,
        "ok": not blocking,
        "problems": problems,
        "plan": derived,
        "msg": _render(problems) if problems else "the planned GPU stack is consistent",
    }
    if blocking and module.params["fail_on_problems"]:
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
