"""module_utils/driver_state.py and library/nvidia_driver_plan.py: install, present or adopt.

The dpkg lines are shaped like ``dpkg-query -W -f '${Package}\\t${Version}\\t${Status}\\n'``
output on Ubuntu and Debian hosts. The module test puts a fake dpkg-query first on PATH,
which records its arguments and prints such lines.
"""

from __future__ import annotations

import json
import os
import stat

import jinja2
import nvidia_driver_plan
import pytest
import yaml
from ansible.module_utils import stack_plan as sp
from ansible.module_utils.driver_state import (
    decide,
    parse_dpkg_status,
    secure_boot,
    service_verdict,
    verify_problem,
)
from ansible.module_utils.testing import patch_module_args
from conftest import REPO_ROOT

DPKG_LINES = [
    "cuda-drivers-580\t580.95.05-1\tinstall ok installed\n",
    "nvidia-driver-580\t580.95.05-0ubuntu1\thold ok installed\n",
    "nvidia-dkms-580\t580.95.05-0ubuntu1\tinstall ok half-configured\n",
    "nvidia-kernel-common-580\t580.95.05-0ubuntu1\tinstall ok unpacked\n",
    "nvidia-driver-550\t550.54.15-0ubuntu1\tdeinstall ok config-files\n",
    "cuda-drivers-570\t\tunknown ok not-installed\n",
    "not a dpkg line\n",
    "\n",
]

UBUNTU_580 = sp.driver_packages("ubuntu", "580", "proprietary", "cuda-drivers")
DEBIAN_580 = sp.driver_packages("debian", "580", "proprietary", "cuda-drivers")
# torch 2.4-2.6 cu124 wheels need CUDA 12.4.0's driver.
CU124_MINIMUM = "550.54.14"


def dpkg(*lines):
    return parse_dpkg_status(list(lines))


def run_decide(plan, status, smi=None, branch="580", **kwargs):
    return decide(
        plan["packages"], plan["version_regex"], plan["selection"], status, smi, branch, **kwargs
    )


# ---------------------------------------------------------------------------
# parse_dpkg_status
# ---------------------------------------------------------------------------


def test_parse_dpkg_status_reads_each_state():
    status = parse_dpkg_status(DPKG_LINES)
    assert set(status) == {
        "cuda-drivers-580",
        "nvidia-driver-580",
        "nvidia-dkms-580",
        "nvidia-kernel-common-580",
        "nvidia-driver-550",
        "cuda-drivers-570",
    }
    assert status["cuda-drivers-580"] == {
        "version": "580.95.05-1",
        "want": "install",
        "state": "installed",
        "held": False,
    }
    assert status["nvidia-driver-580"]["held"] is True
    assert status["nvidia-driver-580"]["want"] == "hold"
    assert status["nvidia-dkms-580"]["state"] == "half-configured"
    assert status["nvidia-kernel-common-580"]["state"] == "unpacked"
    assert status["nvidia-driver-550"]["state"] == "config-files"
    assert status["nvidia-driver-550"]["want"] == "deinstall"
    assert status["cuda-drivers-570"] == {
        "version": "",
        "want": "unknown",
        "state": "not-installed",
        "held": False,
    }


# ---------------------------------------------------------------------------
# decide
# ---------------------------------------------------------------------------


def test_present_when_every_wanted_package_is_installed_at_the_branch():
    result = run_decide(
        UBUNTU_580,
        dpkg(
            "cuda-drivers-580\t580.95.05-1\thold ok installed",
            "nvidia-driver-580\t580.95.05-0ubuntu1\thold ok installed",
        ),
        smi="580.95.05",
    )
    assert result["outcome"] == "present"
    assert result["wanted_present"] is True
    assert result["unwanted"] == [] and result["unfinished"] == []
    assert result["installed"]["cuda-drivers-580"] == {"version": "580.95.05-1", "held": True}


def test_install_when_a_wanted_package_is_missing():
    result = run_decide(UBUNTU_580, dpkg("cuda-drivers-580\t580.95.05-1\tinstall ok installed"))
    assert result["outcome"] == "install"
    assert result["reason"] == "nvidia-driver-580 not installed"
    assert result["wanted_present"] is False


