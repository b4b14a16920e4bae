"""module_utils/cudnn_tarball.py and library/cudnn_tarball_install.py: NVIDIA's cuDNN archive
unpacked and copied into a CUDA tree, on real .tar.xz archives built in tmp_path in NVIDIA's
redist layout. The tests run as root (the module writes files owned by root)."""

from __future__ import annotations

import io
import json
import os
import stat
import tarfile

import cudnn_tarball_install as cudnn_tarball
import pytest
from ansible.module_utils import cudnn_tarball as utils
from ansible.module_utils.cudnn_tarball import (
    TarballError,
    apply,
    needs_unpack,
    plan,
    resolves_inside,
    safe_members,
    stripped_name,
    sync,
    tree_entries,
    unpack,
)
from ansible.module_utils.testing import patch_module_args

TOP = "cudnn-linux-x86_64-9.13.0.50_cuda13-archive"
HEADER = b"#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 13\n"
LIBRARY = b"\x7fELF" + bytes(range(256)) * 64
LICENSE = b"NVIDIA Software License Agreement\n"


def d(name):
    return (name, "dir", None)


def f(name, data, mode=0o644):
    return (name, "file", (data, mode))


def sym(name, target):
    return (name, "link", target)


# NVIDIA's redist layout: the top directory, include/, lib/ with the versioned library and
# its two links, and a licence at the top, which is unpacked but not copied.
NVIDIA = [
    d(TOP),
    f(f"{TOP}/LICENSE", LICENSE),
    d(f"{TOP}/include"),
    f(f"{TOP}/include/cudnn.h", HEADER),
    d(f"{TOP}/lib"),
    f(f"{TOP}/lib/libcudnn.so.9.13.0", LIBRARY, 0o755),
    sym(f"{TOP}/lib/libcudnn.so.9", "libcudnn.so.9.13.0"),
    sym(f"{TOP}/lib/libcudnn.so", "libcudnn.so.9"),
]


def build(path, entries):
    """A .tar.xz at ``path`` with ``entries`` ((name, kind, payload), in order); kind is one
    of dir, file, link, hardlink, chr, blk, fifo. Owners are a build user's, as in NVIDIA's."""
    with tarfile.open(path, "w:xz") as tar:
        for name, kind, payload in entries:
            info = tarfile.TarInfo(name)
            info.uid, info.gid, info.uname, info.gname = 1000, 1000, "builder", "builder"
            data = None
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o775
            elif kind == "file":
                data, info.mode = payload
                info.size = len(data)
            elif kind == "link":
                info.type, info.linkname = tarfile.SYMTYPE, payload
            elif kind == "hardlink":
                info.type, info.linkname = tarfile.LNKTYPE, payload
            elif kind == "chr":
                info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
            elif kind == "blk":
                info.type, info.devmajor, info.devminor = tarfile.BLKTYPE, 8, 0
            elif kind == "fifo":
                info.type = tarfile.FIFOTYPE
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


class Host:
    """The role's paths under tmp_path: the download directory with the archive, the unpack
    directory next to it, and a CUDA tree with its own include/ and lib64/."""

    def __init__(self, root, entries=NVIDIA):
        self.downloads = root / "var" / "lib" / "kindling" / "cuda"
        self.downloads.mkdir(parents=True)
        self.archive = build(self.downloads / f"{TOP}.tar.xz", entries)
        self.unpack_dir = self.downloads / TOP
        self.toolkit = root / "usr" / "local" / "cuda-13.0"
        (self.toolkit / "include").mkdir(parents=True)
        (self.toolkit / "lib64").mkdir()
        (self.toolkit / "include" / "cuda.h").write_bytes(b"/* the toolkit's own */\n")

    def args(self, check_mode=False):
        return {
            "archive": str(self.archive),
            "unpack_dir": str(self.unpack_dir),
            "toolkit_dir": str(self.toolkit),
            "_ansible_check_mode": check_mode,
        }

    def sync(self, check_mode=False):
        return sync(str(self.archive), str(self.unpack_dir), str(self.toolkit), check_mode)

    def tree(self):
        """Every path below the download directory and the CUDA tree, with what it is."""
        found = {}
        for base in (self.downloads, self.toolkit):
            for dirpath, dirnames, filenames in os.walk(base):
                for name in dirnames + filenames:
                    path = os.path.join(dirpath, name)
                    info = os.lstat(path)
                    if stat.S_ISLNK(info.st_mode):
                        found[path] = ("link", os.readlink(path))
                    elif stat.S_ISDIR(info.st_mode):
                        found[path] = ("dir", stat.S_IMODE(info.st_mode))
                    else:
                        with open(path, "rb") as handle:
                            found[path] = ("file", handle.read(), stat.S_IMODE(info.st_mode))
        return found

    def copied(self):
        t = self.toolkit
        return sorted(
            str(p)
            for p in (
                t / "include" / "cudnn.h",
                t / "lib64" / "libcudnn.so",
                t / "lib64" / "libcudnn.so.9",
                t / "lib64" / "libcudnn.so.9.13.0",
            )
        )


