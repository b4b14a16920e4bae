"""module_utils/group_share.py and the group_share module, on a tree under tmp_path shared
with the system group daemon (tests run as root, whose group differs from it)."""

from __future__ import annotations

import grp
import json
import os
import shutil
import stat

import group_share
import pytest
from ansible.module_utils import group_share as utils
from ansible.module_utils.group_share import (
    ShareError,
    group_id,
    message,
    run,
    share,
    wanted_mode,
)
from ansible.module_utils.testing import patch_module_args

GROUP = "daemon"


@pytest.fixture
def gid():
    try:
        found = grp.getgrnam(GROUP).gr_gid
    except KeyError:
        pytest.fail(f"these tests need the system group {GROUP!r}, which this host lacks")
    assert found != os.getgid(), f"group {GROUP!r} must differ from the test user's group"
    return found


def mode_of(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def gid_of(path) -> int:
    return os.lstat(path).st_gid


class Tree:
    """tree/ with files of several modes, a nested directory, a fifo, a link to a file
    outside the tree and a dangling link; every entry in root's group."""

    def __init__(self, tmp_path):
        self.outside = tmp_path / "outside.txt"
        self.outside.write_text("not in the tree\n")
        os.chmod(self.outside, 0o644)
        self.root = tmp_path / "tree"
        self.nested = self.root / "lib" / "site"
        self.nested.mkdir(parents=True)
        self.private = self.root / "private"  # 0600
        self.plain = self.root / "lib" / "plain.py"  # 0644
        self.tool = self.nested / "tool"  # 0755
        self.shared = self.root / "shared.txt"  # 0664: already group rw
        for path, mode in (
            (self.private, 0o600),
            (self.plain, 0o644),
            (self.tool, 0o755),
            (self.shared, 0o664),
        ):
            path.write_text("x\n")
            os.chmod(path, mode)
        self.fifo = self.root / "fifo"
        os.mkfifo(self.fifo)
        os.chmod(self.fifo, 0o644)
        self.link = self.root / "link"
        self.link.symlink_to(self.outside)
        self.dangling = self.root / "dangling"
        self.dangling.symlink_to(tmp_path / "nowhere")
        for directory in (self.root, self.root / "lib", self.nested):
            os.chmod(directory, 0o755)
        os.chmod(self.root / "lib", 0o750)
        self.dirs = [self.root, self.root / "lib", self.nested]
        self.files = [self.private, self.plain, self.tool, self.shared]
        self.others = [self.fifo, self.link, self.dangling]
        for path in self.dirs + self.files + self.others + [self.outside]:
            os.lchown(path, -1, 0)

    def entries(self):
        return self.dirs + self.files + self.others

    def modes(self):
        return {str(p): mode_of(p) for p in [*self.entries(), self.outside]}

    def groups(self):
        return {str(p): gid_of(p) for p in [*self.entries(), self.outside]}


@pytest.fixture
def tree(tmp_path):
    return Tree(tmp_path)


# ---------------------------------------------------------------------------
# module_utils/group_share.py
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mode, wanted",
    [
        (stat.S_IFDIR | 0o755, 0o2775),
        (stat.S_IFDIR | 0o700, 0o2770),
        (stat.S_IFDIR | 0o1777, 0o3777),  # sticky bit kept
        (stat.S_IFDIR | 0o2775, None),
        (stat.S_IFDIR | 0o2070, None),
        (stat.S_IFDIR | 0o775, 0o2775),  # setgid alone missing
        (stat.S_IFREG | 0o600, 0o660),
        (stat.S_IFREG | 0o644, 0o664),
        (stat.S_IFREG | 0o755, 0o775),
        (stat.S_IFREG | 0o4755, 0o4775),  # setuid kept
        (stat.S_IFREG | 0o640, 0o660),  # group write alone missing
        (stat.S_IFREG | 0o664, None),
        (stat.S_IFREG | 0o060, None),
        (stat.S_IFLNK | 0o777, None),
        (stat.S_IFIFO | 0o600, None),
        (stat.S_IFSOCK | 0o755, None),
    ],
)
def test_wanted_mode_adds_only_the_missing_group_bits(mode, wanted):
    assert wanted_mode(mode) == wanted


def test_group_id_of_a_group_and_of_none(gid):
    assert group_id(GROUP) == gid
    assert group_id("kindling-no-such-group") is None


