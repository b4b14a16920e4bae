"""NVIDIA's cuDNN archive unpacked and copied into a CUDA tree: the cudnn_tarball_install module.

The cuda role's tarball method is the seed's manual one: unpack NVIDIA's redist archive
(``cudnn-linux-x86_64-<version>_cuda<major>-archive.tar.xz``, verified by get_url first)
and copy its ``include/`` into the toolkit's ``include`` and its ``lib/`` into ``lib64``.
This does both in one module run:

- unpack, only when ``unpack_dir/include`` is not there. The archive's top directory is
  stripped. Every member is checked before anything is written, and the archive is refused
  (TarballError naming the member) for an absolute name, a ``..`` component, a device, a
  fifo, a hard link, a symlink whose target is absolute or resolves outside the archive's
  directory, or a member below a symlink. tarfile's ``filter='data'`` is used as well where
  the Python has it (3.8.17, 3.9.17, 3.10.12, 3.11.4 and later). The members go into a
  temporary directory next to ``unpack_dir``, which is renamed into place only when it is
  complete: an interrupted run leaves a temporary directory (removed by the next run),
  never a half-unpacked ``unpack_dir`` that the ``include`` test would then trust;
- copy, file by file and recursively: a symlink is re-created when missing or pointing
  elsewhere; a regular file is replaced atomically (a temporary file in its directory, then
  a rename) with mode 0644 and owner root:root when its bytes differ, and only chmod and
  chown run when just its mode or owner differ. Missing directories are created 0755.

Check mode unpacks and writes nothing. With ``unpack_dir`` unpacked it compares that tree;
otherwise it checks the archive's members and compares their bytes without extracting.

Python 3.8, standard library only.
"""

from __future__ import annotations

import copy
import functools
import lzma
import os
import shutil
import stat
import tarfile
import tempfile
import zlib
from typing import IO, Any, Callable, Dict, List, Optional, Sequence, Tuple

from ansible.module_utils.atomic_file import write_atomic

# Archive directory -> directory of the CUDA tree. NVIDIA's archives have lib/; the toolkit
# keeps its libraries in lib64/ (a link to targets/<arch>/lib in NVIDIA's packages). Fixed:
# every cuDNN redist archive has this layout, and the role's ld.so.conf entry names lib64.
DIRECTORY_MAP: Sequence[Tuple[str, str]] = (("include", "include"), ("lib", "lib64"))
FILE_MODE = 0o644
DIRECTORY_MODE = 0o755
# Temporary names: the unpack directory's (next to unpack_dir) and the copied files'.
UNPACK_SUFFIX = ".unpacking-"
COPY_PREFIX = ".cudnn_tarball."
# Symlinks followed while resolving one archive symlink before it counts as a loop.
MAX_LINK_HOPS = 40
CHUNK = 1 << 20

ARGUMENT_SPEC: Dict[str, Any] = {
    "archive": {"type": "path", "required": True},
    "unpack_dir": {"type": "path", "required": True},
    "toolkit_dir": {"type": "path", "required": True},
}

# Errors reading a damaged or truncated .tar.xz / .tar.gz.
_READ_ERRORS = (tarfile.TarError, lzma.LZMAError, zlib.error, EOFError)


class TarballError(Exception):
    """The archive is refused or unreadable, or the CUDA tree is in the way; nothing of the
    step in progress was left behind."""


class Source:
    """One entry to copy: ``rel`` is its path below the CUDA tree (``lib64/libcudnn.so``),
    ``kind`` is ``dir``, ``file`` or ``link``. A file has its ``size`` and ``opener`` (a
    callable returning a binary file object); a link its ``target``."""

    def __init__(
        self,
        rel: str,
        kind: str,
        target: str = "",
        size: int = 0,
        opener: Optional[Callable[[], IO[bytes]]] = None,
    ) -> None:
        self.rel = rel
        self.kind = kind
        self.target = target
        self.size = size
        self.opener = opener

    def __repr__(self) -> str:
        return f"Source({self.rel!r}, {self.kind!r})"


def has_data_filter() -> bool:
    """Whether this Python's tarfile has extraction filters (``filter='data'``)."""
    return hasattr(tarfile, "data_filter")


def stripped_name(name: str) -> Optional[str]:
    """A member's path below the archive's top directory (``include/cudnn.h``); None for the
    top directory itself and anything else at the top level, which is not unpacked.
    TarballError for an absolute name or a ``..`` component."""
    if name.startswith("/"):
        raise TarballError(f"refusing the archive member {name}: an absolute name")
    parts = name.split("/")
    if ".." in parts:
        raise TarballError(f"refusing the archive member {name}: a '..' component")
    parts = [p for p in parts if p not in ("", ".")]
    if len(parts) < 2:
        return None
    return "/".join(parts[1:])


