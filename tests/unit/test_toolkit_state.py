"""module_utils/toolkit_state.py and the cuda_toolkit_plan module: which toolkits the cuda
role finds, which it installs, and the paths it reads. The module runs real executables
standing in for nvcc (shell scripts printing nvcc's banner) in a temporary prefix."""

from __future__ import annotations

import json
import stat

import cuda_toolkit_plan
import pytest
from ansible.module_utils.managed_files import describe
from ansible.module_utils.testing import patch_module_args
from ansible.module_utils.toolkit_state import (
    answer,
    cudnn_header,
    ld_conf,
    nvcc_path,
    plan,
    reports_version,
)
from test_gpu_stack_check import run_on_controller_task

# nvcc --version's last lines, as NVIDIA's 12.4 toolkit prints them.
NVCC_124 = (
    "nvcc: NVIDIA (R) Cuda compiler driver\n"
    "Cuda compilation tools, release 12.4, V12.4.131\n"
    "Build cuda_12.4.r12.4/compiler.34097967_0\n"
)
STACK = [
    {
        "item": "12.4",
        "packages": {
            "toolkit": ["cuda-toolkit-12-4"],
            "cudnn": {
                "runtime": "libcudnn9-cuda-12",
                "dev": "libcudnn9-dev-cuda-12",
                "version": "9.14.0.64-1",
            },
        },
    },
    {"item": "11.8", "packages": {"toolkit": ["cuda-toolkit-11-8"]}},
]
DISTRO = [
    {
        "item": "12.4",
        "packages": {
            "toolkit": ["nvidia-cuda-toolkit"],
            "distro_toolkit": {"nvcc": "/usr/bin/nvcc"},
        },
    }
]
CUDNN = {"install": True, "method": "apt", "version": "9.14.0"}


def test_nvcc_is_nvidias_path_or_the_distributions():
    assert nvcc_path("12.4", "cuda_repo", "/usr/local/", None) == "/usr/local/cuda-12.4/bin/nvcc"
    assert nvcc_path("12.4", "distro", "/usr/local", {"nvcc": "/usr/bin/nvcc"}) == "/usr/bin/nvcc"
    # The distribution's package named no nvcc: NVIDIA's layout.
    assert nvcc_path("12.4", "distro", "/opt", {}) == "/opt/cuda-12.4/bin/nvcc"


@pytest.mark.parametrize(
    "rc, stdout, version, present",
    [
        (0, NVCC_124, "12.4", True),
        (0, NVCC_124, "12.1", False),  # another toolkit at that path
        (0, NVCC_124.replace("12.4", "12.40"), "12.4", False),  # "release 12.40," is not 12.4
        (1, NVCC_124, "12.4", False),  # nvcc failed
        (None, "", "12.4", False),  # no nvcc there
    ],
)
def test_a_toolkit_is_present_when_its_nvcc_names_its_release(rc, stdout, version, present):
    assert reports_version(rc, stdout, version) is present


def test_cudnn_header_per_method_and_major():
    assert cudnn_header("/usr/local", "12.4", "9.14.0", "tarball", "x86_64") == (
        "/usr/local/cuda-12.4/include/cudnn_version.h"
    )
    assert (
        cudnn_header("/usr/local", "11.8", "8.9.7", "apt", "x86_64")
        == "/usr/include/cudnn_version.h"
    )
    assert cudnn_header("/usr/local", "12.4", "9.14.0", "apt", "aarch64") == (
        "/usr/include/aarch64-linux-gnu/cudnn_version_v9.h"
    )


