"""What every part of the program shares: exit codes, the run's clock, progress and logs.

``_QUIET`` and ``_LOG_TAG`` are set by the entry points (``cli.main`` and the worker
mains in ``gpus`` and ``ddp``) as ``common._QUIET = ...``: other modules read them
through this module, never by a name imported from it.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

# This package's directory: its worker processes run ``python PACKAGE_DIR --gpu-worker``
# (or ``--ddp-worker``), as ``__main__.py`` allows.
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

EXIT_OK = 0
EXIT_BAD_ARGS = 2
EXIT_NO_TORCH = 3
EXIT_NO_CUDA = 4

_T0 = time.monotonic()
_QUIET = False
_LOG_TAG = "gpu_throughput_measure"
# --progress FILE: what runs now and what is done, rewritten at every step (a GPU worker
# writes FILE.gpuN), for a caller that polls (the gpu_check role prints it while it waits).
_PROGRESS: Dict[str, Any] = {"path": None, "state": {}}


def progress(**changes: Any) -> None:
    """Update the progress file (atomically); a no-op without --progress."""
    path = _PROGRESS["path"]
    if not path:
        return
    state = _PROGRESS["state"]
    done = changes.pop("done", None)
    if done:
        state.setdefault("done", {}).update(done)
    state.update(changes)
    state.setdefault("started_at", time.time() - (time.monotonic() - _T0))
    state["elapsed_s"] = _round(time.monotonic() - _T0, 1)
    state["updated_at"] = time.time()
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w") as fh:
            json.dump(state, fh)
        os.replace(tmp, path)
    except OSError:
        pass


def log(message: str) -> None:
    """Progress line on stderr (stdout carries only the JSON document)."""
    if not _QUIET:
        sys.stderr.write(f"[{_LOG_TAG} +{time.monotonic() - _T0:6.1f}s] {message}\n")
        sys.stderr.flush()


def _round(value: Optional[float], digits: int = 2) -> Optional[float]:
    if value is None:
        return None
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        return None
    return round(value, digits)


def list_children() -> List[Dict[str, Any]]:
    """Live child processes of this process, read from /proc (Linux)."""
    me = os.getpid()
    children = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == me and fields[0] != "Z":
            children.append({"pid": int(entry), "name": name, "state": fields[0]})
    return children


def _stop_processes(procs: List[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