def resolves_inside(rel: str, links: Dict[str, str]) -> bool:
    """Whether the symlink ``rel`` (a key of ``links``: stripped name -> link target) resolves
    inside the archive's directory, following the archive's other symlinks on the way (a
    link through a linked directory with ``..`` can leave where a plain reading stays)."""
    pending = rel.split("/")[:-1] + links[rel].split("/")
    resolved: List[str] = []
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                return False
            resolved.pop()
            continue
        resolved.append(part)
        here = "/".join(resolved)
        if here in links:
            hops += 1
            target = links[here]
            if hops > MAX_LINK_HOPS or target.startswith("/"):
                return False
            resolved.pop()
            pending = target.split("/") + pending
    return True


def _kind(member: tarfile.TarInfo) -> str:
    if member.isdir():
        return "dir"
    if member.issym():
        return "link"
    if member.islnk():
        return "hard link"
    if member.isreg():
        return "file"
    if member.ischr() or member.isblk():
        return "device"
    if member.isfifo():
        return "fifo"
    return "special file"


def safe_members(members: Sequence[tarfile.TarInfo]) -> List[tarfile.TarInfo]:
    """The members to unpack, as copies named below the top directory, owned by root and with
    plain modes (0755 for directories and executables, else 0644). TarballError naming the
    first member that is unsafe (see the module's docstring); nothing is written."""
    named: List[Tuple[tarfile.TarInfo, str]] = []
    links: Dict[str, str] = {}
    for member in members:
        rel = stripped_name(member.name)
        kind = _kind(member)
        if kind not in ("dir", "file", "link"):
            raise TarballError(f"refusing the archive member {member.name}: a {kind}")
        if kind == "link" and member.linkname.startswith("/"):
            raise TarballError(
                f"refusing the archive member {member.name}: a symlink to the absolute path "
                f"{member.linkname}"
            )
        if rel is None:
            continue
        if kind == "link":
            links[rel] = member.linkname
        named.append((member, rel))
    roots = {source for source, _ in DIRECTORY_MAP}
    kept: List[tarfile.TarInfo] = []
    for member, rel in named:
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            if "/".join(parts[:depth]) in links:
                raise TarballError(
                    f"refusing the archive member {member.name}: it lies below a symlink"
                )
        if rel in links and not resolves_inside(rel, links):
            raise TarballError(
                f"refusing the archive member {member.name}: a symlink to {member.linkname}, "
                "outside the archive's directory"
            )
        if rel in roots and not member.isdir():
            raise TarballError(
                f"refusing the archive member {member.name}: {rel}/ must be a directory"
            )
        clean = copy.copy(member)
        clean.name = rel
        clean.uid = clean.gid = 0
        clean.uname = clean.gname = "root"
        if member.isdir() or (member.isreg() and member.mode & 0o111):
            clean.mode = DIRECTORY_MODE
        elif member.isreg():
            clean.mode = FILE_MODE
        kept.append(clean)
    if not any(m.name == "include" or m.name.startswith("include/") for m in kept):
        raise TarballError("the archive has no include/ below its top directory")
    return kept


def needs_unpack(unpack_dir: str) -> bool:
    """Whether the archive is to be unpacked: ``unpack_dir/include`` is not there."""
    return not os.path.isdir(os.path.join(unpack_dir, "include"))


def _temporary_prefix(unpack_dir: str) -> str:
    return "." + os.path.basename(unpack_dir) + UNPACK_SUFFIX


def leftovers(unpack_dir: str) -> List[str]:
    """Temporary directories of earlier, interrupted unpacks next to ``unpack_dir``."""
    parent = os.path.dirname(unpack_dir)
    prefix = _temporary_prefix(unpack_dir)
    try:
        names = sorted(os.listdir(parent))
    except FileNotFoundError:
        return []
    return [os.path.join(parent, n) for n in names if n.startswith(prefix)]


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def remove_leftovers(unpack_dir: str) -> List[str]:
    """Removes what ``leftovers`` lists; returns those paths."""
    found = leftovers(unpack_dir)
    for path in found:
        _remove(path)
    return found


def _extract(tar: tarfile.TarFile, members: List[tarfile.TarInfo], dest: str) -> None:
    if has_data_filter():
        tar.extractall(dest, members=members, filter="data")
    else:
        tar.extractall(dest, members=members)


