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
        "facts",
        "reads",
        "stack",
        "catalogue",
        "stages",
    }
    assert set(plan["stages"]) == set(host_plan.STAGES)
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
    # The whole stack goes through gpu_stack_plan's own argument spec.
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
    assert stack["kernel_modules"] == "auto" and stack["package_flavor"] == "auto"
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


# ---------------------------------------------------------------- each GPU stage's part
UBUNTU = {"distribution": "Ubuntu", "distribution_version": "22.04", "architecture": "x86_64"}
DEBIAN = {"distribution": "Debian", "distribution_version": "12.7", "architecture": "x86_64"}
SMI_535 = {"present": True, "gpus": [H100], "driver_version": "535.183.01", "gpu_count": 1}
PCI = {"present": True, "gpus": [H100_PCI]}


def plan_for(inputs=None, pci=PCI, smi=None, facts=UBUNTU, reads=None):
    return host_plan.build(
        dict(INPUTS, **(inputs or {})),
        pci,
        smi or {"present": False},
        host="h1",
        facts=facts,
        reads=reads,
    )


def test_every_stage_s_part_on_a_gpu_host_without_a_driver():
    plan = plan_for()
    driver, cuda, torch = (plan["stages"][s] for s in host_plan.STAGES)
    assert driver["runs"] and driver["check_branch"] == "580" and driver["check"]["ok"]
    assert driver["check"]["packages"]["driver"]["packages"] == [
        "cuda-drivers-580",
        "nvidia-driver-580",
    ]
    assert driver["check"]["repository"]["os"] == "ubuntu2204"
    assert cuda["runs"] and cuda["versions"] == ["13.0", "12.8"]
    assert [c["item"] for c in cuda["checks"]] == ["13.0", "12.8"]
    # cuDNN with the first toolkit only; every toolkit against the planned branch.
    assert [c["params"]["cudnn_version"] for c in cuda["checks"]] == ["9.14.0", None]
    assert {c["params"]["driver_branch"] for c in cuda["checks"]} == {"580"}
    assert torch["mode"] == "conda" and torch["env_python"] == "/opt/conda/envs/pytorch/bin/python"
    assert torch["check"]["ok"] and torch["check"]["params"]["python_version"] == "3.12"
    assert plan["catalogue"]["ok"]


def test_a_gpu_less_host_skips_the_driver_and_cuda_parts_but_judges_the_inventory():
    plan = plan_for(pci={"present": False, "gpus": []}, facts=DEBIAN)
    assert plan["stages"]["nvidia_driver"] == dict(
        plan["stages"]["nvidia_driver"], runs=False, check=None
    )
    assert plan["stages"]["cuda"]["runs"] is False and plan["stages"]["cuda"]["checks"] == []
    assert plan["stages"]["conda_pytorch"]["check"]["params"]["gpus"] == []
    # Issue 34: a repository distribution that does not exist is refused in stage 1 on a
    # host without a GPU too (the catalogue's answer needs only the inventory).
    bad = plan_for(
        inputs={"nvidia_driver_repo_distro": "ubuntu1804"},
        pci={"present": False, "gpus": []},
        facts=DEBIAN,
    )
    assert not bad["catalogue"]["ok"]
    assert [p["code"] for p in bad["catalogue"]["problems"]] == ["unknown-repository"]


def test_gpu_required_runs_the_stages_on_a_host_without_a_gpu():
    plan = plan_for(
        inputs={"nvidia_driver_gpu_required": True, "cuda_skip_without_gpu": False},
        pci={"present": False, "gpus": []},
    )
    assert plan["stages"]["nvidia_driver"]["runs"] and plan["stages"]["cuda"]["runs"]