def test_install_when_installed_at_another_version():
    plan = sp.driver_packages("ubuntu", "580", "proprietary", "cuda-drivers", "580.95.05")
    result = run_decide(
        plan,
        dpkg(
            "cuda-drivers-580\t580.82.07-1\tinstall ok installed",
            "nvidia-driver-580\t580.82.07-0ubuntu1\tinstall ok installed",
        ),
        version="580.95.05",
    )
    assert result["outcome"] == "install"
    assert result["reason"].startswith("installed at another version: cuda-drivers-580 580.82.07-1")


def test_present_at_the_pinned_exact_version():
    plan = sp.driver_packages("ubuntu", "580", "proprietary", "cuda-drivers", "580.95.05")
    assert plan["version"] == "580.95.05-*"
    status = dpkg(
        "cuda-drivers-580\t580.95.05-1\thold ok installed",
        "nvidia-driver-580\t580.95.05-0ubuntu1\thold ok installed",
    )
    assert run_decide(plan, status, version="580.95.05")["outcome"] == "present"
    longer = dpkg(
        "cuda-drivers-580\t580.95.050-1\thold ok installed",
        "nvidia-driver-580\t580.95.050-0ubuntu1\thold ok installed",
    )
    assert run_decide(plan, longer, version="580.95.05")["outcome"] == "install"


def test_unfinished_package_means_install_even_when_the_rest_is_present():
    result = run_decide(
        UBUNTU_580,
        dpkg(
            "cuda-drivers-580\t580.95.05-1\tinstall ok installed",
            "nvidia-driver-580\t580.95.05-0ubuntu1\tinstall ok installed",
            "nvidia-dkms-580\t580.95.05-0ubuntu1\tinstall ok half-configured",
            "nvidia-kernel-common-580\t580.95.05-0ubuntu1\tinstall ok unpacked",
        ),
        smi="580.95.05",
    )
    assert result["outcome"] == "install"
    assert result["unfinished"] == ["nvidia-dkms-580", "nvidia-kernel-common-580"]
    assert "unfinished" in result["reason"]


def test_config_files_and_not_installed_are_finished_and_not_installed():
    result = run_decide(
        UBUNTU_580,
        dpkg(
            "cuda-drivers-580\t580.95.05-1\tdeinstall ok config-files",
            "nvidia-driver-580\t\tunknown ok not-installed",
        ),
    )
    assert result["unfinished"] == []
    assert result["installed"] == {}
    assert result["outcome"] == "install"


def test_adopted_when_nvidia_smi_reports_the_branch():
    result = run_decide(UBUNTU_580, {}, smi="580.82.07")
    assert result["outcome"] == "adopted"
    assert "branch 580" in result["reason"]


def test_adopted_newer_branch_that_meets_the_minimum():
    result = run_decide(UBUNTU_580, {}, smi="590.44.01", minimum="580.65.06")
    assert result["outcome"] == "adopted"
    assert "newer than branch 580" in result["reason"]
    below = run_decide(UBUNTU_580, {}, smi="590.44.01", minimum="595.45.04")
    assert below["outcome"] == "install"
    refused = run_decide(UBUNTU_580, {}, smi="590.44.01", adopt_newer=False)
    assert refused["outcome"] == "install"
    assert "which is not adopted" in refused["reason"]


def test_older_branch_is_not_adopted():
    result = run_decide(UBUNTU_580, {}, smi="570.195.03")
    assert result["outcome"] == "install"


def test_not_adopted_when_an_exact_version_is_pinned():
    plan = sp.driver_packages("ubuntu", "580", "proprietary", "cuda-drivers", "580.95.05")
    same_branch = run_decide(plan, {}, smi="580.82.07", version="580.95.05")
    assert same_branch["outcome"] == "install"
    newer = run_decide(plan, {}, smi="590.44.01", version="580.95.05", minimum="580.65.06")
    assert newer["outcome"] == "install"
    any_branch = run_decide(
        plan, {}, smi="590.44.01", version="580.95.05", adopt_any_branch=True, minimum="580"
    )
    assert any_branch["outcome"] == "install"
    exact = run_decide(plan, {}, smi="580.95.05", version="580.95.05")
    assert exact["outcome"] == "adopted"


