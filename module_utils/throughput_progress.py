"""What the throughput program is doing now, in one line, from its --progress files.

``gpu_throughput_measure.py --progress FILE`` rewrites FILE at every step (phase, the step
running now, the steps done with their img/s, elapsed seconds); on a host with several
GPUs each GPU's process writes ``FILE.gpuN`` while the parent's FILE says "every GPU".
:func:`line` turns them into one line; :func:`snapshot` into the numbers a progress line
carries (the mode running, elapsed seconds, an estimate of what is left).

On the controller, :func:`host_line` and :class:`FleetProgress` turn the
gpu_throughput_progress_info results into what a person watching the play reads: one line
per host and poll, or, with more than ``FLEET_THRESHOLD`` hosts, one fleet line per poll
(the callback_plugins/kindling_progress.py stdout callback and tools/fleet_report.py
both use them). Python 3.8, standard library only.
"""

from __future__ import annotations

import glob
import json
import os
import re
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

# What each profile of kindling_bench runs (its cli.PROFILES; a unit test holds the two
# equal) and its time budget in seconds: the estimate of what is left starts from these.
PROFILE_PLANS: Dict[str, Dict[str, Any]] = {
    "quick": {
        "modes": ["fp32", "amp_fp16", "amp_fp16_cl"],
        "probes": ["h2d", "membw", "matmul"],
        "budget_s": 85.0,
    },
    "full": {
        "modes": [
            "fp32",
            "tf32",
            "amp_fp16",
            "amp_bf16",
            "amp_fp16_cl",
            "amp_bf16_cl",
            "compile",
            "ddp",
        ],
        "probes": ["h2d", "membw", "matmul", "input_pipeline"],
        "budget_s": 540.0,
    },
}
# More hosts than this polling at once: one fleet line per poll instead of one per host.
FLEET_THRESHOLD = 4


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


def plan_for(
    profile: Optional[str] = None,
    modes: Optional[Sequence[str]] = None,
    budget_s: Optional[float] = None,
) -> Dict[str, Any]:
    """The modes a run measures and its budget: ``modes`` where given, else the profile's."""
    known = PROFILE_PLANS.get(profile or "", {})
    return {
        "modes": list(modes) if modes else list(known.get("modes") or []),
        "budget_s": budget_s if budget_s else known.get("budget_s"),
    }


def _elapsed(main: Dict[str, Any], now: Optional[float]) -> Optional[float]:
    elapsed = main.get("elapsed_s")
    if main.get("phase") != "done" and isinstance(main.get("started_at"), (int, float)):
        elapsed = (time.time() if now is None else now) - main["started_at"]
    return float(elapsed) if isinstance(elapsed, (int, float)) else None


def estimate_left(
    elapsed: Optional[float], done: float, planned: int, budget_s: Optional[float]
) -> Tuple[Optional[float], str]:
    """Seconds left and how they were estimated: ``rate`` (the time per mode so far times
    the modes left), ``budget`` (before a mode has finished: the profile's budget less
    the time spent), or ``unknown``."""
    if elapsed is None:
        return None, "unknown"
    if planned and done > 0:
        left = max(planned - done, 0.0) * elapsed / done
        return round(left), "rate"
    if budget_s:
        return round(max(budget_s - elapsed, 0.0)), "budget"
    return None, "unknown"


