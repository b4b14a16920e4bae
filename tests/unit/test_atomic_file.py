"""module_utils/atomic_file.py: the one atomic file writer."""

from __future__ import annotations

import io
import os
import stat

import pytest
from ansible.module_utils import atomic_file
from ansible.module_utils.atomic_file import write_atomic


def leftovers(directory):
    return [p.name for p in directory.iterdir() if p.name.startswith(".")]


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_writes_bytes_str_and_streams(tmp_path):
    target = tmp_path / "file"
    write_atomic(str(target), b"\x00bytes")
    assert target.read_bytes() == b"\x00bytes"
    write_atomic(str(target), "text \u00e9")
    assert target.read_bytes() == "text \u00e9".encode()
    write_atomic(str(target), io.BytesIO(b"streamed" * 1000))
    assert target.read_bytes() == b"streamed" * 1000
    assert leftovers(tmp_path) == []


def test_asked_mode_and_owner_are_set(tmp_path):
    target = tmp_path / "file"
    me = os.getuid()
    write_atomic(str(target), "x", mode=0o640, owner=me, group=os.getgid())
    assert mode_of(target) == 0o640
    assert (os.stat(target).st_uid, os.stat(target).st_gid) == (me, os.getgid())
    write_atomic(str(target), "y", mode=0o600)
    assert mode_of(target) == 0o600


def test_owner_and_group_by_name(tmp_path):
    import grp
    import pwd

    target = tmp_path / "file"
    user = pwd.getpwuid(os.getuid()).pw_name
    group = grp.getgrgid(os.getgid()).gr_name
    write_atomic(str(target), "x", owner=user, group=group)
    assert os.stat(target).st_uid == os.getuid()
    with pytest.raises(KeyError):
        write_atomic(str(target), "y", owner="no-such-user-kindling")
    assert target.read_text() == "x" and leftovers(tmp_path) == []


def test_an_existing_files_mode_is_kept_and_a_new_one_follows_the_umask(tmp_path):
    target = tmp_path / "file"
    target.write_text("old")
    target.chmod(0o604)
    write_atomic(str(target), "new")
    assert mode_of(target) == 0o604 and target.read_text() == "new"
    fresh = tmp_path / "fresh"
    umask = os.umask(0o027)
    try:
        write_atomic(str(fresh), "new")
    finally:
        os.umask(umask)
    assert mode_of(fresh) == 0o640


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "file"
    target.write_text("old content")

    class Broken(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, buffer):
            raise OSError("the source broke half way")

    with pytest.raises(OSError, match="broke half way"):
        write_atomic(str(target), Broken())
    assert target.read_text() == "old content"
    assert leftovers(tmp_path) == []


def test_a_failed_rename_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "file"
    target.write_text("old content")

    def refuse(src, dst):
        raise OSError("rename refused")

    monkeypatch.setattr(atomic_file.os, "replace", refuse)
    with pytest.raises(OSError, match="rename refused"):
        write_atomic(str(target), "new content", mode=0o644)
    assert target.read_text() == "old content"
    assert leftovers(tmp_path) == []


def test_an_owner_that_cannot_be_set_fails_cleanly(tmp_path, monkeypatch):
    target = tmp_path / "file"
    target.write_text("old")

    def refuse(fd, uid, gid):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(atomic_file.os, "fchown", refuse)
    with pytest.raises(PermissionError):
        write_atomic(str(target), "new", owner=0)
    assert target.read_text() == "old" and leftovers(tmp_path) == []


def test_an_existing_files_owner_is_kept_where_the_writer_may(tmp_path, monkeypatch):
    target = tmp_path / "file"
    target.write_text("old")
    if os.geteuid() == 0:
        os.chown(target, 65534, 65534)
        write_atomic(str(target), "new")
        assert (os.stat(target).st_uid, os.stat(target).st_gid) == (65534, 65534)
        os.chown(target, 65534, 65534)
    # Not root (here: fchown refused): the file becomes the writer's, as with atomic_move.

    def refuse(fd, uid, gid):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(atomic_file.os, "fchown", refuse)
    write_atomic(str(target), "newer")
    assert target.read_text() == "newer" and leftovers(tmp_path) == []


def test_the_temporary_is_in_the_targets_directory_with_the_prefix(tmp_path, monkeypatch):
    seen = []
    real = atomic_file.os.replace

    def spy(src, dst):
        seen.append(src)
        real(src, dst)

    monkeypatch.setattr(atomic_file.os, "replace", spy)
    write_atomic(str(tmp_path / "file"), "x", prefix=".custom.")
    assert os.path.dirname(seen[0]) == str(tmp_path)
    assert os.path.basename(seen[0]).startswith(".custom.")


def test_a_missing_directory_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_atomic(str(tmp_path / "absent" / "file"), "x")


def test_a_dangling_link_is_replaced_by_the_file(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere")
    write_atomic(str(link), "x")
    assert not link.is_symlink() and link.read_text() == "x"
