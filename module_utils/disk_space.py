"""Free disk space under a path, read with ``os.statvfs`` (no ``df``, no output to parse).

The gpu_preflight role warns when the places CUDA and conda go (/usr/local, /opt) have
less room than they need. On a fresh host such a path may not exist yet (/opt/conda before
conda is installed): it is measured at its nearest existing parent, the filesystem it will
be created on, and the result says so (``measured``, ``exists``).

``free_gib`` is what ``df --output=avail -BG`` prints: the bytes an unprivileged user may
still write (``f_bavail``, not the root-reserved ``f_bfree``), in GiB rounded *up* (df
rounds up with -B), so the thresholds the role compares with are the same as before.

Runs on target hosts: Python 3.8, standard library only.
"""

from __future__ import annotations

import os
from typing import Callable, Dict, Optional, Tuple

GIB = 1 << 30
MOUNTINFO = "/proc/self/mountinfo"


def free_gib(free_bytes: int) -> int:
    """Whole GiB, rounded up as ``df -BG`` rounds them (1 byte -> 1, 0 -> 0)."""
    return -(-int(free_bytes) // GIB)


def nearest_existing(
    path: str, statvfs: Callable[[str], os.statvfs_result] = os.statvfs
) -> Tuple[str, os.statvfs_result]:
    """``(path measured, its statvfs)``: ``path`` itself, or its nearest existing parent when
    it (or a parent) does not exist yet. Other errors (permission denied) are raised: the
    parent of an unreadable path may be another filesystem."""
    current = os.path.normpath(path)
    while True:
        try:
            return current, statvfs(current)
        except (FileNotFoundError, NotADirectoryError):
            parent = os.path.dirname(current)
            if parent == current:  # "/" itself is missing: nothing to measure
                raise
            current = parent


def mount_point(path: str) -> str:
    """The mount point of the filesystem that holds ``path`` (an existing path)."""
    current = os.path.realpath(path)
    while not os.path.ismount(current):
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return current


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes (``\\040``)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def mount_source(mount: str, mountinfo: str) -> Tuple[str, str]:
    """``(device, fstype)`` of the filesystem mounted last at ``mount``, from the text of
    /proc/self/mountinfo (``36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw``);
    empty strings when it is not listed."""
    found = ("", "")
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or _unescape(fields[4]) != mount:
            continue
        tail = right.split()
        found = (_unescape(tail[1]) if len(tail) > 1 else "", tail[0] if tail else "")
    return found


def _read_mountinfo(path: str = MOUNTINFO) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def measure(
    path: str,
    statvfs: Callable[[str], os.statvfs_result] = os.statvfs,
    mountinfo: Optional[str] = None,
) -> Dict[str, object]:
    """One path's free space: ``path`` (as asked), ``measured`` (the path statvfs read),
    ``exists``, ``free_bytes``, ``free_gib``, ``size_bytes``, ``mount``, ``device``,
    ``fstype`` and ``error`` (empty, or why nothing could be measured; the numbers are then
    None)."""
    result: Dict[str, object] = {
        "path": path,
        "measured": None,
        "exists": False,
        "free_bytes": None,
        "free_gib": None,
        "size_bytes": None,
        "mount": "",
        "device": "",
        "fstype": "",
        "error": "",
    }
    try:
        measured, st = nearest_existing(path, statvfs)
    except OSError as exc:
        result["error"] = f"{exc.strerror or exc} ({exc.filename or path})"
        return result
    block = st.f_frsize or st.f_bsize
    free = st.f_bavail * block
    mount = mount_point(measured)
    device, fstype = mount_source(mount, _read_mountinfo() if mountinfo is None else mountinfo)
    result.update(
        measured=measured,
        exists=measured == os.path.normpath(path),
        free_bytes=free,
        free_gib=free_gib(free),
        size_bytes=st.f_blocks * block,
        mount=mount,
        device=device,
        fstype=fstype,
    )
    return result