def test_adopt_any_branch_takes_a_working_driver_that_meets_the_torch_minimum():
    """Preinstalled hosts: a 550.54.15 driver serves torch cu124 although 580 is requested."""
    result = run_decide(
        UBUNTU_580, {}, smi="550.54.15", adopt_any_branch=True, minimum=CU124_MINIMUM
    )
    assert result["outcome"] == "adopted"
    assert result["minimum"] == CU124_MINIMUM
    assert CU124_MINIMUM in result["reason"]


def test_adopt_any_branch_refuses_a_driver_below_the_minimum():
    result = run_decide(
        UBUNTU_580, {}, smi="535.230.02", adopt_any_branch=True, minimum=CU124_MINIMUM
    )
    assert result["outcome"] == "install"
    without_flag = run_decide(UBUNTU_580, {}, smi="550.54.15", minimum=CU124_MINIMUM)
    assert without_flag["outcome"] == "install"


def test_debian_upgrade_removes_the_old_branch_but_never_the_shared_nvidia_driver():
    status = dpkg(
        "cuda-drivers-550\t550.54.15-1\thold ok installed",
        "nvidia-driver\t550.54.15-1\thold ok installed",
        "nvidia-kernel-dkms\t550.54.15-1\thold ok installed",
    )
    result = run_decide(DEBIAN_580, status, smi="550.54.15")
    assert result["outcome"] == "install"
    assert result["unwanted"] == ["cuda-drivers-550"]
    assert result["unwanted_held"] == ["cuda-drivers-550"]
    assert "nvidia-driver" not in result["unwanted"]
    to_open = sp.driver_packages("debian", "580", "open", "nvidia-driver")
    switched = run_decide(to_open, status, smi="550.54.15")
    assert switched["unwanted"] == ["cuda-drivers-550", "nvidia-kernel-dkms"]
    assert "nvidia-driver" not in switched["unwanted"]


def test_ubuntu_580_to_590_removes_the_suffixed_packages():
    plan = sp.driver_packages("ubuntu", "590", "proprietary", "cuda-drivers")
    status = dpkg(
        "cuda-drivers-580\t580.95.05-1\thold ok installed",
        "nvidia-driver-580\t580.95.05-0ubuntu1\thold ok installed",
    )
    result = run_decide(plan, status, smi="580.95.05", branch="590")
    assert result["outcome"] == "install"
    assert result["unwanted"] == ["cuda-drivers-580", "nvidia-driver-580"]


def test_the_wanted_pinning_package_is_not_unwanted():
    """From branch 590 the plan's own pinning package must never be "unwanted".

    nvidia-driver-pinning-* is a selection pattern, and the pinning package is versioned
    "590-1ubuntu1", not "590.*"; the role passes packages.driver.hold as ``keep``.
    Without that, every later run would release its hold and remove it with apt.
    """
    plan = sp.driver_packages("ubuntu", "590", "proprietary", "cuda-drivers")
    status = dpkg(
        "cuda-drivers\t590.44.01-1\thold ok installed",
        "nvidia-driver-pinning-590\t590-1ubuntu1\thold ok installed",
    )
    result = run_decide(plan, status, smi="590.44.01", branch="590", keep=plan["hold"])
    assert result["outcome"] == "present"
    assert plan["pinning"] == "nvidia-driver-pinning-590"
    assert "nvidia-driver-pinning-590" not in result["unwanted"]
    assert "nvidia-driver-pinning-590" not in result["unwanted_held"]


# ---------------------------------------------------------------------------
# library/nvidia_driver_plan.py
# ---------------------------------------------------------------------------

FAKE_DPKG_QUERY = """#!/bin/sh
for arg in "$@"; do printf '%s\\n' "$arg"; done > "{argv}"
printf 'cuda-drivers-550\\t550.54.15-1\\thold ok installed\\n'
printf 'nvidia-driver\\t550.54.15-1\\thold ok installed\\n'
printf 'nvidia-kernel-dkms\\t550.54.15-1\\thold ok installed\\n'
echo "dpkg-query: no packages found matching cuda-drivers-580" >&2
exit {rc}
"""


@pytest.fixture
def fake_dpkg_query(tmp_path, monkeypatch):
    def install(rc=1):
        bindir = tmp_path / "bin"
        bindir.mkdir(exist_ok=True)
        argv = tmp_path / "argv.txt"
        script = bindir / "dpkg-query"
        script.write_text(FAKE_DPKG_QUERY.format(argv=argv, rc=rc))
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
        return argv

    return install


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        nvidia_driver_plan.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


