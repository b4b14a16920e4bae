"""module_utils/secret_files.py and library/secret_token_create.py: a root-only token file.

``ensure_token`` runs against tmp_path as its ``root`` (the tests run as root, so the
directories they make are root's). The module runs in-process, with its ensure_token
pointed at tmp_path the same way, and once unpatched on a path under /tmp, which it must
refuse: /tmp is world-writable.
"""

from __future__ import annotations

import json
import os
import re
import stat

import pytest
import secret_token_create
from ansible.module_utils.secret_files import SecretPathError, ensure_token
from ansible.module_utils.testing import patch_module_args

TOKEN = "/etc/jupyter/token"


def make_dirs(root, *parts, mode=0o755):
    path = root
    for part in parts:
        path = path / part
        path.mkdir(exist_ok=True)
        path.chmod(mode)
    return path


def mode_of(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_runs_as_root():
    assert os.geteuid() == 0, "these tests create root-owned directories and chown to others"


def test_creates_a_root_only_token(tmp_path):
    make_dirs(tmp_path, "etc", "jupyter")
    result = ensure_token(TOKEN, root=str(tmp_path))
    assert result == {"changed": True, "done": [f"write a new token to {TOKEN}"]}
    path = tmp_path / "etc" / "jupyter" / "token"
    data = path.read_bytes()
    assert len(data) == 49
    assert re.fullmatch(rb"[0-9a-f]{48}\n", data)
    assert mode_of(path) == 0o600
    info = os.lstat(path)
    assert (info.st_uid, info.st_gid) == (0, 0)


def test_each_new_token_is_random(tmp_path):
    for name in ("a", "b"):
        make_dirs(tmp_path, name)
        ensure_token(f"/{name}/token", root=str(tmp_path))
    assert (tmp_path / "a" / "token").read_bytes() != (tmp_path / "b" / "token").read_bytes()


def test_keeps_an_existing_token_and_fixes_its_mode(tmp_path):
    make_dirs(tmp_path, "etc", "jupyter")
    path = tmp_path / "etc" / "jupyter" / "token"
    path.write_text("kept-token\n")
    path.chmod(0o644)
    result = ensure_token(TOKEN, root=str(tmp_path))
    assert result == {"changed": True, "done": ["mode 0600 (was 0644)"]}
    assert path.read_text() == "kept-token\n"
    assert mode_of(path) == 0o600
    again = ensure_token(TOKEN, root=str(tmp_path))
    assert again == {"changed": False, "done": []}
    assert path.read_text() == "kept-token\n"


def test_keeps_an_existing_token_and_fixes_its_owner(tmp_path):
    make_dirs(tmp_path, "etc", "jupyter")
    path = tmp_path / "etc" / "jupyter" / "token"
    path.write_text("kept-token\n")
    path.chmod(0o600)
    os.chown(path, 65534, 65534)
    result = ensure_token(TOKEN, root=str(tmp_path))
    assert result == {"changed": True, "done": ["owner root:root"]}
    info = os.lstat(path)
    assert (info.st_uid, info.st_gid) == (0, 0)
    assert path.read_text() == "kept-token\n"


def test_a_new_token_is_unchanged_on_the_next_call(tmp_path):
    make_dirs(tmp_path, "etc", "jupyter")
    ensure_token(TOKEN, root=str(tmp_path))
    path = tmp_path / "etc" / "jupyter" / "token"
    first = path.read_bytes()
    assert ensure_token(TOKEN, root=str(tmp_path)) == {"changed": False, "done": []}
    assert path.read_bytes() == first


def test_check_mode_changes_nothing(tmp_path):
    make_dirs(tmp_path, "etc", "jupyter")
    result = ensure_token(TOKEN, check_mode=True, root=str(tmp_path))
    assert result == {"changed": True, "done": [f"write a new token to {TOKEN}"]}
    assert not (tmp_path / "etc" / "jupyter" / "token").exists()

    path = tmp_path / "etc" / "jupyter" / "token"
    path.write_text("kept-token\n")
    path.chmod(0o640)
    result = ensure_token(TOKEN, check_mode=True, root=str(tmp_path))
    assert result == {"changed": True, "done": ["mode 0600 (was 0640)"]}
    assert mode_of(path) == 0o640
    assert path.read_text() == "kept-token\n"


def test_check_mode_with_a_missing_directory_creates_nothing(tmp_path):
    make_dirs(tmp_path, "etc")
    result = ensure_token(TOKEN, check_mode=True, root=str(tmp_path))
    assert result == {
        "changed": True,
        "done": ["create /etc/jupyter (root, 0700)", f"write a new token to {TOKEN}"],
    }
    assert not (tmp_path / "etc" / "jupyter").exists()


def test_creates_a_missing_directory_root_only(tmp_path):
    make_dirs(tmp_path, "etc")
    result = ensure_token(TOKEN, root=str(tmp_path))
    assert result == {
        "changed": True,
        "done": ["create /etc/jupyter (root, 0700)", f"write a new token to {TOKEN}"],
    }
    directory = tmp_path / "etc" / "jupyter"
    assert directory.is_dir() and not directory.is_symlink()
    assert mode_of(directory) == 0o700
    assert mode_of(directory / "token") == 0o600


def test_refuses_a_symlink_at_the_file_and_leaves_its_target_alone(tmp_path):
    jupyter = make_dirs(tmp_path, "etc", "jupyter")
    target = tmp_path / "victim"
    target.write_text("do not touch\n")
    target.chmod(0o644)
    (jupyter / "token").symlink_to(target)
    with pytest.raises(SecretPathError, match="is a symbolic link"):
        ensure_token(TOKEN, root=str(tmp_path))
    assert target.read_text() == "do not touch\n"
    assert mode_of(target) == 0o644
    assert (jupyter / "token").is_symlink()


def test_refuses_a_dangling_symlink_at_the_file(tmp_path):
    jupyter = make_dirs(tmp_path, "etc", "jupyter")
    (jupyter / "token").symlink_to(tmp_path / "planted")
    with pytest.raises(SecretPathError, match="is a symbolic link"):
        ensure_token(TOKEN, root=str(tmp_path))
    assert not (tmp_path / "planted").exists()


def test_refuses_a_directory_not_owned_by_root(tmp_path):
    jupyter = make_dirs(tmp_path, "etc", "jupyter")
    os.chown(jupyter, 65534, 65534)
    with pytest.raises(SecretPathError) as err:
        ensure_token(TOKEN, root=str(tmp_path))
    assert str(err.value) == f"{TOKEN}: {jupyter} is owned by uid 65534, not root"
    assert not (jupyter / "token").exists()


def test_refuses_a_directory_others_can_write(tmp_path):
    jupyter = make_dirs(tmp_path, "etc", "jupyter", mode=0o1777)
    with pytest.raises(SecretPathError, match=r"writable by users other than root \(mode 1777\)"):
        ensure_token(TOKEN, root=str(tmp_path))
    assert not (jupyter / "token").exists()


def test_refuses_a_symlinked_directory(tmp_path):
    make_dirs(tmp_path, "etc")
    elsewhere = make_dirs(tmp_path, "elsewhere")
    (tmp_path / "etc" / "jupyter").symlink_to(elsewhere)
    with pytest.raises(SecretPathError, match="is a symbolic link, which someone could point"):
        ensure_token(TOKEN, root=str(tmp_path))
    assert list(elsewhere.iterdir()) == []


def test_refuses_an_empty_or_odd_file(tmp_path):
    jupyter = make_dirs(tmp_path, "etc", "jupyter")
    (jupyter / "token").write_text("")
    with pytest.raises(SecretPathError, match="is empty; remove it"):
        ensure_token(TOKEN, root=str(tmp_path))
    (jupyter / "token").unlink()
    (jupyter / "token").mkdir()
    with pytest.raises(SecretPathError, match="is not a regular file"):
        ensure_token(TOKEN, root=str(tmp_path))


# --- library/secret_token_create.py, in-process


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        secret_token_create.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


@pytest.fixture
def fake_root(tmp_path, monkeypatch):
    """The module's ensure_token with tmp_path as its root, so it writes under tmp_path."""
    make_dirs(tmp_path, "etc", "jupyter")

    def under_tmp(path, check_mode=False):
        return ensure_token(path, check_mode=check_mode, root=str(tmp_path))

    monkeypatch.setattr(secret_token_create, "ensure_token", under_tmp)
    return tmp_path


def test_module_writes_a_token_and_never_returns_it(fake_root, capsys):
    failed, result = run_module({"path": TOKEN}, capsys)
    assert not failed, result
    assert result["changed"] is True
    assert result["done"] == [f"write a new token to {TOKEN}"]
    path = fake_root / "etc" / "jupyter" / "token"
    token = path.read_text().strip()
    assert len(token) == 48
    assert token not in json.dumps(result)
    assert mode_of(path) == 0o600
    failed, again = run_module({"path": TOKEN}, capsys)
    assert not failed and again["changed"] is False and again["done"] == []
    assert path.read_text().strip() == token


def test_module_check_mode_writes_nothing(fake_root, capsys):
    failed, result = run_module({"path": TOKEN, "_ansible_check_mode": True}, capsys)
    assert not failed, result
    assert result["changed"] is True
    assert not os.path.lexists(fake_root / "etc" / "jupyter" / "token")


def test_module_refuses_a_symlink(fake_root, capsys):
    target = fake_root / "victim"
    target.write_text("do not touch\n")
    (fake_root / "etc" / "jupyter" / "token").symlink_to(target)
    failed, result = run_module({"path": TOKEN}, capsys)
    assert failed
    assert result["msg"].startswith(
        f"Refusing to write a secret: {TOKEN}: {fake_root}/etc/jupyter/"
    )
    assert "is a symbolic link" in result["msg"]
    assert target.read_text() == "do not touch\n"


def test_module_refuses_a_world_writable_directory(tmp_path, capsys):
    # The real ensure_token, from /: /tmp (1777) is on the way.
    path = str(tmp_path / "token")
    failed, result = run_module({"path": path}, capsys)
    assert failed
    assert result["msg"].startswith(f"Refusing to write a secret: {path}: /tmp is writable by ")
    assert result["msg"].endswith(
        "Keep it in a root-owned directory that only root can write, such as /etc/jupyter."
    )
    assert not os.path.lexists(path)
