"""module_utils/host_plan.py: a host's plan, computed once in stage 1 (issue 33), and the
table of retired variables it refuses; action_plugins/host_plan.py end to end."""

from __future__ import annotations

import pytest
from ansible.module_utils import host_plan
from conftest import REPO_ROOT
from test_nvidia_smi_facts import run_adhoc

H100 = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
H100_PCI = {"name": "GH100 [H100 SXM5 80GB]", "pci_device_id": "0x2330"}
INPUTS = {
    "nvidia_driver_branch": "580",
    "nvidia_driver_version": "",
    "nvidia_driver_repo_distro": "",
    "nvidia_driver_install_method": "cuda_repo",
    "nvidia_driver_kernel_modules": "auto",
    "nvidia_driver_package_flavor": "cuda-drivers",
    "cuda_version": "13.0",
    "cuda_versions_extra": ["12.8"],
    "cuda_cudnn_version": "9.14.0",
    "cuda_install_method": "cuda_repo",
    "cuda_adopt_existing": False,
    "conda_pytorch_version": "2.9.1",
    "conda_pytorch_cuda_variant": "cu130",
    "conda_pytorch_python_version": "3.12",
    "conda_pytorch_python": "",
    "jupyter_ipykernel_version": "6.29.5",
    "jupyter_port": 8888,
}


def test_the_gpus_are_nvidia_smis_when_it_lists_any():
    smi = {"present": True, "gpus": [H100], "driver_version": "580.95.05"}
    pci = {"present": True, "gpus": [H100_PCI]}
    assert host_plan.choose_gpus(pci, smi) == {"gpus": [H100], "gpus_from": "nvidia-smi"}


@pytest.mark.parametrize(
    "smi",
    [{"present": False, "gpus": []}, {"present": True, "gpus": []}, {}, None],
    ids=["no-driver", "smi-lists-none", "empty", "none"],
)
def test_else_the_pci_bus_s(smi):
    pci = {"present": True, "gpus": [H100_PCI]}
    assert host_plan.choose_gpus(pci, smi) == {"gpus": [H100_PCI], "gpus_from": "pci"}


def test_no_gpu_anywhere():
    assert host_plan.choose_gpus({"present": False, "gpus": []}, {"present": False}) == {
        "gpus": [],
        "gpus_from": "none",
    }


def test_the_plan_keeps_every_input_under_its_own_name():
    plan = host_plan.build(
        INPUTS, {"present": True, "gpus": [H100_PCI]}, {"present": False}, host="h1"
    )
    assert set(plan) == {
        "host",
        "inputs",
        "gpus",
        "gpus_from",
        "gpu_present",
        "driver_version",
        "stack",
    }
    assert plan["inputs"] == INPUTS and plan["host"] == "h1"
    assert plan["gpus"] == [H100_PCI] and plan["gpus_from"] == "pci" and plan["gpu_present"]
    assert plan["driver_version"] == ""


def test_the_stack_is_the_whole_check_s_arguments():
    stack = host_plan.stack(INPUTS)
    assert stack == {
        "driver_branch": "580",
        "driver_version": "",
        "cuda_version": "13.0",
        "cuda_versions_extra": ["12.8"],
        "cudnn_version": "9.14.0",
        "torch_version": "2.9.1",
        "torch_cuda_variant": "cu130",
        "python_version": "3.12",
        "repo_distro": "",
        "install_method": "cuda_repo",
        "toolkit_method": "cuda_repo",
        "kernel_modules": "auto",
        "package_flavor": "cuda-drivers",
        "python_packages": [
            {"name": "ipykernel", "version": "6.29.5", "variable": "jupyter_ipykernel_version"}
        ],
    }
    # The whole stack goes through gpu_stack_check's own argument spec.
    from ansible.module_utils.stack_check import ARGUMENT_SPEC

    assert set(stack) - {"repo_distro"} <= set(ARGUMENT_SPEC)


def test_what_a_stage_adopts_is_left_out_of_the_stack():
    adopting = dict(INPUTS, cuda_adopt_existing=True, conda_pytorch_python="/opt/conda/bin/python")
    stack = host_plan.stack(adopting)
    assert stack["cuda_version"] == "" and stack["cuda_versions_extra"] == []
    assert stack["cudnn_version"] == ""
    assert stack["torch_version"] == stack["torch_cuda_variant"] == stack["python_version"] == ""
    assert stack["driver_branch"] == "580"


def test_empty_inputs_take_gpu_stack_checks_defaults():
    stack = host_plan.stack({})
    assert stack["install_method"] == stack["toolkit_method"] == "cuda_repo"
    assert stack["kernel_modules"] == "auto" and stack["package_flavor"] == "cuda-drivers"
    assert stack["python_packages"] == [] and stack["cuda_versions_extra"] == []


def test_the_driver_version_is_nvidia_smis():
    plan = host_plan.build(
        INPUTS, {}, {"present": True, "gpus": [H100], "driver_version": "580.95.05"}
    )
    assert plan["driver_version"] == "580.95.05" and plan["gpus_from"] == "nvidia-smi"


@pytest.mark.parametrize("old", sorted(host_plan.RENAMED))
def test_a_retired_variable_is_refused_with_its_new_name(old):
    new, _why = host_plan.RENAMED[old]
    (message,) = host_plan.refusals(["cuda_version", old])
    assert message.startswith(f"{old} is no longer read: set {new} instead")
    result = host_plan.answer(
        {"inputs": INPUTS, "nvidia_pci": {}, "nvidia_smi": {}, "host": "", "defined": [old]}
    )
    assert result["failed"] and result["problems"] == [message]


def test_the_table_holds_the_names_issue_33_retired():
    assert {
        "nvidia_driver_cuda_version",
        "nvidia_driver_cuda_install_method",
        "gpu_preflight_plan",
        "cuda_driver_branch",
        "cuda_repo_distro",
    } <= set(host_plan.RENAMED)
    assert host_plan.refusals(["cuda_version", "nvidia_driver_branch"]) == []


def test_the_action_plugin_fills_a_stage_run_alone_and_refuses_a_retired_name(tmp_path):
    """Without stage 1 (no kindling_effective_inputs), the inputs the plan reads come from the
    user's variables, else the owning role's argument_specs default."""
    role_path = str(REPO_ROOT / "roles" / "gpu_preflight")
    result = run_adhoc(
        "host_plan",
        {"inputs": {"cuda_cudnn_version": "9.14.0"}, "host": "h1"},
        tmp_path,
        extra_vars={"role_path": role_path, "nvidia_driver_branch": "570"},
    )
    assert not result.get("failed"), result
    inputs = result["plan"]["inputs"]
    assert inputs["nvidia_driver_branch"] == "570"  # the user's
    assert inputs["cuda_version"] == "13.0"  # the cuda role's default
    assert inputs["cuda_install_method"] == "cuda_repo"
    assert inputs["cuda_cudnn_version"] == "9.14.0"  # given: kept
    refused = run_adhoc(
        "host_plan",
        {"inputs": {}},
        tmp_path,
        extra_vars={"role_path": role_path, "nvidia_driver_cuda_version": "12.4"},
    )
    assert refused["failed"]
    assert (
        "nvidia_driver_cuda_version is no longer read: set cuda_version instead" in refused["msg"]
    )