MODULE_ARGS = {
    "packages": DEBIAN_580["packages"],
    "version_regex": DEBIAN_580["version_regex"],
    "selection": DEBIAN_580["selection"],
    "branch": "580",
    "smi_version": "550.54.15",
}


def test_module_queries_the_wanted_packages_and_the_selection_patterns(fake_dpkg_query, capsys):
    argv_file = fake_dpkg_query(rc=1)  # rc 1: some names matched nothing
    failed, result = run_module(MODULE_ARGS, capsys)
    assert not failed, result
    argv = argv_file.read_text().splitlines()
    assert argv[0] == "-W"
    assert argv[1] == "--showformat=${Package}\\t${Version}\\t${Status}\\n"
    expected = list(dict.fromkeys(DEBIAN_580["packages"] + DEBIAN_580["selection"]))
    assert argv[2:] == expected
    assert "cuda-drivers-[0-9]*" in argv  # passed as a pattern, not expanded by a shell
    assert result["changed"] is False
    assert result["outcome"] == "install"
    assert result["unwanted"] == ["cuda-drivers-550"]
    assert result["installed"]["nvidia-driver"] == {"version": "550.54.15-1", "held": True}
    assert result["smi_version"] == "550.54.15"


def test_module_adopts_with_adopt_any_branch(fake_dpkg_query, capsys):
    fake_dpkg_query(rc=0)
    failed, result = run_module(
        dict(MODULE_ARGS, adopt_any_branch=True, minimum=CU124_MINIMUM), capsys
    )
    assert not failed
    assert result["outcome"] == "adopted"
    assert result["minimum"] == CU124_MINIMUM


def test_module_fails_when_dpkg_query_fails(fake_dpkg_query, capsys):
    fake_dpkg_query(rc=2)
    failed, result = run_module(MODULE_ARGS, capsys)
    assert failed
    assert result["msg"].startswith("dpkg-query failed (rc 2)")
    assert "no packages found matching" in result["msg"]


def test_module_reads_the_kernel_module_in_the_same_run_when_asked(
    fake_dpkg_query, tmp_path, capsys
):
    fake_dpkg_query(rc=0)
    bindir = tmp_path / "bin"
    kernel = os.uname().release
    dkms = bindir / "dkms"
    dkms.write_text(f"#!/bin/sh\necho 'nvidia/580.95.05, {kernel}, x86_64: installed'\n")
    dkms.chmod(0o755)
    _, without = run_module(MODULE_ARGS, capsys)
    assert "ansible_facts" not in without
    failed, result = run_module(dict(MODULE_ARGS, kernel_module_facts=True), capsys)
    assert not failed
    facts = result["ansible_facts"]["nvidia_kernel_module"]
    # What nvidia_kernel_module_facts returns for the same host (the same reader).
    assert facts["running_kernel"] == kernel
    assert [row["version"] for row in facts["dkms"]] == ["580.95.05"]
    assert facts["state"] in ("built", "loaded", "stale")
    assert result["outcome"] == "install"  # the driver decision is unchanged


# --- after the stage: what is wrong with the driver (nvidia_driver_verdict_plan)

WORKS = {"present": True, "error": None, "driver_version": "580.95.05"}
KM_LOADED = {"reason": "module 580.95.05 is loaded", "next_step": None}
KM_UNBUILT = {
    "reason": "no nvidia module is built for 6.1.0-40-amd64",
    "next_step": "install linux-headers-6.1.0-40-amd64 and rebuild with dkms",
}


@pytest.mark.parametrize(
    "smi, outcome, pending, expected",
    [
        (WORKS, "install", False, ""),
        # Adopted: a driver of another branch is what was adopted, not a problem.
        (dict(WORKS, driver_version="550.54.15"), "adopted", False, ""),
        (
            dict(WORKS, driver_version="550.54.15"),
            "install",
            True,
            "nvidia-smi reports driver 550.54.15, not branch 580: the old module is still loaded. "
            "Kernel module: module 580.95.05 is loaded. A reboot is pending (driver 580 "
            "installed): reboot the host, then run this playbook again.",
        ),
        (
            {"present": False},
            "",
            False,
            "nvidia-smi is not installed: the NVIDIA driver is not on this host "
            "(nvidia_driver_outcome unknown).",
        ),
    ],
)
def test_verify_problem_after_the_stage(smi, outcome, pending, expected):
    reasons = ["driver 580 installed"] if pending else []
    assert verify_problem(smi, KM_LOADED, outcome, "580", pending, reasons) == expected