def snapshot(
    state: Dict[str, Any], now: Optional[float] = None, plan: Optional[Dict[str, Any]] = None
) -> Dict[str, Any]:
    """The numbers of a progress line: ``elapsed_s``, ``running`` (what runs now, e.g.
    ``amp_fp16`` or ``amp_fp16 on 8 GPUs``), ``done`` (modes finished, a mean over the GPUs
    where every GPU measures at once), ``planned``, ``left_s`` and ``left_basis``,
    ``lowest`` (the lowest img/s so far: ``{gpu, mode, img_s}``) and ``phase``."""
    plan = plan or {}
    main = state.get("main")
    gpus = state.get("gpus") or {}
    planned = len(plan.get("modes") or [])
    out: Dict[str, Any] = {
        "phase": None,
        "elapsed_s": None,
        "running": "starting",
        "done": 0.0,
        "planned": planned,
        "left_s": None,
        "left_basis": "unknown",
        "lowest": None,
    }
    if main is None:
        out["left_s"], out["left_basis"] = estimate_left(0.0, 0, planned, plan.get("budget_s"))
        return out
    elapsed = _elapsed(main, now)
    phase = main.get("phase")
    out.update(phase=phase, elapsed_s=round(elapsed, 1) if elapsed is not None else None)
    rates: List[Tuple[float, Any, str]] = []
    if phase == "every GPU" and gpus:
        counts = [len(g.get("done") or {}) for g in gpus.values()]
        out["done"] = sum(counts) / len(counts)
        running = sorted({g.get("current") for g in gpus.values() if g.get("current")})
        out["running"] = (
            f"{', '.join(running)} on {len(gpus)} GPUs" if running else f"{len(gpus)} GPUs"
        )
        for index, gpu in gpus.items():
            for mode, entry in (gpu.get("done") or {}).items():
                if isinstance(entry.get("img_s"), (int, float)):
                    rates.append((float(entry["img_s"]), index, mode))
    else:
        out["done"] = float(len(main.get("done") or {}))
        if phase == "done":
            out["running"] = "done"
        elif main.get("current"):
            out["running"] = ("probe " if phase == "probe" else "") + str(main["current"])
        else:
            out["running"] = str(phase or "starting")
        for mode, entry in (main.get("done") or {}).items():
            if isinstance(entry, dict) and isinstance(entry.get("img_s"), (int, float)):
                rates.append((float(entry["img_s"]), None, mode))
    if rates:
        img_s, gpu, mode = min(rates, key=lambda r: (r[0], str(r[1]), r[2]))
        out["lowest"] = {"gpu": gpu, "mode": mode, "img_s": img_s}
    if phase == "done":
        out["left_s"], out["left_basis"] = 0, "done"
    elif phase == "probe" and planned:
        out["left_s"], out["left_basis"] = estimate_left(elapsed, planned, planned, None)
    else:
        out["left_s"], out["left_basis"] = estimate_left(
            elapsed, out["done"], planned, plan.get("budget_s")
        )
    return out


def _seconds(value: Any) -> str:
    return f"{value:.0f} s" if isinstance(value, (int, float)) else "? s"


def _left(result: Dict[str, Any]) -> str:
    left, basis = result.get("left_s"), result.get("left_basis")
    if basis == "done":
        return "finishing"
    if not isinstance(left, (int, float)):
        return "time left unknown"
    if basis == "budget":
        return f"at most {left:.0f} s left"
    if left <= 0:
        return "finishing"
    return f"about {left:.0f} s left"


def host_line(host: str, result: Dict[str, Any]) -> str:
    """One host's progress line from its gpu_throughput_progress_info result, e.g.
    ``gpu check [gpu1]: amp_fp16_cl running, 42 s elapsed, about 20 s left (2 of 3
    modes done; lowest so far: fp32 1,061 img/s)``."""
    text = (
        f"gpu check [{host}]: {result.get('running') or 'starting'} running, "
        f"{_seconds(result.get('elapsed_s'))} elapsed, {_left(result)}"
    )
    if result.get("running") in ("done", "starting"):
        text = text.replace(f"{result['running']} running", result["running"], 1)
    extra = []
    planned = result.get("planned")
    done = result.get("done")
    if planned and isinstance(done, (int, float)):
        extra.append(f"{done:g} of {planned} modes done")
    lowest = result.get("lowest")
    if lowest:
        where = f"GPU {lowest['gpu']} " if lowest.get("gpu") is not None else ""
        extra.append(f"lowest so far: {where}{lowest['mode']} {lowest['img_s']:,.0f} img/s")
    return text + (f" ({'; '.join(extra)})" if extra else "")


