"""The fleet as its own baseline: each measurement against its peers of the same run.

A reference table carries another system's software and settings; fifty hosts of one
model measured in the same run carry this fleet's. :func:`judge_peers` groups the
measurements by (GPU model key, mode) and compares each with the median of its peers:
the *other* measurements of its group (so that with two hosts each is compared with the
other, and an outlier never pulls its own baseline). A measurement is

- ``in-line``: within ``margin`` of its peers' median;
- ``trails``: more than ``margin`` below it. Where the table passed it, this is the case
  the table alone misses (``flag``: ``trails-peers``);
- ``leads``: more than ``margin`` above it (reported, not a fault);
- ``no-peers``: the only measurement of its model and mode in this run.

``flag`` names the disagreements between the table and the peers that a fleet operator
acts on: ``trails-peers`` (the table passed it, its peers are faster) and
``group-slow`` (the table failed it, but so is every peer: the fleet's software or
settings, not this host, is the likely cause).

A measurement is a mapping with ``host``, ``gpu_key``, ``mode``, ``img_s`` and
``table_status`` (the judge's pass/fail/unknown/skipped), and optionally ``gpu`` (a GPU
index, for per-GPU measurements). Python 3.8, standard library only.
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

DEFAULT_MARGIN = 0.10

Key = Tuple[str, str]


def _valid(m: Mapping[str, Any]) -> bool:
    value = m.get("img_s")
    return isinstance(value, (int, float)) and value > 0 and bool(m.get("gpu_key"))


def groups(measurements: Sequence[Mapping[str, Any]]) -> Dict[Key, List[Mapping[str, Any]]]:
    """(gpu_key, mode) -> its measurements with a positive img/s, in input order."""
    out: Dict[Key, List[Mapping[str, Any]]] = {}
    for m in measurements:
        if _valid(m):
            out.setdefault((str(m["gpu_key"]), str(m["mode"])), []).append(m)
    return out


def _where(m: Mapping[str, Any]) -> str:
    gpu = m.get("gpu")
    return f"{m['host']} GPU {gpu}" if gpu is not None else str(m["host"])


def judge_peers(
    measurements: Sequence[Mapping[str, Any]], margin: float = DEFAULT_MARGIN
) -> List[Dict[str, Any]]:
    """One verdict per valid measurement, in input order (see the module's docstring)."""
    if not 0 < margin < 1:
        raise ValueError(f"margin must be in (0, 1), got {margin!r}")
    grouped = groups(measurements)
    out: List[Dict[str, Any]] = []
    for m in measurements:
        if not _valid(m):
            continue
        members = grouped[(str(m["gpu_key"]), str(m["mode"]))]
        peers = [p["img_s"] for p in members if p is not m]
        entry: Dict[str, Any] = {
            "host": m["host"],
            "gpu": m.get("gpu"),
            "gpu_key": m["gpu_key"],
            "mode": m["mode"],
            "img_s": float(m["img_s"]),
            "table_status": m.get("table_status"),
            "peer_count": len(peers),
            "peer_median": None,
            "peer_ratio": None,
            "verdict": "no-peers",
            "flag": None,
            "reason": (
                f"no peer baseline: {_where(m)} is the only {m['gpu_key']} measured in "
                f"{m['mode']} in this run"
            ),
        }
        if peers:
            median = float(statistics.median(peers))
            ratio = float(m["img_s"]) / median
            entry.update(peer_median=round(median, 1), peer_ratio=round(ratio, 4))
            if ratio < 1 - margin:
                entry["verdict"] = "trails"
                entry["reason"] = (
                    f"{_where(m)} {m['mode']} {m['img_s']:,.0f} img/s is {ratio:.0%} of its "
                    f"{len(peers)} peer(s)' median {median:,.0f}, more than {margin:.0%} below"
                )
                if m.get("table_status") == "pass":
                    entry["flag"] = "trails-peers"
                    entry["reason"] += " (the table passed it)"
            elif ratio > 1 + margin:
                entry["verdict"] = "leads"
                entry["reason"] = (
                    f"{_where(m)} {m['mode']} is {ratio:.0%} of its peers' median {median:,.0f}"
                )
            else:
                entry["verdict"] = "in-line"
                entry["reason"] = None
            if (
                m.get("table_status") == "fail"
                and entry["verdict"] != "trails"
                and all(p.get("table_status") == "fail" for p in members)
            ):
                entry["flag"] = "group-slow"
                entry["reason"] = (
                    f"{_where(m)} fails the table in {m['mode']}, and so does every one of its "
                    f"{len(peers)} {m['gpu_key']} peer(s), within {margin:.0%} of each other: "
                    "the fleet's software or settings, not this host, is the likely cause"
                )
        out.append(entry)
    return out


def group_summary(
    verdicts: Sequence[Mapping[str, Any]],
) -> List[Dict[str, Any]]:
    """Per (gpu_key, mode): count, median, min, max and the trailing measurements."""
    by: Dict[Key, List[Mapping[str, Any]]] = {}
    for v in verdicts:
        by.setdefault((v["gpu_key"], v["mode"]), []).append(v)
    rows = []
    for (gpu_key, mode), members in sorted(by.items()):
        values = [v["img_s"] for v in members]
        rows.append(
            {
                "gpu_key": gpu_key,
                "mode": mode,
                "count": len(members),
                "median": round(float(statistics.median(values)), 1),
                "min": min(values),
                "max": max(values),
                "trailing": [_where(v) for v in members if v["verdict"] == "trails"],
                "baseline": len(members) > 1,
            }
        )
    return rows


def worst(
    verdicts: Sequence[Mapping[str, Any]], host: str, mode: Optional[str] = None
) -> Optional[Mapping[str, Any]]:
    """The host's measurement (in ``mode``) furthest below its peers; without peers its
    first measurement; None when it has none."""
    mine = [v for v in verdicts if v["host"] == host and mode in (None, v["mode"])]
    judged = [v for v in mine if v["peer_ratio"] is not None]
    if judged:
        return min(judged, key=lambda v: v["peer_ratio"])
    return mine[0] if mine else None