def test_a_failing_nvidia_smi_names_the_kernel_modules_next_step():
    smi = {
        "present": True,
        "error": {"kind": "driver-not-loaded", "message": "NVIDIA-SMI has failed  \n"},
    }
    assert verify_problem(smi, KM_UNBUILT, "install", "580") == (
        "nvidia-smi fails (driver-not-loaded): NVIDIA-SMI has failed. Kernel module: no nvidia "
        "module is built for 6.1.0-40-amd64 (next: install linux-headers-6.1.0-40-amd64 and "
        "rebuild with dkms). No reboot is pending; look at dmesg and the DKMS build log (dkms "
        "status)."
    )


def test_the_verdict_module_returns_the_problem(capsys):
    import nvidia_driver_verdict_plan

    args = {
        "nvidia_smi": dict(WORKS, driver_version="550.54.15"),
        "kernel_module": KM_LOADED,
        "outcome": "present",
        "branch": "580",
        "_ansible_check_mode": True,
    }
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        nvidia_driver_verdict_plan.main()
    result = json.loads(capsys.readouterr().out)
    assert exc.value.code == 0 and result["changed"] is False
    assert result["problem"].startswith("nvidia-smi reports driver 550.54.15, not branch 580")


# --- what a working driver serves (nvidia_driver_service_verdict_plan)

TWO_GPUS = dict(
    WORKS,
    cuda_driver_version="13.0",
    gpu_count=2,
    gpus=[
        {"index": 0, "name": "NVIDIA H200", "persistence_mode": True},
        {"index": 1, "name": "NVIDIA H200", "persistence_mode": False},
    ],
)
FM_OK = {"changed": False, "outcome": "ok", "message": "nvidia-fabricmanager 580.95.05 runs"}
FM_MISMATCH = {
    "changed": False,
    "outcome": "version-mismatch",
    "message": "nvidia-fabricmanager 580.105.08 does not match the driver 580.95.05",
    "fix": "apt-get install nvidia-fabricmanager=580.95.05-*",
}
FM_SKIPPED = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
CUDA_OK = {"state": "ok", "message": "cuInit succeeded, 2 device(s)"}
CUDA_802 = {"state": "failed", "message": "cuInit failed: CUDA_ERROR_SYSTEM_NOT_READY (802)"}
PERSISTENCE_OFF = (
    "Persistence mode is off on GPU(s) 1 although the role started nvidia-persistenced with "
    "--persistence-mode: check `systemctl cat nvidia-persistenced` for another drop-in, and "
    "the daemon's journal."
)


def test_a_working_driver_that_serves_everything_is_reported_in_one_line():
    smi = dict(TWO_GPUS, gpus=[dict(g, persistence_mode=True) for g in TWO_GPUS["gpus"]])
    assert service_verdict(smi, True, FM_OK, CUDA_OK) == {
        "problems": [],
        "report": "nvidia-smi works: driver 580.95.05 (CUDA 13.0), 2 GPU(s): NVIDIA H200, "
        "NVIDIA H200; persistence mode on; nvidia-fabricmanager 580.95.05 runs; cuInit "
        "succeeded, 2 device(s)",
    }


def test_every_failed_check_is_named_in_the_order_checked():
    verdict = service_verdict(TWO_GPUS, True, FM_MISMATCH, CUDA_802)
    assert verdict["problems"] == [
        PERSISTENCE_OFF,
        "nvidia-fabricmanager 580.105.08 does not match the driver 580.95.05 Fix: apt-get "
        "install nvidia-fabricmanager=580.95.05-*.",
        "nvidia-smi works, but cuInit failed: CUDA_ERROR_SYSTEM_NOT_READY (802)",
    ]
    # The report says what is there; a fabric manager that is not ok is not in it.
    assert verdict["report"] == (
        "nvidia-smi works: driver 580.95.05 (CUDA 13.0), 2 GPU(s): NVIDIA H200, NVIDIA H200; "
        "persistence mode off; cuInit failed: CUDA_ERROR_SYSTEM_NOT_READY (802)"
    )