def test_plan_installs_only_what_is_missing():
    result = plan(
        ["12.4", "11.8"],
        STACK,
        {"12.4": {"rc": 0, "stdout": NVCC_124}, "11.8": {"rc": None, "stdout": ""}},
        "cuda_repo",
        "/usr/local",
        CUDNN,
        "x86_64",
    )
    assert result["present"] == ["12.4"] and result["missing"] == ["11.8"]
    assert result["toolkit_packages"] == {"12.4": "cuda-toolkit-12-4", "11.8": "cuda-toolkit-11-8"}
    assert result["nvcc_paths"]["11.8"] == "/usr/local/cuda-11.8/bin/nvcc"
    assert result["cudnn_packages"]["dev"] == "libcudnn9-dev-cuda-12"
    assert result["ld_conf"] == "/etc/ld.so.conf.d/cuda-12-4.conf"
    assert result["cudnn_header"] == "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h"
    assert result["summary"] == (
        "CUDA 12.4, 11.8: install cuda-toolkit-11-8; adopted or already present: 12.4; "
        "cuDNN 9.14.0 by apt"
    )


def test_plan_without_cudnn_and_nothing_there():
    result = plan(["12.4"], DISTRO, {}, "distro", "/usr/local", {"install": False}, "x86_64")
    assert result["missing"] == ["12.4"] and result["nvcc_paths"] == {"12.4": "/usr/bin/nvcc"}
    assert result["cudnn_header"] is None and result["cudnn_packages"] is None
    assert result["summary"].endswith(
        "install nvidia-cuda-toolkit; adopted or already present: none; no cuDNN"
    )


def test_plan_refuses_a_toolkit_the_stack_check_did_not_plan():
    with pytest.raises(ValueError, match=r"no plan for CUDA 11\.8"):
        plan(["12.4", "11.8"], STACK[:1], {}, "cuda_repo", "/usr/local", CUDNN, "x86_64")
    with pytest.raises(ValueError, match="no toolkit version"):
        plan([], STACK, {}, "cuda_repo", "/usr/local", CUDNN, "x86_64")


