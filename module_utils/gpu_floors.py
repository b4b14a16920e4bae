"""Floors for what one GPU can show beside ResNet-50: copies over its PCIe link, the link
itself, its memory bandwidth, its dense matmul rate.

The program's probes measure (``h2d``: pinned copies both ways and the PCIe link read while
they ran; ``membw``: a device-to-device copy; ``matmul``: dense matmuls per precision), and
:func:`judge_floors` holds each figure to its floor. The floors are data:
``throughput_floors`` of data/vendor_catalogue.yml (generated into
module_utils/vendor_catalogue.py), each with a ``fail`` and a ``warn`` level and a source.
A floor's levels are fractions of its basis:

- ``pcie_link``: the link's GB/s, generation x width as read while the copies ran (an idle
  GPU lowers its link), at the per-lane rate and line encoding of its generation;
- ``memory_bandwidth_gbs`` or a precision (``fp32``, ``tf32``, ``bf16``, ``fp16``): the
  card's datasheet row in ``throughput_gpus``;
- ``link_max`` (the ``pcie_link`` floor): the link under load against what GPU and slot
  support (fail) and what the card supports (warn).

Each floor ends as pass, warn, fail, not_run (with the reason) or waived (named in the
inventory's waivers: reported, never failed).

Every probed GPU is judged: the program runs the floors' probes on each GPU it measured,
one GPU at a time, and lists each GPU's result in ``probes.<name>.gpus`` (each with its
``gpu_index``; ``probes.<name>`` itself is the first GPU's, as in older reports, which
judge as GPU ``gpu_index`` or 0). Each floor row carries its ``gpu``, and the floors
line names the GPU that fails. Python 3.8, standard library only (it runs inside
Ansible modules).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from ansible.module_utils.vendor_catalogue import CATALOGUE

_DATA = CATALOGUE["throughput_floors"]
_GPUS = CATALOGUE["throughput_gpus"]

# PCIe generation -> its row: GT/s per lane and line encoding (payload bits per line bits).
PCIE_GENERATIONS: Dict[int, Dict[str, Any]] = {
    int(row["gen"]): dict(row) for row in _DATA["pcie_generations"]["rows"]
}
PCIE_SOURCE: str = _DATA["pcie_generations"]["source"]
# Floor name -> its row (probe, field, basis, fail, warn, unit, source), in report order.
FLOORS: Dict[str, Dict[str, Any]] = {row["name"]: dict(row) for row in _DATA["floors"]}
FLOOR_NAMES = tuple(FLOORS)
# GPU key -> what NHC and DCGM fail that card below (shown beside the floor, never judged).
ANCHORS: Dict[str, Dict[str, Any]] = {row["gpu"]: dict(row) for row in _DATA["anchors"]}
_DATASHEETS: Dict[str, Mapping[str, Any]] = {
    row["key"]: row for row in _GPUS["rows"] if row.get("datasheet")
}
_JUDGE_AS: Dict[str, str] = {
    row["key"]: row["judge_as"] for row in _GPUS["rows"] if row.get("judge_as")
}

STATUSES = ("pass", "warn", "fail", "not_run", "waived")
_SEVERITY = {"fail": 3, "warn": 2, "pass": 1, "not_run": 0, "waived": 0}


# ----------------------------------------------------------------------------- PCIe


def link_gb_s(gen: Optional[int], width: Optional[int]) -> Optional[float]:
    """The payload GB/s of a PCIe link (one direction), or None for an unknown link.

    GT/s per lane x encoding (8b/10b to Gen2, 128b/130b Gen3-5, Flit Gen6) x lanes / 8.
    """
    row = PCIE_GENERATIONS.get(gen) if isinstance(gen, int) else None
    if row is None or not isinstance(width, int) or width < 1:
        return None
    return float(row["gt_s"]) * row["payload_bits"] / row["line_bits"] * width / 8.0


def link_name(gen: Optional[int], width: Optional[int] = None) -> str:
    """'Gen5 x16', 'Gen4', 'an unknown link'."""
    if gen is None and width is None:
        return "an unknown link"
    text = f"Gen{gen}" if gen is not None else "Gen?"
    return f"{text} x{width}" if width is not None else text


def _int(value: Any) -> Optional[int]:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value).strip().lower().rstrip("x")
    return int(text) if text.isdigit() else None


def _facts_gpu(nvidia_smi: Optional[Mapping[str, Any]], index: int = 0) -> Mapping[str, Any]:
    for position, gpu in enumerate((nvidia_smi or {}).get("gpus") or []):
        if not isinstance(gpu, Mapping):
            continue
        if _int(gpu.get("index")) == index or (gpu.get("index") is None and position == index):
            return gpu
    return {}


def link_state(
    probe: Optional[Mapping[str, Any]], nvidia_smi: Optional[Mapping[str, Any]] = None
) -> Dict[str, Any]:
    """The link of the probed GPU: read under load by the h2d probe, maxima from it or the facts.

    Keys: gen, width (under load, or None), gen_max, width_max (what GPU and slot support),
    gen_gpu_max (what the card supports), source, reason (why the link under load is unknown).
    """
    read = dict((probe or {}).get("link_under_load") or {})
    facts = _facts_gpu(nvidia_smi, int((probe or {}).get("gpu_index") or 0))
    state = {
        "gen": _int(read.get("gen")),
        "width": _int(read.get("width")),
        "gen_max": _int(read.get("gen_max")),
        "width_max": _int(read.get("width_max")),
        "gen_gpu_max": _int(read.get("gen_gpu_max")),
        "source": read.get("source"),
        "reason": read.get("reason"),
    }
    for key, fact in (
        ("gen_max", "pcie_gen_max"),
        ("width_max", "pcie_width_max"),
        ("gen_gpu_max", "pcie_gen_gpu_max"),
    ):
        if state[key] is None:
            state[key] = _int(facts.get(fact))
    if state["gen"] is None and not state["reason"]:
        state["reason"] = "the h2d probe did not read the link while its copies ran"
    return state


# ----------------------------------------------------------------------------- helpers


def datasheet(gpu_key: str) -> Dict[str, Any]:
    """The card's datasheet figures (throughput_gpus), with its source; {} when it has none."""
    row = _DATASHEETS.get(gpu_key) or _DATASHEETS.get(_JUDGE_AS.get(gpu_key, ""))
    if not row:
        return {}
    return dict(row["datasheet"], source=row["source"])


