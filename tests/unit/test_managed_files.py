"""module_utils/managed_files.py and library/managed_files_write.py: small rendered files written
in one module run, on real files in a temporary directory."""

from __future__ import annotations

import grp
import hashlib
import json
import os
import pwd
import stat

import managed_files_write as managed_files
import pytest
from ansible.module_utils.managed_files import describe, pending, up_to_date
from ansible.module_utils.testing import patch_module_args
from test_gpu_stack_check import run_on_controller_task

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name


def run(files, capsys, check_mode=False, diff=False):
    args = {"files": files, "_ansible_check_mode": check_mode, "_ansible_diff": diff}
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        managed_files.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def entry(path, content, mode="0644"):
    return {"path": str(path), "content": content, "owner": ME, "group": MY_GROUP, "mode": mode}


def test_writes_new_files_then_changes_nothing(tmp_path, capsys):
    a, b = tmp_path / "cuda.sh", tmp_path / "cuda-13-0.conf"
    files = [
        entry(a, "export CUDA_HOME=/usr/local/cuda\n"),
        entry(b, "/usr/local/cuda-13.0/lib64\n"),
    ]
    failed, first = run(files, capsys)
    assert not failed and first["changed"] is True
    assert [f["created"] for f in first["files"]] == [True, True]
    assert a.read_text() == "export CUDA_HOME=/usr/local/cuda\n"
    assert stat.S_IMODE(a.stat().st_mode) == 0o644
    failed, again = run(files, capsys)
    assert not failed and again["changed"] is False
    assert [f["changed"] for f in again["files"]] == [False, False]
    assert again["diff"] == []
    # No temporary file is left beside them.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cuda-13-0.conf", "cuda.sh"]


def test_only_the_file_that_differs_changes(tmp_path, capsys):
    a, b = tmp_path / "a.sh", tmp_path / "b.conf"
    run([entry(a, "one\n"), entry(b, "two\n")], capsys)
    inode = b.stat().st_ino
    failed, result = run([entry(a, "one\n"), entry(b, "three\n")], capsys, diff=True)
    assert not failed and result["changed"] is True
    assert [f["changed"] for f in result["files"]] == [False, True]
    assert b.read_text() == "three\n" and b.stat().st_ino != inode  # replaced, not edited
    assert result["diff"] == [
        {"before_header": str(b), "after_header": str(b), "before": "two\n", "after": "three\n"}
    ]


def test_a_mode_alone_is_a_change(tmp_path, capsys):
    a = tmp_path / "a.sh"
    run([entry(a, "x\n")], capsys)
    failed, result = run([entry(a, "x\n", mode="0600")], capsys)
    assert not failed and result["changed"] is True and result["diff"] == []
    assert stat.S_IMODE(a.stat().st_mode) == 0o600


def test_check_mode_reports_and_writes_nothing(tmp_path, capsys):
    a, b = tmp_path / "new.sh", tmp_path / "old.sh"
    b.write_text("old\n")
    os.chmod(b, 0o644)
    failed, result = run([entry(a, "new\n"), entry(b, "newer\n")], capsys, check_mode=True)
    assert not failed and result["changed"] is True
    assert [f["changed"] for f in result["files"]] == [True, True]
    assert not a.exists() and b.read_text() == "old\n"


def test_a_missing_directory_is_refused(tmp_path, capsys):
    failed, result = run([entry(tmp_path / "nowhere" / "a.sh", "x\n")], capsys)
    assert failed
    missing = tmp_path / "nowhere"
    assert (
        result["msg"]
        == f"managed_files_write: {missing} does not exist (writing {missing / 'a.sh'})"
    )


# --- describe, up_to_date, pending: what the controller side compares


def test_describe_reads_bytes_owner_group_and_mode(tmp_path):
    a = tmp_path / "a.sh"
    a.write_text("x\n")
    os.chmod(a, 0o640)
    found = describe(str(a))
    assert found == {
        "path": str(a),
        "regular": True,
        "sha256": hashlib.sha256(b"x\n").hexdigest(),
        "owner": ME,
        "owner_id": os.getuid(),
        "group": MY_GROUP,
        "group_id": os.getgid(),
        "mode": "0640",
    }
    # Missing, a link (writing replaces it with a file), a directory and a path under a
    # file (its directory is not one) are not files here.
    link = tmp_path / "link.sh"
    link.symlink_to(a)
    for path in (tmp_path / "gone.sh", link, tmp_path, a / "under.sh"):
        assert describe(str(path)) == {"path": str(path), "regular": False}


