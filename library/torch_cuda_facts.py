#!/usr/bin/python
"""Ansible module: what torch sees of CUDA in a given interpreter (read-only)."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import CommandError, run
from ansible.module_utils.python_interpreter import ran
from ansible.module_utils.torch_probe import (
    DEFAULT_PYTHON,
    PROC_DRIVER_VERSION,
    build_probe_command,
    diagnose_cuda_unavailable,
    normalize,
    parse_probe_output,
    parse_proc_driver_version,
    probe_command,
    summarize,
    unimportable_facts,
    verdict,
)

DOCUMENTATION = r"""
---
module: torch_cuda_facts
short_description: Probe torch and CUDA in a Python environment and judge the result
description:
  - Runs a short probe (the single copy lives in module_utils/torch_probe.py) with the given
    interpreter, and sets C(ansible_facts.torch_cuda) with what torch reports - version, the
    CUDA and cuDNN it was built with, the devices it sees, its arch list, NCCL, bf16 - and
    a C(verdict).
  - "The verdict has three checks: C(arch_covered) (every device's sm_XX is in torch's arch
    list, binary compatible, or reachable through PTX), C(driver_new_enough) (the driver
    meets gpu_compat's minimum for torch's CUDA build) and C(tensor_op) (a 64x64 matmul runs
    on every device); with O(expect_gpus) also C(gpus_visible)."
  - When nvidia-smi sees GPUs (O(expect_gpus)) but torch says CUDA is unavailable, the
    result says plainly whether this is the CPU-only wheel mistake or a driver too old for
    the wheel, and which C(conda_pytorch_cuda_variant) to set.
  - On a CPU host torch reports C(cuda_available=false); that fails only with
    O(require_cuda=true).
  - Never changes the host.
version_added: "0.1.0"
author:
  - Kindling maintainers
options:
  python:
    description:
      - Interpreter of the PyTorch environment (the role variable C(pytorch_python)).
    type: path
    default: /opt/conda/envs/pytorch/bin/python
  require_torch:
    description:
      - Fail when the interpreter is missing or torch cannot be imported. With V(false) the
        fact reports C(importable=false) and the C(import_error) instead.
    type: bool
    default: true
  require_cuda:
    description:
      - Fail unless CUDA works - torch sees a GPU and every verdict check passes.
    type: bool
    default: false
  expect_gpus:
    description:
      - How many GPUs nvidia-smi sees (C(ansible_facts.nvidia_smi.gpu_count)); null to skip
        the comparison.
    type: int
  driver_version:
    description:
      - The driver version from nvidia_smi_facts (C(ansible_facts.nvidia_smi.driver_version)).
        When omitted, the module reads the loaded driver's version from
        /proc/driver/nvidia/version, and failing that uses torch's own view of the
        driver's CUDA version.
    type: str
  timeout:
    description:
      - Seconds the probe may run (the first CUDA initialisation can take a while).
    type: int
    default: 120
  depth:
    description:
      - V(full) imports torch and asks CUDA (seconds), and sets C(ansible_facts.torch_cuda).
      - V(build) reads only torch's release and the CUDA it was built with from
        C(torch/version.py), without importing torch (tens of milliseconds), and returns them
        as C(torch_build) (C(found), C(torch_version), C(built_cuda_version),
        C(python_version), C(error)); no fact is set. For a role that needs only the build.
        The probe ran the interpreter, so the answer also says what python_interpreter_info
        would (RV(interpreter)).
    type: str
    choices: [full, build]
    default: full
attributes:
  check_mode:
    support: full
    description: The probe only reads; it runs the same way in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
  facts:
    support: full
    description: Sets C(ansible_facts.torch_cuda).
seealso:
  - module: nvidia_smi_facts
  - module: gpu_stack_plan
"""

EXAMPLES = r"""
- name: Read the GPUs
  nvidia_smi_facts:

- name: Probe torch in the training environment and require a working GPU stack
  torch_cuda_facts:
    python: "{{ pytorch_python }}"
    expect_gpus: "{{ ansible_facts.nvidia_smi.gpu_count }}"
    driver_version: "{{ ansible_facts.nvidia_smi.driver_version }}"
    require_cuda: "{{ ansible_facts.nvidia_smi.gpu_count > 0 }}"

- name: Is torch installed yet? (never fails)
  torch_cuda_facts:
    python: /opt/conda/envs/pytorch/bin/python
    require_torch: false

