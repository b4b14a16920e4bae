"""module_utils/managed_files.py and library/managed_files.py: small rendered files written
in one module run, on real files in a temporary directory."""

from __future__ import annotations

import grp
import json
import os
import pwd
import stat

import managed_files
import pytest
from ansible.module_utils.testing import patch_module_args

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
    assert result["msg"] == f"managed_files: {missing} does not exist (writing {missing / 'a.sh'})"