@pytest.mark.parametrize(
    "expected, fabric, cuda, problems",
    [
        # Where the role did not start nvidia-persistenced, persistence mode off is no problem.
        (False, None, None, []),
        (True, None, None, [PERSISTENCE_OFF]),
        # A skipped fabric manager task is a host that needs none.
        (False, FM_SKIPPED, CUDA_OK, []),
        (False, dict(FM_OK, outcome="not-needed"), None, []),
        (
            False,
            FM_SKIPPED,
            dict(CUDA_802, state="no_library"),
            ["nvidia-smi works, but cuInit failed: CUDA_ERROR_SYSTEM_NOT_READY (802)"],
        ),
    ],
)
def test_what_counts_as_a_problem(expected, fabric, cuda, problems):
    assert service_verdict(TWO_GPUS, expected, fabric, cuda)["problems"] == problems


def test_the_service_verdict_module_and_its_controller_side_agree(capsys):
    import nvidia_driver_service_verdict_plan
    import nvidia_driver_verdict_plan

    args = {"nvidia_smi": TWO_GPUS, "persistence_expected": True, "fabric_manager": FM_MISMATCH}
    with patch_module_args(dict(args, _ansible_check_mode=True)), pytest.raises(SystemExit) as exc:
        nvidia_driver_service_verdict_plan.main()
    result = json.loads(capsys.readouterr().out)
    assert exc.value.code == 0 and result["changed"] is False
    assert result["problems"] == service_verdict(TWO_GPUS, True, FM_MISMATCH)["problems"]
    with patch_module_args({"nvidia_smi": TWO_GPUS}), pytest.raises(SystemExit) as exc:
        nvidia_driver_verdict_plan.main()
    assert exc.value.code != 0, "kernel_module and branch are required"
    assert "missing required arguments" in json.loads(capsys.readouterr().out)["msg"]


@pytest.mark.slow
def test_both_driver_verdicts_are_made_on_the_controller(tmp_path):
    from test_gpu_stack_check import run_on_controller_task

    # The host refuses SSH: any module run there would make the task unreachable.
    unreachable = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9}
    args = {"nvidia_smi": TWO_GPUS, "persistence_expected": True, "cuda_init": CUDA_802}
    result = run_on_controller_task(
        "nvidia_driver_service_verdict_plan", args, tmp_path, unreachable
    )
    assert not result.get("unreachable"), result
    assert result["problems"] == service_verdict(TWO_GPUS, True, None, CUDA_802)["problems"]
    args = {
        "nvidia_smi": dict(WORKS, driver_version="550.54.15"),
        "kernel_module": KM_LOADED,
        "outcome": "present",
        "branch": "580",
    }
    result = run_on_controller_task("nvidia_driver_verdict_plan", args, tmp_path, unreachable)
    assert not result.get("unreachable"), result
    assert result["problem"].startswith("nvidia-smi reports driver 550.54.15, not branch 580")
    # Bad arguments are refused there as the module refuses them.
    result = run_on_controller_task(
        "nvidia_driver_service_verdict_plan", {"persistence_expected": True}, tmp_path, unreachable
    )
    assert result.get("failed") and "nvidia_smi" in result["msg"], result


# --- whether the driver needs a reboot (nvidia_driver_reboot_plan)

BOOT = "3f1c2a9e-0b7d-4c55-9a51-7f6b1e2d9c01\n"
RECORD = {"boot_id": BOOT.strip(), "packages": ["nvidia-open"], "version": "580.95.05-1"}
NOT_LOADED = {"present": True, "reboot_required": True, "reboot_reason": "the module is not loaded"}


