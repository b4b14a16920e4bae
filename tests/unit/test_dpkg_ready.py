"""dpkg_prepare and module_utils/dpkg_state: lock waiting and interrupted-run detection.

The lock tests hold a real fcntl lock from a child process (fcntl locks belong to a
process, so the test process itself could always take its own) on a file in tmp_path.
The end-to-end proof against real apt, dpkg and unattended-upgrades is
tests/reliability/test_faults.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import dpkg_prepare
import pytest
from ansible.module_utils import dpkg_state as ds
from ansible.module_utils.command import Result
from ansible.module_utils.testing import patch_module_args

HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o640)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
"""

AUDIT_HALF_CONFIGURED = """\
The following packages are only half configured, probably due to problems
configuring them the first time.  The configuration should be retried using
dpkg --configure <package> or the configure menu option in dselect:
 nvidia-driver-535    Kindling test fixture: stand-in for NVIDIA's nvidia-driver-535

The following packages have been unpacked but not yet configured.
They must be configured using dpkg --configure or the configure
menu option in dselect for them to work:
 cuda-drivers-535     Kindling test fixture: stand-in for NVIDIA's cuda-drivers-535
 nvidia-driver-535    (listed twice on purpose: reported once)
"""


@pytest.fixture
def held_lock(tmp_path):
    path = tmp_path / "lock-frontend"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path), "30"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "locked"
    yield str(path), proc.pid
    proc.kill()
    proc.wait()


def test_parse_proc_locks_keeps_holders_and_skips_waiters():
    text = (
        "1: POSIX  ADVISORY  WRITE 4242 fe:01:131090 0 EOF\n"
        "1: -> POSIX  ADVISORY  WRITE 4343 fe:01:131090 0 EOF\n"
        "2: OFDLCK ADVISORY  READ  -1 00:1a:77 0 EOF\n"
        "3: FLOCK  ADVISORY  WRITE 10 08:02:12 0 EOF\n"
        "garbage line\n"
    )
    held = ds.parse_proc_locks(text)
    assert held[(0xFE, 1, 131090)] == [4242]
    assert held[(0, 0x1A, 77)] == [-1]
    assert held[(8, 2, 12)] == [10]
    assert len(held) == 3


def test_parse_audit_lists_each_unfinished_package_once():
    assert ds.parse_audit(AUDIT_HALF_CONFIGURED) == ["nvidia-driver-535", "cuda-drivers-535"]
    assert ds.parse_audit("") == []


def test_interrupted_updates_reads_only_journal_entries(tmp_path):
    assert ds.interrupted_updates(str(tmp_path / "missing")) == []
    (tmp_path / "0001").write_text("")
    (tmp_path / "tmp.i").write_text("")
    assert ds.interrupted_updates(str(tmp_path)) == ["0001"]
    assert ds.needs_repair(["0001"], "") and ds.needs_repair([], AUDIT_HALF_CONFIGURED)
    assert not ds.needs_repair([], "\n")


def test_is_locked_sees_another_process_and_names_it(held_lock, tmp_path):
    path, pid = held_lock
    assert ds.is_locked(path) is True
    holder = ds.lock_holder(path)
    assert holder.pid == pid
    assert "HOLD_LOCK" not in holder.command and "-c" in holder.command
    free = tmp_path / "free"
    free.write_text("")
    assert ds.is_locked(str(free)) is False
    assert ds.is_locked(str(tmp_path / "absent")) is False


def test_wait_returns_as_soon_as_the_locks_come_free():
    now = [0.0]
    states = iter([[ds.LockHolder("/l", 1, "apt")], [ds.LockHolder("/l", 1, "apt")], []])
    result = ds.wait_for_locks(
        ["/l"],
        timeout=60,
        interval=5,
        busy=lambda paths: next(states),
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s),
    )
    assert result.busy == [] and result.waited == 10