@pytest.fixture
def host(tmp_path):
    return Host(tmp_path)


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        cudnn_tarball.main()
    result = json.loads(capsys.readouterr().out)
    result.pop("invocation", None)
    return exc.value.code != 0, result


def assert_installed(host):
    t = host.toolkit
    header, library = t / "include" / "cudnn.h", t / "lib64" / "libcudnn.so.9.13.0"
    assert header.read_bytes() == HEADER and library.read_bytes() == LIBRARY
    for path in (header, library):
        info = os.lstat(path)
        assert stat.S_ISREG(info.st_mode)
        assert stat.S_IMODE(info.st_mode) == 0o644  # 0755 in the archive
        assert (info.st_uid, info.st_gid) == (0, 0)  # 1000 in the archive
    assert os.readlink(t / "lib64" / "libcudnn.so.9") == "libcudnn.so.9.13.0"
    assert os.readlink(t / "lib64" / "libcudnn.so") == "libcudnn.so.9"
    assert (t / "lib64" / "libcudnn.so").read_bytes() == LIBRARY
    # The toolkit's own files stay; the licence is not copied.
    assert (t / "include" / "cuda.h").read_bytes() == b"/* the toolkit's own */\n"
    assert not (t / "LICENSE").exists()
    # No temporary file or directory is left.
    names = {n for _, dirs, files in os.walk(host.downloads.parent) for n in dirs + files}
    names |= {n for _, dirs, files in os.walk(t) for n in dirs + files}
    assert not [n for n in names if n.startswith(".")], names


# The module_utils functions.


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (TOP, None),
        (f"{TOP}/", None),
        (f"{TOP}/LICENSE", "LICENSE"),
        (f"{TOP}/include/cudnn.h", "include/cudnn.h"),
        (f"./{TOP}/lib/libcudnn.so", "lib/libcudnn.so"),
        (f"{TOP}//lib/./x", "lib/x"),
    ],
)
def test_stripped_name_drops_the_top_directory(name, expected):
    assert stripped_name(name) == expected


@pytest.mark.parametrize(
    ("name", "why"),
    [("/etc/passwd", "absolute"), (f"{TOP}/../etc/passwd", "'..'"), ("../x", "'..'")],
)
def test_stripped_name_refuses(name, why):
    with pytest.raises(TarballError, match=why) as exc:
        stripped_name(name)
    assert name in str(exc.value)


def test_resolves_inside_follows_the_archives_links():
    links = {
        "lib/libcudnn.so": "libcudnn.so.9",
        "lib/libcudnn.so.9": "libcudnn.so.9.13.0",
        "lib/headers": "../include",
        "lib/out": "../../etc",
        "lib/through": "headers/../../..",  # plain reading: lib/.. ; through the link: above
        "lib/loop": "loop2",
        "lib/loop2": "loop",
    }
    assert resolves_inside("lib/libcudnn.so", links)
    assert resolves_inside("lib/headers", links)
    assert not resolves_inside("lib/out", links)
    assert not resolves_inside("lib/through", links)
    assert not resolves_inside("lib/loop", links)


def test_safe_members_strip_and_give_root_plain_modes(tmp_path):
    archive = build(tmp_path / "a.tar.xz", NVIDIA)
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in safe_members(tar.getmembers())}
    assert sorted(members) == [
        "LICENSE",
        "include",
        "include/cudnn.h",
        "lib",
        "lib/libcudnn.so",
        "lib/libcudnn.so.9",
        "lib/libcudnn.so.9.13.0",
    ]
    assert {(m.uid, m.gid, m.uname, m.gname) for m in members.values()} == {(0, 0, "root", "root")}
    assert members["lib/libcudnn.so.9.13.0"].mode == 0o755
    assert members["include/cudnn.h"].mode == 0o644
    assert members["include"].mode == 0o755  # 0775 in the archive
    assert members["lib/libcudnn.so"].linkname == "libcudnn.so.9"