def _entry(name: str, **values: Any) -> Dict[str, Any]:
    spec = FLOORS[name]
    entry = {
        "name": name,
        "label": spec["label"],
        "measured": None,
        "unit": spec["unit"],
        "floor": {"warn": None, "fail": None},
        "basis": None,
        "status": "not_run",
        "reason": None,
        "source": spec["source"],
    }
    entry.update(values)
    return entry


def _level(measured: float, fail: Optional[float], warn: Optional[float]) -> str:
    if fail is not None and measured < fail:
        return "fail"
    if warn is not None and measured < warn:
        return "warn"
    return "pass"


def _fmt(value: Optional[float]) -> str:
    if value is None:
        return "n/a"
    if value >= 100:
        return f"{value:,.1f}".rstrip("0").rstrip(".")
    return f"{value:.1f}"


def _probe_missing(probes: Mapping[str, Any], probe: str) -> Optional[str]:
    """Why the probe's figures are missing, or None when it ran."""
    result = probes.get(probe)
    if result is None:
        return f"the {probe} probe was not in this run"
    status = result.get("status")
    if status == "skipped":
        return f"the {probe} probe was skipped: {result.get('reason') or 'no reason given'}"
    if status != "ok":
        return f"the {probe} probe failed: {result.get('reason') or 'no reason given'}"
    return None


