"""library/gpu_stack_plan.py: a thin module over gpu_compat.check_stack."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import gpu_stack_plan
import pytest
from ansible.module_utils import stack_plan as sp
from ansible.module_utils.gpu_compat import check_stack
from ansible.module_utils.testing import patch_module_args
from conftest import REPO_ROOT
from test_gpu_compat import H200_PLAN, SEED_PLAN
from test_nvidia_smi_facts import ansible_bin, run_adhoc

SEED = SEED_PLAN


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        gpu_stack_plan.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def test_consistent_stack(capsys):
    failed, result = run_module(
        dict(H200_PLAN, gpus=[{"name": "NVIDIA H200", "compute_capability": "9.0"}]), capsys
    )
    assert not failed
    assert result["ok"] is True and result["problems"] == [] and result["changed"] is False
    assert result["msg"] == "the planned GPU stack is consistent"
    plan = result["plan"]
    assert plan["min_driver_for_cuda"] == "580.65.06"
    assert plan["max_cuda_for_driver"] == "13.0"
    assert plan["torch_variants"] == ["cu126", "cu128", "cu130"]
    assert plan["cuda_version"] == "13.0"


def test_seed_stack_fails_listing_every_problem_with_its_fix(capsys):
    gpus = [{"name": "NVIDIA H100 80GB HBM3", "index": i} for i in range(8)]
    failed, result = run_module(dict(SEED, gpus=gpus), capsys)
    assert failed
    expected = check_stack(SEED, gpus)
    assert result["problems"] == expected
    assert result["ok"] is False
    lines = result["msg"].splitlines()
    assert lines[0] == "5 problem(s) with the planned GPU stack:"
    assert len(lines) == 6
    for line, problem in zip(lines[1:], expected):
        assert line.startswith(f"- [{problem['code']}] {problem['message']} Fix: ")
        for fix in problem["fix"]:
            assert fix in line
    assert 'Fix: nvidia_driver_branch: "510"' in lines[1]


def test_report_only(capsys):
    failed, result = run_module(dict(SEED, fail_on_problems=False), capsys)
    assert not failed
    assert [p["code"] for p in result["problems"]] == [
        "driver-too-old-for-cuda",
        "driver-too-old-for-torch-wheel",
    ]
    assert result["ok"] is False


def test_problem_without_fix_is_rendered(capsys):
    failed, result = run_module(
        {"cuda_version": "13.0", "gpus": [{"name": "X", "compute_capability": "4.0"}]}, capsys
    )
    assert failed
    assert result["msg"].endswith("Fix: see the message")


def test_unknown_gpu_and_invalid_versions(capsys):
    failed, result = run_module(
        {"driver_branch": "latest", "cuda_version": "13.0", "gpus": [{"name": "Mystery"}]}, capsys
    )
    assert failed
    assert [p["code"] for p in result["problems"]] == ["invalid-version", "unknown-gpu"]
    assert result["plan"]["max_cuda_for_driver"] is None


def test_unknown_gpu_alone_is_reported_not_fatal(capsys):
    failed, result = run_module(dict(H200_PLAN, gpus=[{"name": "Mystery Accelerator"}]), capsys)
    assert not failed
    assert result["ok"] is True
    assert [p["code"] for p in result["problems"]] == ["unknown-gpu"]


def test_cudnn_packages_come_from_the_matrix(capsys):
    failed, result = run_module({"cuda_version": "11.6", "cudnn_version": "8.4.0"}, capsys)
    assert not failed
    packages = result["plan"]["cudnn_packages"]
    assert packages["packages"] == [
        "libcudnn8=8.4.0.27-1+cuda11.6",
        "libcudnn8-dev=8.4.0.27-1+cuda11.6",
    ]
    assert packages["hold"] == ["libcudnn8", "libcudnn8-dev"]


def test_numbers_from_yaml(capsys):
    failed, result = run_module({"driver_branch": 580, "cuda_version": 13.0}, capsys)
    assert not failed
    assert result["plan"]["driver_branch"] == "580" and result["plan"]["cuda_version"] == "13.0"


def test_empty_plan(capsys):
    failed, result = run_module({}, capsys)
    assert not failed and result["ok"] is True
    assert result["plan"]["min_driver_for_cuda"] is None
    assert result["plan"]["torch_variants"] is None


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({"gpus": "NVIDIA H200"}, "gpus"),
        ({"fail_on_problems": "sometimes"}, "fail_on_problems"),
        ({"torch": "2.11.0"}, "torch"),
    ],
)
def test_argument_validation(args, text, capsys):
    failed, result = run_module(args, capsys)
    assert failed and text in result["msg"]


def test_check_mode(capsys):
    _, normal = run_module(dict(SEED, fail_on_problems=False), capsys)
    _, checked = run_module(dict(SEED, fail_on_problems=False, _ansible_check_mode=True), capsys)
    assert checked["problems"] == normal["problems"]


@pytest.mark.slow
def test_e2e_seed_stack(tmp_path):
    result = run_adhoc(
        "gpu_stack_plan", dict(SEED, gpus=[{"name": "NVIDIA H100 80GB HBM3"}]), tmp_path
    )
    assert result["failed"] is True
    codes = [p["code"] for p in result["problems"]]
    assert codes[0] == "driver-too-old-for-cuda" and "torch-arch-not-covered" in codes
    assert "510.39.01" in result["msg"]


@pytest.mark.slow
def test_e2e_h200_plan(tmp_path):
    result = run_adhoc("gpu_stack_plan", dict(H200_PLAN, gpus=[{"name": "NVIDIA H200"}]), tmp_path)
    assert not result.get("failed") and result["ok"] is True


# --- toolkit_method: the distribution's own toolkit (cuda_install_method distro)

DEBIAN12_TOOLKIT = sp.distro_toolkit("debian", "12")
DEBIAN12_DISTRO = {
    "driver_branch": "535",
    "cuda_version": DEBIAN12_TOOLKIT["cuda"],
    "distribution": "Debian",
    "distribution_version": "12.7",
    "machine": "x86_64",
    "install_method": "distro",
    "gpus": [{"name": "NVIDIA H100 80GB HBM3"}],
}


def test_toolkit_method_distro_on_debian12(capsys):
    assert DEBIAN12_TOOLKIT["cuda"] == "11.8"  # checks the catalogue's record
    failed, result = run_module(dict(DEBIAN12_DISTRO, toolkit_method="distro"), capsys)
    assert not failed, result["msg"]
    assert result["ok"] is True
    assert [p["code"] for p in result["problems"]] == []
    assert result["packages"]["toolkit"] == ["nvidia-cuda-toolkit"]
    assert result["packages"]["distro_toolkit"]["nvcc"] == "/usr/bin/nvcc"
    assert result["packages"]["distro_toolkit"]["package"] == DEBIAN12_TOOLKIT["package"]
    assert result["packages"]["driver"]["packages"][0] == "nvidia-driver"
    assert result["repository"]["release"] == "12"


def test_toolkit_method_cuda_repo_on_debian12_wants_nvidias_repository(capsys):
    failed, result = run_module(dict(DEBIAN12_DISTRO, toolkit_method="cuda_repo"), capsys)
    assert failed
    codes = [p["code"] for p in result["problems"]]
    assert "cuda-not-in-repository" in codes
    assert "toolkit-not-in-distribution" not in codes
    assert result["packages"]["toolkit"] == ["cuda-toolkit-11-8"]
    assert "distro_toolkit" not in result["packages"]


def test_toolkit_method_defaults_to_cuda_repo(capsys):
    _failed, result = run_module(DEBIAN12_DISTRO, capsys)
    assert "cuda-not-in-repository" in [p["code"] for p in result["problems"]]


def test_toolkit_method_distro_refuses_another_cuda(capsys):
    failed, result = run_module(
        dict(DEBIAN12_DISTRO, toolkit_method="distro", cuda_version="12.4"), capsys
    )
    assert failed
    codes = [p["code"] for p in result["problems"]]
    assert "toolkit-not-in-distribution" in codes
    assert "cuda-not-in-repository" not in codes
    assert 'Fix: cuda_version: "11.8"' in result["msg"]


def test_toolkit_method_distro_refuses_extra_toolkits(capsys):
    failed, result = run_module(
        dict(DEBIAN12_DISTRO, toolkit_method="distro", cuda_versions_extra=["12.4"]), capsys
    )
    assert failed
    assert "distro-toolkit-is-single" in [p["code"] for p in result["problems"]]


def test_toolkit_method_distro_on_ubuntu_has_no_toolkit(capsys):
    failed, result = run_module(
        {
            "driver_branch": "580",
            "cuda_version": "13.0",
            "distribution": "Ubuntu",
            "distribution_version": "22.04",
            "machine": "x86_64",
            "toolkit_method": "distro",
        },
        capsys,
    )
    assert failed
    p = [p for p in result["problems"] if p["code"] == "toolkit-not-in-distribution"]
    assert len(p) == 1 and p[0]["fix"] == ["cuda_install_method: cuda_repo"]
    assert result["packages"]["toolkit"] == []
    assert result["packages"]["distro_toolkit"] is None


def test_toolkit_method_is_validated(capsys):
    failed, result = run_module(dict(DEBIAN12_DISTRO, toolkit_method="conda"), capsys)
    assert failed and "toolkit_method" in result["msg"]


def test_toolkit_method_distro_without_a_distribution_is_not_checked(capsys):
    args = {k: v for k, v in DEBIAN12_DISTRO.items() if not k.startswith("distribution")}
    failed, result = run_module(dict(args, toolkit_method="distro", gpus=[]), capsys)
    assert not failed, result["msg"]
    assert result["problems"] == []


def test_the_cuda_repository_location_is_returned_with_overrides(capsys):
    args = dict(H200_PLAN, distribution="Ubuntu", distribution_version="24.04", machine="x86_64")
    failed, result = run_module(args, capsys)
    assert not failed, result["msg"]
    cuda = result["repository"]["cuda"]
    assert result["repository"]["os"] == "ubuntu2404"
    assert (
        cuda["url"] == "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/"
    )
    assert cuda["fingerprint"] == "EB693B3035CD5710E231E123A4B469963BF863CC"
    args["repository_overrides"] = {
        "base_url": "http://127.0.0.1:8765/compute/cuda/repos",
        "keyring": "",
    }
    failed, result = run_module(args, capsys)
    assert result["repository"]["cuda"]["key_url"] == (
        "http://127.0.0.1:8765/compute/cuda/repos/ubuntu2404/x86_64/3bf863cc.pub"
    )
    assert result["repository"]["cuda"]["keyring"] == "/usr/share/keyrings/cuda-archive-keyring.gpg"


# --- a result records the inputs it was checked with (a stage's part of the host's plan
# keeps them; module_utils/host_plan.py checks again only when the driver changed)


H200_GPUS = [{"name": "NVIDIA H200", "compute_capability": "9.0"}]


def test_a_result_records_its_inputs_but_not_fail_on_problems(capsys):
    _, result = run_module(dict(H200_PLAN, gpus=H200_GPUS, fail_on_problems=False), capsys)
    assert result["params"]["cuda_version"] == "13.0"
    assert result["params"]["gpus"] == H200_GPUS
    assert "fail_on_problems" not in result["params"] and "reuse" not in result["params"]
    assert "reused" not in result


# --- action_plugins/gpu_stack_plan.py: the same check, on the controller


def run_on_controller(module_args, tmp_path, host_vars):
    """ansible-playbook with one gpu_stack_plan task against an inventory host of its own."""
    return run_on_controller_task("gpu_stack_plan", module_args, tmp_path, host_vars)


def run_on_controller_task(action, module_args, tmp_path, host_vars):
    """ansible-playbook with one ``action`` task against an inventory host of its own."""
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"target": host_vars}}}))
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        "- hosts: target\n  gather_facts: false\n  tasks:\n"
        f"    - {action}: " + json.dumps(module_args) + "\n"
        "      register: checked\n      ignore_errors: true\n"
    )
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_NOCOLOR="1")
    env["ANSIBLE_LOCAL_TEMP"] = str(tmp_path / "local")
    proc = subprocess.run(
        [ansible_bin("ansible-playbook"), "-i", str(inventory), str(playbook)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    text = proc.stdout
    data, _ = json.JSONDecoder().raw_decode(text[text.index("{") :])
    return data["plays"][0]["tasks"][0]["hosts"]["target"]


CONTROLLER_CASES = {
    "h200": dict(H200_PLAN, gpus=[{"name": "NVIDIA H200", "compute_capability": "9.0"}]),
    "seed": dict(SEED, gpus=[{"name": "NVIDIA H100 80GB HBM3"}]),
    "seed_report_only": dict(SEED, fail_on_problems=False),
    "unknown_gpu": {"cuda_version": "13.0", "gpus": [{"name": "Mystery"}]},
}


@pytest.mark.slow
def test_controller_runs_it_without_reaching_the_host(tmp_path):
    # The host's address refuses SSH (port 9 on loopback): any module run there would make
    # the task unreachable. The check still answers, so it ran on the controller.
    unreachable = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9}
    result = run_on_controller(CONTROLLER_CASES["h200"], tmp_path, unreachable)
    assert not result.get("unreachable"), result
    assert result["ok"] is True and result["packages"]["driver"] is None


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CONTROLLER_CASES))
def test_controller_result_equals_the_module_result(case, tmp_path, capsys):
    args = CONTROLLER_CASES[case]
    failed, expected = run_module(args, capsys)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    result = run_on_controller(args, tmp_path, local)
    assert bool(result.get("failed")) is failed
    for key in ("ok", "problems", "plan", "packages", "repository", "notes", "msg"):
        assert result[key] == expected[key], key
    assert "invocation" not in result  # no module ran


@pytest.mark.slow
def test_controller_refuses_bad_arguments_like_the_module(tmp_path):
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    result = run_on_controller({"install_method": "snap", "no_such_option": 1}, tmp_path, local)
    assert result["failed"] is True
    assert "install_method" in result["msg"] and "snap" in result["msg"]
    assert "no_such_option" in result["msg"]