def test_describe_agrees_with_what_the_module_wrote(tmp_path, capsys):
    a = tmp_path / "a.sh"
    files = [entry(a, "export A=1\n", mode="0644")]
    run(files, capsys)
    assert pending(files, [describe(str(a))]) == []
    os.chmod(a, 0o600)
    assert pending(files, [describe(str(a))]) == files


FOUND = {
    "path": "/etc/profile.d/cuda.sh",
    "regular": True,
    "sha256": hashlib.sha256(b"x\n").hexdigest(),
    "owner": "root",
    "owner_id": 0,
    "group": "root",
    "group_id": 0,
    "mode": "0644",
}
WANTED = {"path": "/etc/profile.d/cuda.sh", "content": "x\n", "owner": "root", "group": "root"}


@pytest.mark.parametrize(
    "change, expected",
    [
        ({}, True),
        ({"mode": "0644"}, True),
        ({"mode": 0o644}, True),  # YAML's unquoted 0644
        ({"mode": "644"}, True),
        ({"owner": "0", "group": "0"}, True),  # ids name the same owner
        ({"owner": None, "group": None, "mode": None}, True),  # unmanaged attributes
        ({"content": "y\n"}, False),
        ({"owner": "nobody"}, False),
        ({"group": "adm"}, False),
        ({"mode": "0600"}, False),
        ({"mode": "u=rw,g=r,o=r"}, False),  # symbolic: only the module applies it
    ],
)
def test_up_to_date_compares_bytes_owner_group_and_mode(change, expected):
    assert up_to_date(dict(WANTED, **change), FOUND) is expected


def test_up_to_date_needs_a_regular_file_read_earlier():
    assert up_to_date(WANTED, None) is False
    assert up_to_date(WANTED, {"path": WANTED["path"], "regular": False}) is False


def test_pending_lists_what_the_read_does_not_show_written():
    other = dict(WANTED, path="/etc/ld.so.conf.d/cuda-13-0.conf", content="/usr/local/cuda\n")
    assert pending([WANTED, other], [FOUND]) == [other]  # not described: pending
    assert pending([WANTED], [dict(FOUND, path="/etc/profile.d/../profile.d/cuda.sh")]) == []
    assert pending([dict(WANTED, content="y\n")], [FOUND]) == [dict(WANTED, content="y\n")]


# --- action_plugins/managed_files_write.py: nothing runs on the host when the read shows it done


@pytest.mark.slow
def test_the_controller_answers_when_the_earlier_read_shows_every_file_written(tmp_path):
    # The host refuses SSH (port 9 on loopback): a module run there makes the task
    # unreachable. With a read showing the files as wanted the task still answers.
    unreachable = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9}
    written = dict(FOUND, path=str(tmp_path / "cuda.sh"))
    files = [dict(WANTED, path=written["path"], mode="0644")]
    result = run_on_controller_task(
        "managed_files_write", {"files": files, "current": [written]}, tmp_path, unreachable
    )
    assert not result.get("unreachable") and not result.get("failed"), result
    assert result["changed"] is False
    assert result["files"] == [{"path": written["path"], "changed": False, "created": False}]
    # One byte different: the module has to run on the host, which cannot be reached.
    differs = dict(written, sha256=hashlib.sha256(b"y\n").hexdigest())
    result = run_on_controller_task(
        "managed_files_write", {"files": files, "current": [differs]}, tmp_path, unreachable
    )
    assert result.get("unreachable") is True, result
    # Without a read it runs there too.
    result = run_on_controller_task("managed_files_write", {"files": files}, tmp_path, unreachable)
    assert result.get("unreachable") is True, result


@pytest.mark.slow
def test_the_controller_side_refuses_a_malformed_read(tmp_path):
    result = run_on_controller_task(
        "managed_files_write",
        {"files": [WANTED], "current": [{"sha256": "abc"}]},
        tmp_path,
        {"ansible_connection": "local"},
    )
    assert result.get("failed") is True
    assert result["msg"].startswith("managed_files_write: ")
    assert "path" in result["msg"] and "regular" in result["msg"]
