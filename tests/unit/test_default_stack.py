"""The default stack per OS (issue 35), from the catalogue's default_stacks, and the decision
that keeps a converged host's stack until the user opts in (kindling_stack_upgrade)."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils import default_stack, gpu_compat, stack_plan, stack_record

CUDA13 = {
    "nvidia_driver_branch": "580",
    "cuda_version": "13.0",
    "cuda_cudnn_version": "9.14.0",
    "conda_pytorch_version": "2.14.1",
    "conda_pytorch_torchvision_version": "0.29.1",
    "conda_pytorch_cuda_variant": "cu130",
    "conda_pytorch_python_version": "3.12",
}
UBUNTU2004 = dict(
    CUDA13,
    cuda_version="12.9",
    conda_pytorch_version="2.9.1",
    conda_pytorch_torchvision_version="0.24.1",
    conda_pytorch_cuda_variant="cu128",
)
# A GPU of each architecture from Turing on, by the catalogue's product tokens.
TURING_ON = [
    "Tesla T4",
    "NVIDIA A100",
    "NVIDIA A10",
    "NVIDIA L4",
    "NVIDIA H100",
    "NVIDIA B200",
    "NVIDIA B300",
    "NVIDIA RTX PRO 6000 Blackwell",
    "NVIDIA GB10",
]


@pytest.mark.parametrize(
    "distribution,version,repo,expected",
    [
        ("Ubuntu", "20.04", "ubuntu2004", UBUNTU2004),
        ("Ubuntu", "22.04", "ubuntu2204", CUDA13),
        ("Ubuntu", "24.04", "ubuntu2404", CUDA13),
        ("Debian", "12.7", "debian12", CUDA13),
    ],
)
def test_each_supported_os_has_its_default(distribution, version, repo, expected):
    found = default_stack.for_host(None, distribution, version)
    assert found["repository"] == repo
    assert found["variables"] == expected
    assert found["reasons"] and all(r["source"] for r in found["reasons"])


def test_every_supported_repository_has_a_default_and_nothing_else_does():
    assert default_stack.repositories() == stack_plan.supported_repositories()
    assert default_stack.for_host(None, "Ubuntu", "18.04") is None
    assert default_stack.for_repository("debian11") is None
    # The inventory's repository setting wins over the host's distribution.
    assert default_stack.for_host("ubuntu2004", "Ubuntu", "24.04")["repository"] == "ubuntu2004"


@pytest.mark.parametrize("repo", stack_plan.supported_repositories())
def test_each_default_installs_on_its_os_for_every_gpu_from_turing_on(repo):
    v = default_stack.for_repository(repo)["variables"]
    plan = {
        "driver_branch": v["nvidia_driver_branch"],
        "cuda_version": v["cuda_version"],
        "cudnn_version": v["cuda_cudnn_version"],
        "torch_version": v["conda_pytorch_version"],
        "torch_cuda_variant": v["conda_pytorch_cuda_variant"],
        "python_version": v["conda_pytorch_python_version"],
    }
    problems = stack_plan.check_plan(plan, [{"name": g} for g in TURING_ON], repo, "x86_64")
    assert [p["code"] for p in problems] == []
    # torchvision is the catalogue's pair of that torch (the registry lane asks PyPI).
    release = gpu_compat.torch_release(v["conda_pytorch_version"])
    assert release["releases"][v["conda_pytorch_version"]] == v["conda_pytorch_torchvision_version"]


@pytest.mark.parametrize("repo", stack_plan.supported_repositories())
def test_what_each_default_leaves_out_is_what_its_wheel_does_not_cover(repo):
    found = default_stack.for_repository(repo)
    v = found["variables"]
    left_out = {cc for item in found["leaves_out"] for cc in item["cc"]}
    assert left_out
    plan = {
        "torch_version": v["conda_pytorch_version"],
        "torch_cuda_variant": v["conda_pytorch_cuda_variant"],
        "python_version": v["conda_pytorch_python_version"],
    }
    for cc in sorted(left_out):
        problems = stack_plan.check_plan(
            plan, [{"name": "x", "compute_capability": cc}], repo, "x86_64"
        )
        assert "torch-arch-not-covered" in [p["code"] for p in problems], cc


# ------------------------------------------------------------------ keeping a converged stack

OLD = dict(CUDA13, conda_pytorch_version="2.11.0", conda_pytorch_torchvision_version="0.26.0")


def test_a_converged_host_keeps_its_stack_and_is_told_what_an_upgrade_changes():
    decided = default_stack.keep(CUDA13, OLD, user_set=[])
    assert decided["kept"] == {
        "conda_pytorch_version": "2.11.0",
        "conda_pytorch_torchvision_version": "0.26.0",
    }
    assert decided["upgrade"]["conda_pytorch_version"] == {"now": "2.11.0", "default": "2.14.1"}
    assert not decided["upgrading"]
    assert "conda_pytorch_version 2.11.0 -> 2.14.1" in decided["notice"]
    assert "kindling_stack_upgrade: true" in decided["notice"]
    assert "reboot" not in decided["notice"]


def test_a_new_driver_branch_in_the_notice_says_the_host_reboots():
    decided = default_stack.keep(dict(CUDA13, nvidia_driver_branch="595"), CUDA13, user_set=[])
    assert decided["kept"] == {"nvidia_driver_branch": "580"}
    assert "reboots" in decided["notice"]


@pytest.mark.parametrize("flag", [True, "true", "yes"])
def test_the_opt_in_upgrades_and_says_so(flag):
    decided = default_stack.keep(CUDA13, OLD, user_set=[], upgrade=flag)
    assert decided["kept"] == {}
    assert decided["upgrading"]
    assert "upgrades" in decided["notice"]


def test_a_value_the_user_set_is_theirs():
    inputs = dict(CUDA13, conda_pytorch_version="2.13.0")
    decided = default_stack.keep(inputs, OLD, user_set=["conda_pytorch_version"])
    assert "conda_pytorch_version" not in decided["kept"]
    assert decided["pinned"] == {"conda_pytorch_version": {"now": "2.11.0", "set": "2.13.0"}}
    # The torchvision the user did not set is still kept.
    assert decided["kept"] == {"conda_pytorch_torchvision_version": "0.26.0"}


def test_no_record_or_the_same_stack_changes_nothing():
    for recorded in ({}, CUDA13):
        decided = default_stack.keep(CUDA13, recorded, user_set=[])
        assert decided == {
            "kept": {},
            "upgrade": {},
            "upgrading": False,
            "pinned": {},
            "notice": "",
        }


def test_records_are_read_per_stage_and_a_foreign_one_is_ignored():
    good = [stack_record.record(stage, OLD) for stage in stack_record.STAGE_VARIABLES]
    assert stack_record.recorded_values(good) == OLD
    foreign = [
        None,
        {"format": 99, "stage": "cuda", "stack": {"cuda_version": "12.4"}},
        {"format": 1, "stage": "cuda", "stack": {"nvidia_driver_branch": "550"}},
        {"format": 1, "stage": "cuda", "stack": {"cuda_version": ""}},
        "not a record",
    ]
    assert stack_record.recorded_values(foreign) == {}
    with pytest.raises(ValueError):
        stack_record.record("jupyter", OLD)


# ------------------------------------------------------------------ the task files follow it


def _tasks(path):
    import yaml
    from conftest import REPO_ROOT

    return yaml.safe_load((REPO_ROOT / path).read_text())


@pytest.mark.parametrize("stage", sorted(stack_record.STAGE_VARIABLES))
def test_each_stage_records_its_variables_in_its_record_file(stage):
    """Written through managed_files_write with stage 1's read of the record as `current`, so
    that an unchanged record costs no module run on the host."""
    write = next(
        t for t in _tasks(f"roles/{stage}/tasks/stack_record.yml") if "managed_files_write" in t
    )
    (item,) = write["managed_files_write"]["files"]
    assert item["path"].endswith("/" + stack_record.record_file(stage))
    # The environment's files are conda_pytorch_group's and group-writable (group_share).
    group, mode = (
        ("{{ conda_pytorch_group }}", "0664") if stage == "conda_pytorch" else ("root", "0644")
    )
    assert (item["owner"], item["group"], item["mode"]) == ("root", group, mode)
    assert f"{stage}__part.record_file" in write["managed_files_write"]["current"]
    record = write["vars"][f"{stage}__record"]
    assert record["format"] == stack_record.RECORD_FORMAT and record["stage"] == stage
    assert tuple(record["stack"]) == stack_record.STAGE_VARIABLES[stage]
    for name, text in record["stack"].items():
        assert text == f"{{{{ {name} | string }}}}"
    main = _tasks(f"roles/{stage}/tasks/main.yml")
    assert main[-1]["ansible.builtin.import_tasks"] == "stack_record.yml"


# ------------------------------------------- a host converged before the stages wrote records

DRIVER_PIN = """# Ansible managed (role nvidia_driver)
# Keeps the NVIDIA driver on branch 550. Change nvidia_driver_branch / nvidia_driver_version \
to upgrade.
Explanation: Kindling nvidia_driver: driver 550.*
Package: cuda-drivers-550 nvidia-driver /^(lib)?nvidia-/
Pin: version 550.*
Pin-Priority: 1001
"""
CUDA_PROFILE = """# Ansible managed (role cuda)
# CUDA 12.4 for login shells: /usr/local/cuda -> /usr/local/cuda-12.4.
# Kindling never edits users' ~/.bashrc; this file is the one place to change.
export CUDA_HOME=/usr/local/cuda
"""
CUDNN_PIN = """# Ansible managed (role cuda)
# Keeps cuDNN at 9.14.0.64-1 for CUDA 12.4. Change cuda_cudnn_version to upgrade.
Explanation: Kindling cuda: cuDNN 9.14.0
Package: libcudnn9-cuda-12 libcudnn9-dev-cuda-12
Pin: version 9.14.0.64-1
Pin-Priority: 1001
"""
TORCH_VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'xpu']
__version__ = '2.11.0+cu130'
debug = False
cuda: Optional[str] = '13.0'
git_version = 'deadbeef'
hip: Optional[str] = None
"""