# Each unsafe kind: (entries added to NVIDIA's layout, the member the message names).
UNSAFE = {
    "absolute name": ([f("/etc/cron.d/evil", b"x")], "/etc/cron.d/evil"),
    "dotdot name": ([f(f"{TOP}/lib/../../evil", b"x")], f"{TOP}/lib/../../evil"),
    "character device": ([(f"{TOP}/lib/null", "chr", None)], f"{TOP}/lib/null"),
    "block device": ([(f"{TOP}/lib/sda", "blk", None)], f"{TOP}/lib/sda"),
    "fifo": ([(f"{TOP}/lib/pipe", "fifo", None)], f"{TOP}/lib/pipe"),
    "hard link": (
        [(f"{TOP}/lib/hard", "hardlink", f"{TOP}/lib/libcudnn.so.9.13.0")],
        f"{TOP}/lib/hard",
    ),
    "top-level device": ([("null", "chr", None)], "null"),
    "absolute symlink": ([sym(f"{TOP}/lib/passwd", "/etc/passwd")], f"{TOP}/lib/passwd"),
    "escaping symlink": ([sym(f"{TOP}/lib/up", "../../etc")], f"{TOP}/lib/up"),
    "escaping through a link": (
        [sym(f"{TOP}/lib/inc", "../include"), sym(f"{TOP}/lib/esc", "inc/../../..")],
        f"{TOP}/lib/esc",
    ),
    "member below a symlink": (
        [sym(f"{TOP}/lib/dir", "../include"), f(f"{TOP}/lib/dir/evil.h", b"x")],
        f"{TOP}/lib/dir/evil.h",
    ),
    "include as a symlink": (
        [sym(f"{TOP}/include", "lib")],
        f"{TOP}/include",
    ),
}


@pytest.mark.parametrize("kind", sorted(UNSAFE))
def test_safe_members_refuse_naming_the_member(tmp_path, kind):
    extra, named = UNSAFE[kind]
    entries = NVIDIA + extra if kind != "include as a symlink" else NVIDIA[:2] + extra
    archive = build(tmp_path / "bad.tar.xz", entries)
    with tarfile.open(archive) as tar, pytest.raises(TarballError) as exc:
        safe_members(tar.getmembers())
    assert f"refusing the archive member {named}:" in str(exc.value)


@pytest.mark.parametrize("kind", sorted(UNSAFE))
@pytest.mark.parametrize("check_mode", [False, True])
def test_the_module_refuses_unsafe_archives_and_writes_nothing(tmp_path, capsys, kind, check_mode):
    extra, named = UNSAFE[kind]
    entries = NVIDIA + extra if kind != "include as a symlink" else NVIDIA[:2] + extra
    host = Host(tmp_path, entries)
    before = host.tree()
    failed, result = run_module(host.args(check_mode), capsys)
    assert failed
    assert result["msg"].startswith(f"cudnn_tarball_install: refusing the archive member {named}:")
    assert host.tree() == before  # nothing in the download directory or the CUDA tree
    assert not host.unpack_dir.exists()
    assert not (tmp_path / "etc").exists() and not (tmp_path / "var" / "lib" / "evil").exists()


def test_an_archive_without_include_is_refused(tmp_path):
    archive = build(tmp_path / "a.tar.xz", [d(TOP), d(f"{TOP}/lib"), f(f"{TOP}/lib/x.so", b"x")])
    with tarfile.open(archive) as tar, pytest.raises(TarballError, match="no include/"):
        safe_members(tar.getmembers())


def test_unpack_renames_a_complete_tree_into_place(host):
    assert needs_unpack(str(host.unpack_dir))
    unpack(str(host.archive), str(host.unpack_dir))
    assert not needs_unpack(str(host.unpack_dir))
    u = host.unpack_dir
    assert (u / "include" / "cudnn.h").read_bytes() == HEADER
    assert (u / "LICENSE").read_bytes() == LICENSE
    assert os.readlink(u / "lib" / "libcudnn.so") == "libcudnn.so.9"
    assert stat.S_IMODE(os.stat(u).st_mode) == 0o755
    assert os.stat(u / "include" / "cudnn.h").st_uid == 0
    assert sorted(p.name for p in host.downloads.iterdir()) == [TOP, f"{TOP}.tar.xz"]