def unpack(archive: str, unpack_dir: str) -> None:
    """Unpacks ``archive`` into ``unpack_dir`` (top directory stripped), through a temporary
    directory next to it renamed into place; an ``unpack_dir`` already there without
    ``include`` is replaced. TarballError when the archive is refused or unreadable; then
    ``unpack_dir`` is as it was and no temporary directory is left."""
    parent = os.path.dirname(unpack_dir)
    try:
        with tarfile.open(archive) as tar:
            members = safe_members(tar.getmembers())
            os.makedirs(parent, mode=DIRECTORY_MODE, exist_ok=True)
            temporary = tempfile.mkdtemp(dir=parent, prefix=_temporary_prefix(unpack_dir))
            try:
                _extract(tar, members, temporary)
                os.chmod(temporary, DIRECTORY_MODE)
                if needs_unpack(temporary):
                    raise TarballError(f"{archive} unpacked no include/ directory")
                if os.path.lexists(unpack_dir):
                    # Renamed aside first: a rename cannot replace a directory with content.
                    aside = temporary + "-old"
                    os.rename(unpack_dir, aside)
                    os.rename(temporary, unpack_dir)
                    _remove(aside)
                else:
                    os.rename(temporary, unpack_dir)
            except BaseException:
                if os.path.lexists(temporary):
                    _remove(temporary)
                raise
    except _READ_ERRORS as exc:
        raise TarballError(f"cannot unpack {archive}: {exc}") from exc


def _reader(path: str) -> Callable[[], IO[bytes]]:
    return functools.partial(open, path, "rb")


def _walk(root: str, rel: str, found: List[Source]) -> None:
    with os.scandir(root) as entries:
        ordered = sorted(entries, key=lambda e: e.name)
    for entry in ordered:
        child = rel + "/" + entry.name
        if entry.is_symlink():
            found.append(Source(child, "link", target=os.readlink(entry.path)))
        elif entry.is_dir(follow_symlinks=False):
            found.append(Source(child, "dir"))
            _walk(entry.path, child, found)
        elif entry.is_file(follow_symlinks=False):
            size = entry.stat(follow_symlinks=False).st_size
            found.append(Source(child, "file", size=size, opener=_reader(entry.path)))
        else:
            raise TarballError(f"{entry.path} is neither a file, a directory nor a symlink")


def tree_entries(unpack_dir: str) -> List[Source]:
    """What the unpacked tree has to copy, parents first, named as in the CUDA tree."""
    found: List[Source] = []
    for source, target in DIRECTORY_MAP:
        root = os.path.join(unpack_dir, source)
        if not os.path.isdir(root):
            continue
        found.append(Source(target, "dir"))
        _walk(root, target, found)
    return found


def archive_entries(tar: tarfile.TarFile, members: Sequence[tarfile.TarInfo]) -> List[Source]:
    """What the archive would copy (``members`` as ``safe_members`` gives them), named as in
    the CUDA tree, in archive order so reading the files never seeks back. Directories the
    archive implies but does not list are added."""
    mapped = dict(DIRECTORY_MAP)
    found: List[Source] = []
    dirs = set()
    for member in members:
        parts = member.name.split("/")
        if parts[0] not in mapped:
            continue
        parts[0] = mapped[parts[0]]
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent not in dirs:
                dirs.add(parent)
                found.append(Source(parent, "dir"))
        rel = "/".join(parts)
        if member.isdir():
            if rel not in dirs:
                dirs.add(rel)
                found.append(Source(rel, "dir"))
        elif member.issym():
            found.append(Source(rel, "link", target=member.linkname))
        else:
            found.append(
                Source(
                    rel,
                    "file",
                    size=member.size,
                    opener=lambda member=member: tar.extractfile(member),
                )
            )
    return found


def _same_bytes(opener: Callable[[], IO[bytes]], path: str) -> bool:
    with opener() as ours, open(path, "rb") as theirs:
        while True:
            a, b = ours.read(CHUNK), theirs.read(CHUNK)
            if a != b:
                return False
            if not a:
                return True


def _action(entry: Source, dest: str, uid: int, gid: int) -> Optional[str]:
    """``mkdir``, ``link``, ``write``, ``attrs`` or None for one entry and its target path."""
    try:
        info: Optional[os.stat_result] = os.lstat(dest)
    except FileNotFoundError:
        info = None
    except NotADirectoryError as exc:
        raise TarballError(f"{dest}: a parent directory is a file") from exc
    if entry.kind == "dir":
        if os.path.isdir(dest):  # a link to a directory will do (lib64 -> targets/.../lib)
            return None
        if info is not None:
            raise TarballError(f"{dest} is in the way: the archive has a directory there")
        return "mkdir"
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise TarballError(f"{dest} is a directory: the archive has a {entry.kind} there")
    if entry.kind == "link":
        if info is None or not stat.S_ISLNK(info.st_mode) or os.readlink(dest) != entry.target:
            return "link"
        return None
    if info is None or not stat.S_ISREG(info.st_mode) or info.st_size != entry.size:
        return "write"
    assert entry.opener is not None
    if not _same_bytes(entry.opener, dest):
        return "write"
    if stat.S_IMODE(info.st_mode) != FILE_MODE or (info.st_uid, info.st_gid) != (uid, gid):
        return "attrs"
    return None