def test_the_driver_role_s_pin_holds_the_branch():
    assert stack_record.legacy_driver(DRIVER_PIN) == {"nvidia_driver_branch": "550"}
    version = DRIVER_PIN.replace("Pin: version 550.*", "Pin: version 550.127.05-*")
    assert stack_record.legacy_driver(version) == {"nvidia_driver_branch": "550"}
    # A pin the role did not write says nothing.
    assert stack_record.legacy_driver("Package: nvidia-driver\nPin: version 535.*\n") == {}
    assert stack_record.legacy_driver(None) == {}


def test_the_cuda_role_s_profile_and_cudnn_pin_hold_cuda_and_cudnn():
    assert stack_record.legacy_cuda(CUDA_PROFILE, CUDNN_PIN) == {
        "cuda_version": "12.4",
        "cuda_cudnn_version": "9.14.0",
    }
    distro = (
        "# Ansible managed (role cuda)\n"
        "# CUDA 11.8 from the distribution (nvidia-cuda-toolkit): nvcc\n"
    )
    assert stack_record.legacy_cuda(distro, None) == {"cuda_version": "11.8"}
    # Without the profile, the cuDNN pin names the CUDA it was for.
    assert stack_record.legacy_cuda(None, CUDNN_PIN)["cuda_version"] == "12.4"
    # Someone else's profile script is not the role's.
    assert stack_record.legacy_cuda("# CUDA 12.4 for login shells\n", None) == {}


