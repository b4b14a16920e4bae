"""library/nvidia_smi_facts.py, in process and end to end through `ansible localhost -m`.

nvidia-smi is the stand-in tests/fixtures/bin/nvidia-smi, which prints the real H200
captures or a constructed case chosen by KINDLING_FAKE_SMI. journalctl and dmesg are
stand-ins written per test (the ``kernel_log`` fixture, first on PATH): by default
journalctl prints a constructed boot log without Xid events; tests that need them print
the real kernel-log captures of tests/fixtures/captures/kernel-log-xid/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nvidia_pci_facts
import nvidia_smi_facts
import pytest
from ansible.module_utils.nvidia_smi import build_facts
from ansible.module_utils.testing import patch_module_args
from conftest import CAPTURES, REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tests" / "fixture_sources"))
from pci_trees import build_tree

BIN = REPO_ROOT / "tests" / "fixtures" / "bin"
PCI_CASES = REPO_ROOT / "tests" / "fixtures" / "pci"
FAKE_SMI = str(BIN / "nvidia-smi")
KLOG = REPO_ROOT / "tests" / "fixtures" / "captures" / "kernel-log-xid"
#: CONSTRUCTED: a boot without Xid events, as journalctl -o short-monotonic prints it
BOOT_LOG = (
    "[    0.000000] gpu-host kernel: Linux version 6.8.0-87-generic\n"
    "[    5.934455] gpu-host kernel: NVRM: loading NVIDIA UNIX Open Kernel Module  580.159.04\n"
)
BOOT_KLOG = {"text": BOOT_LOG, "source": "journalctl", "error": None}


class KernelLog:
    """Stand-in journalctl and dmesg in a directory put first on PATH."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.journal = f"{directory}/journalctl -k -b 0 --no-pager -o short-monotonic"
        self.dmesg = f"{directory}/dmesg"

    def set(self, name: str, out: str = "", err: str = "", rc: int = 0, hang: bool = False):
        (self.dir / f"{name}.out").write_text(out)
        (self.dir / f"{name}.err").write_text(err)
        path = self.dir / name
        path.write_text(
            "#!/bin/sh\n"
            f'echo "$*" >> "{self.dir}/{name}.calls"\n'
            + ("sleep 30\n" if hang else "")
            + f'cat "{self.dir}/{name}.out"\ncat "{self.dir}/{name}.err" >&2\nexit {rc}\n'
        )
        path.chmod(0o755)

    def calls(self, name: str) -> list:
        log = self.dir / f"{name}.calls"
        return log.read_text().splitlines() if log.exists() else []


@pytest.fixture(autouse=True)
def kernel_log(monkeypatch, tmp_path):
    """Every test reads the stand-ins, never this machine's kernel log."""
    directory = tmp_path / "klog-bin"
    directory.mkdir()
    stand_in = KernelLog(directory)
    stand_in.set("journalctl", BOOT_LOG)
    stand_in.set("dmesg", "")
    monkeypatch.setenv("PATH", f"{directory}:{os.environ['PATH']}")
    monkeypatch.setattr(nvidia_smi_facts, "TOOL_DIRS", [])
    return stand_in


def run_module_of(module, args, capsys):
    """Run a module's main() in process; (failed, result)."""
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        module.main()
    result = json.loads(capsys.readouterr().out)
    return exc.value.code != 0, result


def run_module(args, capsys):
    """Run nvidia_smi_facts' main() in process; (failed, result)."""
    return run_module_of(nvidia_smi_facts, args, capsys)


def smi_facts(result):
    return result["ansible_facts"]["nvidia_smi"]


@pytest.fixture
def fake_smi(monkeypatch, tmp_path):
    """Select a stand-in case; returns a function reading the stand-in's call log."""
    log = tmp_path / "calls.log"
    monkeypatch.setenv("KINDLING_FAKE_SMI_LOG", str(log))

    def select(case):
        monkeypatch.setenv("KINDLING_FAKE_SMI", case)
        return lambda: log.read_text().splitlines() if log.exists() else []

    return select


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


# ---------------------------------------------------------------------------
# In process
# ---------------------------------------------------------------------------