def test_unpack_uses_the_data_filter_where_tarfile_has_it(host, monkeypatch):
    seen = []
    real = tarfile.TarFile.extractall

    def spy(self, path=".", members=None, **kwargs):
        seen.append(kwargs.get("filter"))
        return real(self, path, members, **kwargs)

    monkeypatch.setattr(tarfile.TarFile, "extractall", spy)
    monkeypatch.setattr(utils, "has_data_filter", lambda: True)
    unpack(str(host.archive), str(host.unpack_dir))
    assert seen == ["data"]


def test_without_the_data_filter_the_checks_still_refuse_and_unpacking_works(tmp_path, monkeypatch):
    # Python 3.8 before 3.8.17 has no extraction filters: extractall gets no filter argument.
    seen = []
    real = tarfile.TarFile.extractall

    def spy(self, path=".", members=None, **kwargs):
        seen.append(kwargs)
        return real(self, path, members, **kwargs)

    monkeypatch.setattr(tarfile.TarFile, "extractall", spy)
    monkeypatch.setattr(utils, "has_data_filter", lambda: False)
    bad = Host(tmp_path / "bad", NVIDIA + UNSAFE["escaping symlink"][0])
    with pytest.raises(TarballError, match="outside the archive's directory"):
        bad.sync()
    assert not bad.unpack_dir.exists() and seen == []
    good = Host(tmp_path / "good")
    result = good.sync()
    assert seen == [{}]
    assert result == {"unpacked": True, "copied": good.copied(), "changed": True}
    assert_installed(good)


def test_plan_and_apply_copy_then_find_nothing_to_do(host):
    unpack(str(host.archive), str(host.unpack_dir))
    entries = tree_entries(str(host.unpack_dir))
    assert [(e.rel, e.kind) for e in entries] == [
        ("include", "dir"),
        ("include/cudnn.h", "file"),
        ("lib64", "dir"),
        ("lib64/libcudnn.so", "link"),
        ("lib64/libcudnn.so.9", "link"),
        ("lib64/libcudnn.so.9.13.0", "file"),
    ]
    actions = plan(entries, str(host.toolkit))
    assert [(a, str(dest)) for a, _, dest in actions] == [
        ("write", str(host.toolkit / "include" / "cudnn.h")),
        ("link", str(host.toolkit / "lib64" / "libcudnn.so")),
        ("link", str(host.toolkit / "lib64" / "libcudnn.so.9")),
        ("write", str(host.toolkit / "lib64" / "libcudnn.so.9.13.0")),
    ]
    apply(actions)
    assert_installed(host)
    assert plan(tree_entries(str(host.unpack_dir)), str(host.toolkit)) == []


def test_plan_tells_attributes_from_bytes(host):
    host.sync()
    library = host.toolkit / "lib64" / "libcudnn.so.9.13.0"
    os.chown(library, 1000, 1000)
    header = host.toolkit / "include" / "cudnn.h"
    header.chmod(0o600)
    actions = plan(tree_entries(str(host.unpack_dir)), str(host.toolkit))
    assert sorted((a, dest) for a, _, dest in actions) == [
        ("attrs", str(header)),
        ("attrs", str(library)),
    ]
    inode = library.stat().st_ino
    apply(actions)
    assert library.stat().st_ino == inode  # set in place, not rewritten
    assert_installed(host)


# The module, in-process.


def test_first_run_unpacks_and_copies_second_changes_nothing(host, capsys):
    failed, first = run_module(host.args(), capsys)
    assert not failed, first
    assert first["changed"] is True and first["unpacked"] is True
    assert first["copied"] == host.copied()
    assert_installed(host)
    assert (host.unpack_dir / "include" / "cudnn.h").read_bytes() == HEADER
    failed, again = run_module(host.args(), capsys)
    assert not failed, again
    assert again["changed"] is False and again["unpacked"] is False and again["copied"] == []
    failed, checked = run_module(host.args(check_mode=True), capsys)
    assert not failed and checked["changed"] is False and checked["copied"] == []


def test_only_what_changed_in_the_tree_is_restored_and_reported(host, capsys):
    run_module(host.args(), capsys)
    t = host.toolkit
    # The same size, other bytes: the size alone does not tell.
    (t / "include" / "cudnn.h").write_bytes(HEADER.replace(b"13", b"12"))
    before = host.tree()
    failed, result = run_module(host.args(), capsys)
    assert not failed and result["changed"] is True and result["unpacked"] is False
    assert result["copied"] == [str(t / "include" / "cudnn.h")]
    after = host.tree()
    assert {p for p in after if after[p] != before.get(p)} == {str(t / "include" / "cudnn.h")}
    assert_installed(host)