def test_an_older_driver_the_driver_stage_replaces_is_not_held_against_the_toolkits():
    """535 there, branch 580 planned: the driver stage upgrades, so CUDA 13.0 is judged
    against 580, and checked again against the driver the cuda stage then finds."""
    plan = plan_for(smi=SMI_535)
    cuda = plan["stages"]["cuda"]
    assert cuda["driver_version"] == "" and all(c["ok"] for c in cuda["checks"])
    kept = host_plan.take_part(plan, "cuda", "535.183.01")
    assert not kept.get("failed") and kept["rechecked"] is False and kept["part"] == cuda
    again = host_plan.take_part(plan, "cuda", "580.95.05")
    assert again["rechecked"] is True and not again.get("failed")
    assert {c["params"]["driver_version"] for c in again["part"]["checks"]} == {"580.95.05"}
    assert "checked again against driver 580.95.05" in again["msg"]


def test_a_driver_the_stage_keeps_is_held_against_the_toolkits_and_the_part_fails():
    """Adopting by torch, the 535 driver stays: CUDA 13.0 can't run on it, and the cuda
    stage's part fails with the catalogue's message and fix."""
    reads = {"torch": {"torch_build": {"built_cuda_version": "12.2"}, "interpreter": None}}
    plan = plan_for(
        inputs={"nvidia_driver_adopt_torch_python": "/opt/conda/bin/python"},
        smi=SMI_535,
        reads=reads,
    )
    driver = plan["stages"]["nvidia_driver"]
    assert driver["adopt_cuda"] == "12.2" and driver["check_branch"] == "535"
    assert driver["check"]["params"]["cuda_version"] == "12.2"
    refused = host_plan.take_part(plan, "cuda", "535.183.01")
    assert refused["failed"] and refused["msg"].startswith("cuda: 1 problem(s)")
    # Both toolkits (13.0 and 12.8) need a newer driver than 535.
    assert [p["code"] for p in refused["problems"]] == ["driver-too-old-for-cuda"] * 2
    assert 'nvidia_driver_branch: "580"' in refused["msg"]


def test_cuda_adopt_mode_checks_the_toolkit_cuda_home_holds():
    reads = {"toolkit": {"adopted": {"release": "12.8"}, "read": {"nvcc": {}}}}
    plan = plan_for(inputs={"cuda_adopt_existing": True}, reads=reads)
    cuda = plan["stages"]["cuda"]
    assert cuda["adopted_version"] == "12.8" and cuda["versions"] == ["12.8"]
    assert cuda["toolkit_read"] == {"nvcc": {}}
    # The adopted toolkit is not installed from NVIDIA's repository: no repository check.
    assert cuda["checks"][0]["params"]["os"] is None
    nothing = plan_for(inputs={"cuda_adopt_existing": True}, reads={"toolkit": {"adopted": {}}})
    assert nothing["stages"]["cuda"]["versions"] == [] and nothing["stages"]["cuda"]["checks"] == []


def test_the_venv_interpreter_is_read_once_and_its_version_checked():
    inputs = {"conda_pytorch_backend": "venv", "conda_pytorch_venv_python": "/usr/bin/python3"}
    assert host_plan.interpreter_read_args(dict(INPUTS, **inputs), None) == {
        "path": "/usr/bin/python3"
    }
    found = {
        "interpreter": "/usr/bin/python3",
        "exists": True,
        "executable": True,
        "version": "3.11",
    }
    torch = plan_for(inputs=inputs, reads={"interpreter": found})["stages"]["conda_pytorch"]
    assert torch["mode"] == "venv" and torch["shared_dir"] == "/opt/venvs/pytorch"
    assert (
        torch["python_version"] == "3.11" and torch["check"]["params"]["python_version"] == "3.11"
    )
    missing = dict(found, exists=False, executable=False, version=None)
    gone = plan_for(inputs=inputs, reads={"interpreter": missing})["stages"]["conda_pytorch"]
    assert gone["base_python_usable"] is False and gone["check"] is None


