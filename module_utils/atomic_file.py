"""Kindling's one atomic file writer: a file is either its old self or wholly its new self.

``write_atomic(path, content, ...)`` writes ``content`` to a temporary file in ``path``'s
own directory (same file system, so the rename is atomic), flushes and fsyncs it, gives it
its mode and owner, renames it over ``path`` and fsyncs the directory. On any error the
temporary file is removed and ``path`` is left as it was.

Mode and owner: what the caller asks (``mode`` an int such as 0o644; ``owner``/``group``
a name or a numeric id); where it asks nothing and ``path`` already exists, the existing
file's mode, owner and group are kept (what AnsibleModule.atomic_move did for Kindling's
modules); a new file gets 0o666 less the umask and the writer's own owner.

Not for: replacing a directory (cudnn_tarball's unpack renames a directory aside) or a
symbolic link (cudnn_tarball's _link); tests/unit/test_one_way.py lists those. Kindling
runs on Debian and Ubuntu only (no SELinux labels to keep), so no module needs
AnsibleModule.atomic_move's SELinux handling.

Runs on target hosts: Python 3.8, standard library only.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import shutil
import stat
import tempfile
from typing import IO, Optional, Union

#: The prefix of the temporary file; a leftover one (a killed run) is recognisable by it.
PREFIX = ".kindling-"

Content = Union[bytes, str, IO[bytes]]


def _uid(owner: Union[str, int, None]) -> int:
    if owner is None:
        return -1
    if isinstance(owner, int) or str(owner).isdigit():
        return int(owner)
    return pwd.getpwnam(str(owner)).pw_uid


def _gid(group: Union[str, int, None]) -> int:
    if group is None:
        return -1
    if isinstance(group, int) or str(group).isdigit():
        return int(group)
    return grp.getgrnam(str(group)).gr_gid


def _fsync_directory(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(
    path: str,
    content: Content,
    mode: Optional[int] = None,
    owner: Union[str, int, None] = None,
    group: Union[str, int, None] = None,
    *,
    encoding: str = "utf-8",
    prefix: str = PREFIX,
) -> None:
    """Replace ``path`` with ``content`` (bytes, str in ``encoding``, or a binary file
    object to copy) atomically. The directory must exist. Raises OSError (and KeyError
    for an unknown owner or group name) with ``path`` unchanged and no temporary left."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        existing: Optional[os.stat_result] = os.stat(path)
    except OSError:  # missing, or a dangling or looping link: the rename replaces the link
        existing = None
    uid, gid = _uid(owner), _gid(group)
    keep_uid = keep_gid = -1
    if existing is not None:
        if mode is None:
            mode = stat.S_IMODE(existing.st_mode)
        if uid == -1 and existing.st_uid != os.geteuid():
            keep_uid = existing.st_uid
        if gid == -1 and existing.st_gid != os.getegid():
            keep_gid = existing.st_gid
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=prefix)
    try:
        with os.fdopen(handle, "wb") as out:
            if isinstance(content, str):
                out.write(content.encode(encoding))
            elif isinstance(content, (bytes, bytearray, memoryview)):
                out.write(content)
            else:
                shutil.copyfileobj(content, out, 1024 * 1024)
            out.flush()
            if uid != -1 or gid != -1:
                os.fchown(out.fileno(), uid, gid)  # asked for: an error is raised
            if keep_uid != -1 or keep_gid != -1:
                # Not root: the file becomes the writer's, as with atomic_move.
                with contextlib.suppress(PermissionError):
                    os.fchown(out.fileno(), keep_uid, keep_gid)
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _fsync_directory(directory)