def test_share_gives_the_tree_the_group_and_the_group_bits(tree, gid):
    outside_before = (gid_of(tree.outside), mode_of(tree.outside))
    link_mode = mode_of(tree.link)
    result = share(str(tree.root), gid)
    assert result["changed"] is True
    assert result["regrouped"] == len(tree.entries()) == 10
    assert result["dirs_opened"] == 3
    assert result["files_opened"] == 3  # shared.txt already had group rw
    assert len(result["examples"]) == 5
    assert result["examples"][0] == str(tree.root)
    assert all(e.startswith(str(tree.root)) for e in result["examples"])
    assert all(gid_of(p) == gid for p in tree.entries()), tree.groups()
    assert tree.modes() == {
        str(tree.root): 0o2775,
        str(tree.root / "lib"): 0o2770,
        str(tree.nested): 0o2775,
        str(tree.private): 0o660,
        str(tree.plain): 0o664,
        str(tree.tool): 0o775,
        str(tree.shared): 0o664,
        str(tree.fifo): 0o644,  # the group only
        str(tree.link): link_mode,
        str(tree.dangling): link_mode,
        str(tree.outside): 0o644,
    }
    # The link changed, its target outside the tree did not.
    assert (gid_of(tree.outside), mode_of(tree.outside)) == outside_before
    assert os.readlink(tree.dangling) == str(tree.root.parent / "nowhere")


def test_a_second_share_changes_nothing(tree, gid):
    assert share(str(tree.root), gid)["changed"] is True
    modes, groups = tree.modes(), tree.groups()
    again = share(str(tree.root), gid)
    assert again == {
        "changed": False,
        "regrouped": 0,
        "dirs_opened": 0,
        "files_opened": 0,
        "examples": [],
    }
    assert tree.modes() == modes and tree.groups() == groups


def test_check_mode_counts_and_changes_nothing(tree, gid):
    modes, groups = tree.modes(), tree.groups()
    checked = share(str(tree.root), gid, check_mode=True)
    assert tree.modes() == modes and tree.groups() == groups
    assert (checked["regrouped"], checked["dirs_opened"], checked["files_opened"]) == (10, 3, 3)
    assert checked["changed"] is True
    # The real run changes what check mode counted.
    assert share(str(tree.root), gid) == checked


def test_a_tree_in_the_group_with_only_modes_missing(tree, gid):
    for path in tree.entries():
        os.lchown(path, -1, gid)
    result = share(str(tree.root), gid)
    assert (result["regrouped"], result["dirs_opened"], result["files_opened"]) == (0, 3, 3)
    assert mode_of(tree.private) == 0o660


def test_a_new_group_in_check_mode_regroups_every_entry(tree):
    groups = tree.groups()
    checked = share(str(tree.root), None, check_mode=True)
    assert checked["regrouped"] == len(tree.entries())
    assert tree.groups() == groups


def test_the_kernel_clearing_setuid_on_chgrp_is_not_undone(tmp_path, gid):
    tool, twin = tmp_path / "tool", tmp_path / "twin"
    for path in (tool, twin):
        path.write_text("x\n")
        os.chown(path, -1, 0)
        os.chmod(path, 0o4755)
    os.chown(twin, -1, gid)  # what chgrp leaves, on this kernel
    result = share(str(tmp_path), gid)
    assert result["files_opened"] == 2
    assert mode_of(tool) == mode_of(twin)
    assert mode_of(tool) == (os.stat(twin).st_mode & 0o7777)


def test_a_link_as_the_root_shares_its_target(tree, tmp_path, gid):
    top = tmp_path / "env"
    top.symlink_to(tree.root)
    result = share(str(top), gid)
    assert result["regrouped"] == len(tree.entries())
    assert mode_of(tree.root) == 0o2775
    assert gid_of(top) == 0  # the link itself is not in the tree


def vanishing(monkeypatch, doomed, remove):
    """os.lstat that removes ``doomed`` just before reading it: the entry was listed by the
    walk and is gone when it is read."""
    real = os.lstat
    removed = []

    def lstat(path, *args, **kwargs):
        if str(path) == str(doomed) and not removed:
            removed.append(path)
            remove(doomed)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(utils.os, "lstat", lstat)


def test_a_file_deleted_mid_walk_is_skipped(tree, gid, monkeypatch):
    vanishing(monkeypatch, tree.plain, os.unlink)
    result = share(str(tree.root), gid)
    assert not tree.plain.exists()
    assert result["regrouped"] == len(tree.entries()) - 1
    assert result["files_opened"] == 2
    assert str(tree.plain) not in result["examples"]
    assert gid_of(tree.tool) == gid


def test_a_directory_deleted_mid_walk_is_skipped(tree, gid, monkeypatch):
    vanishing(monkeypatch, tree.nested, shutil.rmtree)
    result = share(str(tree.root), gid)
    assert not tree.nested.exists()
    # tree, lib and the files and links outside site/.
    assert result["regrouped"] == len(tree.entries()) - 2
    assert result["dirs_opened"] == 2


def test_an_entry_deleted_between_read_and_change_is_skipped(tree, gid, monkeypatch):
    real = os.lchown

    def lchown(path, uid, group):
        if str(path) == str(tree.private):
            os.unlink(path)
        return real(path, uid, group)

    monkeypatch.setattr(utils.os, "lchown", lchown)
    result = share(str(tree.root), gid)
    assert result["regrouped"] == len(tree.entries()) - 1
    assert str(tree.private) not in result["examples"]


