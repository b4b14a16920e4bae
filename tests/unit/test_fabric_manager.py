"""module_utils/fabric_manager.py and library/nvidia_fabric_manager_plan.py.

The dpkg rows are shaped like ``dpkg-query -W -f '${Package}\\t${Version}\\t${Status}\\n'``
output and the unit rows like ``systemctl show -p ... nvidia-fabricmanager.service``. The
module test puts fake ``dpkg-query`` and ``systemctl`` first on PATH.
"""

from __future__ import annotations

import json
import stat

import nvidia_fabric_manager_plan
import pytest
from ansible.module_utils.driver_state import parse_dpkg_status
from ansible.module_utils.fabric_manager import (
    OUTCOMES,
    decide,
    install_command,
    parse_systemctl_show,
    upstream_version,
)
from ansible.module_utils.testing import patch_module_args
from conftest import REPO_ROOT

FAKE_SMI = REPO_ROOT / "tests" / "fixtures" / "bin" / "nvidia-smi"

PACKAGES = ["nvidia-fabricmanager", "libnvidia-nscq"]
DRIVER = "580.95.05"
NEEDED = "4 NVSwitches (10de:22a3) on the PCI bus: this is an NVSwitch system."
ACTIVE = {"LoadState": "loaded", "ActiveState": "active", "SubState": "running",
          "UnitFileState": "enabled", "Result": "success"}  # fmt: skip
FAILED = {"LoadState": "loaded", "ActiveState": "failed", "SubState": "failed",
          "UnitFileState": "enabled", "Result": "exit-code"}  # fmt: skip


def rows(*lines: str):
    return parse_dpkg_status(list(lines))


AT_DRIVER = rows(
    f"nvidia-fabricmanager\t{DRIVER}-1\thold ok installed",
    f"libnvidia-nscq\t{DRIVER}-1\thold ok installed",
)


@pytest.mark.parametrize(
    "version,expected",
    [
        ("580.95.05-1", "580.95.05"),
        ("1:580.95.05-1", "580.95.05"),
        ("570.172.08-0ubuntu1", "570.172.08"),
        ("580.95.05", "580.95.05"),
        ("", ""),
        (None, ""),
    ],
)
def test_upstream_version(version, expected):
    assert upstream_version(version) == expected


def test_parse_systemctl_show():
    text = "LoadState=loaded\nActiveState=failed\nSubState=failed\nResult=exit-code\nnoise\n"
    assert parse_systemctl_show(text) == {
        "LoadState": "loaded",
        "ActiveState": "failed",
        "SubState": "failed",
        "Result": "exit-code",
    }


def test_install_command_pins_every_package_to_the_driver_version():
    assert install_command(PACKAGES, DRIVER) == (
        "apt-get install --allow-change-held-packages "
        "nvidia-fabricmanager=580.95.05-* libnvidia-nscq=580.95.05-*"
    )


def test_no_fabric_means_nothing_to_do():
    result = decide(False, "No NVSwitch on the PCI bus.", PACKAGES, {}, DRIVER, {})
    assert result["outcome"] == "not-needed"
    assert result["message"] == "No NVSwitch on the PCI bus."


def test_an_installed_fabric_manager_without_fabric_is_pointed_out():
    result = decide(False, "No NVSwitch on the PCI bus.", PACKAGES, AT_DRIVER, DRIVER, FAILED)
    assert result["outcome"] == "not-needed"
    assert "fails to start here" in result["message"]
    assert "libnvidia-nscq, nvidia-fabricmanager" in result["message"]


def test_install_mode_installs_at_the_driver_version():
    result = decide(True, NEEDED, PACKAGES, {}, DRIVER, {})
    assert result["outcome"] == "install"
    assert result["missing"] == PACKAGES
    assert result["fix"] == install_command(PACKAGES, DRIVER)
    assert NEEDED in result["message"] and DRIVER in result["message"]


def test_install_mode_replaces_another_version():
    other = rows(
        "nvidia-fabricmanager\t580.82.07-1\thold ok installed",
        f"libnvidia-nscq\t{DRIVER}-1\thold ok installed",
    )
    result = decide(True, NEEDED, PACKAGES, other, DRIVER, ACTIVE)
    assert result["outcome"] == "install"
    assert result["mismatched"] == ["nvidia-fabricmanager"]


def test_without_install_the_mismatch_names_both_versions_and_the_fix():
    other = rows(
        "nvidia-fabricmanager\t580.82.07-1\tinstall ok installed",
        "libnvidia-nscq\t580.82.07-1\tinstall ok installed",
    )
    result = decide(True, NEEDED, PACKAGES, other, DRIVER, FAILED, install_allowed=False)
    assert result["outcome"] == "version-mismatch"
    assert "nvidia-fabricmanager 580.82.07" in result["message"]
    assert f"driver's ({DRIVER})" in result["message"]
    assert "error 802" in result["message"]
    assert install_command(PACKAGES, DRIVER) in result["fix"]
    assert "driver of version 580.82.07" in result["fix"]


