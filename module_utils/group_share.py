"""A directory tree shared by one group: group-owned, group-writable, setgid directories.

Replaces a shell pipeline of ``find ! -group G -exec chgrp -h``, ``find -type d ! -perm
-2070 -exec chmod g+rwxs`` and ``find -type f ! -perm -g+rw -exec chmod g+rw``, which
walked the tree three times and reported a change by counting printed lines. Here one walk
reads each entry once (``os.lstat``) and makes the changes it needs:

- every entry not in the group gets it, with ``os.lchown`` so a link itself changes and
  never its target (as ``chgrp -h``);
- a directory missing any of group read, write, execute and setgid gets them (``| 0o2070``);
- a regular file missing group read or write gets them (``| 0o060``);
- links keep their modes; sockets, fifos and devices get the group only.

Other permission bits stay as they are. The kernel clears setuid (and setgid with group
execute) on a non-directory whose group changes, as it does for ``chgrp``; the mode is then
read again so those bits are not put back.

Links inside the tree are not followed. A link given as the root stands for the directory
it points to. An entry that vanishes during the walk is skipped; any other error on an entry
stops the walk with ``ShareError`` naming the entry. Only the counts and a few example paths
are kept, so a conda environment's ~50,000 files cost no memory to speak of.
"""

from __future__ import annotations

import grp
import os
import stat
from typing import Any, Dict, List, Optional

ARGUMENT_SPEC: Dict[str, Any] = {
    "path": {"type": "path", "required": True},
    "group": {"type": "str", "required": True},
}

# Group read, write, execute and setgid on directories: new entries get the group.
DIR_BITS = 0o2070
# Group read and write on regular files.
FILE_BITS = 0o060
# How many changed paths the result names.
MAX_EXAMPLES = 5


class ShareError(Exception):
    """A check or a change that failed, with the message the module reports."""


def group_id(name: str) -> Optional[int]:
    """The group's id, or None when no group has that name."""
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def wanted_mode(mode: int) -> Optional[int]:
    """The permission bits an entry of ``mode`` (``st_mode``) should have, or None when it
    already has them or is not a directory or regular file (links, sockets, fifos)."""
    if stat.S_ISDIR(mode):
        bits = DIR_BITS
    elif stat.S_ISREG(mode):
        bits = FILE_BITS
    else:
        return None
    if mode & bits == bits:
        return None
    return stat.S_IMODE(mode) | bits


class Tally:
    """The counts of a walk, and the first few paths that changed."""

    def __init__(self) -> None:
        self.regrouped = 0
        self.dirs_opened = 0
        self.files_opened = 0
        self.examples: List[str] = []

    def note(self, path: str) -> None:
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(path)

    def result(self) -> Dict[str, Any]:
        return {
            "changed": bool(self.regrouped or self.dirs_opened or self.files_opened),
            "regrouped": self.regrouped,
            "dirs_opened": self.dirs_opened,
            "files_opened": self.files_opened,
            "examples": list(self.examples),
        }


def _failed(path: str, error: OSError) -> ShareError:
    return ShareError(f"group_share: {path}: {error.strerror or error}")


def share_entry(
    path: str, info: os.stat_result, gid: Optional[int], check_mode: bool, tally: Tally
) -> None:
    """Give one entry, read as ``info`` (lstat), the group ``gid`` and its group bits.

    ``gid`` None is a group that does not exist yet (check mode, before the task that
    creates it): every entry would get it. Raises FileNotFoundError when the entry vanished,
    ShareError for any other error."""
    regroup = gid is None or info.st_gid != gid
    mode = wanted_mode(info.st_mode)
    if not regroup and mode is None:
        return
    if not check_mode:
        try:
            if regroup:
                os.lchown(path, -1, gid)
                if mode is not None and info.st_mode & (stat.S_ISUID | stat.S_ISGID):
                    # The kernel may have cleared setuid or setgid: start from what is left.
                    mode = stat.S_IMODE(os.lstat(path).st_mode) | (
                        DIR_BITS if stat.S_ISDIR(info.st_mode) else FILE_BITS
                    )
            if mode is not None:
                os.chmod(path, mode)
        except FileNotFoundError:
            raise
        except OSError as error:
            raise _failed(path, error) from error
    if regroup:
        tally.regrouped += 1
    if mode is not None:
        if stat.S_ISDIR(info.st_mode):
            tally.dirs_opened += 1
        else:
            tally.files_opened += 1
    tally.note(path)


def _visit(path: str, gid: Optional[int], check_mode: bool, tally: Tally) -> None:
    """lstat ``path`` and share it; skip it when it vanished."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as error:
        raise _failed(path, error) from error
    try:
        share_entry(path, info, gid, check_mode, tally)
    except FileNotFoundError:
        return


def _walk_error(error: OSError) -> None:
    """os.walk's onerror: a directory that vanished before it was listed is skipped; one
    that can't be listed stops the walk."""
    if isinstance(error, FileNotFoundError):
        return
    raise _failed(error.filename or "?", error) from error


def share(root: str, gid: Optional[int], check_mode: bool = False) -> Dict[str, Any]:
    """Walk ``root`` once and share every entry with group ``gid`` (see the module's
    docstring). Returns ``changed``, the counts and up to MAX_EXAMPLES changed paths. In
    check mode nothing changes and the counts are what would. A link as ``root`` stands for
    the directory it points to, which is the tree."""
    if os.path.islink(root):
        root = os.path.realpath(root)
    tally = Tally()
    _visit(root, gid, check_mode, tally)
    for dirpath, dirnames, filenames in os.walk(root, onerror=_walk_error, followlinks=False):
        for name in dirnames:
            _visit(os.path.join(dirpath, name), gid, check_mode, tally)
        for name in filenames:
            _visit(os.path.join(dirpath, name), gid, check_mode, tally)
    return tally.result()


def message(path: str, group: str, result: Dict[str, Any], check_mode: bool = False) -> str:
    """One line saying what changed (or would, in check mode) under ``path``."""
    if not result["changed"]:
        return f"{path} is already shared with group {group}"
    done = "would be shared" if check_mode else "shared"
    return (
        f"{path} {done} with group {group}: {result['regrouped']} entries regrouped, "
        f"{result['dirs_opened']} directories and {result['files_opened']} files made "
        f"group-writable (e.g. {', '.join(result['examples'])})"
    )


def run(path: str, group: str, check_mode: bool = False) -> Dict[str, Any]:
    """The module's result for ``path`` and ``group``. Raises ShareError when the path is
    not a directory, the group does not exist, or an entry can't be changed.

    In check mode a missing group or a missing ``path`` is what an earlier task (creating
    the group, creating the environment) would have made: the tree is counted as if the
    group were new, and a missing tree is reported as a change with zero counts."""
    gid = group_id(group)
    if gid is None and not check_mode:
        raise ShareError(f"group_share: group {group!r} does not exist")
    if not os.path.isdir(path):
        if check_mode and not os.path.lexists(path):
            result = Tally().result()
            result.update(
                changed=True,
                msg=f"{path} does not exist yet; once created it would be shared with {group}",
            )
            return result
        what = "does not exist" if not os.path.lexists(path) else "is not a directory"
        raise ShareError(f"group_share: {path} {what}")
    result = share(path, gid, check_mode)
    result["msg"] = message(path, group, result, check_mode)
    return result
