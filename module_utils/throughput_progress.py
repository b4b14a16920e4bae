"""What the throughput program is doing now, in one line, from its --progress files.

``gpu_throughput.py --progress FILE`` rewrites FILE at every step (phase, the step
running now, the steps done with their img/s, elapsed seconds); on a host with several
GPUs each GPU's process writes ``FILE.gpuN`` while the parent's FILE says "every GPU".
:func:`line` turns them into the text the gpu_check role prints at each poll. Python
3.8, standard library only.
"""

from __future__ import annotations

import glob
import json
import os
import re
import time
from typing import Any, Dict, List, Optional


def _load(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open(path) as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read(progress_file: str) -> Dict[str, Any]:
    """{"main": FILE's state or None, "gpus": {index: FILE.gpuN's state}}."""
    gpus: Dict[int, Dict[str, Any]] = {}
    for path in glob.glob(glob.escape(progress_file) + ".gpu*"):
        match = re.search(r"\.gpu(\d+)$", path)
        state = _load(path) if match else None
        if state is not None and match:
            gpus[int(match.group(1))] = state
    return {"main": _load(progress_file), "gpus": gpus}


def _rate(entry: Dict[str, Any]) -> str:
    img_s = entry.get("img_s")
    if entry.get("status") == "ok" and isinstance(img_s, (int, float)):
        return f"{img_s:,.0f} img/s"
    return str(entry.get("status") or "?")


def _done(done: Dict[str, Any]) -> str:
    return ", ".join(f"{mode} {_rate(entry)}" for mode, entry in done.items())


def line(state: Dict[str, Any], now: Optional[float] = None) -> str:
    """One line: the phase and step now, elapsed seconds, and what is done."""
    main = state.get("main")
    gpus = state.get("gpus") or {}
    if main is None:
        return "starting: the program has not written its progress yet"
    elapsed = main.get("elapsed_s")
    if main.get("phase") != "done" and isinstance(main.get("started_at"), (int, float)):
        elapsed = (time.time() if now is None else now) - main["started_at"]
    head = f"{elapsed:.0f} s" if isinstance(elapsed, (int, float)) else "?"
    phase = main.get("phase")
    parts: List[str] = []
    if phase == "every GPU":
        running: Dict[str, List[int]] = {}
        for index, gpu in sorted(gpus.items()):
            what = gpu.get("current") or (
                "starting" if gpu.get("phase") == "starting" else "between modes"
            )
            running.setdefault(what, []).append(index)
        listed = main.get("gpus") or sorted(gpus)
        now = "; ".join(
            f"{mode} on GPU {', '.join(str(i) for i in idx)}" for mode, idx in running.items()
        )
        parts.append(f"every GPU at once ({len(listed)}): {now or 'starting'}")
        finished = [i for i, g in sorted(gpus.items()) if g.get("done")]
        if finished:
            slowest = min(
                (g["done"].get(m, {}).get("img_s") or 0, i, m)
                for i, g in gpus.items()
                for m in g.get("done") or {}
            )
            parts.append(f"lowest so far: GPU {slowest[1]} {slowest[2]} {slowest[0]:,.0f} img/s")
    elif phase == "done":
        parts.append("done")
    elif main.get("current"):
        kind = "probe" if phase == "probe" else "mode"
        parts.append(f"{kind} {main['current']} running")
    else:
        parts.append(str(phase or "starting"))
    if main.get("done"):
        parts.append(f"done: {_done(main['done'])}")
    return f"[{head}] " + "; ".join(parts)


def finished(results_file: Optional[str]) -> bool:
    """True once Ansible's async wrapper has written the module's result to its file."""
    if not results_file or not os.path.exists(results_file):
        return False
    data = _load(results_file)
    if data is None:
        return False  # being written
    return "started" not in data or bool(data.get("finished"))