def _field(result: Mapping[str, Any], path: str) -> Any:
    value: Any = result
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _judged(
    entry: Dict[str, Any], measured: float, fail: Optional[float], warn: Optional[float]
) -> Dict[str, Any]:
    unit = entry["unit"]
    entry["measured"] = round(float(measured), 2)
    entry["floor"] = {
        "warn": round(warn, 2) if warn is not None else None,
        "fail": round(fail, 2) if fail is not None else None,
    }
    entry["status"] = _level(float(measured), fail, warn)
    if entry["status"] == "fail":
        entry["reason"] = (
            f"{entry['label']}: {_fmt(measured)} {unit}, below the fail floor {_fmt(fail)} {unit} "
            f"({entry['basis']})"
        )
    elif entry["status"] == "warn":
        entry["reason"] = (
            f"{entry['label']}: {_fmt(measured)} {unit}, below the warn floor {_fmt(warn)} {unit} "
            f"({entry['basis']})"
        )
    return entry


# ----------------------------------------------------------------------------- the floors


def judge_link(
    probes: Mapping[str, Any], nvidia_smi: Optional[Mapping[str, Any]] = None
) -> Dict[str, Any]:
    """The PCIe link under load against what GPU and slot support (fail) and the card (warn)."""
    entry = _entry("pcie_link")
    missing = _probe_missing(probes, "h2d")
    if missing:
        entry["reason"] = missing
        return entry
    link = link_state(probes.get("h2d"), nvidia_smi)
    gen, width = link["gen"], link["width"]
    if gen is None or width is None:
        entry["reason"] = f"the link under load is unknown: {link['reason']}"
        return entry
    entry["measured"] = link_name(gen, width)
    if link["gen_max"] is None or link["width_max"] is None:
        entry["reason"] = (
            f"the link ran {link_name(gen, width)} under load, but nvidia-smi gave no maximum "
            "(pcie.link.gen.max, pcie.link.width.max) to hold it to"
        )
        return entry
    system_max = link_name(link["gen_max"], link["width_max"])
    entry["floor"] = {
        "fail": system_max,
        "warn": link_name(link["gen_gpu_max"]) if link["gen_gpu_max"] is not None else None,
    }
    entry["basis"] = (
        f"read under load from {link['source'] or 'nvidia-smi'}; GPU and slot support "
        f"{system_max}"
        + (f", the card Gen{link['gen_gpu_max']}" if link["gen_gpu_max"] is not None else "")
    )
    if gen < link["gen_max"] or width < link["width_max"]:
        entry["status"] = "fail"
        entry["reason"] = (
            f"the PCIe link ran {link_name(gen, width)} under load, where GPU and slot support "
            f"{system_max}: the link trained down (reseat the card, check the riser, the slot and "
            f"the BIOS link settings); copies get {_fmt(link_gb_s(gen, width))} of "
            f"{_fmt(link_gb_s(link['gen_max'], link['width_max']))} GB/s"
        )
    elif link["gen_gpu_max"] is not None and gen < link["gen_gpu_max"]:
        entry["status"] = "warn"
        entry["reason"] = (
            f"the slot holds the card below its own generation: the link ran "
            f"{link_name(gen, width)} under load (the most GPU and slot support), the card "
            f"supports Gen{link['gen_gpu_max']}"
        )
    else:
        entry["status"] = "pass"
    return entry


def judge_copy(
    name: str, probes: Mapping[str, Any], nvidia_smi: Optional[Mapping[str, Any]] = None
) -> Dict[str, Any]:
    """h2d or d2h: pinned copies against the floor's fractions of the link under load."""
    spec = FLOORS[name]
    entry = _entry(name)
    missing = _probe_missing(probes, spec["probe"])
    if missing:
        entry["reason"] = missing
        return entry
    result = probes[spec["probe"]]
    measured = _field(result, spec["field"])
    if measured is None:
        entry["reason"] = f"the {spec['probe']} probe gave no {spec['field']}"
        return entry
    link = link_state(result, nvidia_smi)
    gen, width, basis = link["gen"], link["width"], "under load"
    if gen is None or width is None:
        gen, width, basis = (
            link["gen_max"],
            link["width_max"],
            (f"the link's maximum, not read under load ({link['reason']})"),
        )
    rate = link_gb_s(gen, width)
    if rate is None:
        entry["measured"] = round(float(measured), 2)
        entry["reason"] = f"the PCIe link is unknown ({link['reason']}): no floor to hold it to"
        return entry
    entry["basis"] = f"{link_name(gen, width)} {basis}, {_fmt(rate)} GB/s"
    entry["link_gb_s"] = round(rate, 2)
    return _judged(entry, measured, spec["fail"] * rate, spec["warn"] * rate)


