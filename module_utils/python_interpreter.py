"""Whether a path is a Python interpreter that runs, and its major.minor version.

One read for a role that needs both answers before any change: does the interpreter
exist, is it executable, and which Python is it ("3.12"). The version comes from running
the interpreter itself (an argv list, no shell), so a file that merely exists and has its
execute bit set but does not run - a broken venv, a script that exits non-zero, a file
without a shebang - is told apart from a missing one, with a message that says which.
Runs on target hosts: Python 3.8, standard library only.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional, Tuple

from ansible.module_utils.command import Runner

# Prints "3.12"; also runs on Python 2 and 3.6, so the answer is a version, not a crash.
VERSION_SNIPPET = "import sys; print('%d.%d' % sys.version_info[:2])"
VERSION_RE = re.compile(r"^\d+\.\d+$")


def version_argv(path: str) -> List[str]:
    """The command line that makes the interpreter print its major.minor."""
    return [path, "-c", VERSION_SNIPPET]


def inspect_path(path: str) -> Dict[str, bool]:
    """exists (following links: a dangling venv link is missing) and executable (a regular
    file this user may execute; a directory is not an interpreter)."""
    exists = os.path.exists(path)
    return {
        "exists": exists,
        "executable": exists and os.path.isfile(path) and os.access(path, os.X_OK),
    }


def _tail(text: str, lines: int = 5) -> str:
    return " | ".join((text or "").strip().splitlines()[-lines:])


def parse_version(path: str, rc: int, stdout: str, stderr: str) -> Tuple[Optional[str], str]:
    """(version, "") when the run printed a major.minor, else (None, why not)."""
    if rc != 0:
        output = _tail(stderr) or _tail(stdout) or "no output"
        return None, (
            f"{path} exists and is executable but does not run as a Python interpreter "
            f"(rc={rc}: {output})"
        )
    printed = (stdout or "").strip()
    if not VERSION_RE.match(printed):
        return None, (
            f"{path} ran but did not print its Python version (printed "
            f"{_tail(printed) or 'nothing'!r}): is it a Python interpreter?"
        )
    return printed, ""


def read_interpreter(path: str, run: Runner) -> Dict[str, Any]:
    """{interpreter (the path), exists, executable, version, error}. A missing or
    non-executable path is not run (version null, error empty: the caller decides whether
    that is a failure); an executable one that cannot report its version has the reason
    in error."""
    result: Dict[str, Any] = {"interpreter": path, "version": None, "error": ""}
    result.update(inspect_path(path))
    if not result["executable"]:
        return result
    try:
        rc, stdout, stderr = run(version_argv(path))
    except OSError as exc:
        why = getattr(exc, "reason", "") or exc  # CommandError: the OS's words alone
        result["error"] = f"{path} exists and is executable but could not be run: {why}"
        return result
    result["version"], result["error"] = parse_version(path, rc, stdout, stderr)
    return result


def ran(path: str, python_version: Any) -> Optional[Dict[str, Any]]:
    """What read_interpreter says of ``path`` when another probe has just run it in one
    module run (torch_cuda_facts' build read) and it printed ``python_version``
    ("3.12.3"): it exists, is executable and is that major.minor. None when the version is
    not one, so that the caller reads the interpreter itself and gets its own reason."""
    parts = str(python_version or "").split(".")
    version = ".".join(parts[:2])
    if len(parts) < 2 or not VERSION_RE.match(version):
        return None
    return {
        "interpreter": path,
        "exists": True,
        "executable": True,
        "version": version,
        "error": "",
    }


def summary(found: Dict[str, Any]) -> str:
    """One line for the module's msg."""
    if found["error"]:
        return str(found["error"])
    if not found["exists"]:
        return f"{found['interpreter']} does not exist"
    if not found["executable"]:
        return f"{found['interpreter']} is not an executable file"
    return f"{found['interpreter']} is Python {found['version']}"