- name: Show the verdict
  ansible.builtin.debug:
    msg: "{{ ansible_facts.torch_cuda.verdict.checks | map(attribute='message') | list }}"
"""

RETURN = r"""
torch_build:
  description: With O(depth=build), torch's release and build CUDA, read from its version.py.
  returned: when depth is build
  type: dict
interpreter:
  description:
    - With O(depth=build), what python_interpreter_info returns for O(python) (C(interpreter),
      C(exists), C(executable), C(version) as major.minor, C(error)), from the build probe's
      run (module_utils/python_interpreter.py C(ran)). Null when the probe could not run it;
      python_interpreter_info then gives the reason.
  returned: when depth is build
  type: dict
ansible_facts:
  description: Facts to add to ansible_facts.
  returned: when depth is full
  type: complex
  contains:
    torch_cuda:
      description: What torch reports, and the verdict.
      returned: always
      type: complex
      contains:
        importable:
          description: Whether C(import torch) worked.
          type: bool
          sample: true
        import_error:
          description: The import error (type and text), or why the interpreter is unusable.
          type: str
          sample: "ModuleNotFoundError: No module named 'torch'"
        python_version:
          description: Version of the probed interpreter.
          type: str
          sample: "3.12.3"
        python_executable:
          description: sys.executable of the probed interpreter.
          type: str
        torch_version:
          description: torch.__version__.
          type: str
          sample: "2.11.0+cu130"
        built_cuda_version:
          description: torch.version.cuda; null for a CPU-only build.
          type: str
          sample: "13.0"
        cpu_only_build:
          description: Whether torch is a CPU-only build.
          type: bool
        cudnn_version:
          description: cuDNN torch loads, as X.Y.Z.
          type: str
          sample: "9.19.0"
        cuda_available:
          description: torch.cuda.is_available().
          type: bool
        driver_cuda_version:
          description: CUDA version the driver supports, as torch sees it.
          type: str
          sample: "13.0"
        device_count:
          description: torch.cuda.device_count() (0 when CUDA is unavailable).
          type: int
        devices:
          description: Devices with index, name, capability ("9.0"), sm ("sm_90") and
            memory_total_mib.
          type: list
          elements: dict
        arch_list:
          description: torch.cuda.get_arch_list() (empty when CUDA is unavailable).
          type: list
          elements: str
          sample: ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
        nccl_version:
          description: NCCL bundled with torch, as X.Y.Z.
          type: str
          sample: "2.28.9"
        bf16_supported:
          description: torch.cuda.is_bf16_supported(); null when CUDA is unavailable.
          type: bool
        tensor_ops:
          description: Per device, whether the 64x64 matmul ran (ok, value or error).
          type: list
          elements: dict
        cuda_warnings:
          description: Warnings torch raised while initialising CUDA.
          type: list
          elements: str
        cuda_error:
          description: Error text if CUDA initialisation raised.
          type: str
        verdict:
          description:
            - C(ok) and C(checks), a list of dicts with name (arch_covered,
              driver_new_enough, tensor_op, gpus_visible), ok, message and skipped.
          type: dict
msg:
  description: One-line summary.
  returned: always
  type: str
  sample: "torch 2.11.0+cu130 (CUDA 13.0) on Python 3.12.3: 1 GPU(s) [NVIDIA H200], verdict ok"