def judge_membw(probes: Mapping[str, Any], gpu_key: str) -> Dict[str, Any]:
    """Device memory bandwidth against the floor's fractions of the datasheet's."""
    spec = FLOORS["membw"]
    entry = _entry("membw")
    missing = _probe_missing(probes, spec["probe"])
    if missing:
        entry["reason"] = missing
        return entry
    measured = _field(probes[spec["probe"]], spec["field"])
    if measured is None:
        entry["reason"] = f"the {spec['probe']} probe gave no {spec['field']}"
        return entry
    sheet = datasheet(gpu_key)
    peak = sheet.get(spec["basis"])
    if not peak:
        entry["measured"] = round(float(measured), 2)
        entry["reason"] = (
            f"no datasheet memory bandwidth for {gpu_key} in the catalogue (throughput_gpus): "
            "measured, not judged"
        )
        return entry
    entry["basis"] = f"{spec['fail']:.0%} of the datasheet's {_fmt(peak)} GB/s"
    entry["datasheet"] = float(peak)
    entry["datasheet_source"] = sheet["source"]
    return _judged(entry, measured, spec["fail"] * peak, spec["warn"] * peak)


def judge_matmul(name: str, probes: Mapping[str, Any], gpu_key: str) -> Dict[str, Any]:
    """A precision's dense matmul TFLOP/s against the datasheet's (warn-only floors)."""
    spec = FLOORS[name]
    precision = spec["basis"]
    entry = _entry(name)
    missing = _probe_missing(probes, spec["probe"])
    if missing:
        entry["reason"] = missing
        return entry
    one = ((probes[spec["probe"]].get("results") or {}).get(precision)) or {}
    if not one:
        entry["reason"] = f"the {spec['probe']} probe did not measure {precision}"
        return entry
    if one.get("status") != "ok" or one.get("tflop_s") is None:
        entry["reason"] = (
            f"{precision} matmul {one.get('status') or 'not measured'}: "
            f"{one.get('reason') or 'no TFLOP/s'}"
        )
        return entry
    sheet = datasheet(gpu_key)
    peak = sheet.get(precision)
    if not peak:
        entry["measured"] = round(float(one["tflop_s"]), 2)
        entry["reason"] = (
            f"no datasheet {precision} TFLOP/s for {gpu_key} in the catalogue (throughput_gpus): "
            "measured, not judged"
        )
        return entry
    entry["basis"] = f"{spec['warn']:.0%} of the datasheet's dense {_fmt(peak)} TFLOP/s"
    entry["datasheet"] = float(peak)
    entry["datasheet_source"] = sheet["source"]
    fail = spec["fail"] * peak if spec["fail"] is not None else None
    return _judged(entry, one["tflop_s"], fail, spec["warn"] * peak)


def _anchors(name: str, gpu_key: str) -> Optional[Dict[str, Any]]:
    row = ANCHORS.get(gpu_key)
    if not row:
        return None
    key = {"h2d": "nhc_h2d_d2h_gbs", "d2h": "nhc_h2d_d2h_gbs", "membw": "dcgm_membw_gbs"}.get(name)
    if key is None or row.get(key) is None:
        return None
    return {
        "tool": "NHC check_gpu_bw" if key.startswith("nhc") else "DCGM diag memory_bandwidth",
        "fail_below": row[key],
        "source": row["source"],
    }


