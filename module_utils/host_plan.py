"""A host's plan, computed once in stage 1 and read by every stage (issue 33).

``build`` takes every role's effective inputs (what stage 1's role_inputs checked, under
the names a user sets them), the one read of the host's GPUs (nvidia_smi_facts with
pci_facts) and returns the plan that gpu_preflight publishes as the fact ``gpu_preflight_host_plan``
and writes, as JSON, to the controller's reports/<host>/plan.json:

- ``inputs``: each role's effective inputs, under their own names (``cuda_version``,
  ``nvidia_driver_branch``, ``conda_pytorch_version``, ...). A stage reads another
  stage's input here, never under a name of its own.
- ``gpus``: the host's GPUs, chosen once: nvidia-smi's when it lists any, else the PCI
  bus's (a host without a driver yet); ``gpus_from`` says which.
- ``gpu_present``: an NVIDIA GPU on the PCI bus or a working nvidia-smi.
- ``driver_version``: the driver nvidia-smi reported in stage 1 ("" without one). A stage
  that changes the driver reads nvidia-smi again; the others check against this one.
- ``stack``: the arguments of stage 1's whole-stack gpu_stack_check (the catalogue's
  answer is that task's result), derived from ``inputs``: what a stage adopts instead of
  installing is left out.
- ``catalogue`` (added by gpu_preflight's stack check in stage 1, before plan.json is
  written): that check's answer, NVIDIA's repository for this OS, the packages of each
  step, and the problems and notes it found.

``RENAMED`` is the table of variables a user could set that are gone, each with the
name to set instead; ``refusals`` turns the ones set into messages (checked in stage 1
by role_inputs, and by each role's own input check when its stage runs alone).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping

# old name -> (the name to set instead, why it went). Data: tests/unit/test_host_plan.py
# holds it to the roles (no role declares or reads an old name).
RENAMED: Dict[str, tuple] = {
    "nvidia_driver_cuda_version": (
        "cuda_version",
        "the driver is checked against the CUDA the cuda stage installs; one name for it",
    ),
    "nvidia_driver_cuda_install_method": (
        "cuda_install_method",
        "the driver stage reads the cuda stage's install method from the plan",
    ),
    "cuda_driver_branch": (
        "nvidia_driver_branch",
        "the cuda stage checks its toolkits against the driver stage's branch, read from the plan",
    ),
    "cuda_repo_distro": (
        "nvidia_driver_repo_distro",
        "both stages add the one NVIDIA repository; the cuda stage reads its distro from the plan",
    ),
    "gpu_preflight_plan": (
        "cuda_version, nvidia_driver_branch, conda_pytorch_version and the other stage variables",
        "stage 1 builds the plan from every role's own variables (gpu_preflight_host_plan)",
    ),
}


def refusals(defined: Iterable[str]) -> List[str]:
    """A message for each retired variable among ``defined`` (names the user set)."""
    found = []
    for name in sorted(set(defined) & set(RENAMED)):
        new, why = RENAMED[name]
        found.append(f"{name} is no longer read: set {new} instead ({why})")
    return found


def choose_gpus(nvidia_pci: Mapping[str, Any], nvidia_smi: Mapping[str, Any]) -> Dict[str, Any]:
    """The one choice of a host's GPUs: nvidia-smi's when it lists any, else the PCI bus's."""
    smi = list((nvidia_smi or {}).get("gpus") or []) if (nvidia_smi or {}).get("present") else []
    pci = list((nvidia_pci or {}).get("gpus") or [])
    if smi:
        return {"gpus": smi, "gpus_from": "nvidia-smi"}
    if pci:
        return {"gpus": pci, "gpus_from": "pci"}
    return {"gpus": [], "gpus_from": "none"}


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def stack(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """The whole-stack check's arguments from the effective inputs.

    What a stage adopts instead of installing is left out: the toolkit with
    cuda_adopt_existing; torch, its variant and Python with conda_pytorch_python. Those are
    checked by the stage with what it finds.
    """
    adopt_cuda = bool(inputs.get("cuda_adopt_existing"))
    adopt_torch = bool(_text(inputs.get("conda_pytorch_python")))
    ipykernel = _text(inputs.get("jupyter_ipykernel_version"))
    return {
        "driver_branch": _text(inputs.get("nvidia_driver_branch")),
        "driver_version": _text(inputs.get("nvidia_driver_version")),
        "cuda_version": "" if adopt_cuda else _text(inputs.get("cuda_version")),
        "cuda_versions_extra": []
        if adopt_cuda
        else [_text(v) for v in inputs.get("cuda_versions_extra") or []],
        "cudnn_version": "" if adopt_cuda else _text(inputs.get("cuda_cudnn_version")),
        "torch_version": "" if adopt_torch else _text(inputs.get("conda_pytorch_version")),
        "torch_cuda_variant": ""
        if adopt_torch
        else _text(inputs.get("conda_pytorch_cuda_variant")),
        "python_version": "" if adopt_torch else _text(inputs.get("conda_pytorch_python_version")),
        "repo_distro": _text(inputs.get("nvidia_driver_repo_distro")),
        "install_method": _text(inputs.get("nvidia_driver_install_method")) or "cuda_repo",
        "toolkit_method": _text(inputs.get("cuda_install_method")) or "cuda_repo",
        "kernel_modules": _text(inputs.get("nvidia_driver_kernel_modules")) or "auto",
        "package_flavor": _text(inputs.get("nvidia_driver_package_flavor")) or "cuda-drivers",
        "python_packages": [
            {"name": "ipykernel", "version": ipykernel, "variable": "jupyter_ipykernel_version"}
        ]
        if ipykernel
        else [],
    }


def build(
    inputs: Mapping[str, Any],
    nvidia_pci: Mapping[str, Any],
    nvidia_smi: Mapping[str, Any],
    host: str = "",
) -> Dict[str, Any]:
    """The host's plan (see the module's docstring for its keys)."""
    nvidia_pci = nvidia_pci or {}
    nvidia_smi = nvidia_smi or {}
    chosen = choose_gpus(nvidia_pci, nvidia_smi)
    return {
        "host": host,
        "inputs": dict(sorted(inputs.items())),
        "gpus": chosen["gpus"],
        "gpus_from": chosen["gpus_from"],
        "gpu_present": bool(nvidia_pci.get("present") or nvidia_smi.get("present")),
        "driver_version": _text(nvidia_smi.get("driver_version"))
        if nvidia_smi.get("present")
        else "",
        "stack": stack(inputs),
    }


# The inputs the plan reads across roles. A stage run alone (no stage 1 before it) has its
# own role's effective inputs only; the others come from the user's variables, else from
# the owning role's argument_specs default (action_plugins/host_plan.py fills them).
PLAN_INPUTS = (
    "nvidia_driver_branch",
    "nvidia_driver_version",
    "nvidia_driver_repo_distro",
    "nvidia_driver_install_method",
    "nvidia_driver_kernel_modules",
    "nvidia_driver_package_flavor",
    "cuda_version",
    "cuda_versions_extra",
    "cuda_cudnn_version",
    "cuda_install_method",
    "cuda_adopt_existing",
    "conda_pytorch_version",
    "conda_pytorch_cuda_variant",
    "conda_pytorch_python_version",
    "conda_pytorch_python",
    "jupyter_ipykernel_version",
)

ARGUMENT_SPEC = {
    "inputs": {"type": "dict", "default": {}},
    "nvidia_pci": {"type": "dict", "default": {}},
    "nvidia_smi": {"type": "dict", "default": {}},
    "host": {"type": "str", "default": ""},
    "defined": {"type": "list", "elements": "str", "default": []},
}


def answer(params: Mapping[str, Any]) -> Dict[str, Any]:
    """The module's result: the plan, or a failure naming each retired variable set."""
    refused = refusals(params.get("defined") or [])
    if refused:
        return {
            "changed": False,
            "failed": True,
            "problems": refused,
            "msg": f"{len(refused)} retired variable(s) set, refused before any change:\n"
            + "\n".join(refused),
        }
    plan = build(params["inputs"], params["nvidia_pci"], params["nvidia_smi"], params["host"])
    return {"changed": False, "plan": plan}