class FleetProgress:
    """The throughput check's progress over a fleet, from its poll results.

    :meth:`started` counts a host whose measurement began (the async gpu_throughput_measure
    task); :meth:`polled` takes each poll's result and :meth:`finished` the last one.
    Each returns the line to print, or None. Up to ``threshold`` hosts, every poll gives
    its host's line (:func:`host_line`). Above it, one fleet line per poll: the first
    host to poll again closes the round, and the line says how many run and are done and
    which host is the slowest so far (the latest expected to finish); the last host to
    finish gives a closing line."""

    def __init__(self, threshold: int = FLEET_THRESHOLD) -> None:
        self.threshold = threshold
        self.hosts: Dict[str, Dict[str, Any]] = {}
        self.done: Dict[str, Dict[str, Any]] = {}
        self.expected: List[str] = []
        self._round: set = set()

    def started(self, host: str) -> None:
        if host not in self.expected:
            self.expected.append(host)

    def _total(self) -> int:
        return len(set(self.expected) | set(self.hosts) | set(self.done))

    def fleet_mode(self) -> bool:
        return self._total() > self.threshold

    def polled(self, host: str, result: Dict[str, Any]) -> Optional[str]:
        self.started(host)
        self.hosts[host] = dict(result)
        if not self.fleet_mode():
            return host_line(host, result)
        if host in self._round:
            self._round = {host}
            return self.fleet_line()
        self._round.add(host)
        return None

    def finished(self, host: str, result: Optional[Dict[str, Any]] = None) -> Optional[str]:
        self.started(host)
        last = dict(self.hosts.pop(host, {}), **(result or {}))
        self.done[host] = last
        self._round.discard(host)
        if not self.fleet_mode():
            return None
        if len(self.done) == self._total():
            return self.fleet_line()
        return None

    def slowest(self) -> Optional[Tuple[str, Dict[str, Any]]]:
        """The running host expected to finish last (elapsed plus left; longest first)."""

        def finish(item: Tuple[str, Dict[str, Any]]) -> Tuple[float, float, str]:
            result = item[1]
            elapsed = result.get("elapsed_s") or 0.0
            left = result.get("left_s") or 0.0
            return (elapsed + left, elapsed, item[0])

        if self.hosts:
            return max(self.hosts.items(), key=finish)
        if self.done:
            return max(self.done.items(), key=finish)
        return None

    def fleet_line(self) -> str:
        total = self._total()
        waiting = total - len(self.hosts) - len(self.done)
        parts = [f"{len(self.hosts)} running", f"{len(self.done)} done"]
        if waiting > 0:
            parts.append(f"{waiting} waiting")
        text = f"gpu check, {total} hosts: " + ", ".join(parts)
        slowest = self.slowest()
        if slowest is not None and self.hosts:
            host, result = slowest
            running = result.get("running") or "starting"
            text += (
                f"; slowest so far: {host} ({running}"
                + ("" if running in ("starting", "done") else " running")
                + f", {_seconds(result.get('elapsed_s'))} elapsed, {_left(result)})"
            )
        elif slowest is not None:
            host, result = slowest
            text += f"; slowest: {host} ({_seconds(result.get('elapsed_s'))})"
        lows = [
            (r["lowest"]["img_s"], h, r["lowest"])
            for h, r in list(self.hosts.items()) + list(self.done.items())
            if isinstance(r.get("lowest"), dict)
            and isinstance(r["lowest"].get("img_s"), (int, float))
        ]
        if lows:
            img_s, host, low = min(lows, key=lambda x: (x[0], x[1]))
            where = f" GPU {low['gpu']}" if low.get("gpu") is not None else ""
            text += f"; lowest img/s: {host}{where} {low['mode']} {img_s:,.0f}"
        return text