def plan(
    entries: Sequence[Source], toolkit_dir: str, uid: int = 0, gid: int = 0
) -> List[Tuple[str, Source, str]]:
    """(action, entry, target path) for every entry whose target is not already as wanted;
    TarballError when something of another kind is in the way."""
    actions = []
    for entry in entries:
        dest = os.path.join(toolkit_dir, entry.rel)
        action = _action(entry, dest, uid, gid)
        if action:
            actions.append((action, entry, dest))
    return actions


def _temporary_name(directory: str) -> str:
    return os.path.join(directory, COPY_PREFIX + os.urandom(6).hex())


def _make_dirs(path: str, uid: int, gid: int) -> None:
    missing = []
    while not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    for directory in reversed(missing):
        os.mkdir(directory)
        os.chown(directory, uid, gid)
        os.chmod(directory, DIRECTORY_MODE)


def _write(entry: Source, dest: str, uid: int, gid: int) -> None:
    assert entry.opener is not None
    with entry.opener() as src:
        write_atomic(dest, src, mode=FILE_MODE, owner=uid, group=gid, prefix=COPY_PREFIX)


def _link(entry: Source, dest: str) -> None:
    while True:
        temporary = _temporary_name(os.path.dirname(dest))
        try:
            os.symlink(entry.target, temporary)
            break
        except FileExistsError:
            continue
    try:
        os.replace(temporary, dest)
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)


def apply(actions: Sequence[Tuple[str, Source, str]], uid: int = 0, gid: int = 0) -> None:
    """Carries out ``plan``'s actions, in order (parents first)."""
    for action, entry, dest in actions:
        if action == "mkdir":
            _make_dirs(dest, uid, gid)
        elif action == "link":
            _link(entry, dest)
        elif action == "write":
            _write(entry, dest, uid, gid)
        else:
            os.chown(dest, uid, gid)
            os.chmod(dest, FILE_MODE)


def _inside(path: str, directory: str) -> bool:
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def sync(
    archive: str,
    unpack_dir: str,
    toolkit_dir: str,
    check_mode: bool = False,
    uid: int = 0,
    gid: int = 0,
) -> Dict[str, Any]:
    """The module's result: ``unpacked`` (whether the archive was, or in check mode would
    be, unpacked), ``copied`` (the paths of the CUDA tree written, or that would be),
    ``changed`` and, where there is one, ``msg``. TarballError for a refused or unreadable
    archive, a missing one outside check mode, or a CUDA tree in the way."""
    unpack_dir = os.path.normpath(unpack_dir)
    if _inside(archive, unpack_dir):
        raise TarballError(f"unpack_dir {unpack_dir} holds the archive {archive}")
    unpacking = needs_unpack(unpack_dir)
    result: Dict[str, Any] = {"unpacked": unpacking, "copied": [], "changed": unpacking}
    if unpacking and not os.path.isfile(archive):
        if check_mode:
            result["msg"] = (
                f"{archive} is not there (its download happens in a real run): it would be "
                f"unpacked into {unpack_dir} and its include/ and lib/ copied into {toolkit_dir}"
            )
            return result
        raise TarballError(
            f"{archive} is not there: the cuDNN tarball was not downloaded, nothing to unpack "
            f"into {unpack_dir}"
        )
    if check_mode:
        if unpacking:
            try:
                with tarfile.open(archive) as tar:
                    members = safe_members(tar.getmembers())
                    actions = plan(archive_entries(tar, members), toolkit_dir, uid, gid)
            except _READ_ERRORS as exc:
                # get_url replaces an archive that is not the checksummed one before a real
                # run gets here.
                result["msg"] = f"{archive} cannot be read ({exc}); a real run downloads it again"
                return result
        else:
            actions = plan(tree_entries(unpack_dir), toolkit_dir, uid, gid)
    else:
        remove_leftovers(unpack_dir)
        if unpacking:
            unpack(archive, unpack_dir)
        actions = plan(tree_entries(unpack_dir), toolkit_dir, uid, gid)
        apply(actions, uid, gid)
    result["copied"] = sorted(dest for _, _, dest in actions)
    result["changed"] = unpacking or bool(actions)
    return result


def describe_error(exc: OSError) -> str:
    """An OSError as the module's message: the path and the reason."""
    reason = exc.strerror or str(exc)
    return f"{exc.filename}: {reason}" if exc.filename else reason