"""


def _interpreter_problem(python: str) -> Optional[str]:
    if not os.path.exists(python):
        return (
            f"Python interpreter {python} does not exist: create the PyTorch environment "
            "first, or set pytorch_python (this module's 'python') to its interpreter"
        )
    if os.path.isdir(python) or not os.access(python, os.X_OK):
        return (
            f"Python interpreter {python} is not an executable file: set pytorch_python "
            "(this module's 'python') to the environment's bin/python"
        )
    return None


def read_build(module: AnsibleModule, python: str, problem: Optional[str]) -> None:
    """depth=build: torch's release and build CUDA from its version.py, torch not imported."""
    build: Dict[str, Any] = {"found": False, "error": problem}
    if not problem:
        try:
            proc = run(build_probe_command(python), module.params["timeout"], cwd="/")
            build = parse_probe_output(proc.stdout)
        except (CommandError, ValueError) as exc:
            build = {"found": False, "error": f"could not read torch's build with {python}: {exc}"}
    if module.params["require_torch"] and not build.get("found"):
        module.fail_json(
            msg=f"torch is not installed for {python}: {build.get('error')}", torch_build=build
        )
    interpreter = ran(python, build.get("python_version"))
    module.exit_json(
        changed=False,
        torch_build=build,
        interpreter=interpreter,
        msg=str(build.get("error") or ""),
    )


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "python": {"type": "path", "default": DEFAULT_PYTHON},
            "require_torch": {"type": "bool", "default": True},
            "require_cuda": {"type": "bool", "default": False},
            "expect_gpus": {"type": "int"},
            "driver_version": {"type": "str"},
            "timeout": {"type": "int", "default": 120},
            "depth": {"type": "str", "choices": ["full", "build"], "default": "full"},
        },
        supports_check_mode=True,
    )
    params = module.params
    python = os.path.abspath(params["python"])  # the probe runs with cwd=/
    expect_gpus = params["expect_gpus"]
    driver_version = (params["driver_version"] or "").strip() or None
    if driver_version is None and os.path.exists(PROC_DRIVER_VERSION):
        try:
            with open(PROC_DRIVER_VERSION) as handle:
                driver_version = parse_proc_driver_version(handle.read())
        except OSError:
            driver_version = None
    if params["timeout"] < 1:
        module.fail_json(msg=f"timeout must be at least 1 second, got {params['timeout']}")
    if expect_gpus is not None and expect_gpus < 0:
        module.fail_json(msg=f"expect_gpus must be 0 or more, got {expect_gpus}")

    def finish(facts: Dict[str, Any], failed_msg: Optional[str] = None) -> None:
        result = {
            "changed": False,
            "ansible_facts": {"torch_cuda": facts},
            "msg": failed_msg or summarize(facts),
        }
        if failed_msg:
            module.fail_json(**result)
        module.exit_json(**result)

    problem = _interpreter_problem(python)
    if params["depth"] == "build":
        read_build(module, python, problem)
        return
    if problem:
        finish(unimportable_facts(problem), problem if params["require_torch"] else None)
        return

    try:
        # cwd /: so that no ./torch in the task's directory shadows the real one
        proc = run(probe_command(python), params["timeout"], cwd="/")
    except CommandError as exc:
        if exc.timed_out:
            module.fail_json(
                msg=f"the torch probe in {python} did not finish within {params['timeout']} s "
                "(CUDA initialisation hung?): raise timeout, or check the GPU with "
                "nvidia_smi_facts",
                changed=False,
            )
            return
        problem = (
            f"could not run {python}: {exc.reason}; set pytorch_python to a working interpreter"
        )
        finish(unimportable_facts(problem), problem if params["require_torch"] else None)
        return

    try:
        raw = parse_probe_output(proc.stdout)
    except ValueError as exc:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
        problem = (
            f"{python} did not run the torch probe ({exc}; rc={proc.rc}; "
            f"output: {' | '.join(tail) or 'none'}): is pytorch_python a Python interpreter?"
        )
        finish(unimportable_facts(problem), problem if params["require_torch"] else None)
        return

    facts = normalize(raw)
    if not facts["importable"]:
        facts = unimportable_facts(str(facts["import_error"]), facts.get("python_version"))
        problem = (
            f"torch cannot be imported by {python} (Python {facts['python_version']}): "
            f"{facts['import_error']}; install it with the pytorch role, or set pytorch_python "
            "to the environment that has it"
        )
        finish(facts, problem if params["require_torch"] else None)
        return

    facts["verdict"] = verdict(facts, driver_version=driver_version, expect_gpus=expect_gpus)
    diagnosis = diagnose_cuda_unavailable(facts, expect_gpus, driver_version)
    if diagnosis:
        module.warn(diagnosis)
    if params["require_cuda"] and not facts["verdict"]["ok"]:
        if not facts["cuda_available"]:
            reason = diagnose_cuda_unavailable(facts, expect_gpus, driver_version, required=True)
        else:
            reason = "; ".join(
                f"{c['name']}: {c['message'].rstrip('.')}"
                for c in facts["verdict"]["checks"]
                if not c["ok"] and not c["skipped"]
            )
        finish(facts, f"CUDA does not work in {python} (require_cuda): {reason}")
        return
    finish(facts)


if __name__ == "__main__":
    main()