def test_wait_gives_up_at_the_timeout_and_the_message_names_holder_and_variable():
    now = [0.0]
    holder = ds.LockHolder("/var/lib/dpkg/lock-frontend", 77, "/usr/bin/unattended-upgrade")
    result = ds.wait_for_locks(
        ["/var/lib/dpkg/lock-frontend"],
        timeout=12,
        interval=5,
        busy=lambda paths: [holder],
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s),
    )
    assert result.waited == 12 and result.busy == [holder]
    message = ds.lock_timeout_message(result, 12, "cuda_apt_lock_timeout")
    assert "/var/lib/dpkg/lock-frontend, held by pid 77 (/usr/bin/unattended-upgrade)" in message
    assert "still locked after 12 s" in message
    assert "raise cuda_apt_lock_timeout" in message
    assert "Do not delete the lock files" in message


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        dpkg_prepare.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def test_module_fails_after_the_bounded_wait(held_lock, capsys):
    path, pid = held_lock
    started = time.monotonic()
    failed, result = run_module(
        {"locks": [path], "timeout": 2, "timeout_variable": "nvidia_driver_apt_lock_timeout"},
        capsys,
    )
    elapsed = time.monotonic() - started
    assert failed
    assert 2 <= elapsed < 10
    assert f"held by pid {pid}" in result["msg"]
    assert "raise nvidia_driver_apt_lock_timeout" in result["msg"]


def test_module_rejects_a_negative_timeout(capsys):
    failed, result = run_module({"timeout": -1}, capsys)
    assert failed and "timeout is -1" in result["msg"]


def test_module_with_free_locks_reports_the_host_state(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(dpkg_prepare, "DPKG_UPDATES_DIR", str(tmp_path))
    monkeypatch.setattr(
        dpkg_prepare,
        "run_dpkg",
        lambda args: Result(0, "", ""),
    )
    failed, result = run_module({"locks": [str(tmp_path / "lock")], "timeout": 0}, capsys)
    assert not failed
    assert result["changed"] is False and result["interrupted"] is False


def test_module_repairs_an_interrupted_run(tmp_path, capsys, monkeypatch):
    (tmp_path / "0003").write_text("")
    calls = []

    def fake_dpkg(args):
        calls.append(args)
        if args == ["--configure", "-a"]:
            (tmp_path / "0003").unlink()
            return Result(0, "Setting up nvidia-driver-535\n", "")
        audit = AUDIT_HALF_CONFIGURED if len(calls) == 1 else ""
        return Result(0, audit, "")

    monkeypatch.setattr(dpkg_prepare, "DPKG_UPDATES_DIR", str(tmp_path))
    monkeypatch.setattr(dpkg_prepare, "run_dpkg", fake_dpkg)
    failed, result = run_module({"locks": [str(tmp_path / "lock")], "timeout": 0}, capsys)
    assert not failed
    assert result["changed"] is True and result["interrupted"] is True
    assert result["pending_updates"] == ["0003"]
    assert result["unfinished_packages"] == ["nvidia-driver-535", "cuda-drivers-535"]
    assert ["--configure", "-a"] in calls
    assert "finished it with dpkg --configure -a" in json.dumps(result["warnings"])


def test_module_check_mode_reports_without_repairing(tmp_path, capsys, monkeypatch):
    (tmp_path / "0003").write_text("")
    calls = []

    def fake_dpkg(args):
        calls.append(args)
        return Result(0, "", "")

    monkeypatch.setattr(dpkg_prepare, "DPKG_UPDATES_DIR", str(tmp_path))
    monkeypatch.setattr(dpkg_prepare, "run_dpkg", fake_dpkg)
    failed, result = run_module(
        {"locks": [str(tmp_path / "lock")], "timeout": 0, "_ansible_check_mode": True}, capsys
    )
    assert not failed and result["changed"] is True
    assert ["--configure", "-a"] not in calls


def test_module_fails_when_the_repair_fails(tmp_path, capsys, monkeypatch):
    (tmp_path / "0003").write_text("")

    def fake_dpkg(args):
        if args == ["--configure", "-a"]:
            return Result(
                1,
                "",
                "subprocess installed post-installation script returned error exit status 1",
            )
        return Result(0, "", "")

    monkeypatch.setattr(dpkg_prepare, "DPKG_UPDATES_DIR", str(tmp_path))
    monkeypatch.setattr(dpkg_prepare, "run_dpkg", fake_dpkg)
    failed, result = run_module({"locks": [str(tmp_path / "lock")], "timeout": 0}, capsys)
    assert failed
    assert "could not finish it (rc 1)" in result["msg"]
    assert "post-installation script returned error" in result["msg"]