def test_h200_capture(fake_smi, capsys, kernel_log):
    calls = fake_smi("h200")
    failed, result = run_module({"nvidia_smi_path": FAKE_SMI}, capsys)
    assert not failed and result["changed"] is False
    facts = smi_facts(result)
    expected = build_facts(
        (CAPTURES / "nvidia-smi-q.xml").read_text(),
        (CAPTURES / "query-full.csv").read_text(),
        kernel_log=BOOT_KLOG,
    )
    assert {k: v for k, v in facts.items() if k != "fabric"} == expected
    assert facts["health"] == [] and facts["health_notes"] == []
    assert facts["xid_events"] == [] and facts["kernel_log_source"] == "journalctl"
    assert kernel_log.calls("dmesg") == []  # journalctl had this boot's messages
    assert facts["fabric"]["needs_fabric_manager"] is False  # one H200, fabric N/A
    assert facts["gpus"][0]["compute_capability"] == "9.0"
    assert facts["topology"] is None  # one GPU: topo -m is not run
    assert result["commands"] == [
        f"{FAKE_SMI} -q -x",
        kernel_log.journal,
        f"{FAKE_SMI} --query-gpu=index,pci.bus_id,uuid,compute_cap --format=csv",
    ]
    assert calls() == ["-q -x", "--query-gpu=index,pci.bus_id,uuid,compute_cap --format=csv"]


def test_eight_gpu_nvlink_host_runs_topo_once(fake_smi, capsys):
    calls = fake_smi("h100-8gpu")
    failed, result = run_module({"nvidia_smi_path": FAKE_SMI}, capsys)
    assert not failed
    facts = smi_facts(result)
    assert facts["gpu_count"] == 8
    assert facts["topology"]["all_nvlink"] is True
    assert facts["topology"]["matrix"]["GPU0"]["GPU7"] == "NV18"
    assert calls() == [
        "-q -x",
        "--query-gpu=index,pci.bus_id,uuid,compute_cap --format=csv",
        "topo -m",
        "nvlink -s",
    ]


def test_470_driver_without_compute_cap_field(fake_smi, capsys):
    fake_smi("v100-470")
    failed, result = run_module({"nvidia_smi_path": FAKE_SMI}, capsys)
    assert not failed
    facts = smi_facts(result)
    assert "is not a valid field to query" in facts["query_error"]
    assert facts["gpus"][0]["compute_capability"] == "7.0"
    assert facts["gpus"][0]["compute_capability_source"] == "name"
    assert facts["health"] == []
    assert [n["code"] for n in facts["health_notes"]] == [
        "pcie-gen-idle-downtrain",
        "retired-pages",
        "ecc-uncorrected-aggregate",
    ]


def test_mig(fake_smi, capsys):
    fake_smi("a100-mig")
    _, result = run_module({"nvidia_smi_path": FAKE_SMI}, capsys)
    assert [h["code"] for h in smi_facts(result)["health"]] == ["mig-enabled-unexpected"]
    _, result = run_module({"nvidia_smi_path": FAKE_SMI, "expect_mig": True}, capsys)
    assert smi_facts(result)["health"] == []
    assert len(smi_facts(result)["gpus"][0]["mig_devices"]) == 2


def test_degraded_host(fake_smi, capsys):
    fake_smi("degraded")
    failed, result = run_module({"nvidia_smi_path": FAKE_SMI, "require": True}, capsys)
    assert not failed  # health problems are reported, not fatal
    facts = smi_facts(result)
    assert [h["code"] for h in facts["health"]] == [
        "pcie-link-degraded",
        "row-remap-pending",
        "ecc-uncorrected-volatile",
        "thermal-slowdown",
    ]
    assert "power-cap-reached" in [h["code"] for h in facts["health_notes"]]
    assert facts["topology"]["matrix"]["GPU0"] == {"GPU1": "SYS"}


@pytest.mark.parametrize(
    ("case", "kind", "reboot"),
    [
        ("driver-not-loaded", "driver_not_loaded", True),
        ("version-mismatch", "driver_library_mismatch", True),
        ("gpu-lost", "gpu_lost", True),
        ("no-devices", "no_devices", False),
    ],
)
def test_error_outputs(fake_smi, capsys, case, kind, reboot):
    calls = fake_smi(case)
    failed, result = run_module({"nvidia_smi_path": FAKE_SMI}, capsys)
    assert not failed
    facts = smi_facts(result)
    assert facts["present"] is True
    assert facts["error"]["kind"] == kind
    assert facts["reboot_required"] is reboot
    assert (facts["reboot_reason"] is not None) is reboot
    assert facts["gpu_count"] == 0 and facts["gpus"] == [] and facts["driver_version"] is None
    assert calls() == ["-q -x"]  # nothing else is tried once -q -x fails

    failed, result = run_module({"nvidia_smi_path": FAKE_SMI, "require": True}, capsys)
    assert failed
    assert result["msg"].startswith("nvidia-smi failed (rc=")
    assert ("reboot the host" in result["msg"]) is reboot
    assert smi_facts(result)["error"]["kind"] == kind