def test_the_driver_stage_s_torch_read_of_the_same_interpreter_is_taken():
    python = "/opt/conda/bin/python"
    ran = {"interpreter": python, "exists": True, "executable": True, "version": "3.10"}
    torch_read = {"torch_build": {"built_cuda_version": "12.8"}, "interpreter": ran}
    inputs = dict(INPUTS, conda_pytorch_python=python, nvidia_driver_adopt_torch_python=python)
    assert host_plan.interpreter_read_args(inputs, torch_read) is None
    part = plan_for(inputs=inputs, reads={"torch": torch_read})["stages"]["conda_pytorch"]
    assert part["mode"] == "adopt" and part["env_dir"] == "/opt/conda"
    assert part["base_python_read"] == dict(ran, path=python) and part["python_version"] == "3.10"
    # Adopt mode installs nothing: no torch check.
    assert part["check"] is None


def test_a_part_the_plan_lacks_is_refused_by_name():
    with pytest.raises(ValueError, match="no part for cuda"):
        host_plan.take_part({"stages": {}}, "cuda", "")


def test_the_action_plugin_reads_what_adopt_mode_asks_for_on_the_host(tmp_path):
    """The driver stage adopts by this interpreter's torch and conda_pytorch adopts the same
    one: one torch read on the host, whose interpreter answer conda_pytorch takes."""
    import sys

    role_path = str(REPO_ROOT / "roles" / "gpu_preflight")
    result = run_adhoc(
        "host_plan",
        {"facts": {"architecture": "x86_64"}, "host": "h1"},
        tmp_path,
        extra_vars={
            "role_path": role_path,
            "nvidia_driver_gpu_required": True,
            "nvidia_driver_adopt_torch_python": sys.executable,
            "conda_pytorch_python": sys.executable,
        },
    )
    assert not result.get("failed"), result
    plan = result["plan"]
    assert set(plan["reads"]) == {"torch"}
    assert plan["reads"]["torch"]["torch_build"]["found"] is True
    part = plan["stages"]["conda_pytorch"]
    assert part["mode"] == "adopt" and part["base_python_read"]["interpreter"] == sys.executable
    assert part["python_version"] == "{}.{}".format(*sys.version_info[:2])


def test_the_catalogue_answer_names_the_default_stack_for_the_host_s_os():
    """Issue 35: the plan names the nearest supported stack: the catalogue's default for the
    host's repository, and which of the plan's own values differ from it."""
    plan = plan_for()
    near = plan["catalogue"]["default_stack"]
    assert near["repository"] == "ubuntu2204"
    assert near["variables"]["conda_pytorch_version"] == "2.14.1"
    # INPUTS plans torch 2.9.1; the rest is the default's.
    assert near["differs"] == ["conda_pytorch_version"]
    old = plan_for(
        inputs={"cuda_version": "12.9", "conda_pytorch_cuda_variant": "cu128"},
        facts={"distribution": "Ubuntu", "distribution_version": "20.04", "architecture": "x86_64"},
    )["catalogue"]["default_stack"]
    assert old["repository"] == "ubuntu2004"
    assert old["variables"]["cuda_version"] == "12.9"
    # INPUTS' torch 2.9.1 is 20.04's default; its cuDNN, branch and Python are too.
    assert old["differs"] == []
    # The inventory's repository wins over the host's distribution; an OS with none: None.
    assert (
        plan_for(inputs={"nvidia_driver_repo_distro": "debian12"})["catalogue"]["default_stack"][
            "repository"
        ]
        == "debian12"
    )
    assert (
        plan_for(facts={"distribution": "Ubuntu", "distribution_version": "18.04"})["catalogue"][
            "default_stack"
        ]
        is None
    )


def test_the_plan_is_written_readable_to_the_host_s_report_folder(tmp_path):
    """reports/<host>/plan.json, by the controller (no module run for it), the same plan."""
    import json

    report = tmp_path / "reports" / "h1" / "plan.json"
    args = {"facts": {"architecture": "x86_64"}, "host": "h1", "report_path": str(report)}
    extra = {"role_path": str(REPO_ROOT / "roles" / "gpu_preflight")}
    result = run_adhoc("host_plan", args, tmp_path, extra_vars=extra)
    assert not result.get("failed"), result
    assert result["report_path"] == str(report)
    assert json.loads(report.read_text()) == result["plan"]
    before = report.stat().st_mtime_ns
    again = run_adhoc("host_plan", args, tmp_path, extra_vars=extra)
    assert json.loads(report.read_text()) == again["plan"]
    # The same plan again: the file is left as it was.
    assert report.stat().st_mtime_ns == before