def test_links_are_repointed_and_replace_files(host, capsys):
    run_module(host.args(), capsys)
    lib64 = host.toolkit / "lib64"
    (lib64 / "libcudnn.so.9").unlink()
    (lib64 / "libcudnn.so.9").symlink_to("libcudnn.so.9.1.0")
    (lib64 / "libcudnn.so").unlink()
    (lib64 / "libcudnn.so").write_bytes(LIBRARY)
    failed, result = run_module(host.args(), capsys)
    assert not failed
    assert result["copied"] == [str(lib64 / "libcudnn.so"), str(lib64 / "libcudnn.so.9")]
    assert_installed(host)


def test_a_file_where_a_link_was_is_written(host, capsys):
    run_module(host.args(), capsys)
    library = host.toolkit / "lib64" / "libcudnn.so.9.13.0"
    library.unlink()
    library.symlink_to("libcudnn.so.9")  # a loop, so the bytes cannot be read through it
    failed, result = run_module(host.args(), capsys)
    assert not failed and result["copied"] == [str(library)]
    assert_installed(host)


def test_check_mode_reports_and_changes_nothing(host, capsys):
    before = host.tree()
    failed, result = run_module(host.args(check_mode=True), capsys)
    assert not failed, result
    assert result["changed"] is True and result["unpacked"] is True
    assert result["copied"] == host.copied()  # read from the archive itself
    assert host.tree() == before
    assert not host.unpack_dir.exists()
    # Unpacked, with one file of the tree edited: that file is reported and left as it is.
    run_module(host.args(), capsys)
    header = host.toolkit / "include" / "cudnn.h"
    header.write_bytes(b"old\n")
    before = host.tree()
    failed, result = run_module(host.args(check_mode=True), capsys)
    assert not failed
    assert result == {"changed": True, "unpacked": False, "copied": [str(header)]}
    assert host.tree() == before


def test_check_mode_reads_the_archive_against_an_installed_tree(host, capsys):
    # The unpack directory was removed since cuDNN was copied: only unpacking would change.
    run_module(host.args(), capsys)
    utils._remove(str(host.unpack_dir))
    failed, result = run_module(host.args(check_mode=True), capsys)
    assert not failed
    assert result == {"changed": True, "unpacked": True, "copied": []}


def test_a_missing_archive_is_a_change_in_check_mode_and_a_failure_otherwise(host, capsys):
    host.archive.unlink()
    before = host.tree()
    failed, result = run_module(host.args(check_mode=True), capsys)
    assert not failed
    assert result["changed"] is True and result["copied"] == []
    assert f"{host.archive} is not there" in result["msg"]
    assert host.tree() == before
    failed, result = run_module(host.args(), capsys)
    assert failed
    assert result["msg"].startswith(f"cudnn_tarball_install: {host.archive} is not there")
    assert host.tree() == before


def test_a_missing_archive_does_not_matter_once_unpacked(host, capsys):
    run_module(host.args(), capsys)
    host.archive.unlink()
    (host.toolkit / "include" / "cudnn.h").unlink()
    failed, result = run_module(host.args(), capsys)
    assert not failed and result["copied"] == [str(host.toolkit / "include" / "cudnn.h")]
    assert_installed(host)


def test_an_unreadable_archive_fails_but_is_a_change_in_check_mode(host, capsys):
    host.archive.write_bytes(host.archive.read_bytes()[:200])  # truncated
    failed, result = run_module(host.args(check_mode=True), capsys)
    assert not failed and result["changed"] is True
    assert "cannot be read" in result["msg"]
    failed, result = run_module(host.args(), capsys)
    assert failed and f"cannot unpack {host.archive}" in result["msg"]
    assert sorted(p.name for p in host.downloads.iterdir()) == [f"{TOP}.tar.xz"]