def test_torch_s_own_version_file_holds_the_release_and_variant():
    vision = "__version__ = '0.26.0+cu130'\ngit_version = 'x'\n"
    assert stack_record.legacy_torch(TORCH_VERSION_PY, vision, "3.12") == {
        "conda_pytorch_version": "2.11.0",
        "conda_pytorch_cuda_variant": "cu130",
        "conda_pytorch_torchvision_version": "0.26.0",
        "conda_pytorch_python_version": "3.12",
    }
    # PyPI's default wheel has no local tag: the variant comes from the CUDA it was built with.
    pypi = TORCH_VERSION_PY.replace("2.11.0+cu130", "2.11.0")
    assert stack_record.legacy_torch(pypi)["conda_pytorch_cuda_variant"] == "cu130"
    old = "__version__ = '1.12.1+cu116'\ncuda = '11.6'\n"
    assert stack_record.legacy_torch(old)["conda_pytorch_cuda_variant"] == "cu116"
    cpu = "__version__ = '2.11.0'\ncuda: Optional[str] = None\n"
    assert stack_record.legacy_torch(cpu)["conda_pytorch_cuda_variant"] == "cpu"
    assert stack_record.legacy_torch("garbage") == {} and stack_record.legacy_torch(None) == {}


def _host(tmp_path):
    """A host as Kindling before issue 35 left it: pins, profile and an environment, no records."""
    etc, state, env = tmp_path / "etc", tmp_path / "state", tmp_path / "env"
    site = env / "lib" / "python3.12" / "site-packages"
    for path in (etc, state, site / "torch", site / "torchvision"):
        path.mkdir(parents=True)
    (etc / "driver-pin").write_text(DRIVER_PIN)
    (etc / "cuda.sh").write_text(CUDA_PROFILE)
    (etc / "cudnn-pin").write_text(CUDNN_PIN)
    (site / "torch" / "version.py").write_text(TORCH_VERSION_PY)
    (site / "torchvision" / "version.py").write_text("__version__ = '0.26.0+cu130'\n")
    values = {
        "nvidia_driver_state_dir": str(state),
        "nvidia_driver_preferences_file": str(etc / "driver-pin"),
        "cuda_state_dir": str(state),
        "cuda_profile_file": str(etc / "cuda.sh"),
        "cuda_cudnn_preferences_file": str(etc / "cudnn-pin"),
        "cuda_adopt_existing": False,
    }
    return values, {"mode": "venv", "env_dir": str(env)}