def test_the_action_plugin_keeps_the_recorded_stack_until_the_user_opts_in(tmp_path):
    """Issue 35: the stages' stack records on the host (read in the plan) keep each stack
    variable the user did not set; kindling_stack_upgrade: true takes the new defaults; a
    variable the user set is theirs."""
    import json

    from ansible.module_utils import stack_record

    state, venv = tmp_path / "state", tmp_path / "venv"
    state.mkdir()
    venv.mkdir()
    old = {
        "nvidia_driver_branch": "570",
        "cuda_version": "12.8",
        "cuda_cudnn_version": "9.10.2",
        "conda_pytorch_version": "2.11.0",
        "conda_pytorch_torchvision_version": "0.26.0",
        "conda_pytorch_cuda_variant": "cu128",
        "conda_pytorch_python_version": "3.12",
    }
    for stage, where in (("nvidia_driver", state), ("cuda", state), ("conda_pytorch", venv)):
        (where / stack_record.record_file(stage)).write_text(
            json.dumps(stack_record.record(stage, old))
        )
    base = {
        "role_path": str(REPO_ROOT / "roles" / "gpu_preflight"),
        "nvidia_driver_state_dir": str(state),
        "cuda_state_dir": str(state),
        "conda_pytorch_backend": "venv",
        "conda_pytorch_venv_path": str(venv),
    }

    def plan(**extra):
        result = run_adhoc("host_plan", {"host": "h1"}, tmp_path, extra_vars=dict(base, **extra))
        assert not result.get("failed"), result
        return result["plan"]

    kept = plan()
    same_python = "conda_pytorch_python_version"  # the default's too: nothing to keep
    assert kept["stack_keep"]["kept"] == {k: v for k, v in old.items() if k != same_python}
    assert {k: kept["inputs"][k] for k in old} == old  # the plan is built with them
    assert "conda_pytorch_version 2.11.0 -> 2.14.1" in kept["stack_keep"]["notice"]
    assert "reboots" in kept["stack_keep"]["notice"]
    upgraded = plan(kindling_stack_upgrade=True)
    assert upgraded["stack_keep"]["kept"] == {} and upgraded["stack_keep"]["upgrading"]
    assert upgraded["inputs"]["conda_pytorch_version"] == "2.14.1"
    pinned = plan(cuda_version="13.0")
    assert "cuda_version" not in pinned["stack_keep"]["kept"]
    assert pinned["stack_keep"]["pinned"] == {"cuda_version": {"now": "12.8", "set": "13.0"}}
    assert pinned["inputs"]["cuda_version"] == "13.0"
    assert pinned["inputs"]["nvidia_driver_branch"] == "570"