def _nvcc(prefix, version, banner):
    path = prefix / f"cuda-{version}" / "bin" / "nvcc"
    path.parent.mkdir(parents=True)
    path.write_text(f"#!/bin/sh\ncat <<'EOF'\n{banner}EOF\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        cuda_toolkit_plan.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def test_the_module_asks_each_nvcc(tmp_path, capsys):
    _nvcc(tmp_path, "12.4", NVCC_124)
    _nvcc(tmp_path, "11.8", NVCC_124)  # a 12.4 nvcc where 11.8 should be: not 11.8
    failed, result = run_module(
        {
            "versions": ["12.4", "11.8"],
            "stack": STACK,
            "method": "cuda_repo",
            "prefix": str(tmp_path),
            "cudnn_version": "9.14.0",
            "machine": "x86_64",
            "_ansible_check_mode": True,
        },
        capsys,
    )
    assert not failed, result
    assert result["changed"] is False
    assert result["present"] == ["12.4"] and result["missing"] == ["11.8"]
    assert result["nvcc_paths"]["12.4"] == str(tmp_path / "cuda-12.4" / "bin" / "nvcc")


def test_the_module_names_a_missing_plan(tmp_path, capsys):
    failed, result = run_module(
        {
            "versions": ["12.4", "11.8"],
            "stack": STACK[:1],
            "method": "cuda_repo",
            "prefix": str(tmp_path),
            "machine": "x86_64",
        },
        capsys,
    )
    assert (
        failed and result["msg"] == "cuda_toolkit_plan: gpu_stack_plan gave no plan for CUDA 11.8"
    )


def one_toolkit(prefix):
    """The module's arguments for CUDA 12.4 from NVIDIA's repository under ``prefix``."""
    return {
        "versions": ["12.4"],
        "stack": STACK[:1],
        "method": "cuda_repo",
        "prefix": str(prefix),
        "machine": "x86_64",
        "cudnn_install": False,
    }


def test_the_module_reads_the_link_in_the_same_run_when_asked(tmp_path, capsys):
    # cuda_home here is a plain link to the 12.4 toolkit; this machine's update-alternatives
    # has no "cuda" group, so the link is the role's to keep (cuda_link_plan's answer).
    (tmp_path / "cuda-12.4").mkdir()
    link = tmp_path / "cuda"
    link.symlink_to(tmp_path / "cuda-12.4")
    args = one_toolkit(tmp_path)
    _, without = run_module(args, capsys)
    assert "link" not in without
    failed, result = run_module(
        dict(args, link=str(link), link_path=str(tmp_path / "cuda-12.4")), capsys
    )
    assert not failed, result
    assert result["link"]["reaches"] is True
    assert result["link"]["managed"] is False and result["link"]["action"] == "link"
    assert result["link"]["alternatives"]["exists"] is False
    assert result["missing"] == ["12.4"]  # the plan is unchanged (no nvcc there)


def test_the_module_describes_the_files_configure_writes_in_the_same_run(tmp_path, capsys):
    # For managed_files' current: the files given, then, with NVIDIA's toolkits, the
    # ld.so.conf.d entry this result names; each as module_utils/managed_files.py describes.
    profile = tmp_path / "cuda.sh"
    profile.write_text("export CUDA_HOME=/usr/local/cuda\n")
    args = dict(one_toolkit(tmp_path), files=[str(profile)])
    failed, result = run_module(args, capsys)
    assert not failed, result
    assert [f["path"] for f in result["files"]] == [str(profile), result["ld_conf"]]
    assert result["files"][0] == describe(str(profile))
    assert result["files"][0]["regular"] is True
    assert result["files"][1] == describe(result["ld_conf"])
    _, without = run_module(dict(args, files=[]), capsys)
    assert [f["path"] for f in without["files"]] == [result["ld_conf"]]


# --- adopt mode: one read in the preflight, the stage's plan made from it ------------------


def adopted_host(tmp_path):
    """A host as a deep-learning image has it: NVIDIA's 12.4 toolkit in <prefix>/cuda-12.4,
    cuda_home a plain link to it, and the login-shell file the configure step writes."""
    _nvcc(tmp_path, "12.4", NVCC_124)
    home = tmp_path / "cuda"
    home.symlink_to(tmp_path / "cuda-12.4")
    profile = tmp_path / "cuda.sh"
    profile.write_text("export CUDA_HOME=/usr/local/cuda\n")
    adopt_args = {
        "adopt": str(home),
        "method": "cuda_repo",
        "prefix": str(tmp_path),
        "machine": "x86_64",
        "link": str(home),
        "files": [str(profile)],
    }
    # What the stage's preflight passes once cuda_version is the adopted release.
    plan_args = dict(
        one_toolkit(tmp_path),
        link=str(home),
        link_path=str(tmp_path / "cuda-12.4"),
        files=[str(profile)],
    )
    return adopt_args, plan_args


def test_adopt_reads_the_release_and_what_a_plan_of_it_needs(tmp_path, capsys):
    adopt_args, _ = adopted_host(tmp_path)
    failed, result = run_module(adopt_args, capsys)
    assert not failed, result
    assert result["changed"] is False
    assert result["adopted"]["release"] == "12.4" and result["adopted"]["error"] is None
    home_nvcc = adopt_args["adopt"] + "/bin/nvcc"
    nvidias = str(tmp_path / "cuda-12.4" / "bin" / "nvcc")
    assert sorted(result["read"]["nvcc"]) == sorted([home_nvcc, nvidias])
    assert result["read"]["nvcc"][nvidias]["rc"] == 0
    assert result["read"]["link"]["path"] == str(tmp_path / "cuda-12.4")
    assert result["read"]["link"]["keep"] == ld_conf("12.4")
    assert result["read"]["link"]["state"]["reaches"] is True
    assert [f["path"] for f in result["read"]["files"]] == adopt_args["files"] + [ld_conf("12.4")]
    assert "missing" not in result  # no plan: gpu_stack_plan has not run yet


def test_adopt_without_a_toolkit_reads_nothing_more(tmp_path, capsys):
    failed, result = run_module(
        {"adopt": str(tmp_path / "cuda"), "method": "cuda_repo", "machine": "x86_64"}, capsys
    )
    assert not failed, result
    assert result["adopted"]["release"] is None
    assert result["adopted"]["error"].endswith("is not there")
    assert result["read"] == {
        "nvcc": {str(tmp_path / "cuda" / "bin" / "nvcc"): {"rc": None, "stdout": ""}},
        "link": None,
        "files": [],
    }


def test_the_plan_from_the_adopt_read_is_the_modules_own(tmp_path, capsys):
    adopt_args, plan_args = adopted_host(tmp_path)
    _, adopted = run_module(adopt_args, capsys)
    _, direct = run_module(plan_args, capsys)
    params = dict(cudnn_method="apt", cudnn_version="", **plan_args)
    from_read = answer(params, adopted["read"])
    assert from_read is not None
    assert from_read == {k: v for k, v in direct.items() if k not in ("changed", "invocation")}
    assert from_read["present"] == ["12.4"] and from_read["missing"] == []


@pytest.mark.parametrize(
    "change",
    [
        {"versions": ["11.8"], "stack": STACK[1:]},  # an nvcc the read did not ask
        {"link": "/opt/cuda"},  # another link
        {"link_path": "/usr/local/cuda-12.4"},  # the link read for another toolkit
        {"files": []},  # another file list
        {"method": "distro", "stack": DISTRO},  # the distribution's nvcc: not read
    ],
)
def test_a_read_that_does_not_cover_the_arguments_is_not_used(tmp_path, capsys, change):
    adopt_args, plan_args = adopted_host(tmp_path)
    _, adopted = run_module(adopt_args, capsys)
    params = dict(dict(cudnn_method="apt", cudnn_version="", **plan_args), **change)
    assert answer(params, adopted["read"]) is None


@pytest.mark.slow
def test_the_controller_plans_from_the_read_without_reaching_the_host(tmp_path, capsys):
    # The host refuses SSH (port 9 on loopback): a module run there makes the task
    # unreachable. With a read that covers the arguments the plan still comes back.
    unreachable = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9}
    adopt_args, plan_args = adopted_host(tmp_path)
    _, adopted = run_module(adopt_args, capsys)
    _, direct = run_module(plan_args, capsys)
    result = run_on_controller_task(
        "cuda_toolkit_plan", dict(plan_args, read=adopted["read"]), tmp_path, unreachable
    )
    assert not result.get("unreachable") and not result.get("failed"), result
    assert result["reused_read"] is True
    planned = {k: v for k, v in direct.items() if k not in ("changed", "invocation")}
    assert {k: result[k] for k in planned} == planned
    # A read of another link does not cover the arguments: the module has to run there.
    other = dict(adopted["read"], link=dict(adopted["read"]["link"], link="/opt/cuda"))
    result = run_on_controller_task(
        "cuda_toolkit_plan", dict(plan_args, read=other), tmp_path, unreachable
    )
    assert result.get("unreachable") is True, result


@pytest.mark.slow
def test_the_controller_side_refuses_what_the_module_refuses(tmp_path):
    local = {"ansible_connection": "local"}
    both = {"adopt": "/usr/local/cuda", "versions": ["12.4"], "stack": STACK[:1]}
    result = run_on_controller_task(
        "cuda_toolkit_plan", dict(both, method="cuda_repo", machine="x86_64"), tmp_path, local
    )
    assert result.get("failed") is True
    assert result["msg"].startswith("cuda_toolkit_plan: ") and "mutually exclusive" in result["msg"]
    no_plan = {"versions": ["12.4"], "method": "cuda_repo", "machine": "x86_64"}
    result = run_on_controller_task("cuda_toolkit_plan", no_plan, tmp_path, local)
    assert result.get("failed") is True and "stack" in result["msg"]
    # A read, but for a toolkit gpu_stack_plan gave no plan: the module's own message.
    read = {"nvcc": {}, "link": None, "files": []}
    result = run_on_controller_task(
        "cuda_toolkit_plan",
        {
            "versions": ["12.4", "11.8"],
            "stack": STACK[:1],
            "method": "cuda_repo",
            "machine": "x86_64",
            "read": read,
        },
        tmp_path,
        local,
    )
    assert result.get("failed") is True, result
