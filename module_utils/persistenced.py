"""nvidia-persistenced's command line, with persistence mode on.

systemd shows a unit's command as ``{ path=/usr/bin/nvidia-persistenced ; argv[]=/usr/bin/
nvidia-persistenced --user nvidia-persistenced --no-persistence-mode --verbose ; ... }``.
Ubuntu's packaged unit passes --no-persistence-mode (vendor catalogue, ``persistenced``),
so the daemon runs but the GPUs stay at Persistence Mode: Disabled. The override keeps
every other argument and turns persistence mode on.
Runs on target hosts: Python 3.8, standard library only.
"""

from __future__ import annotations

import re
import shlex
from typing import List, Optional

_ARGV = re.compile(r"argv\[\]=([^;]*)")


def exec_start_argv(exec_start: Optional[str]) -> List[str]:
    """The first command's argv from systemd's ExecStart property ([] when none)."""
    match = _ARGV.search(exec_start or "")
    if not match:
        return []
    return shlex.split(match.group(1).strip())


def persistence_on(argv: List[str], disables: List[str], enables: List[str]) -> List[str]:
    """argv without the flags that turn persistence mode off, with those that turn it on."""
    kept = [a for a in argv if a not in disables]
    return kept + [flag for flag in enables if flag not in kept]


def dropin(argv: List[str]) -> str:
    """A [Service] drop-in that replaces ExecStart with ``argv``."""
    return "[Service]\nExecStart=\nExecStart=" + " ".join(shlex.quote(a) for a in argv) + "\n"