def test_a_host_converged_before_the_records_keeps_its_stack_too(tmp_path):
    """Issue 35: with no record, the driver role's pin, the cuda role's profile and cuDNN pin,
    and torch's own version file in the environment stand for one (stack_record_info, one
    module run for all three stages)."""
    from test_default_stack import CUDA_PROFILE, CUDNN_PIN, DRIVER_PIN, TORCH_VERSION_PY

    etc, state, env = tmp_path / "etc", tmp_path / "state", tmp_path / "env"
    site = env / "lib" / "python3.12" / "site-packages"
    for path in (etc, state, site / "torch", site / "torchvision"):
        path.mkdir(parents=True)
    (etc / "driver-pin").write_text(DRIVER_PIN.replace("550", "580"))
    (etc / "cuda.sh").write_text(CUDA_PROFILE.replace("12.4", "13.0"))
    (etc / "cudnn-pin").write_text(CUDNN_PIN.replace("12.4", "13.0"))
    (site / "torch" / "version.py").write_text(TORCH_VERSION_PY)
    (site / "torchvision" / "version.py").write_text("__version__ = '0.26.0+cu130'\n")
    extra = {
        "role_path": str(REPO_ROOT / "roles" / "gpu_preflight"),
        "nvidia_driver_state_dir": str(state),
        "nvidia_driver_preferences_file": str(etc / "driver-pin"),
        "cuda_state_dir": str(state),
        "cuda_profile_file": str(etc / "cuda.sh"),
        "cuda_cudnn_preferences_file": str(etc / "cudnn-pin"),
        "conda_pytorch_backend": "venv",
        "conda_pytorch_venv_path": str(env),
    }
    result = run_adhoc("host_plan", {"host": "h1"}, tmp_path, extra_vars=extra)
    assert not result.get("failed"), result
    keep = result["plan"]["stack_keep"]
    # Kindling's earlier default: torch 2.11.0 with torchvision 0.26.0 on 580 / CUDA 13.0.
    assert keep["kept"] == {
        "conda_pytorch_version": "2.11.0",
        "conda_pytorch_torchvision_version": "0.26.0",
    }
    assert result["plan"]["inputs"]["conda_pytorch_version"] == "2.11.0"
    assert keep["recorded"]["nvidia_driver_branch"] == "580"
    assert str(site / "torch" / "version.py") in keep["sources"]
    assert "conda_pytorch_version 2.11.0 -> " in keep["notice"]
    assert "reboots" not in keep["notice"]  # the branch stays
    # No record yet: each stage's describe says so, and the stage writes one.
    assert {stage: f["regular"] for stage, f in keep["files"].items()} == {
        "nvidia_driver": False,
        "cuda": False,
        "conda_pytorch": False,
    }
    part = host_plan.take_part(result["plan"], "cuda", "")
    assert part["record_file"]["path"] == str(state / "stack-cuda.json")
    assert part["record_file"]["regular"] is False


def test_a_stack_value_a_playbook_sets_is_not_overridden_by_a_record(tmp_path):
    """A play's vars (an import_playbook's vars become its plays') are below a fact, so a
    kept value would override them even at the role default's own value: the playbook's
    names count as chosen (molecule/nvidia_driver_upgrade converges 580, the default, over
    a host recorded at 550)."""
    import json
    import os
    import subprocess
    import sys

    import yaml
    from ansible.module_utils import stack_record
    from test_nvidia_smi_facts import ansible_bin

    state = tmp_path / "state"
    state.mkdir()
    (state / stack_record.record_file("nvidia_driver")).write_text(
        json.dumps(stack_record.record("nvidia_driver", {"nvidia_driver_branch": "550"}))
    )
    (state / stack_record.record_file("cuda")).write_text(
        json.dumps(stack_record.record("cuda", {"cuda_version": "12.4"}))
    )
    playbook = tmp_path / "play.yml"
    play_vars = {
        "nvidia_driver_branch": "580",
        "nvidia_driver_state_dir": str(state),
        "cuda_state_dir": str(state),
        "role_path": str(REPO_ROOT / "roles" / "gpu_preflight"),
        "ansible_python_interpreter": sys.executable,
    }
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "hosts": "localhost",
                    "gather_facts": False,
                    "vars": play_vars,
                    "tasks": [{"host_plan": {"host": "h1"}, "register": "plan"}],
                }
            ]
        )
    )
    env = dict(
        os.environ,
        ANSIBLE_STDOUT_CALLBACK="json",
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_CACHE_PLUGIN="memory",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "local"),
        ANSIBLE_REMOTE_TEMP=str(tmp_path / "remote"),
    )
    proc = subprocess.run(
        [ansible_bin("ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    out, _ = json.JSONDecoder().raw_decode(proc.stdout[proc.stdout.index("{") :])
    result = out["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert not result.get("failed"), result.get("msg")
    keep = result["plan"]["stack_keep"]
    # The play's 580 stands: the driver stage's only stack variable is chosen, so its record
    # is not even read. The cuda record, which nothing in this run overrides, is kept.
    assert "nvidia_driver_branch" not in keep["recorded"]
    assert keep["kept"] == {"cuda_version": "12.4"}, keep
    assert result["plan"]["inputs"]["nvidia_driver_branch"] == "580"