def test_without_install_a_missing_fabric_manager_is_reported():
    result = decide(True, NEEDED, PACKAGES, {}, DRIVER, {}, install_allowed=False)
    assert result["outcome"] == "missing"
    assert "systemctl enable --now nvidia-fabricmanager.service" in result["fix"]
    assert "802" in result["message"]


def test_unknown_driver_version():
    result = decide(True, NEEDED, PACKAGES, {}, "", {})
    assert result["outcome"] == "install"
    assert "not known yet" in result["message"]
    assert "install the driver first" in result["fix"]


def test_half_installed_package_counts_as_missing():
    half = rows(
        f"nvidia-fabricmanager\t{DRIVER}-1\tinstall ok half-configured",
        f"libnvidia-nscq\t{DRIVER}-1\tinstall ok installed",
    )
    result = decide(True, NEEDED, PACKAGES, half, DRIVER, ACTIVE, install_allowed=False)
    assert result["outcome"] == "missing"
    assert result["missing"] == ["nvidia-fabricmanager"]


def test_installed_but_not_running():
    result = decide(True, NEEDED, PACKAGES, AT_DRIVER, DRIVER, FAILED)
    assert result["outcome"] == "not-running"
    assert "failed/failed, result exit-code" in result["message"]
    assert result["held"] == sorted(PACKAGES)
    assert result["unit_enabled"] is True and result["unit_active"] is False


def test_running_but_fabric_not_completed():
    states = [
        {"gpu": 0, "state": "completed", "state_text": "Completed", "status": "Success"},
        {"gpu": 1, "state": "in_progress", "state_text": "In Progress", "status": None},
    ]
    result = decide(True, NEEDED, PACKAGES, AT_DRIVER, DRIVER, ACTIVE, states)
    assert result["outcome"] == "fabric-not-completed", result["message"]
    assert "GPU 1 In Progress" in result["message"]
    assert "GPU 0" not in result["message"]


def test_gpus_without_a_fabric_state_do_not_hold_it_up():
    states = [{"gpu": 0, "state": "not_supported", "state_text": None}, {"gpu": 1, "state": None}]
    result = decide(True, NEEDED, PACKAGES, AT_DRIVER, DRIVER, ACTIVE, states)
    assert result["outcome"] == "ok"


def test_everything_in_place():
    states = [{"gpu": i, "state": "completed", "state_text": "Completed"} for i in range(8)]
    result = decide(True, NEEDED, PACKAGES, AT_DRIVER, DRIVER, ACTIVE, states)
    assert result["outcome"] == "ok"
    assert result["installed_versions"] == {name: DRIVER for name in PACKAGES}


def test_every_outcome_is_reachable_and_listed():
    seen = {
        decide(False, "", PACKAGES, {}, DRIVER, {})["outcome"],
        decide(True, NEEDED, PACKAGES, {}, DRIVER, {})["outcome"],
        decide(True, NEEDED, PACKAGES, {}, DRIVER, {}, install_allowed=False)["outcome"],
        decide(
            True,
            NEEDED,
            PACKAGES,
            rows(
                "nvidia-fabricmanager\t1-1\tinstall ok installed",
                "libnvidia-nscq\t1-1\tinstall ok installed",
            ),
            DRIVER,
            ACTIVE,
            install_allowed=False,
        )["outcome"],
        decide(True, NEEDED, PACKAGES, AT_DRIVER, DRIVER, FAILED)["outcome"],
        decide(
            True, NEEDED, PACKAGES, AT_DRIVER, DRIVER, ACTIVE, [{"gpu": 0, "state": "not_started"}]
        )["outcome"],
        decide(True, NEEDED, PACKAGES, AT_DRIVER, DRIVER, ACTIVE)["outcome"],
    }
    assert seen == set(OUTCOMES)


# --- the module, with fake dpkg-query and systemctl ------------------------------------


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()

    def _script(path, body):
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)

    def install(dpkg_lines, unit_text, unit_rc=0):
        _script(bindir / "dpkg-query", f"cat <<'EOF'\n{dpkg_lines}\nEOF\n")
        _script(bindir / "systemctl", f"cat <<'EOF'\n{unit_text}\nEOF\nexit {unit_rc}\n")
        monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")

    return install


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        nvidia_fabric_manager_plan.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def test_module_takes_the_driver_version_from_the_driver_package(fake_tools, capsys):
    fake_tools(
        f"nvidia-fabricmanager\t{DRIVER}-1\thold ok installed\n"
        f"libnvidia-nscq\t{DRIVER}-1\thold ok installed\n"
        f"nvidia-driver-cuda\t{DRIVER}-1\thold ok installed",
        "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\n",
    )
    failed, result = run_module(
        {
            "needed": True,
            "needed_reason": NEEDED,
            "packages": PACKAGES,
            "driver_package": "nvidia-driver-cuda",
        },
        capsys,
    )
    assert not failed, result
    assert result["changed"] is False
    assert result["outcome"] == "ok"
    assert result["driver_version"] == DRIVER


