"""Is dpkg usable right now? Who holds its locks, and was its last run interrupted?

Used by library/dpkg_prepare.py before a role's first apt task. Everything that reads the
host takes its paths as arguments, so tests run it against a temporary directory.

Two situations are common on rented cloud hosts and both make apt fail with a message that
does not say what to do:

* another package manager holds the locks: unattended-upgrades and apt-daily run on a
  fresh Ubuntu or Debian cloud image minutes after boot;
* an earlier run was killed while dpkg was unpacking or configuring (a dropped SSH session
  in the middle of a DKMS build): apt then refuses every install with "dpkg was
  interrupted, you must manually run 'dpkg --configure -a'".
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

# The locks apt and dpkg take, in the order apt takes them.
DPKG_LOCKS: Tuple[str, ...] = (
    "/var/lib/dpkg/lock-frontend",
    "/var/lib/dpkg/lock",
    "/var/lib/apt/lists/lock",
    "/var/cache/apt/archives/lock",
)
DPKG_UPDATES_DIR = "/var/lib/dpkg/updates"
PROC = "/proc"


@dataclass(frozen=True)
class LockHolder:
    path: str
    pid: Optional[int]
    command: str

    def describe(self) -> str:
        if self.pid is None:
            return f"{self.path} (holder not visible from here)"
        return f"{self.path}, held by pid {self.pid} ({self.command or 'command unknown'})"


def parse_proc_locks(text: str) -> Dict[Tuple[int, int, int], List[int]]:
    """{(major, minor, inode): [pid, ...]} of the POSIX and OFD locks in /proc/locks.

    A line reads "1: POSIX  ADVISORY  WRITE 1234 fe:01:5678 0 EOF"; a blocked waiter has
    "->" before its type. OFD locks have pid -1 (they belong to an open file, not a
    process); such entries are kept as -1 so the caller still knows the file is locked.
    """
    held: Dict[Tuple[int, int, int], List[int]] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 6 or "->" in fields[:2]:
            continue
        kind = fields[1]
        if kind not in ("POSIX", "OFDLCK", "FLOCK"):
            continue
        try:
            pid = int(fields[4])
            major_s, minor_s, inode_s = fields[5].split(":")
            key = (int(major_s, 16), int(minor_s, 16), int(inode_s))
        except ValueError:
            continue
        held.setdefault(key, []).append(pid)
    return held


def process_command(pid: int, proc: str = PROC) -> str:
    """The command line of pid, or its comm name, or ""."""
    try:
        with open(os.path.join(proc, str(pid), "cmdline"), "rb") as handle:
            raw = handle.read()
        command = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
        if command:
            return command
        with open(os.path.join(proc, str(pid), "comm"), encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def is_locked(path: str) -> bool:
    """True when another process holds a fcntl lock on path (apt's and dpkg's kind).

    The lock is taken and released at once; a missing lock file means nobody holds it.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            return True
        raise
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def lock_holder(path: str, proc: str = PROC) -> LockHolder:
    """Who holds the lock on path, as far as /proc/locks tells."""
    try:
        st = os.stat(path)
        with open(os.path.join(proc, "locks"), encoding="utf-8") as handle:
            held = parse_proc_locks(handle.read())
    except OSError:
        return LockHolder(path, None, "")
    key = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    pids = [pid for pid in held.get(key, []) if pid > 0 and pid != os.getpid()]
    if not pids:
        return LockHolder(path, None, "")
    return LockHolder(path, pids[0], process_command(pids[0], proc))


def busy_locks(
    paths: Sequence[str],
    locked: Callable[[str], bool] = is_locked,
    holder: Callable[[str], LockHolder] = lock_holder,
) -> List[LockHolder]:
    return [holder(path) for path in paths if locked(path)]


@dataclass
class WaitResult:
    waited: float
    busy: List[LockHolder]  # empty when every lock came free


def wait_for_locks(
    paths: Sequence[str],
    timeout: float,
    interval: float = 2.0,
    busy: Callable[[Sequence[str]], List[LockHolder]] = busy_locks,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> WaitResult:
    """Poll until none of paths is locked, or timeout seconds have passed."""
    start = clock()
    while True:
        holders = busy(paths)
        waited = clock() - start
        if not holders or waited >= timeout:
            return WaitResult(waited=waited, busy=holders)
        sleep(min(interval, max(timeout - waited, 0.0)))


def lock_timeout_message(result: WaitResult, timeout: float, timeout_variable: str) -> str:
    held = "; ".join(holder.describe() for holder in result.busy)
    raise_it = f"raise {timeout_variable}" if timeout_variable else "raise the timeout"
    return (
        f"dpkg is busy: {held}, still locked after {int(timeout)} s. Another package manager "
        "is running: on a fresh cloud host that is usually unattended-upgrades or apt-daily, "
        "which finish by themselves. Nothing was changed by this run. Re-run when it is done "
        f"(`systemctl status unattended-upgrades apt-daily apt-daily-upgrade`), or {raise_it}. "
        "Do not delete the lock files: that lets two dpkg runs corrupt its database."
    )


def interrupted_updates(updates_dir: str = DPKG_UPDATES_DIR) -> List[str]:
    """The pending journal entries dpkg left behind when a run was killed.

    apt refuses to work while this directory holds numbered files ("dpkg was interrupted").
    """
    try:
        names = os.listdir(updates_dir)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return []
        raise
    return sorted(name for name in names if name.isdigit())


def parse_audit(output: str) -> List[str]:
    """The package names `dpkg --audit` reports as half-installed or half-configured.

    The audit prints a paragraph per problem, then the affected packages indented by one
    space as " name      description".
    """
    packages: List[str] = []
    for line in output.splitlines():
        if line.startswith(" ") and line.strip():
            name = line.split()[0]
            if name not in packages:
                packages.append(name)
    return packages


def needs_repair(updates: Sequence[str], audit_output: str) -> bool:
    return bool(updates) or bool(audit_output.strip())