@pytest.mark.parametrize(
    "changed_now, record, smi, policy, needed, reason",
    [
        (False, None, WORKS, "coordinated", False, "the NVIDIA driver is loaded (580.95.05)"),
        (
            True,
            None,
            WORKS,
            "coordinated",
            True,
            "the NVIDIA driver packages changed in this boot (nvidia-driver-580 580.95.05-*); the "
            "new kernel module is loaded by a reboot (module 580.95.05 is loaded)",
        ),
        # Recorded by an earlier run of this boot: the same reason, with the record's packages.
        (
            False,
            RECORD,
            WORKS,
            "coordinated",
            True,
            "the NVIDIA driver packages changed in this boot (nvidia-open 580.95.05-1); the new "
            "kernel module is loaded by a reboot (module 580.95.05 is loaded)",
        ),
        # Recorded in another boot: that reboot happened.
        (False, dict(RECORD, boot_id="older"), WORKS, "coordinated", False, None),
        (
            False,
            None,
            NOT_LOADED,
            "coordinated",
            True,
            "nvidia-smi fails: the module is not loaded. Kernel module: module 580.95.05 is "
            "loaded (next: reboot)",
        ),
        (False, None, WORKS, "always", True, "nvidia_driver_reboot_policy is always"),
    ],
)
def test_reboot_plan(changed_now, record, smi, policy, needed, reason):
    from ansible.module_utils.driver_state import reboot_plan

    plan = reboot_plan(
        changed_now, record, BOOT, smi, KM_LOADED, policy, ["nvidia-driver-580"], "580.95.05-*"
    )
    assert plan["reboot_needed"] is needed
    if reason is not None:
        assert plan["reason"] == reason


def test_the_reboot_plan_module_reads_the_record(tmp_path, capsys, monkeypatch):
    import nvidia_driver_reboot_plan as module
    from ansible.module_utils import driver_state

    (tmp_path / "nvidia_driver").mkdir()
    (tmp_path / "nvidia_driver" / "changed.json").write_text(json.dumps(RECORD))
    boot = tmp_path / "boot_id"
    boot.write_text(BOOT)
    monkeypatch.setattr(driver_state, "BOOT_ID", str(boot))
    args = {
        "changed_now": False,
        "state_dir": str(tmp_path),
        "nvidia_smi": WORKS,
        "kernel_module": KM_LOADED,
        "policy": "coordinated",
        "_ansible_check_mode": True,
    }
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    result = json.loads(capsys.readouterr().out)
    assert result["reboot_needed"] is True and result["changed_this_boot"] is True
    assert "(nvidia-open 580.95.05-1)" in result["reason"]
    # A damaged record is no record.
    (tmp_path / "nvidia_driver" / "changed.json").write_text("{not json")
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    assert json.loads(capsys.readouterr().out)["reboot_needed"] is False


def test_the_state_module_reads_the_record_for_the_reboot_plan(
    fake_dpkg_query, tmp_path, capsys, monkeypatch
):
    from ansible.module_utils import driver_state

    fake_dpkg_query(rc=0)
    (tmp_path / "nvidia_driver").mkdir()
    (tmp_path / "nvidia_driver" / "changed.json").write_text(json.dumps(RECORD))
    boot = tmp_path / "boot_id"
    boot.write_text(BOOT)
    monkeypatch.setattr(driver_state, "BOOT_ID", str(boot))
    _, without = run_module(MODULE_ARGS, capsys)
    assert "change_record" not in without
    _, result = run_module(dict(MODULE_ARGS, state_dir=str(tmp_path)), capsys)
    assert result["change_record"] == {"record": RECORD, "boot_id": BOOT}


def test_the_reboot_plan_module_reads_nothing_given_the_record(tmp_path, capsys):
    import nvidia_driver_reboot_plan as module

    args = {
        "changed_now": False,
        "change_record": {"record": RECORD, "boot_id": BOOT},
        "state_dir": str(tmp_path / "not-there"),
        "nvidia_smi": WORKS,
        "kernel_module": KM_LOADED,
        "policy": "coordinated",
    }
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    result = json.loads(capsys.readouterr().out)
    # The record given, not the (missing) state directory, decided: a change in this boot.
    assert result["reboot_needed"] is True and result["changed_this_boot"] is True
    another_boot = dict(args, change_record={"record": RECORD, "boot_id": "another\n"})
    with patch_module_args(another_boot), pytest.raises(SystemExit):
        module.main()
    assert json.loads(capsys.readouterr().out)["reboot_needed"] is False
    neither = {k: v for k, v in args.items() if k not in ("change_record", "state_dir")}
    with patch_module_args(neither), pytest.raises(SystemExit) as exc:
        module.main()
    assert exc.value.code != 0
    assert "one of state_dir or change_record" in json.loads(capsys.readouterr().out)["msg"]