def test_another_error_on_an_entry_names_it(tree, gid, monkeypatch):
    real = os.lchown

    def lchown(path, uid, group):
        if str(path) == str(tree.tool):
            raise PermissionError(1, "Operation not permitted", str(path))
        return real(path, uid, group)

    monkeypatch.setattr(utils.os, "lchown", lchown)
    with pytest.raises(ShareError) as error:
        share(str(tree.root), gid)
    assert str(error.value) == f"group_share: {tree.tool}: Operation not permitted"


def test_a_directory_that_cannot_be_listed_names_it(tree, gid, monkeypatch):
    real = os.scandir

    def scandir(path="."):
        if str(path) == str(tree.nested):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(utils.os, "scandir", scandir)
    with pytest.raises(ShareError, match=f"{tree.nested}: Permission denied"):
        share(str(tree.root), gid)


def test_run_refuses_a_missing_group_and_a_path_that_is_no_directory(tree, tmp_path):
    with pytest.raises(ShareError) as error:
        run(str(tree.root), "kindling-no-such-group")
    assert str(error.value) == "group_share: group 'kindling-no-such-group' does not exist"
    with pytest.raises(ShareError) as error:
        run(str(tree.private), GROUP)
    assert str(error.value) == f"group_share: {tree.private} is not a directory"
    with pytest.raises(ShareError) as error:
        run(str(tmp_path / "missing"), GROUP)
    assert str(error.value) == f"group_share: {tmp_path / 'missing'} does not exist"
    # Not a directory is wrong in check mode too.
    with pytest.raises(ShareError, match="is not a directory"):
        run(str(tree.private), GROUP, check_mode=True)


def test_run_in_check_mode_before_the_group_and_the_tree_exist(tree, tmp_path):
    groups = tree.groups()
    checked = run(str(tree.root), "kindling-no-such-group", check_mode=True)
    assert checked["changed"] is True and checked["regrouped"] == len(tree.entries())
    assert tree.groups() == groups
    missing = run(str(tmp_path / "missing"), GROUP, check_mode=True)
    assert missing["changed"] is True
    assert (missing["regrouped"], missing["dirs_opened"], missing["files_opened"]) == (0, 0, 0)
    assert "does not exist yet" in missing["msg"]
    assert not (tmp_path / "missing").exists()


def test_message_says_what_changed_or_that_nothing_did():
    result = {
        "changed": True,
        "regrouped": 2,
        "dirs_opened": 1,
        "files_opened": 0,
        "examples": ["/t", "/t/a"],
    }
    assert message("/t", "pytorch", result) == (
        "/t shared with group pytorch: 2 entries regrouped, 1 directories and 0 files made "
        "group-writable (e.g. /t, /t/a)"
    )
    assert message("/t", "pytorch", result, check_mode=True).startswith(
        "/t would be shared with group pytorch: "
    )
    assert message("/t", "pytorch", dict(result, changed=False)) == (
        "/t is already shared with group pytorch"
    )


# ---------------------------------------------------------------------------
# library/group_share.py, in-process
# ---------------------------------------------------------------------------


def run_module(args, capsys, check_mode=False):
    if check_mode:
        args = {**args, "_ansible_check_mode": True}
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        group_share.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def test_the_module_shares_then_reports_no_change(tree, gid, capsys):
    modes, groups = tree.modes(), tree.groups()
    failed, checked = run_module({"path": str(tree.root), "group": GROUP}, capsys, check_mode=True)
    assert not failed, checked
    assert checked["changed"] is True
    assert (checked["regrouped"], checked["dirs_opened"], checked["files_opened"]) == (10, 3, 3)
    assert checked["msg"].startswith(f"{tree.root} would be shared with group {GROUP}: ")
    assert tree.modes() == modes and tree.groups() == groups

    failed, result = run_module({"path": str(tree.root), "group": GROUP}, capsys)
    assert not failed, result
    assert result["changed"] is True
    assert (result["regrouped"], result["dirs_opened"], result["files_opened"]) == (10, 3, 3)
    assert result["examples"] == checked["examples"]
    assert "path" not in result and "owner" not in result  # no path info added
    assert mode_of(tree.root) == 0o2775 and gid_of(tree.private) == gid

    failed, again = run_module({"path": str(tree.root), "group": GROUP}, capsys)
    assert not failed, again
    assert again["changed"] is False
    assert (again["regrouped"], again["dirs_opened"], again["files_opened"]) == (0, 0, 0)
    assert again["examples"] == []
    assert again["msg"] == f"{tree.root} is already shared with group {GROUP}"


def test_the_module_fails_naming_a_missing_group_or_a_file_path(tree, capsys):
    failed, result = run_module({"path": str(tree.root), "group": "kindling-no-such-group"}, capsys)
    assert failed
    assert result["msg"] == "group_share: group 'kindling-no-such-group' does not exist"
    failed, result = run_module({"path": str(tree.plain), "group": GROUP}, capsys)
    assert failed
    assert result["msg"] == f"group_share: {tree.plain} is not a directory"
    assert gid_of(tree.root) == 0  # nothing changed before failing