def test_an_interrupted_unpack_does_not_break_the_next_run(host, capsys):
    # A killed run leaves its temporary directory (and the old script a tree without
    # include/): neither is trusted, both are replaced.
    leftover = host.downloads / f".{TOP}.unpacking-k1ll3d"
    (leftover / "lib").mkdir(parents=True)
    (leftover / "lib" / "libcudnn.so.9.13.0").write_bytes(LIBRARY[:10])
    aside = host.downloads / f".{TOP}.unpacking-0ld-old"
    aside.mkdir()
    (host.unpack_dir / "lib").mkdir(parents=True)
    (host.unpack_dir / "lib" / "partial").write_bytes(b"x")
    assert utils.leftovers(str(host.unpack_dir)) == [str(aside), str(leftover)]
    failed, result = run_module(host.args(), capsys)
    assert not failed, result
    assert result["unpacked"] is True and result["copied"] == host.copied()
    assert_installed(host)
    assert not (host.unpack_dir / "lib" / "partial").exists()
    assert sorted(p.name for p in host.downloads.iterdir()) == [TOP, f"{TOP}.tar.xz"]
    failed, again = run_module(host.args(), capsys)
    assert not failed and again["changed"] is False


def test_a_failed_unpack_leaves_no_temporary_directory(host, monkeypatch):
    def broken(tar, members, dest):
        open(os.path.join(dest, "half"), "w").close()
        raise OSError(28, "No space left on device", os.path.join(dest, "half"))

    monkeypatch.setattr(utils, "_extract", broken)
    with pytest.raises(OSError):
        host.sync()
    assert sorted(p.name for p in host.downloads.iterdir()) == [f"{TOP}.tar.xz"]
    assert not any(p.name.startswith(".") for p in host.toolkit.rglob("*"))


def test_nvidias_linked_lib64_is_written_through(tmp_path, capsys):
    # NVIDIA's packages make include and lib64 links to targets/x86_64-linux/.
    host = Host(tmp_path)
    targets = host.toolkit / "targets" / "x86_64-linux"
    (targets / "lib").mkdir(parents=True)
    (host.toolkit / "lib64").rmdir()
    (host.toolkit / "lib64").symlink_to("targets/x86_64-linux/lib")
    failed, result = run_module(host.args(), capsys)
    assert not failed, result
    assert os.readlink(host.toolkit / "lib64") == "targets/x86_64-linux/lib"
    assert (targets / "lib" / "libcudnn.so.9.13.0").read_bytes() == LIBRARY
    assert os.readlink(targets / "lib" / "libcudnn.so") == "libcudnn.so.9"
    failed, again = run_module(host.args(), capsys)
    assert not failed and again["changed"] is False


def test_subdirectories_are_copied_and_missing_directories_made(tmp_path, capsys):
    stub = f"{TOP}/lib/stubs/libcudnn_stub.so"
    host = Host(tmp_path, [*NVIDIA, f(stub, b"stub")])  # lib/stubs has no entry of its own
    (host.toolkit / "lib64").rmdir()
    failed, result = run_module(host.args(), capsys)
    assert not failed, result
    lib64 = host.toolkit / "lib64"
    assert str(lib64) in result["copied"] and str(lib64 / "stubs") in result["copied"]
    assert str(lib64 / "stubs" / "libcudnn_stub.so") in result["copied"]
    for directory in (lib64, lib64 / "stubs"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o755
    assert (lib64 / "stubs" / "libcudnn_stub.so").read_bytes() == b"stub"
    failed, again = run_module(host.args(), capsys)
    assert not failed and again["changed"] is False


def test_check_mode_from_the_archive_lists_implied_directories(tmp_path, capsys):
    host = Host(tmp_path, [*NVIDIA, f(f"{TOP}/lib/stubs/libcudnn_stub.so", b"stub")])
    failed, result = run_module(host.args(check_mode=True), capsys)
    assert not failed
    stubs = host.toolkit / "lib64" / "stubs"
    assert result["copied"] == sorted([*host.copied(), str(stubs), str(stubs / "libcudnn_stub.so")])
    assert not stubs.exists()


def test_a_directory_in_the_way_fails_naming_it(host, capsys):
    (host.toolkit / "include" / "cudnn.h").mkdir()
    failed, result = run_module(host.args(), capsys)
    assert failed
    assert f"{host.toolkit / 'include' / 'cudnn.h'} is a directory" in result["msg"]


def test_an_unpack_dir_holding_the_archive_is_refused(host, capsys):
    args = dict(host.args(), unpack_dir=str(host.downloads))
    failed, result = run_module(args, capsys)
    assert failed and "holds the archive" in result["msg"]
    assert sorted(p.name for p in host.downloads.iterdir()) == [f"{TOP}.tar.xz"]