@pytest.mark.slow
def test_the_reboot_plan_is_decided_on_the_controller_given_the_record(tmp_path):
    from test_gpu_stack_check import run_on_controller_task

    args = {
        "changed_now": False,
        "change_record": {"record": RECORD, "boot_id": BOOT},
        "nvidia_smi": WORKS,
        "kernel_module": KM_LOADED,
        "policy": "coordinated",
    }
    # The host refuses SSH: any module run there would make the task unreachable.
    unreachable = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9}
    result = run_on_controller_task("nvidia_driver_reboot_plan", args, tmp_path, unreachable)
    assert not result.get("unreachable"), result
    assert result["reboot_needed"] is True and "invocation" not in result
    # Without the record the module must read the host: unreachable.
    del args["change_record"]
    args["state_dir"] = "/var/lib/kindling"
    result = run_on_controller_task("nvidia_driver_reboot_plan", args, tmp_path, unreachable)
    assert result.get("unreachable") is True


# ---------------------------------------------------------------------------
# Secure Boot, read by nvidia_driver_plan (the EFI variable, or mokutil)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "efivar, mokutil, enabled, source",
    [
        (b"\x06\x00\x00\x00\x01", None, True, "efi variable"),
        (b"\x06\x00\x00\x00\x00", None, False, None),
        (None, "SecureBoot enabled\n", True, "mokutil"),
        (None, "SecureBoot disabled\nPlatform is in Setup Mode\n", False, None),
        (b"\x06\x00\x00\x00\x00", "SecureBoot enabled", True, "mokutil"),
        (b"\x01", None, False, None),  # too short to be the variable: not trusted
        (None, None, False, None),
    ],
)
def test_secure_boot_from_the_variable_or_mokutil(efivar, mokutil, enabled, source):
    state = secure_boot(efivar, mokutil)
    assert state["enabled"] is enabled and state["source"] == source
    if efivar is None and mokutil is None:
        assert "taken as off" in state["detail"]


def test_module_reads_the_secure_boot_variable(fake_dpkg_query, tmp_path, capsys, monkeypatch):
    fake_dpkg_query(rc=1)  # its PATH has no mokutil
    efivars = tmp_path / "efivars"
    efivars.mkdir()
    (efivars / "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c").write_bytes(
        b"\x06\x00\x00\x00\x01"
    )
    failed, result = run_module(dict(MODULE_ARGS, efivars_path=str(efivars)), capsys)
    assert not failed
    assert result["secure_boot"] == {
        "enabled": True,
        "source": "efi variable",
        "detail": "enabled (efi variable)",
    }
    failed, result = run_module(dict(MODULE_ARGS, efivars_path=str(tmp_path / "none")), capsys)
    assert result["secure_boot"]["enabled"] is False


@pytest.mark.parametrize(
    "install, remove, given",
    [(False, False, True), (True, False, False), (False, True, False)],
)
def test_configure_hands_over_the_preflights_record_only_when_this_run_did_not_rewrite_it(
    install, remove, given
):
    # packages.yml writes changed.json again when the install or the removal changed: the
    # record the preflight read names the old packages then (the reason of the request, and
    # the reboot record, would differ from the next run's), so the host is read instead.
    tasks = yaml.safe_load((REPO_ROOT / "roles/nvidia_driver/tasks/configure.yml").read_text())
    decide = next(t for t in tasks if "nvidia_driver_reboot_plan" in t)
    record = {"record": RECORD, "boot_id": BOOT}
    # Plain Jinja with Ansible's `changed` test and a stand-in for `omit`: importing
    # Ansible's own templating here would change how modules report warnings for every
    # later test in this process.
    env = jinja2.Environment()
    env.tests["changed"] = lambda result: bool(result.get("changed"))
    rendered = (
        env.from_string(decide["nvidia_driver_reboot_plan"]["change_record"])
        .render(
            omit="OMIT",
            nvidia_driver__install_result={"changed": install},
            nvidia_driver__remove_result={"changed": remove},
            nvidia_driver__state={"change_record": record},
        )
        .strip()
    )
    assert rendered == (str(record) if given else "OMIT")
