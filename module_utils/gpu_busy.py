"""Is a GPU busy with someone else's work? Decide before the measurement, watch during it.

``library/gpu_throughput_measure.py`` reads ``nvidia-smi -q -x`` (parsed by
``module_utils/nvidia_smi.parse_xml``) before it starts the benchmark program and every few
seconds while it runs. This file holds the decisions, as pure functions the tests drive
with a fake reader and a fake clock:

* :func:`gpu_state`: one GPU of one read. It is busy when another process computes on it
  (a compute process nvidia-smi lists that is not the benchmark's), its memory in use is
  above ``BUSY_MEMORY_MIB``, or its utilisation is at least ``BUSY_UTILIZATION_PCT``.
  A process whose pid this host's /proc does not have, or that has no name, is *hidden*
  (another container or PID namespace): counted, never named.
* :func:`decide`: the policy ``gpu_check_busy_gpu``: ``skip`` leaves the busy GPUs out at
  once; ``wait`` re-reads every ``interval`` seconds up to ``wait_s``, then leaves out what
  is still busy; ``measure`` measures every GPU anyway (the causes still name the process).
* :func:`new_contention` / :func:`add_sample` / :func:`finish_contention`: what the reads
  during the measurement saw per GPU: foreign processes, the highest utilisation, the
  clock-event reasons.

Runs on target hosts: Python 3.8 compatible, standard library only.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set

#: Memory in use above this (MiB) means another process holds the GPU (an idle GPU shows
#: 0 to a few MiB; the real H100 reading with a 74 GiB holder shows 76303).
BUSY_MEMORY_MIB = 1024
#: Utilisation (percent) at or above this, before the measurement, means the GPU computes.
BUSY_UTILIZATION_PCT = 10
POLICIES = ("skip", "wait", "measure")
DEFAULT_POLICY = "wait"
DEFAULT_WAIT_S = 120
#: Seconds between reads while waiting, and between samples during the measurement.
POLL_INTERVAL_S = 5.0
SAMPLE_INTERVAL_S = 5.0

PidVisible = Callable[[int], bool]


def pid_visible_in_proc(pid: int) -> bool:
    """Whether this host's /proc has the pid (False for another PID namespace's pid)."""
    return os.path.isdir(f"/proc/{pid}")


def proc_parents(proc: str = "/proc") -> Dict[int, int]:
    """{pid: parent pid} of every process /proc lists (those that vanish are skipped)."""
    parents: Dict[int, int] = {}
    try:
        names = os.listdir(proc)
    except OSError:
        return parents
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc, name, "stat")) as fh:
                stat = fh.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 2 and fields[1].isdigit():
            parents[int(name)] = int(fields[1])
    return parents


def descendants(root: int, parents: Mapping[int, int]) -> Set[int]:
    """``root`` and every process below it in the {pid: ppid} map."""
    children: Dict[int, List[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found = {root}
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _is_compute(process: Mapping[str, Any]) -> bool:
    """A compute process (type C or C+G, or no type given); a display-only (G) one is not."""
    kind = (process.get("type") or "C").upper()
    return "C" in kind


def gpu_label(gpu: Mapping[str, Any]) -> str:
    return f"GPU {gpu.get('index')} ({gpu.get('name') or 'unknown model'})"


def process_text(process: Mapping[str, Any]) -> str:
    """'pid 559 (python3, 76294 MiB)'."""
    memory = process.get("used_memory_mib")
    detail = process.get("name") or "name not shown"
    if memory is not None:
        detail += f", {memory} MiB"
    return f"pid {process.get('pid')} ({detail})"


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "es" if word.endswith("s") else "s")


def gpu_state(
    gpu: Mapping[str, Any],
    own_pids: Iterable[int] = (),
    pid_visible: Optional[PidVisible] = None,
    measured: bool = False,
) -> Dict[str, Any]:
    """One GPU of one nvidia-smi read: its foreign processes and whether it is busy.

    ``own_pids`` are the benchmark's processes (none before it starts). ``pid_visible``
    (the module passes :func:`pid_visible_in_proc`) tells whether this host sees a pid;
    None takes every named process as visible. ``measured``: the
    benchmark runs on this GPU now, so memory and utilisation are its own and only
    processes count; where none of ``own_pids`` shows on the GPU, one hidden process is
    taken to be the benchmark's (nvidia-smi may print the pid of another namespace).
    """
    own = set(own_pids)
    visible: List[Dict[str, Any]] = []
    hidden = 0
    own_seen = False
    for process in gpu.get("processes") or []:
        pid = process.get("pid")
        if pid in own:
            own_seen = True
            continue
        if not _is_compute(process):
            continue
        if pid is None or not process.get("name") or (pid_visible and not pid_visible(pid)):
            hidden += 1
        else:
            visible.append(
                {
                    "pid": pid,
                    "name": process.get("name"),
                    "used_memory_mib": process.get("used_memory_mib"),
                }
            )
    if measured and not own_seen and hidden:
        hidden -= 1
    memory = gpu.get("memory_used_mib")
    util = gpu.get("utilization_gpu_pct")
    why: List[str] = []
    if visible:
        why.append("process")
    if hidden:
        why.append("hidden-process")
    if not measured:
        if memory is not None and memory > BUSY_MEMORY_MIB:
            why.append("memory")
        if util is not None and util >= BUSY_UTILIZATION_PCT:
            why.append("utilization")
    return {
        "index": gpu.get("index"),
        "name": gpu.get("name"),
        "busy": bool(why),
        "why": why,
        "processes": visible,
        "hidden_processes": hidden,
        "memory_used_mib": memory,
        "utilization_gpu_pct": util,
        "clock_event_reasons_active": list(gpu.get("clock_event_reasons_active") or []),
    }


def busy_text(state: Mapping[str, Any]) -> str:
    """What keeps a GPU busy, in words: the processes first, then memory or utilisation."""
    parts = []
    if state.get("processes"):
        parts.append(
            "another process uses it: " + ", ".join(process_text(p) for p in state["processes"])
        )
    hidden = state.get("hidden_processes") or 0
    if hidden:
        parts.append(
            f"nvidia-smi reports {plural(hidden, 'process')} on GPU {state.get('index')} "
            "that this host cannot see (another container or PID namespace)"
        )
    if not parts:
        held = []
        if "memory" in (state.get("why") or []):
            held.append(f"{state.get('memory_used_mib')} MiB of its memory in use")
        if "utilization" in (state.get("why") or []):
            held.append(f"{state.get('utilization_gpu_pct')}% utilisation")
        if held:
            parts.append(" and ".join(held) + " while nvidia-smi lists no process")
    return "; ".join(parts)


def wanted_gpus(gpus_arg: Optional[str], indices: Sequence[int]) -> List[int]:
    """The GPUs the program would measure: its ``--gpus`` value (all, a count N, a list)."""
    text = (gpus_arg or "all").strip()
    if text == "all":
        return list(indices)
    if text.isdigit():
        return list(indices)[: int(text)]
    return [int(part) for part in text.split(",") if part.strip().isdigit()]


def gpus_arg(indices: Sequence[int]) -> str:
    """``--gpus`` for these indices: '1,2,3'; one index gets a trailing comma ('3,'),
    since a bare number means the first N GPUs."""
    text = ",".join(str(i) for i in indices)
    return text + "," if len(indices) == 1 else text


def decide(
    policy: str,
    wait_s: float,
    read: Callable[[], Mapping[str, Any]],
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    interval: float = POLL_INTERVAL_S,
    pid_visible: Optional[PidVisible] = None,
    wanted: Optional[Sequence[int]] = None,
) -> Dict[str, Any]:
    """Which GPUs to measure, by the busy-GPU policy; ``read()`` returns ``parse_xml``'s dict.

    Returns the decision: ``policy``, ``wait_s``, ``waited_s``, ``reads``, ``gpus`` (each
    GPU's :func:`gpu_state` at the last read, with ``skipped``), ``busy_at_start``,
    ``busy`` (at the last read), ``skipped`` (left out: nobody measures them), ``measure``
    (the GPUs the program runs on), ``error`` (nvidia-smi could not be read: every GPU is
    measured, as before).
    """
    if policy not in POLICIES:
        raise ValueError(f"busy-GPU policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    if wait_s < 0:
        raise ValueError(f"the busy wait must be >= 0 seconds, got {wait_s!r}")
    decision: Dict[str, Any] = {
        "policy": policy,
        "wait_s": wait_s,
        "waited_s": 0.0,
        "reads": 0,
        "gpus": [],
        "busy_at_start": [],
        "busy": [],
        "skipped": [],
        "measure": list(wanted) if wanted is not None else None,
        "error": None,
    }
    start = clock()
    states: List[Dict[str, Any]] = []
    while True:
        try:
            parsed = read()
        except (OSError, ValueError) as exc:
            decision["error"] = f"nvidia-smi could not be read, every GPU is measured: {exc}"
            break
        decision["reads"] += 1
        states = [gpu_state(g, (), pid_visible) for g in parsed.get("gpus") or []]
        if wanted is not None:
            states = [s for s in states if s["index"] in wanted]
        busy = [s["index"] for s in states if s["busy"]]
        if decision["reads"] == 1:
            decision["busy_at_start"] = busy
        decision["busy"] = busy
        elapsed = clock() - start
        if not busy or policy != "wait" or elapsed >= wait_s:
            break
        sleep(min(interval, max(0.0, wait_s - elapsed)))
    decision["waited_s"] = round(clock() - start, 1)
    skipped = [] if policy == "measure" else list(decision["busy"])
    for state in states:
        state["skipped"] = state["index"] in skipped
    decision["gpus"] = states
    decision["skipped"] = skipped
    if states:
        decision["measure"] = [s["index"] for s in states if s["index"] not in skipped]
    return decision


def skipped_text(decision: Mapping[str, Any]) -> List[str]:
    """One sentence per GPU left out: 'GPU 0 (...) not measured: busy: another process ...'."""
    out = []
    for state in decision.get("gpus") or []:
        if state.get("skipped"):
            waited = decision.get("waited_s") or 0
            after = f" after waiting {waited:g} s" if decision.get("policy") == "wait" else ""
            out.append(f"{gpu_label(state)} not measured: busy{after}: {busy_text(state)}")
    return out


# ----------------------------------------------------------------------------- during the run


def new_contention(interval: float = SAMPLE_INTERVAL_S) -> Dict[str, Any]:
    return {"interval_s": interval, "samples": 0, "errors": 0, "last_error": None, "gpus": {}}


def add_sample(
    contention: Dict[str, Any],
    parsed: Mapping[str, Any],
    own_pids: Iterable[int],
    measured: Optional[Sequence[int]],
    seconds: float,
    pid_visible: Optional[PidVisible] = None,
) -> None:
    """Fold one read during the measurement into ``contention`` (in place).

    ``measured``: the GPUs the program runs on (None: every GPU).
    """
    own = set(own_pids)
    contention["samples"] += 1
    for gpu in parsed.get("gpus") or []:
        index = gpu.get("index")
        is_measured = measured is None or index in measured
        state = gpu_state(gpu, own, pid_visible, measured=is_measured)
        entry = contention["gpus"].setdefault(
            str(index),
            {
                "index": index,
                "name": gpu.get("name"),
                "measured": is_measured,
                "foreign_processes": [],
                "hidden_processes_max": 0,
                "samples_with_foreign": 0,
                "utilization_gpu_max": None,
                "clock_event_reasons_seen": [],
            },
        )
        for process in state["processes"]:
            seen = next((p for p in entry["foreign_processes"] if p["pid"] == process["pid"]), None)
            if seen is None:
                entry["foreign_processes"].append(
                    dict(process, first_seen_s=round(seconds, 1), last_seen_s=round(seconds, 1))
                )
            else:
                seen["last_seen_s"] = round(seconds, 1)
                memory = process.get("used_memory_mib")
                if memory is not None and (seen.get("used_memory_mib") or 0) < memory:
                    seen["used_memory_mib"] = memory
        entry["hidden_processes_max"] = max(
            entry["hidden_processes_max"], state["hidden_processes"]
        )
        if state["processes"] or state["hidden_processes"]:
            entry["samples_with_foreign"] += 1
        util = gpu.get("utilization_gpu_pct")
        if util is not None:
            entry["utilization_gpu_max"] = max(util, entry["utilization_gpu_max"] or 0)
        for reason in state["clock_event_reasons_active"]:
            if reason not in entry["clock_event_reasons_seen"]:
                entry["clock_event_reasons_seen"].append(reason)


def add_error(contention: Dict[str, Any], error: str) -> None:
    contention["errors"] += 1
    contention["last_error"] = error


def finish_contention(contention: Mapping[str, Any]) -> Dict[str, Any]:
    """The result's ``contention``: ``gpus`` as a list in index order."""
    out = dict(contention)
    out["gpus"] = sorted(
        contention["gpus"].values(), key=lambda g: (g["index"] is None, g["index"] or 0)
    )
    return out