def test_a_stage_without_a_record_is_read_from_kindling_s_own_files(tmp_path):
    values, env = _host(tmp_path)
    paths = stack_record.record_paths(values, env)
    assert sorted(paths) == ["conda_pytorch", "cuda", "nvidia_driver"]
    found = {stage: stack_record.read_stage(stage, p) for stage, p in paths.items()}
    assert all(f["record"] is None for f in found.values())
    values_read = {}
    for stage, result in found.items():
        values_read.update(stack_record.stage_values(stage, result))
    assert values_read == {
        "nvidia_driver_branch": "550",
        "cuda_version": "12.4",
        "cuda_cudnn_version": "9.14.0",
        "conda_pytorch_version": "2.11.0",
        "conda_pytorch_torchvision_version": "0.26.0",
        "conda_pytorch_cuda_variant": "cu130",
        "conda_pytorch_python_version": "3.12",
    }
    assert found["cuda"]["sources"] == [
        values["cuda_profile_file"],
        values["cuda_cudnn_preferences_file"],
    ]
    # Once the stage wrote its record, the record is what counts.
    record = stack_record.record("cuda", {"cuda_version": "13.0", "cuda_cudnn_version": "9.14.0"})
    (tmp_path / "state" / "stack-cuda.json").write_text(json.dumps(record))
    again = stack_record.read_stage("cuda", paths["cuda"])
    assert again["record"] == record and again["legacy"] == {}
    assert stack_record.stage_values("cuda", again)["cuda_version"] == "13.0"
    # A broken record is none: the legacy files count again.
    (tmp_path / "state" / "stack-cuda.json").write_text("{not json")
    assert (
        stack_record.stage_values("cuda", stack_record.read_stage("cuda", paths["cuda"]))[
            "cuda_version"
        ]
        == "12.4"
    )


def test_adopted_toolkits_and_environments_have_no_record(tmp_path):
    values, env = _host(tmp_path)
    paths = stack_record.record_paths(
        dict(values, cuda_adopt_existing=True), {"mode": "adopt", "env_dir": env["env_dir"]}
    )
    assert sorted(paths) == ["nvidia_driver"]
    with pytest.raises(ValueError):
        stack_record.read_stage("jupyter", {})