def test_absent_nvidia_smi(tmp_path, capsys):
    missing = str(tmp_path / "nope" / "nvidia-smi")
    failed, result = run_module({"nvidia_smi_path": missing}, capsys)
    assert not failed
    facts = smi_facts(result)
    assert facts["present"] is False
    assert facts["error"]["kind"] == "not_found"
    assert facts["reboot_required"] is False
    assert result["commands"] == []
    failed, result = run_module({"nvidia_smi_path": missing, "require": True}, capsys)
    assert failed
    assert missing in result["msg"] and "install the NVIDIA driver" in result["msg"]


def test_not_executable_counts_as_absent(tmp_path, capsys):
    path = tmp_path / "nvidia-smi"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o644)
    _, result = run_module({"nvidia_smi_path": str(path)}, capsys)
    assert smi_facts(result)["present"] is False


def test_default_search_uses_path(fake_smi, monkeypatch, capsys):
    fake_smi("h200")
    monkeypatch.setenv("PATH", f"{BIN}:{os.environ['PATH']}")
    failed, result = run_module({}, capsys)
    assert not failed
    assert result["commands"][0] == f"{FAKE_SMI} -q -x"
    assert smi_facts(result)["driver_version"] == "580.159.04"


@pytest.mark.skipif(
    os.path.exists("/usr/bin/nvidia-smi"), reason="this host has a real nvidia-smi in /usr/bin"
)
def test_default_search_finds_nothing(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    _, result = run_module({}, capsys)
    facts = smi_facts(result)
    assert facts["present"] is False
    assert "PATH and /usr/bin" in facts["error"]["message"]


def test_timeout(fake_smi, capsys):
    fake_smi("hang")
    failed, result = run_module({"nvidia_smi_path": FAKE_SMI, "timeout": 1}, capsys)
    assert not failed
    assert smi_facts(result)["error"]["kind"] == "timeout"
    assert "timed out after 1 s" in smi_facts(result)["error"]["message"]
    failed, result = run_module(
        {"nvidia_smi_path": FAKE_SMI, "timeout": 1, "require": True}, capsys
    )
    assert failed and "timed out" in result["msg"]


def test_exec_failure(tmp_path, capsys):
    bad = tmp_path / "nvidia-smi"
    bad.write_text("not a script, no shebang\x00")
    bad.chmod(0o755)
    _, result = run_module({"nvidia_smi_path": str(bad)}, capsys)
    error = smi_facts(result)["error"]
    assert error["kind"] == "unknown" and "could not execute" in error["message"]


def test_unparseable_output(tmp_path, capsys):
    path = script(tmp_path, "nvidia-smi", 'echo "<html>surprise</html>"\n')
    failed, result = run_module({"nvidia_smi_path": path}, capsys)
    assert not failed
    assert smi_facts(result)["error"]["kind"] == "unparseable"
    failed, result = run_module({"nvidia_smi_path": path, "require": True}, capsys)
    assert failed and "not nvidia-smi XML" in result["msg"]


def test_zero_gpus_in_xml(tmp_path, capsys):
    path = script(
        tmp_path,
        "nvidia-smi",
        'echo "<nvidia_smi_log><driver_version>580.95.05</driver_version>'
        '<cuda_version>13.0</cuda_version><attached_gpus>0</attached_gpus></nvidia_smi_log>"\n',
    )
    failed, result = run_module({"nvidia_smi_path": path}, capsys)
    assert not failed
    assert result["commands"][0] == f"{path} -q -x"
    assert not any("--query-gpu" in c or " topo" in c for c in result["commands"])
    assert smi_facts(result)["gpu_count"] == 0
    failed, result = run_module({"nvidia_smi_path": path, "require": True}, capsys)
    assert failed and "reports no GPU" in result["msg"]


def test_topo_and_query_failures_keep_the_xml_facts(fake_smi, tmp_path, capsys):
    fake_smi("degraded")
    path = script(
        tmp_path,
        "nvidia-smi",
        'case "$1" in\n'
        '  topo) echo "topo: Unknown Error" ; exit 3 ;;\n'
        '  --query-gpu=*) echo "0, 9.0" ; exit 0 ;;\n'
        "esac\n"
        f'exec "{FAKE_SMI}" "$@"\n',
    )
    failed, result = run_module({"nvidia_smi_path": path}, capsys)
    assert not failed
    facts = smi_facts(result)
    assert facts["topology"] is None
    assert "topo: Unknown Error" in facts["topology_error"]
    assert "no header" in facts["query_error"]
    assert facts["gpus"][0]["compute_capability_source"] == "name"
    assert len(facts["health"]) == 4


def test_check_mode_is_the_same(fake_smi, capsys):
    fake_smi("h200")
    _, normal = run_module({"nvidia_smi_path": FAKE_SMI}, capsys)
    _, checked = run_module({"nvidia_smi_path": FAKE_SMI, "_ansible_check_mode": True}, capsys)
    assert smi_facts(checked) == smi_facts(normal)


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({"timeout": 0}, "timeout must be at least 1 second"),
        ({"timeout": "soon"}, "timeout"),
        ({"require": "maybe"}, "require"),
        ({"read_kernel_log": "maybe"}, "read_kernel_log"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_argument_validation(args, text, capsys):
    failed, result = run_module(args, capsys)
    assert failed and text in result["msg"]


# ---------------------------------------------------------------------------
# The kernel log: Xid events, fallbacks, errors
# ---------------------------------------------------------------------------


def test_xid_79_of_a_listed_gpu_fails_health(fake_smi, capsys, kernel_log):
    fake_smi("h100-8gpu")
    # CONSTRUCTED: an Xid 79 for GPU 0 of the 8-GPU case (00000000:18:00.0), twice
    line = (
        "[ {}] gpu-host kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, "
        "GPU has fallen off the bus.\n"
    )
    kernel_log.set("journalctl", BOOT_LOG + line.format("1843.308145") + line.format("1843.308200"))
    failed, result = run_module({"nvidia_smi_path": FAKE_SMI, "require": True}, capsys)
    assert not failed  # health problems are reported, not fatal
    facts = smi_facts(result)
    assert facts["kernel_log_source"] == "journalctl" and facts["xid_error"] is None
    (event,) = facts["xid_events"]
    assert (event["xid"], event["gpu"], event["pci_bus_id"], event["count"]) == (
        79,
        0,
        "00000000:18:00.0",
        2,
    )
    assert (event["first_seen"], event["last_seen"]) == ("1843.308145", "1843.308200")
    assert (event["severity"], event["action"], event["processes"]) == (
        "failing",
        "reboot",
        ["python"],
    )
    xid = [h for h in facts["health"] if h["code"] == "xid-79"]
    assert len(xid) == 1 and xid[0]["gpu"] == 0
    assert "2 time(s) since boot (first 1843.308145, last 1843.308200)" in xid[0]["message"]


def test_an_empty_journal_falls_back_to_dmesg(fake_smi, capsys, kernel_log):
    fake_smi("h200")
    kernel_log.set("journalctl", "-- No entries --\n", err="No journal files were found.\n")
    kernel_log.set("dmesg", (KLOG / "gpud-dmesg-T-xid119.log").read_text())
    _, result = run_module({"nvidia_smi_path": FAKE_SMI}, capsys)
    facts = smi_facts(result)
    assert facts["kernel_log_source"] == "dmesg" and facts["xid_error"] is None
    assert result["commands"][1:3] == [kernel_log.journal, kernel_log.dmesg]
    (event,) = facts["xid_events"]
    assert (event["xid"], event["count"], event["gpu"]) == (119, 5, None)  # not the H200's bus
    assert [h["code"] for h in facts["health"]] == ["xid-119"]
    assert "The GPU at 00000000:9B:00 (not listed by nvidia-smi)" in facts["health"][0]["message"]


def test_a_kernel_log_nobody_may_read_is_a_note_not_a_failure(fake_smi, capsys, kernel_log):
    fake_smi("h200")
    kernel_log.set("journalctl", "", err="Failed to open journal: Permission denied\n", rc=1)
    kernel_log.set(
        "dmesg", "", err="dmesg: read kernel buffer failed: Operation not permitted\n", rc=1
    )
    failed, result = run_module({"nvidia_smi_path": FAKE_SMI, "require": True}, capsys)
    assert not failed
    facts = smi_facts(result)
    assert facts["kernel_log_source"] is None and facts["xid_events"] == []
    assert facts["xid_error"] == (
        "journalctl failed (rc=1): Failed to open journal: Permission denied; "
        "dmesg failed (rc=1): dmesg: read kernel buffer failed: Operation not permitted"
    )
    assert facts["health"] == []
    assert [n["code"] for n in facts["health_notes"]] == ["kernel-log-unreadable"]
    assert "become: true" in facts["health_notes"][0]["message"]


def test_a_hanging_journalctl_times_out(fake_smi, capsys, kernel_log):
    fake_smi("h200")
    kernel_log.set("journalctl", BOOT_LOG, hang=True)
    kernel_log.set("dmesg", (KLOG / "akash-209-dmesg-T-xid79.log").read_text())
    _, result = run_module({"nvidia_smi_path": FAKE_SMI, "timeout": 1}, capsys)
    facts = smi_facts(result)
    assert facts["kernel_log_source"] == "dmesg"
    assert [h["code"] for h in facts["health"]] == ["xid-79"]


def test_without_journalctl_and_dmesg(fake_smi, capsys, monkeypatch):
    fake_smi("h200")
    monkeypatch.setattr(nvidia_smi_facts, "_tool", lambda name: None)  # this machine has both
    _, result = run_module({"nvidia_smi_path": FAKE_SMI}, capsys)
    facts = smi_facts(result)
    assert facts["xid_error"] == "journalctl not found; dmesg not found"
    assert [n["code"] for n in facts["health_notes"]] == ["kernel-log-unreadable"]


def test_read_kernel_log_false_reads_nothing(fake_smi, capsys, kernel_log):
    fake_smi("h200")
    kernel_log.set("journalctl", (KLOG / "akash-209-dmesg-T-xid79.log").read_text())
    _, result = run_module({"nvidia_smi_path": FAKE_SMI, "read_kernel_log": False}, capsys)
    facts = smi_facts(result)
    assert (facts["xid_events"], facts["kernel_log_source"], facts["xid_error"]) == ([], None, None)
    assert facts["health"] == [] and facts["health_notes"] == []
    assert kernel_log.calls("journalctl") == [] and kernel_log.calls("dmesg") == []
    assert not any("journalctl" in c or "dmesg" in c for c in result["commands"])


def test_a_lost_gpu_reports_its_xid_79(fake_smi, capsys, kernel_log):
    fake_smi("gpu-lost")
    kernel_log.set("journalctl", (KLOG / "ogkm-1151-journal-xid79.log").read_text())
    failed, result = run_module({"nvidia_smi_path": FAKE_SMI}, capsys)
    assert not failed
    facts = smi_facts(result)
    assert facts["error"]["kind"] == "gpu_lost" and facts["gpus"] == []
    assert [h["code"] for h in facts["health"]] == ["xid-79"]
    assert facts["xid_events"][0]["first_seen"] == "May 18 19:02:39"
    assert kernel_log.calls("journalctl") == ["-k -b 0 --no-pager -o short-monotonic"]


def test_tools_are_found_on_path_then_in_the_usual_dirs(monkeypatch, kernel_log):
    assert nvidia_smi_facts._tool("journalctl") == f"{kernel_log.dir}/journalctl"
    monkeypatch.setenv("PATH", "")
    assert nvidia_smi_facts._tool("journalctl") is None
    monkeypatch.setattr(nvidia_smi_facts, "TOOL_DIRS", [str(kernel_log.dir)])
    assert nvidia_smi_facts._tool("dmesg") == f"{kernel_log.dir}/dmesg"


def test_no_nvidia_smi_no_kernel_log(tmp_path, capsys, kernel_log):
    _, result = run_module({"nvidia_smi_path": str(tmp_path / "none")}, capsys)
    facts = smi_facts(result)
    assert facts["present"] is False and facts["kernel_log_source"] is None
    assert kernel_log.calls("journalctl") == []


# ---------------------------------------------------------------------------
# pci_facts: ansible_facts.nvidia_pci in the same run, exactly as nvidia_pci_facts
# ---------------------------------------------------------------------------

#: CONSTRUCTED: lspci -mm's line for the first GPU of tests/fixtures/pci/hgx-h100.txt
LSPCI_H100 = '1b:00.0 "3D controller" "NVIDIA Corporation" "GH100 [H100 SXM5 80GB]"'


class PciBus:
    """The sysfs tree of tests/fixtures/pci/hgx-h100.txt, and a stand-in lspci first on PATH
    that names its first GPU and logs each call to the stand-in nvidia-smi's log, so the
    order of the two reads shows."""

    def __init__(self, tmp_path: Path, monkeypatch):
        self.root = str(build_tree(PCI_CASES / "hgx-h100.txt", tmp_path / "sysfs"))
        self.log = tmp_path / "calls.log"
        bindir = tmp_path / "lspci-bin"
        bindir.mkdir()
        lspci = bindir / "lspci"
        lspci.write_text(
            "#!/bin/sh\n"
            f'echo "lspci $*" >> "{self.log}"\n'
            f"[ \"$3\" = 0000:1b:00.0 ] && echo '{LSPCI_H100}'\n"
            "exit 0\n"
        )
        lspci.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
        monkeypatch.setenv("KINDLING_FAKE_SMI_LOG", str(self.log))

    def calls(self) -> list:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def expected(self, capsys) -> dict:
        """What nvidia_pci_facts returns for this tree (its lspci calls leave the log)."""
        failed, result = run_module_of(nvidia_pci_facts, {"sysfs_root": self.root}, capsys)
        assert not failed
        self.log.unlink(missing_ok=True)
        return result["ansible_facts"]["nvidia_pci"]


@pytest.fixture
def pci_bus(tmp_path, monkeypatch):
    return PciBus(tmp_path, monkeypatch)


def test_pci_facts_on_a_working_driver_equal_nvidia_pci_facts(fake_smi, capsys, pci_bus):
    expected = pci_bus.expected(capsys)
    # the tree is not trivial: GPUs, one of them named by lspci, NVSwitches, a fabric decision
    assert expected["gpu_count"] == 8 and expected["nvswitch_count"] == 4
    assert expected["gpus"][0]["name"] == "GH100 [H100 SXM5 80GB]"
    assert expected["fabric_manager_needed_by_pci"] is True
    fake_smi("h100-8gpu")
    args = {"nvidia_smi_path": FAKE_SMI, "pci_sysfs_root": pci_bus.root}
    failed, plain = run_module(args, capsys)
    assert not failed and "nvidia_pci" not in plain["ansible_facts"]
    pci_bus.log.unlink()
    failed, result = run_module(dict(args, pci_facts=True, require=True), capsys)
    assert not failed and result["changed"] is False
    assert result["ansible_facts"]["nvidia_pci"] == expected
    assert smi_facts(result) == smi_facts(plain)  # nvidia_smi is as without pci_facts
    assert result["commands"] == plain["commands"]  # lspci is not listed there
    calls = pci_bus.calls()
    nvidia = sorted(d["pci_slot"] for d in expected["gpus"] + expected["nvswitches"])
    # the PCI bus first (each NVIDIA function named once), then nvidia-smi
    assert calls[: len(nvidia) + 1] == [f"lspci -mm -s {slot}" for slot in nvidia] + ["-q -x"]
    assert len([c for c in calls if c.startswith("lspci")]) == len(nvidia)


@pytest.mark.parametrize("require", [False, True])
@pytest.mark.parametrize("case", ["missing", "driver-not-loaded", "unparseable", "no-gpu"])
def test_pci_facts_on_every_way_out(fake_smi, tmp_path, capsys, pci_bus, case, require):
    expected = pci_bus.expected(capsys)
    if case == "missing":
        smi = str(tmp_path / "none" / "nvidia-smi")
    elif case == "unparseable":
        smi = script(tmp_path, "nvidia-smi", 'echo "<html>surprise</html>"\n')
    elif case == "no-gpu":
        smi = script(
            tmp_path,
            "nvidia-smi",
            'echo "<nvidia_smi_log><driver_version>580.95.05</driver_version>'
            '<attached_gpus>0</attached_gpus></nvidia_smi_log>"\n',
        )
    else:
        fake_smi(case)
        smi = FAKE_SMI
    args = {"nvidia_smi_path": smi, "pci_sysfs_root": pci_bus.root, "require": require}
    failed, result = run_module(dict(args, pci_facts=True), capsys)
    assert failed is require  # every case here fails with require=true
    assert result["ansible_facts"]["nvidia_pci"] == expected
    assert smi_facts(result)["gpu_count"] == 0
    failed, result = run_module(args, capsys)  # pci_facts defaults to false
    assert failed is require
    assert set(result["ansible_facts"]) == {"nvidia_smi"}


def test_pci_facts_false_reads_no_names(fake_smi, capsys, pci_bus):
    fake_smi("h100-8gpu")
    args = {"nvidia_smi_path": FAKE_SMI, "pci_sysfs_root": pci_bus.root, "pci_facts": False}
    failed, result = run_module(args, capsys)
    assert not failed and set(result["ansible_facts"]) == {"nvidia_smi"}
    assert not [c for c in pci_bus.calls() if c.startswith("lspci")]


def test_pci_facts_in_check_mode(fake_smi, capsys, pci_bus):
    expected = pci_bus.expected(capsys)
    fake_smi("h200")
    args = {"pci_sysfs_root": pci_bus.root, "pci_facts": True, "_ansible_check_mode": True}
    for smi in (FAKE_SMI, "/nonexistent/nvidia-smi"):  # with and without a driver
        failed, result = run_module(dict(args, nvidia_smi_path=smi), capsys)
        assert not failed and result["ansible_facts"]["nvidia_pci"] == expected


def test_pci_facts_read_the_same_default_root_as_nvidia_pci_facts(tmp_path, capsys, pci_bus):
    _, pci = run_module_of(nvidia_pci_facts, {}, capsys)
    _, smi = run_module({"nvidia_smi_path": str(tmp_path / "none"), "pci_facts": True}, capsys)
    assert pci["invocation"]["module_args"]["sysfs_root"] == "/sys/bus/pci/devices"
    assert smi["invocation"]["module_args"]["pci_sysfs_root"] == "/sys/bus/pci/devices"
    assert smi["ansible_facts"]["nvidia_pci"] == pci["ansible_facts"]["nvidia_pci"]


# ---------------------------------------------------------------------------
# End to end: ansible localhost -m nvidia_smi_facts
# ---------------------------------------------------------------------------


def ansible_bin(name: str) -> str:
    local = Path(sys.executable).parent / name
    return str(local if local.exists() else REPO_ROOT / ".venv" / "bin" / name)


def run_adhoc(
    module: str,
    args: dict,
    tmp_path: Path,
    env: dict | None = None,
    extra_vars: dict | None = None,
) -> dict:
    """`ansible localhost -m MODULE -a JSON` from the repo root; the host's result."""
    full_env = dict(os.environ)
    full_env.update(
        {
            "ANSIBLE_STDOUT_CALLBACK": "json",
            "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
            "ANSIBLE_CACHE_PLUGIN": "memory",
            "ANSIBLE_LOCAL_TEMP": str(tmp_path / "local"),
            "ANSIBLE_REMOTE_TEMP": str(tmp_path / "remote"),
            "ANSIBLE_NOCOLOR": "1",
        }
    )
    full_env.update(env or {})
    cmd = [
        ansible_bin("ansible"),
        "localhost",
        "-i",
        "localhost,",
        "-c",
        "local",
        "-e",
        json.dumps(dict({"ansible_python_interpreter": sys.executable}, **(extra_vars or {}))),
        "-m",
        module,
        "-a",
        json.dumps(args),
    ]
    proc = subprocess.run(
        cmd, cwd=REPO_ROOT, env=full_env, capture_output=True, text=True, timeout=180, check=False
    )
    text = proc.stdout
    start = text.find("\n{") + 1 if not text.startswith("{") else 0
    data, _ = json.JSONDecoder().raw_decode(text[start:])
    return data["plays"][0]["tasks"][0]["hosts"]["localhost"]


@pytest.mark.slow
def test_e2e_h200_capture(tmp_path):
    result = run_adhoc(
        "nvidia_smi_facts", {"nvidia_smi_path": FAKE_SMI}, tmp_path, {"KINDLING_FAKE_SMI": "h200"}
    )
    assert not result.get("failed")
    facts = result["ansible_facts"]["nvidia_smi"]
    expected = build_facts(
        (CAPTURES / "nvidia-smi-q.xml").read_text(),
        (CAPTURES / "query-full.csv").read_text(),
        kernel_log=BOOT_KLOG,
    )
    assert {k: v for k, v in facts.items() if k != "fabric"} == expected
    assert facts["health"] == [] and facts["kernel_log_source"] == "journalctl"
    assert facts["driver_version"] == "580.159.04"
    assert facts["cuda_driver_version"] == "13.0"
    gpu = facts["gpus"][0]
    assert (gpu["name"], gpu["compute_capability"], gpu["architecture"]) == (
        "NVIDIA H200",
        "9.0",
        "Hopper",
    )
    assert gpu["persistence_mode"] is True and gpu["mig_mode"] is False
    assert (gpu["pcie_gen_current"], gpu["pcie_width_current"]) == (5, 16)
    assert gpu["clock_event_reasons_active"] == ["gpu_idle"]


@pytest.mark.slow
def test_e2e_eight_gpus(tmp_path):
    result = run_adhoc(
        "nvidia_smi_facts",
        {"nvidia_smi_path": FAKE_SMI},
        tmp_path,
        {"KINDLING_FAKE_SMI": "h100-8gpu"},
    )
    facts = result["ansible_facts"]["nvidia_smi"]
    assert facts["gpu_count"] == 8
    assert facts["topology"]["link_types"] == ["NV18"]
    smi_calls = [c for c in result["commands"] if "nvidia-smi" in c]
    assert len(smi_calls) == 4  # -q -x, --query-gpu, topo -m, nvlink -s
    assert facts["fabric"]["nvlinks_up"] == {str(i): 18 for i in range(8)}


@pytest.mark.slow
def test_e2e_version_mismatch_requires_reboot(tmp_path):
    result = run_adhoc(
        "nvidia_smi_facts",
        {"nvidia_smi_path": FAKE_SMI},
        tmp_path,
        {"KINDLING_FAKE_SMI": "version-mismatch"},
    )
    assert not result.get("failed")
    facts = result["ansible_facts"]["nvidia_smi"]
    assert facts["reboot_required"] is True
    assert "upgraded without a reboot" in facts["reboot_reason"]


@pytest.mark.slow
def test_e2e_degraded_health(tmp_path):
    result = run_adhoc(
        "nvidia_smi_facts",
        {"nvidia_smi_path": FAKE_SMI, "expect_mig": False},
        tmp_path,
        {"KINDLING_FAKE_SMI": "degraded"},
    )
    codes = [h["code"] for h in result["ansible_facts"]["nvidia_smi"]["health"]]
    assert "row-remap-pending" in codes and "pcie-link-degraded" in codes


@pytest.mark.slow
def test_e2e_absent_with_require_fails(tmp_path):
    result = run_adhoc(
        "nvidia_smi_facts", {"nvidia_smi_path": str(tmp_path / "none"), "require": True}, tmp_path
    )
    assert result["failed"] is True
    assert "nvidia-smi not found" in result["msg"]


@pytest.mark.slow
@pytest.mark.parametrize("module", ["nvidia_smi_facts", "torch_cuda_facts", "gpu_stack_plan"])
def test_ansible_doc_renders(module):
    for extra in ([], ["--json"]):
        proc = subprocess.run(
            [ansible_bin("ansible-doc"), "-M", "library", *extra, module],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert "WARNING" not in proc.stderr.upper(), proc.stderr
    doc = json.loads(proc.stdout)[module]
    assert doc["doc"]["module"] == module
    assert doc["examples"].strip() and doc["return"]


def _python38():
    """A working Python 3.8 (the oldest target Kindling supports), if this machine has one."""
    candidates = [os.environ.get("KINDLING_PYTHON38"), shutil.which("python3.8")]
    candidates += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.8*/bin/python3.8"))
    for python in candidates:
        if not python:
            continue
        proc = subprocess.run(
            [python, "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode == 0 and proc.stdout.strip() == "(3, 8)":
            return python
    return None


@pytest.mark.slow
def test_e2e_modules_run_on_python_3_8(tmp_path):
    python = _python38()
    if python is None:
        pytest.skip("no Python 3.8 on this machine")
    extra = {"ansible_python_interpreter": python}
    env = {"KINDLING_FAKE_SMI": "h100-8gpu", "KINDLING_FAKE_PYTHON_BASE": python}
    smi = run_adhoc("nvidia_smi_facts", {"nvidia_smi_path": FAKE_SMI}, tmp_path, env, extra)
    assert smi["ansible_facts"]["nvidia_smi"]["topology"]["all_nvlink"] is True
    torch = run_adhoc(
        "torch_cuda_facts", {"python": str(BIN / "python-h200")}, tmp_path, env, extra
    )
    assert torch["ansible_facts"]["torch_cuda"]["python_version"].startswith("3.8.")
    assert torch["ansible_facts"]["torch_cuda"]["verdict"]["ok"] is True
    stack = run_adhoc(
        "gpu_stack_plan",
        {"driver_branch": "470", "cuda_version": "11.6", "fail_on_problems": False},
        tmp_path,
        env,
        extra,
    )
    assert [p["code"] for p in stack["problems"]] == ["driver-too-old-for-cuda"]