def test_module_reports_the_mismatch_when_not_installing(fake_tools, capsys):
    fake_tools(
        "nvidia-fabricmanager-570\t570.148.08-1\tinstall ok installed\n"
        "libnvidia-nscq-570\t570.148.08-1\tinstall ok installed",
        "LoadState=loaded\nActiveState=failed\nSubState=failed\nResult=exit-code\n",
    )
    failed, result = run_module(
        {
            "needed": True,
            "packages": ["nvidia-fabricmanager-570", "libnvidia-nscq-570"],
            "driver_version": "570.172.08",
            "install_allowed": False,
        },
        capsys,
    )
    assert not failed, result
    assert result["outcome"] == "version-mismatch"
    assert "570.148.08" in result["message"] and "570.172.08" in result["message"]


def test_module_without_systemd_reports_not_running(fake_tools, capsys):
    fake_tools(
        f"nvidia-fabricmanager\t{DRIVER}-1\tinstall ok installed\n"
        f"libnvidia-nscq\t{DRIVER}-1\tinstall ok installed",
        "Failed to connect to bus",
        unit_rc=1,
    )
    failed, result = run_module(
        {"needed": True, "packages": PACKAGES, "driver_version": DRIVER}, capsys
    )
    assert not failed, result
    assert result["outcome"] == "not-running"
    assert "unknown" in result["message"]


def test_module_names_the_packages_from_the_driver_branch_when_not_given(fake_tools, capsys):
    # verify run on its own (no stage plan): branch 570's names are suffixed (catalogue).
    fake_tools(
        "nvidia-fabricmanager-570\t570.172.08-1\tinstall ok installed\n"
        "libnvidia-nscq-570\t570.172.08-1\tinstall ok installed",
        "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\n",
    )
    failed, result = run_module(
        {"needed": True, "driver_version": "570.172.08", "install_allowed": False}, capsys
    )
    assert not failed, result
    assert result["packages"] == ["nvidia-fabricmanager-570", "libnvidia-nscq-570"]
    assert result["outcome"] == "ok"


def test_module_reads_the_fabric_state_from_nvidia_smi(fake_tools, tmp_path, capsys, monkeypatch):
    # The constructed HGX case whose fabric manager is missing: GPUs report In Progress.
    # Its driver is 550.90.07, so the packages are branch 550's, named by the module.
    fake_tools(
        "nvidia-fabricmanager-550\t550.90.07-1\tinstall ok installed\n"
        "libnvidia-nscq-550\t550.90.07-1\tinstall ok installed",
        "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\n",
    )
    wrapper = tmp_path / "bin" / "nvidia-smi"
    wrapper.write_text(f'#!/bin/sh\nexec "{FAKE_SMI}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("KINDLING_FAKE_SMI", "hgx-h100-fm-missing")
    failed, result = run_module(
        {"needed": True, "read_nvidia_smi": True, "install_allowed": False},
        capsys,
    )
    assert not failed, result
    assert result["outcome"] == "fabric-not-completed", result["message"]
    assert result["driver_version"] == "550.90.07"
    assert result["packages"] == ["nvidia-fabricmanager-550", "libnvidia-nscq-550"]
    assert "GPU 0 In Progress" in result["message"] and "GPU 7 Not Started" in result["message"]


def test_a_fix_is_named_exactly_where_something_needs_one():
    """nvidia_driver_service_verdict_plan (module_utils/driver_state.py) counts a fabric manager
    result as a problem when it names a fix: ok and not-needed must name none, every other
    outcome one."""
    completed = [{"gpu": 0, "state": "completed", "state_text": "Completed"}]
    pending = [{"gpu": 0, "state": "in_progress", "state_text": "In Progress"}]
    other = {name: dict(info, version="580.105.08-1") for name, info in AT_DRIVER.items()}
    results = [
        decide(False, "No NVSwitch on the PCI bus.", PACKAGES, {}, DRIVER, {}),
        decide(True, NEEDED, PACKAGES, {}, DRIVER, {}),
        decide(True, NEEDED, PACKAGES, {}, DRIVER, {}, install_allowed=False),
        decide(True, NEEDED, PACKAGES, other, DRIVER, FAILED, install_allowed=False),
        decide(True, NEEDED, PACKAGES, AT_DRIVER, DRIVER, FAILED),
        decide(True, NEEDED, PACKAGES, AT_DRIVER, DRIVER, ACTIVE, pending),
        decide(True, NEEDED, PACKAGES, AT_DRIVER, DRIVER, ACTIVE, completed),
    ]
    assert {r["outcome"] for r in results} == set(OUTCOMES)
    for result in results:
        assert bool(result["fix"]) == (result["outcome"] not in ("ok", "not-needed")), result