def probed_gpus(probes: Mapping[str, Any]) -> List[Any]:
    """Each probed GPU's own probes, in GPU order: [(index, {probe: that GPU's result})].

    A probe with ``gpus`` (the program's per-GPU list) gives each GPU its entry; one
    without (an older report) is the GPU of its ``gpu_index``, else GPU 0. Only the
    probes a floor reads count: a host probe (input_pipeline) names no GPU.
    """
    wanted = {spec["probe"] for spec in FLOORS.values()}
    per: Dict[int, Dict[str, Any]] = {}
    for name, result in (probes or {}).items():
        if name not in wanted or not isinstance(result, Mapping):
            continue
        entries = result.get("gpus")
        if not isinstance(entries, list) or not entries:
            entries = [result]
        for entry in entries:
            if isinstance(entry, Mapping):
                index = _int(entry.get("gpu_index"))
                per.setdefault(0 if index is None else index, {})[name] = entry
    return sorted(per.items()) or [(0, {})]


def judge_floors(
    report: Mapping[str, Any],
    gpu_key: str,
    nvidia_smi: Optional[Mapping[str, Any]] = None,
    waivers: Iterable[str] = (),
) -> Dict[str, Any]:
    """Every floor for every probed GPU of the report, and the floors' verdict.

    Returns ``floors`` (a list, GPU by GPU and in the catalogue's order within a GPU:
    gpu, name, label, measured, unit, floor {warn, fail}, basis, status, reason, source,
    and ``anchor`` where NHC or DCGM has a value for the card), ``gpus`` (the GPUs
    judged), ``verdict`` (fail, warn, pass, or not_run when nothing was judged),
    ``counts`` (rows), ``failed`` and ``warned`` (floor names, each once),
    ``failed_gpus`` and ``warned_gpus`` (GPU indices) and ``line``. A waived floor (on
    every GPU) keeps the status it would have had in ``waived_status`` and never fails.
    Every GPU is held to ``gpu_key``'s datasheet (the host's model).
    """
    waived = set(waivers or ())
    unknown = sorted(waived - set(FLOOR_NAMES))
    if unknown:
        raise ValueError(
            f"unknown floor(s) to waive {unknown}; the floors are {', '.join(FLOOR_NAMES)}"
        )
    device = ((report or {}).get("config") or {}).get("device")
    floors: List[Dict[str, Any]] = []
    for index, probes in probed_gpus((report or {}).get("probes") or {}):
        for name, spec in FLOORS.items():
            if device == "cpu":
                entry = _entry(name, reason="device is cpu: the floors are for a GPU")
            elif name == "pcie_link":
                entry = judge_link(probes, nvidia_smi)
            elif spec["basis"] == "pcie_link":
                entry = judge_copy(name, probes, nvidia_smi)
            elif name == "membw":
                entry = judge_membw(probes, gpu_key)
            else:
                entry = judge_matmul(name, probes, gpu_key)
            anchor = _anchors(name, gpu_key)
            if anchor:
                entry["anchor"] = anchor
            entry["gpu"] = index
            if name in waived:
                entry["waived_status"] = entry["status"]
                entry["reason"] = (
                    f"gpu_check_floor_waivers waives this floor; it would be {entry['status']}"
                    + (f": {entry['reason']}" if entry["reason"] else "")
                )
                entry["status"] = "waived"
            floors.append(entry)
    return summarise(floors)