def test_the_cudnn_packages_of_other_cuda_majors_are_named_for_removal():
    """cuDNN 9 is one package per CUDA major; the role removes the other majors' when it moves."""
    plan = gpu_compat.cudnn_packages("9.14.0", "13.0")
    assert plan["runtime"] == "libcudnn9-cuda-13"
    assert plan["replaces"] == [
        "libcudnn9-cuda-11",
        "libcudnn9-dev-cuda-11",
        "libcudnn9-cuda-12",
        "libcudnn9-dev-cuda-12",
    ]
    assert "libcudnn9-cuda-13" in gpu_compat.cudnn_packages("9.14.0", "12.4")["replaces"]
    # cuDNN 8's names carry no CUDA major: nothing to remove.
    assert gpu_compat.cudnn_packages("8.4.0", "11.6")["replaces"] == []
    task = next(
        t for t in _tasks("roles/cuda/tasks/cudnn-apt.yml") if t["name"].startswith("Remove")
    )
    assert task["ansible.builtin.apt"]["name"] == "{{ cuda__cudnn_pkgs.replaces }}"
    assert task["ansible.builtin.apt"]["state"] == "absent"
    assert task["ansible.builtin.apt"]["allow_change_held_packages"] is True
    assert "cuda__cudnn_pin is changed" in task["when"]


def test_stage_1_gives_the_roles_every_stack_variable_from_the_plan():
    first = _tasks("roles/gpu_preflight/tasks/stack_keep.yml")[0]["ansible.builtin.set_fact"]
    assert sorted(first) == sorted(stack_record.STACK_VARIABLES)
    for name, text in first.items():
        assert text == f"{{{{ gpu_preflight_host_plan.inputs.{name} }}}}"


def test_kindling_stack_upgrade_is_a_declared_global_refused_unless_a_bool():
    from ansible.module_utils import site_inputs

    assert default_stack.UPGRADE_VARIABLE in site_inputs.KINDLING_GLOBALS
    assert site_inputs.check_site({"kindling_stack_upgrade": True}, {}, []) == []
    refused = site_inputs.check_site({"kindling_stack_upgrade": "later"}, {}, [])
    assert refused and refused[0].startswith("kindling_stack_upgrade is 'later'")


def test_a_value_chosen_anywhere_but_the_role_default_is_not_overridden_by_a_record():
    """A playbook's vars (or a block's, or a role parameter) are below a fact in Ansible's
    precedence: a kept value would override them, so a value that is not the role default
    counts as chosen, like the inventory's and the extra vars' names."""
    defaults = {"cuda_version": "13.0", "cuda_cudnn_version": "9.14.0"}
    inputs = {"cuda_version": "13.0", "cuda_cudnn_version": "9.13.0"}
    assert default_stack.chosen(inputs, defaults, []) == ["cuda_cudnn_version"]
    # Named in the inventory at the default's own value: chosen all the same (a pin).
    assert default_stack.chosen(inputs, defaults, ["cuda_version", "jupyter_port"]) == [
        "cuda_cudnn_version",
        "cuda_version",
    ]
    recorded = {"cuda_version": "12.4", "cuda_cudnn_version": "9.14.0"}
    kept = default_stack.keep(inputs, recorded, default_stack.chosen(inputs, defaults, []))
    assert kept["kept"] == {"cuda_version": "12.4"}
    assert kept["pinned"] == {"cuda_cudnn_version": {"now": "9.14.0", "set": "9.13.0"}}


def test_the_version_files_of_a_real_torch_install_are_read():
    """Captured on the H200 (docs/gpu-runs/2026-12-06/call3): torch 2.11.0+cu130's and
    torchvision 0.26.0+cu130's own version.py, as pip installed them."""
    from conftest import REPO_ROOT

    call = REPO_ROOT / "docs" / "gpu-runs" / "2026-12-06" / "call3"
    torch = (call / "torch-version.py.txt").read_text()
    vision = (call / "torchvision-version.py.txt").read_text()
    assert stack_record.legacy_torch(torch, vision, "3.12") == {
        "conda_pytorch_version": "2.11.0",
        "conda_pytorch_cuda_variant": "cu130",
        "conda_pytorch_torchvision_version": "0.26.0",
        "conda_pytorch_python_version": "3.12",
    }
