"""roles/site_lock: two runs against one host never interleave (real ansible-playbook runs).

Every run here is a real `ansible-playbook` against this machine over the local
connection, with the lock directory in a temporary folder.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import REPO_ROOT

ANSIBLE_PLAYBOOK = REPO_ROOT / ".venv" / "bin" / "ansible-playbook"

PLAY = """- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    site_lock_dir: {lock}
  tasks:
    - ansible.builtin.include_role:
        name: site_lock
    - ansible.builtin.command: sleep {hold}
      changed_when: false
    - ansible.builtin.include_role:
        name: site_lock
        tasks_from: release.yml
"""


@pytest.fixture
def tmp_path():
    """The tests' directory, under /run rather than /tmp.

    site_lock_dir must lie under /var/lib or /run: a lock in world-writable /tmp could be
    made or removed by any user (module_utils/role_inputs.py).
    """
    path = Path(tempfile.mkdtemp(prefix="kindling-site-lock-", dir="/run"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _playbook(tmp_path: Path, hold: int) -> Path:
    path = tmp_path / f"hold{hold}.yml"
    path.write_text(PLAY.format(lock=tmp_path / "site.lock", hold=hold))
    return path


def _run(playbook: Path, *extra: str, background: bool = False):
    cmd = [
        str(ANSIBLE_PLAYBOOK),
        "-i",
        "localhost,",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        str(playbook),
        *extra,
    ]
    if background:
        return subprocess.Popen(
            cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    return subprocess.run(
        cmd, cwd=REPO_ROOT, capture_output=True, text=True, check=False, timeout=300
    )


def _wait_for_lock(lock: Path, first: subprocess.Popen) -> dict:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if (lock / "owner.json").is_file():
            return json.loads((lock / "owner.json").read_text())
        assert first.poll() is None, first.communicate()[0]
        time.sleep(0.5)
    raise AssertionError("the first run never took the lock")


@pytest.mark.slow
def test_second_run_refuses_while_the_first_holds_the_lock(tmp_path):
    lock = tmp_path / "site.lock"
    first = _run(_playbook(tmp_path, 25), background=True)
    owner = _wait_for_lock(lock, first)
    assert owner["controller"] == socket.gethostname()
    assert owner["controller_pid"] == first.pid  # the holder's own ansible-playbook process
    second = _run(_playbook(tmp_path, 0))
    assert second.returncode != 0
    assert f"Another Kindling run holds {lock} on localhost: run {owner['run_id']}" in second.stdout
    assert "re-run with -e site_lock_break=true" in second.stdout
    assert json.loads((lock / "owner.json").read_text()) == owner  # untouched by the refusal
    out, _ = first.communicate(timeout=120)
    assert first.returncode == 0, out
    assert not lock.exists()


@pytest.mark.slow
def test_second_run_waits_and_then_converges(tmp_path):
    lock = tmp_path / "site.lock"
    first = _run(_playbook(tmp_path, 6), background=True)
    _wait_for_lock(lock, first)
    second = _run(_playbook(tmp_path, 0), "-e", "site_lock_wait_seconds=90")
    out, _ = first.communicate(timeout=120)
    assert first.returncode == 0, out
    assert second.returncode == 0, second.stdout
    assert not lock.exists()


def _stale_lock(tmp_path: Path, **owner) -> Path:
    lock = tmp_path / "site.lock"
    lock.mkdir()
    record = {
        "run_id": "old-run",
        "playbook": "site.yml",
        "started": "earlier",
        "epoch": int(time.time()),
        **owner,
    }
    (lock / "owner.json").write_text(json.dumps(record))
    return lock


@pytest.mark.slow
def test_lock_of_a_dead_run_on_this_controller_is_taken_over(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    _stale_lock(tmp_path, controller=socket.gethostname(), controller_pid=dead.pid)
    result = _run(_playbook(tmp_path, 0))
    assert result.returncode == 0, result.stdout
    # The callback folds long messages over lines: compare them as one line.
    assert "its ansible-playbook process on this controller is gone" in " ".join(
        result.stdout.split()
    )
    assert not (tmp_path / "site.lock").exists()


@pytest.mark.slow
def test_lock_from_another_controller_needs_site_lock_break(tmp_path):
    _stale_lock(tmp_path, controller="other-controller.example", controller_pid=1)
    refused = _run(_playbook(tmp_path, 0))
    assert refused.returncode != 0 and "run old-run" in refused.stdout
    taken = _run(_playbook(tmp_path, 0), "-e", "site_lock_break=true")
    assert taken.returncode == 0, taken.stdout
    assert "site_lock_break is true" in " ".join(taken.stdout.split())


# ---------------------------------------------------------------------------
# module_utils/site_lock.py, in process with a fake clock
# ---------------------------------------------------------------------------


class _Clock:
    def __init__(self, start: float = 1_000_000.0):
        self.now = start
        self.slept: list = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _take(lock: Path, clock: _Clock, run_id: str = "new", **kw):
    from ansible.module_utils import site_lock as sl

    defaults = {"wait_seconds": 0, "stale_after": 10800}
    defaults.update(kw)
    return sl.take(
        str(lock),
        {"run_id": run_id, "epoch": int(clock.now)},
        clock=clock,
        sleep=clock.sleep,
        **defaults,
    )


def test_take_a_free_lock_and_release_it_only_as_its_holder(tmp_path):
    from ansible.module_utils import site_lock as sl

    lock = tmp_path / "sub" / "site.lock"
    clock = _Clock()
    assert _take(lock, clock) == {"taken": True, "took_over": None, "holder": None, "age": None}
    assert oct(lock.stat().st_mode & 0o777) == "0o700"
    assert json.loads((lock / "owner.json").read_text())["run_id"] == "new"
    assert _take(lock, clock)["taken"]  # the same run again: it holds it already
    assert sl.release(str(lock), "another") is False and lock.exists()
    assert sl.release(str(lock), "new") is True and not lock.exists()


def test_a_held_lock_is_waited_for_then_refused(tmp_path):
    clock = _Clock()
    lock = _stale_lock(tmp_path, epoch=int(clock.now) - 100)
    result = _take(lock, clock, wait_seconds=12)
    assert result["taken"] is False and result["holder"]["run_id"] == "old-run"
    assert result["age"] == 112 and clock.slept == [5.0, 5.0, 2.0]


@pytest.mark.parametrize(
    "kw, epoch_ago, reason",
    [
        ({"break_lock": True}, 10, "site_lock_break is true"),
        ({"dead_runs": ["old-run"]}, 10, "its ansible-playbook process on this controller is gone"),
        ({}, 10800, "older than site_lock_stale_after"),
    ],
)
def test_a_held_lock_is_taken_over_only_for_a_reason(tmp_path, kw, epoch_ago, reason):
    clock = _Clock()
    lock = _stale_lock(tmp_path, epoch=int(clock.now) - epoch_ago)
    result = _take(lock, clock, **kw)
    assert result["taken"] and result["took_over"] == reason
    assert json.loads((lock / "owner.json").read_text())["run_id"] == "new"


def test_a_lock_without_owner_json_is_an_unknown_run_and_stale(tmp_path):
    lock = tmp_path / "site.lock"
    lock.mkdir()
    result = _take(lock, _Clock())
    assert result["took_over"] == "older than site_lock_stale_after"
    assert result["holder"]["run_id"] == "unknown (no owner.json)"