def _names_gpus(floors: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the lines name each row's GPU: several GPUs, or one that is not GPU 0."""
    gpus = {entry.get("gpu", 0) for entry in floors}
    return len(gpus) > 1 or gpus - {0} != set()


def summarise(floors: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    counts = {s: 0 for s in STATUSES}
    for entry in floors:
        counts[entry["status"]] += 1

    def named(status: str) -> List[str]:
        """The floor names at this status, each once, in the catalogue's order."""
        return [
            n for n in FLOOR_NAMES if any(e["status"] == status and e["name"] == n for e in floors)
        ]

    def gpus_at(status: str) -> List[Any]:
        return sorted({e.get("gpu", 0) for e in floors if e["status"] == status})

    judged = [e["status"] for e in floors if e["status"] in ("pass", "warn", "fail")]
    verdict = max(judged, key=lambda s: _SEVERITY[s]) if judged else "not_run"
    return {
        "floors": list(floors),
        "gpus": sorted({e.get("gpu", 0) for e in floors}),
        "verdict": verdict,
        "counts": counts,
        "failed": named("fail"),
        "warned": named("warn"),
        "failed_gpus": gpus_at("fail"),
        "warned_gpus": gpus_at("warn"),
        "line": floors_line(floors, counts),
    }


def _shown(entry: Mapping[str, Any]) -> str:
    """'30.1 < 47.3 GB/s' or 'Gen5 x8 (floor Gen5 x16)': a failing row's figure and level."""
    level = entry["floor"].get(entry["status"])
    if isinstance(entry["measured"], (int, float)) and isinstance(level, (int, float)):
        return f"{_fmt(entry['measured'])} < {_fmt(level)} {entry['unit']}"
    return f"{entry['measured']} (floor {level})"


def floors_line(floors: Sequence[Mapping[str, Any]], counts: Mapping[str, int]) -> str:
    """'Floors: 5 pass, 1 warn, 0 fail, 2 not_run, 0 waived; FAIL h2d 30.1 < 47.3 GB/s'.

    With several GPUs (or one that is not GPU 0) it names them: 'Floors on 8 GPUs: ...;
    FAIL GPU 5 pcie_link Gen5 x8 (floor Gen5 x16); FAIL membw on GPU 3, 6: lowest GPU 3
    2,100 < 2,512.5 GB/s'. Failures come first, then warnings, each floor once.
    """
    gpus = sorted({entry.get("gpu", 0) for entry in floors})
    head = f"Floors on {len(gpus)} GPUs: " if len(gpus) > 1 else "Floors: "
    parts = [head + ", ".join(f"{counts[s]} {s}" for s in STATUSES)]
    naming = _names_gpus(floors)
    for status in ("fail", "warn"):
        groups: Dict[str, List[Mapping[str, Any]]] = {}
        for entry in floors:
            if entry["status"] == status:
                groups.setdefault(entry["name"], []).append(entry)
        for name in sorted(groups, key=FLOOR_NAMES.index):
            rows = groups[name]
            if len(rows) == 1:
                where = f"GPU {rows[0].get('gpu', 0)} " if naming else ""
                parts.append(f"{status.upper()} {where}{name} {_shown(rows[0])}")
                continue
            numeric = [r for r in rows if isinstance(r["measured"], (int, float))]
            worst = min(numeric, key=lambda r: r["measured"]) if numeric else rows[0]
            listed = ", ".join(str(r.get("gpu", 0)) for r in rows)
            parts.append(
                f"{status.upper()} {name} on GPU {listed}: "
                f"{'lowest ' if numeric else ''}GPU {worst.get('gpu', 0)} {_shown(worst)}"
            )
    return "; ".join(parts)


def apply_to_judgement(judgement: Dict[str, Any], floors: Mapping[str, Any]) -> Dict[str, Any]:
    """A failed floor fails the host (``verdict``); warn, not_run and waived floors never do."""
    judgement["failed_floors"] = list(floors["failed"])
    judgement["failed_floor_gpus"] = list(floors.get("failed_gpus") or [])
    if floors["failed"]:
        judgement["verdict"] = "fail"
    return judgement


def failure_reasons(floors: Mapping[str, Any]) -> List[str]:
    """The failed floors' reasons, for the failure message ('GPU 5: ...' with several GPUs)."""
    rows = [e for e in floors["floors"] if e["status"] == "fail" and e["reason"]]
    naming = _names_gpus(floors["floors"])
    return [(f"GPU {e.get('gpu', 0)}: " if naming else "") + e["reason"] for e in rows]
