"""Reference ResNet-50 training throughput per GPU model and mode, and the judge.

``library/gpu_throughput.py`` runs the program ``roles/gpu_check/files/kindling_bench/`` on a
host and hands its JSON report to :func:`judge_report`. Each mode's measured images/s is
divided by the reference for (GPU model key, mode); the mode passes when the ratio
reaches the tolerance (default 0.80). :func:`diagnose` turns ``ansible_facts.nvidia_smi``
and ``ansible_facts.torch_cuda`` into the likely causes of a slow mode.

The references are data: ``throughput_references`` and ``throughput_gpus`` of
data/vendor_catalogue.yml (generated into module_utils/vendor_catalogue.py), every row
with its source and the software that measured it. A reference is

- ``measured``: a row of the table (Lambda's benchmark, NVIDIA's DeepLearningExamples,
  the seed article, this project's own H200 runs);
- ``derived``: where no row measures (gpu, mode), a rate from the GPU's datasheet
  (dense TFLOP/s of the mode's precision and memory bandwidth), calibrated on the
  measured rows of one harness (:func:`derived_model`), judged at a wider tolerance that
  the calibration's own leave-one-out error sets;
- none: the GPU has no datasheet row, or the mode no calibration: ``unknown``, reported,
  never failed.

Python 3.8 compatible, standard library only (it runs inside Ansible modules).
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible.module_utils.gpu_compat import arch_coverage
from ansible.module_utils.peer_baseline import judge_peers
from ansible.module_utils.resnet_flops import FLOP_PER_IMAGE, model_flops_utilisation
from ansible.module_utils.vendor_catalogue import CATALOGUE

_TABLE = CATALOGUE["throughput_references"]
_GPUS = CATALOGUE["throughput_gpus"]

DEFAULT_TOLERANCE = float(_TABLE["tolerance"])
# A GPU more than this fraction below the median of the host's other GPUs in the same
# mode is flagged (and fails the host), even where the table passes it.
DEFAULT_GPU_MARGIN = 0.10
# Every check and mode ends as one of these, with a reason unless it passed.
STATUSES = ("pass", "fail", "not_run")
_SEVERITY = {"fail": 2, "not_run": 1, "pass": 0}
HARNESSES: Dict[str, str] = dict(_TABLE["harnesses"])
SOURCE_SEED = HARNESSES["seed"]
SOURCE_KINDLING = HARNESSES["kindling"]

# Mode names are the stable keys of the program's JSON ``modes`` object.
MODE_ORDER = (
    "fp32",
    "tf32",
    "amp_fp16",
    "amp_bf16",
    "amp_fp16_cl",
    "amp_bf16_cl",
    "compile",
    "ddp",
)
MODE_ALIASES = {"seed_recipe": "amp_fp16"}
MODE_PRECISION = {
    "fp32": "fp32",
    "tf32": "tf32",
    "amp_fp16": "fp16",
    "amp_fp16_cl": "fp16",
    "amp_bf16": "bf16",
    "amp_bf16_cl": "bf16",
}
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")

Row = Dict[str, Any]


def _reference_row(raw: Mapping[str, Any]) -> Row:
    row: Row = {
        "img_s": float(raw["img_s"]),
        "batch": int(raw["batch"]),
        "harness": raw["harness"],
        "source": HARNESSES[raw["harness"]],
        "citation": raw["source"],
        "note": raw["note"],
        "basis": "measured",
    }
    for key in ("world_size", "total_img_s"):
        if key in raw:
            row[key] = raw[key]
    return row


def _build_references() -> Dict[Tuple[str, str], Row]:
    """(gpu key, mode) -> the first row of the table, the later ones as alternatives."""
    out: Dict[Tuple[str, str], Row] = {}
    for raw in _TABLE["rows"]:
        key = (raw["gpu"], raw["mode"])
        row = _reference_row(raw)
        if key in out:
            alt = {k: row[k] for k in ("img_s", "batch", "source", "note")}
            out[key].setdefault("alternatives", []).append(alt)
        else:
            out[key] = row
    return out


# (GPU model key, mode) -> reference. img_s is per GPU; for ddp it is per GPU of the
# DDP run (the seed's 4-GPU 2,800 img/s total = 700 per GPU).
REFERENCES: Dict[Tuple[str, str], Row] = _build_references()

# Same chip and clocks, different memory size: judged against the same rows.
REFERENCE_ALIASES: Dict[str, str] = {
    row["key"]: row["judge_as"] for row in _GPUS["rows"] if row.get("judge_as")
}

# Per GPU key: dense TFLOP/s per precision and memory bandwidth (GB/s), with the source.
DATASHEETS: Dict[str, Dict[str, Any]] = {
    row["key"]: dict(row["datasheet"], source=row["source"])
    for row in _GPUS["rows"]
    if row.get("datasheet")
}
# The GPU keys with a row in throughput_gpus, datasheet or not (A10G: no datasheet).
KNOWN_GPUS = tuple(row["key"] for row in _GPUS["rows"])
PEAK_TFLOPS: Dict[str, Dict[str, Any]] = {
    key: {k: v for k, v in sheet.items() if k in (*PRECISIONS, "source")}
    for key, sheet in DATASHEETS.items()
}


# ----------------------------------------------------------------------------- derived


def _solve3(a: List[List[float]], b: List[float]) -> Optional[List[float]]:
    """Solve a 3x3 linear system by Gaussian elimination with pivoting (None if singular)."""
    m = [[*a[i], b[i]] for i in range(3)]
    for col in range(3):
        pivot = max(range(col, 3), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-12:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(3):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col])]
    return [m[i][3] / m[i][i] for i in range(3)]


def _fit(points: Sequence[Tuple[float, float, float]]) -> Optional[List[float]]:
    """Least squares of log(img_s) = log c + a log(peak) + b log(bandwidth).

    points: (peak TFLOP/s, bandwidth GB/s, img/s). Returns [log c, a, b], or None.
    """
    rows = [(1.0, math.log(p), math.log(m), math.log(y)) for p, m, y in points]
    ata = [[sum(r[i] * r[j] for r in rows) for j in range(3)] for i in range(3)]
    atb = [sum(r[i] * r[3] for r in rows) for i in range(3)]
    return _solve3(ata, atb)


def _predict(coef: Sequence[float], peak: float, bandwidth: float) -> float:
    return math.exp(coef[0] + coef[1] * math.log(peak) + coef[2] * math.log(bandwidth))


def _calibration_points(mode: str) -> List[Tuple[str, float, float, float]]:
    """(gpu, peak, bandwidth, img/s) of every calibration-harness row of the mode."""
    precision = _TABLE["derived"]["modes"].get(mode)
    harness = _TABLE["derived"]["calibration_harness"]
    out = []
    for raw in _TABLE["rows"]:
        if raw["mode"] != mode or raw["harness"] != harness or not raw.get("calibrates", True):
            continue
        sheet = DATASHEETS.get(raw["gpu"], {})
        if precision in sheet and sheet.get("memory_bandwidth_gbs"):
            out.append(
                (
                    raw["gpu"],
                    float(sheet[precision]),
                    float(sheet["memory_bandwidth_gbs"]),
                    float(raw["img_s"]),
                )
            )
    return out


def derived_model(mode: str) -> Optional[Dict[str, Any]]:
    """The calibrated datasheet model of a mode, or None where the catalogue has none.

    Returns the coefficients, the calibration rows with their leave-one-out ratio
    (measured / derived from the other rows) and ``tolerance_factor``: the worst such
    ratio, by which the tolerance of a derived reference is multiplied.
    """
    mode = canonical_mode(mode)
    if mode not in _TABLE["derived"]["modes"]:
        return None
    points = _calibration_points(mode)
    if len(points) < int(_TABLE["derived"]["min_calibration_rows"]):
        return None
    coef = _fit([p[1:] for p in points])
    if coef is None:
        return None
    calibration = []
    for i, (gpu, peak, bandwidth, img_s) in enumerate(points):
        others = _fit([p[1:] for j, p in enumerate(points) if j != i])
        ratio = img_s / _predict(others, peak, bandwidth) if others else None
        calibration.append(
            {
                "gpu": gpu,
                "img_s": img_s,
                "fitted": round(_predict(coef, peak, bandwidth), 1),
                "loo_ratio": round(ratio, 3) if ratio else None,
            }
        )
    ratios = [c["loo_ratio"] for c in calibration if c["loo_ratio"]]
    return {
        "mode": mode,
        "precision": _TABLE["derived"]["modes"][mode],
        "harness": _TABLE["derived"]["calibration_harness"],
        "coefficients": {"log_c": coef[0], "peak_exponent": coef[1], "bandwidth_exponent": coef[2]},
        "calibration": calibration,
        "tolerance_factor": math.floor(min(min(ratios), 1.0) * 100) / 100.0,
    }


_MODELS: Dict[str, Optional[Dict[str, Any]]] = {}


def _model(mode: str) -> Optional[Dict[str, Any]]:
    if mode not in _MODELS:
        _MODELS[mode] = derived_model(mode)
    return _MODELS[mode]


def derived_reference(gpu_key: str, mode: str) -> Optional[Row]:
    """A reference derived from the GPU's datasheet for (gpu_key, mode), or None."""
    key = REFERENCE_ALIASES.get(gpu_key, gpu_key)
    mode = canonical_mode(mode)
    model = _model(mode)
    sheet = DATASHEETS.get(key)
    if model is None or not sheet:
        return None
    peak = sheet.get(model["precision"])
    bandwidth = sheet.get("memory_bandwidth_gbs")
    if not peak or not bandwidth:
        return None
    c = model["coefficients"]
    img_s = _predict([c["log_c"], c["peak_exponent"], c["bandwidth_exponent"]], peak, bandwidth)
    label = HARNESSES[model["harness"]]
    return {
        "img_s": round(img_s, 0),
        "batch": None,
        "harness": model["harness"],
        "source": f"derived from the datasheet ({label} calibration)",
        "citation": sheet["source"],
        "note": (
            f"{model['precision']} {peak:g} TFLOP/s and {bandwidth:g} GB/s through the fit on "
            f"{len(model['calibration'])} {label} rows of {mode}"
        ),
        "basis": "derived",
        "tolerance_factor": model["tolerance_factor"],
        "gpu_key": key,
        "mode": mode,
    }


# ----------------------------------------------------------------------------- GPU keys


def _name_words(name: str) -> List[str]:
    text = re.sub(r"[^a-z0-9]+", " ", str(name).strip().lower())
    strip = set(_GPUS["strip_words"])
    return [w for w in text.split() if w not in strip]


def gpu_model_key(name: Optional[str]) -> str:
    """Reference key for an nvidia-smi / torch GPU name (catalogue ``throughput_gpus``).

    "NVIDIA H200" -> h200, "NVIDIA A100-SXM4-40GB" -> a100-40gb,
    "Tesla V100-SXM2-16GB" -> v100-16gb, "NVIDIA H100 80GB HBM3" -> h100-sxm,
    "NVIDIA GeForce RTX 4090" -> rtx-4090, "cpu" -> cpu; a name no row matches -> a slug
    of the name, which has no references.
    """
    if not name:
        return "unknown"
    if str(name).strip().lower() == "cpu":
        return "cpu"
    words = _name_words(name)
    present = set(words)
    for row in _GPUS["rows"]:
        if all(w in present for w in row["words"]):
            return row["key"]
    return "-".join(words) or "unknown"


def canonical_mode(mode: str) -> str:
    return MODE_ALIASES.get(mode, mode)


def reference_for(gpu_key: str, mode: str, base_mode: Optional[str] = None) -> Optional[Row]:
    """The reference for (gpu_key, mode): measured, else derived, else None.

    ddp without its own row is judged per GPU against the single-GPU reference of the
    config it replicated (``base_mode`` from the report): every GPU of a healthy host
    trains as fast as one GPU alone, within the tolerance.
    """
    key = REFERENCE_ALIASES.get(gpu_key, gpu_key)
    mode = canonical_mode(mode)
    row = REFERENCES.get((key, mode))
    if row is not None:
        out = dict(row)
        out.update({"gpu_key": key, "mode": mode})
        if mode == "ddp":
            out["per_gpu"] = True
        return out
    if mode == "ddp" and base_mode:
        base = reference_for(key, canonical_mode(base_mode))
        if base is not None:
            out = dict(base)
            out.update(
                {
                    "gpu_key": key,
                    "mode": "ddp",
                    "per_gpu": True,
                    "via_mode": base_mode,
                    "note": f"ddp judged per GPU against the single-GPU {base_mode} reference "
                    f"({base['note']})",
                }
            )
            return out
        return None
    return derived_reference(key, mode)


def peak_tflops(gpu_key: str) -> Dict[str, float]:
    """{precision: dense TFLOP/s} for the GPU key, or {} when unknown."""
    row = PEAK_TFLOPS.get(REFERENCE_ALIASES.get(gpu_key, gpu_key), {})
    return {k: float(v) for k, v in row.items() if k in PRECISIONS}


def peak_tflops_arg(gpu_key: str) -> Optional[str]:
    """The program's ``--peak-tflops`` value for the GPU key, or None."""
    peaks = peak_tflops(gpu_key)
    if not peaks:
        return None
    return ",".join(f"{k}={v:g}" for k, v in sorted(peaks.items()))


def mfu(img_s: Optional[float], gpu_key: str, precision: Optional[str]) -> Optional[float]:
    """Model FLOPs utilisation for ResNet-50 at 224x224, or None when unknown."""
    peak = peak_tflops(gpu_key).get(precision or "")
    if not img_s or not peak:
        return None
    return round(model_flops_utilisation(img_s, peak, FLOP_PER_IMAGE), 4)


# NVML clock-event ("throttle") reason bits, as in nvidia-smi's clocks_event_reasons.
CLOCK_EVENT_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# GPU memory in use before the benchmark above this means another process holds the GPU
# (an idle GPU shows 0 to a few MiB).
BUSY_MEMORY_MIB = 1024
SLOWDOWN_REASONS = {
    "sw_power_cap": "software power cap (power draw at the power limit)",
    "hw_slowdown": "hardware slowdown (thermal or power-brake signal)",
    "sw_thermal_slowdown": "software thermal slowdown (GPU or memory too hot)",
    "hw_thermal_slowdown": "hardware thermal slowdown (GPU too hot)",
    "hw_power_brake_slowdown": "hardware power brake (external power-brake signal)",
}


# ----------------------------------------------------------------------------- judging


def fmt_int(value: Optional[float]) -> str:
    """1234.5 -> '1,234'; None -> 'n/a'."""
    return "n/a" if value is None else f"{float(value):,.0f}"


def _mode_sort_key(mode: str) -> Tuple[int, str]:
    return (MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER), mode)


def judge_mode(
    gpu_key: str,
    mode: str,
    result: Mapping[str, Any],
    tolerance: float = DEFAULT_TOLERANCE,
    image_size: int = 224,
) -> Dict[str, Any]:
    """Judge one mode of the program's report: pass | fail | not_run, with a reason.

    ``not_run`` is a mode the program skipped (budget, bf16 on a GPU without it), or one
    it measured that nothing can judge (no reference, another image size): the number is
    reported, the check did not run.
    """
    mode = canonical_mode(mode)
    status = result.get("status")
    per_gpu = mode == "ddp"
    measured = result.get("img_s_per_gpu") if per_gpu else result.get("img_s")
    ref = reference_for(gpu_key, mode, result.get("base_mode"))
    precision = result.get("precision") or MODE_PRECISION.get(mode)
    entry: Dict[str, Any] = {
        "img_s": measured,
        "per_gpu": per_gpu,
        "batch_size": result.get("batch_size"),
        "reference": ref["img_s"] if ref else None,
        "reference_batch": ref["batch"] if ref else None,
        # measured (a row of the table) or derived (the datasheet model, wider tolerance)
        "reference_basis": ref["basis"] if ref else None,
        "tolerance": tolerance,
        "ratio": None,
        "status": "not_run",
        "source": ref["source"] if ref else None,
        "reference_note": ref["note"] if ref else None,
        "mfu": result.get("mfu"),
        "window_spread": result.get("window_spread"),
        "reason": None,
    }
    if per_gpu:
        entry["img_s_total"] = result.get("img_s")
        entry["world_size"] = result.get("world_size")
        entry["scaling_efficiency"] = result.get("scaling_efficiency")
    if entry["mfu"] is None and image_size == 224:
        entry["mfu"] = mfu(measured, gpu_key, precision)
    if status == "skipped":
        entry["reason"] = "skipped: " + (result.get("reason") or "the program did not run it")
        return entry
    if status != "ok" or not measured:
        entry["status"] = "fail"
        why = result.get("reason") or "no measurement"
        entry["reason"] = f"the program could not run {mode}: {why}"
        return entry
    if ref is None:
        entry["reason"] = no_reference_reason(gpu_key, mode)
        return entry
    if image_size != 224:
        entry["reason"] = f"image size {image_size}: the references are for 224x224; reported only"
        return entry
    ratio = float(measured) / float(ref["img_s"])
    entry["ratio"] = round(ratio, 4)
    if ref["basis"] == "derived":
        # A derived rate is as good as its calibration: the tolerance widens by the
        # fit's worst leave-one-out ratio, and the report says so.
        entry["tolerance"] = round(tolerance * float(ref["tolerance_factor"]), 4)
    limit = entry["tolerance"]
    # A tiny epsilon so that exactly tolerance x reference passes despite float rounding.
    if ratio >= limit - 1e-9:
        entry["status"] = "pass"
    else:
        entry["status"] = "fail"
        unit = " per GPU" if per_gpu else ""
        kind = "derived reference" if ref["basis"] == "derived" else "reference"
        entry["reason"] = (
            f"{mode} {fmt_int(measured)} img/s{unit} is {ratio:.0%} of the {kind} "
            f"{fmt_int(ref['img_s'])} ({ref['source']}), below {limit:.0%}"
        )
    return entry


def no_reference_reason(gpu_key: str, mode: str) -> str:
    """Why (gpu_key, mode) has no reference: the GPU is unknown, or the mode is."""
    key = REFERENCE_ALIASES.get(gpu_key, gpu_key)
    if key not in KNOWN_GPUS:
        return (
            f"no reference for {gpu_key}: Kindling has no datasheet row for this GPU; reported only"
        )
    if key not in DATASHEETS:
        return (
            f"no reference for {gpu_key} / {mode}: no measurement, and no datasheet figures "
            "to derive one; reported only"
        )
    return (
        f"no reference for {gpu_key} / {mode}: no measurement, and {mode} has no datasheet model "
        f"(derived rates exist for {', '.join(sorted(_TABLE['derived']['modes']))}); reported only"
    )


def judge_probes(probes: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Each probe of the report: pass (it ran and measured), fail (it errored), not_run."""
    out: Dict[str, Dict[str, Any]] = {}
    for name, result in (probes or {}).items():
        status = (result or {}).get("status")
        reason = (result or {}).get("reason")
        if status == "ok":
            out[name] = {"status": "pass", "reason": None}
        elif status == "skipped":
            out[name] = {"status": "not_run", "reason": "skipped: " + (reason or "not run")}
        else:
            out[name] = {"status": "fail", "reason": f"the {name} probe failed: {reason}"}
    return out


def _worst(statuses: Sequence[str]) -> str:
    return max(statuses, key=lambda s: _SEVERITY.get(s, 0)) if statuses else "not_run"


def judge_gpus(
    report: Mapping[str, Any],
    gpu_key: str,
    tolerance: float = DEFAULT_TOLERANCE,
    gpu_margin: float = DEFAULT_GPU_MARGIN,
) -> List[Dict[str, Any]]:
    """Every measured GPU of the report (``per_gpu``): its modes judged against the table,
    and each against the median of the host's other GPUs in the same mode."""
    image_size = int((report.get("config") or {}).get("image_size") or 224)
    gpus: List[Dict[str, Any]] = []
    units = []
    for gpu in report.get("per_gpu") or []:
        index = gpu.get("index")
        modes = {}
        for mode in sorted(gpu.get("modes") or {}, key=_mode_sort_key):
            modes[mode] = judge_mode(gpu_key, mode, gpu["modes"][mode], tolerance, image_size)
            units.append(
                {
                    "host": "this host",
                    "gpu": index,
                    "gpu_key": gpu_key,
                    "mode": mode,
                    "img_s": modes[mode]["img_s"]
                    if gpu["modes"][mode].get("status") == "ok"
                    else None,
                    "table_status": modes[mode]["status"],
                }
            )
        gpus.append(
            {
                "index": index,
                "name": gpu.get("name"),
                "bus_id": gpu.get("bus_id"),
                "modes": modes,
                "outliers": [],
            }
        )
    by_index = {g["index"]: g for g in gpus}
    if len(gpus) > 1:
        for v in judge_peers(units, gpu_margin):
            entry = by_index[v["gpu"]]["modes"][v["mode"]]
            entry["host_median"] = v["peer_median"]
            entry["vs_host"] = v["peer_ratio"]
            if v["verdict"] == "trails":
                by_index[v["gpu"]]["outliers"].append(
                    {
                        "mode": v["mode"],
                        "img_s": v["img_s"],
                        "host_median": v["peer_median"],
                        "ratio": v["peer_ratio"],
                        "table_status": v["table_status"],
                    }
                )
    for gpu in gpus:
        gpu["verdict"] = _worst([m["status"] for m in gpu["modes"].values()])
        if gpu["outliers"]:
            gpu["verdict"] = "fail"
    return gpus


def judge_report(
    report: Mapping[str, Any],
    gpu_key: str,
    tolerance: float = DEFAULT_TOLERANCE,
    require_all: bool = False,
    gpu_margin: float = DEFAULT_GPU_MARGIN,
) -> Dict[str, Any]:
    """Judge every mode, every GPU and every probe of a program report.

    The verdict is ``fail`` when a mode or probe failed, a GPU failed the table or trails
    the host's other GPUs by more than ``gpu_margin``, or (``require_all``) anything did
    not run; ``pass`` when something passed; else ``not_run``.
    """
    if not 0 < tolerance <= 1:
        raise ValueError(f"tolerance must be in (0, 1], got {tolerance!r}")
    if not 0 < gpu_margin < 1:
        raise ValueError(f"gpu_margin must be in (0, 1), got {gpu_margin!r}")
    config = report.get("config") or {}
    image_size = int(config.get("image_size") or 224)
    modes = report.get("modes") or {}
    judged: Dict[str, Dict[str, Any]] = {}
    for mode in sorted(modes, key=_mode_sort_key):
        judged[mode] = judge_mode(gpu_key, mode, modes[mode], tolerance, image_size)
    gpus = judge_gpus(report, gpu_key, tolerance, gpu_margin)
    # A mode fails on the host when any of its GPUs fails it (the host entry is the median).
    for mode, entry in judged.items():
        failing = [g for g in gpus if (g["modes"].get(mode) or {}).get("status") == "fail"]
        if failing and entry["status"] != "fail":
            entry["status"] = "fail"
            entry["reason"] = "; ".join(
                f"GPU {g['index']}: {g['modes'][mode]['reason']}" for g in failing
            )
    probes = judge_probes(report.get("probes") or {})
    counts = {s: 0 for s in STATUSES}
    for entry in list(judged.values()) + list(probes.values()):
        counts[entry["status"]] += 1
    failed = [m for m, e in judged.items() if e["status"] == "fail"]
    failed_probes = [p for p, e in probes.items() if e["status"] == "fail"]
    not_run = [m for m, e in judged.items() if e["status"] == "not_run"]
    not_run += [p for p, e in probes.items() if e["status"] == "not_run"]
    outliers = [dict(o, gpu=g["index"], bus_id=g["bus_id"]) for g in gpus for o in g["outliers"]]
    seed = report.get("seed_ratio") or {}
    # A pass says the host trains as fast as it should: a judged mode passed. Probes alone
    # pass a host only where no mode was asked for (gpu_check_modes: [none]).
    judged_pass = [
        e for e in (judged.values() if judged else probes.values()) if e["status"] == "pass"
    ]
    if failed or failed_probes or outliers or (require_all and not_run):
        verdict = "fail"
    else:
        verdict = "pass" if judged_pass else "not_run"
    return {
        "gpu_key": gpu_key,
        "tolerance": tolerance,
        "gpu_margin": gpu_margin,
        "require_all": require_all,
        "modes": judged,
        "probes": probes,
        "gpus": gpus,
        "gpu_outliers": outliers,
        "counts": counts,
        "failed_modes": failed,
        "failed_probes": failed_probes,
        "not_run": not_run,
        "best_mode": seed.get("best_mode"),
        "best_img_s": seed.get("best_img_s"),
        "seed_ratio": seed.get("ratio"),
        "verdict": verdict,
    }


def summary_line(judgement: Mapping[str, Any], gpu_name: Optional[str] = None) -> str:
    """One line: GPU, verdict and counts, best mode, seed ratio, slow modes."""
    counts = judgement["counts"]
    key = judgement["gpu_key"]
    parts = [
        f"{gpu_name} ({key})" if gpu_name else key,
        f"{judgement['verdict'].upper()}: {counts['pass']} pass, {counts['fail']} fail, "
        f"{counts['not_run']} not_run",
    ]
    best = judgement.get("best_mode")
    if best:
        entry = judgement["modes"].get(best) or {}
        text = f"best {best} {fmt_int(judgement.get('best_img_s'))} img/s"
        if entry.get("ratio") is not None:
            text += f" ({entry['ratio']:.2f}x reference)"
        parts.append(text)
    if judgement.get("seed_ratio"):
        parts.append(f"{judgement['seed_ratio']:.2f}x the seed recipe (amp_fp16 NCHW)")
    for mode in judgement["failed_modes"]:
        entry = judgement["modes"][mode]
        if entry.get("ratio") is not None and entry["status"] == "fail" and entry["ratio"] < 1:
            parts.append(f"SLOW {mode} {fmt_int(entry['img_s'])} vs {fmt_int(entry['reference'])}")
        else:
            parts.append(f"FAILED {mode}")
    for o in judgement.get("gpu_outliers") or []:
        parts.append(
            f"GPU {o['gpu']} TRAILS the host's other GPUs in {o['mode']} "
            f"({fmt_int(o['img_s'])} vs median {fmt_int(o['host_median'])})"
        )
    for probe in judgement.get("failed_probes") or []:
        parts.append(f"FAILED probe {probe}")
    if judgement.get("require_all") and judgement.get("not_run"):
        parts.append("NOT RUN (required): " + ", ".join(judgement["not_run"]))
    return "; ".join(parts)


# ----------------------------------------------------------------------------- diagnosis


def _as_int(value: Any) -> Optional[int]:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    match = re.search(r"\d+", str(value))
    return int(match.group(0)) if match else None


def _pick(mapping: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in mapping and mapping[name] not in (None, "", "N/A", "[N/A]"):
            return mapping[name]
    return None


def _pcie(gpu: Mapping[str, Any]) -> Dict[str, Optional[int]]:
    """PCIe generation/width, from flat pcie_gen_current-style keys or a nested pcie dict."""
    nested_value = gpu.get("pcie")
    nested: Mapping[str, Any] = nested_value if isinstance(nested_value, Mapping) else {}

    def get(flat: str, inner: str) -> Optional[int]:
        value = _pick(gpu, flat)
        if value is None:
            value = _pick(nested, inner, flat)
        return _as_int(value)

    return {
        "gen_current": get("pcie_gen_current", "gen_current"),
        "gen_max": get("pcie_gen_max", "gen_max"),
        "width_current": get("pcie_width_current", "width_current"),
        "width_max": get("pcie_width_max", "width_max"),
    }


def clock_event_reasons(value: Any) -> List[str]:
    """Active clock-event reasons as snake_case names, from a list, dict or bitmask."""
    if value is None or isinstance(value, bool):
        return []
    if isinstance(value, int) or (
        isinstance(value, str) and re.fullmatch(r"\s*(0x[0-9a-fA-F]+|\d+)\s*", value)
    ):
        mask = value if isinstance(value, int) else int(value.strip(), 0)
        return [name for bit, name in sorted(CLOCK_EVENT_BITS.items()) if mask & bit]
    if isinstance(value, Mapping):
        items = [str(k) for k, v in value.items() if v is True or str(v).lower() == "active"]
    elif isinstance(value, str):
        items = [value]
    else:
        items = [str(v) for v in value]
    names = []
    for item in items:
        name = item.strip().lower()
        name = re.sub(r"^(clocks?_(event|throttle)_reasons?_)", "", name)
        name = re.sub(r"[^a-z0-9]+", "_", name).strip("_")
        if name:
            names.append(name)
    return names


def _mig_on(value: Any) -> bool:
    if isinstance(value, Mapping):
        value = _pick(value, "current", "mode")
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("enabled", "enable", "on", "true", "1")


def _process_count(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, (bool, int, float)):
        return int(value)
    if isinstance(value, (list, tuple)):
        return len(value)
    return _as_int(value) or 0


def _capability(gpu: Mapping[str, Any]) -> Optional[Tuple[int, int]]:
    value = _pick(gpu, "compute_capability", "capability", "compute_cap")
    if value is None:
        return None
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return int(value[0]), int(value[1])
    match = re.match(r"\s*(\d+)\.(\d+)", str(value))
    return (int(match.group(1)), int(match.group(2))) if match else None


def _arch_covers(arch_list: Sequence[str], cap: Tuple[int, int]) -> str:
    """'sass' (machine code runs), 'ptx' (JIT from PTX) or 'none', by gpu_compat's rule."""
    entry = arch_coverage(list(arch_list), f"{cap[0]}.{cap[1]}")
    if entry is None:
        return "none"
    return "ptx" if entry.startswith("compute_") else "sass"


def _gpu_causes(position: int, gpu: Mapping[str, Any]) -> List[str]:
    causes = []
    index = gpu.get("index", position)
    label = f"GPU {index} ({gpu.get('name') or 'unknown model'})"
    pcie = _pcie(gpu)
    width_low = None not in (pcie["width_current"], pcie["width_max"]) and (
        pcie["width_current"] < pcie["width_max"]  # type: ignore[operator]
    )
    gen_low = None not in (pcie["gen_current"], pcie["gen_max"]) and (
        pcie["gen_current"] < pcie["gen_max"]  # type: ignore[operator]
    )
    if width_low or gen_low:
        caveat = (
            ""
            if width_low
            else " (an idle GPU may lower its PCIe generation to save power; re-read it under "
            "load before acting)"
        )
        causes.append(
            f"{label} runs a downgraded PCIe link: Gen{pcie['gen_current']} "
            f"x{pcie['width_current']} of a possible Gen{pcie['gen_max']} x{pcie['width_max']}. "
            "Host-to-device copies and input feeding slow down; reseat the card or riser and "
            f"check the BIOS PCIe settings{caveat}."
        )
    reasons = clock_event_reasons(
        _pick(
            gpu,
            "clock_event_reasons_active",
            "clocks_event_reasons_active",
            "clock_event_reasons",
            "clocks_event_reasons",
            "throttle_reasons_active",
            "clocks_throttle_reasons_active",
        )
    )
    slow = [r for r in reasons if r in SLOWDOWN_REASONS]
    power_limit = _pick(gpu, "power_limit", "power_limit_w")
    if slow:
        temperature = _pick(gpu, "temperature", "temperature_gpu", "temperature_c")
        causes.append(
            f"{label} has throttled clocks: {'; '.join(SLOWDOWN_REASONS[r] for r in slow)}. "
            f"Check cooling (temperature {temperature or 'unknown'}), the power limit "
            f"({power_limit or 'unknown'}) and the power supply."
        )
    limit = _as_int(power_limit)
    default = _as_int(
        _pick(
            gpu,
            "power_default_limit",
            "default_power_limit",
            "power_max_limit",
            "max_power_limit",
        )
    )
    if limit and default and limit < 0.9 * default:
        causes.append(
            f"{label} has its power limit lowered to {limit} W of {default} W: it cannot reach "
            "full clocks (nvidia-smi -pl restores it)."
        )
    if _mig_on(_pick(gpu, "mig_mode", "mig")):
        causes.append(
            f"MIG is enabled on {label}: the benchmark gets one MIG slice, not the whole GPU. "
            f"Disable it (nvidia-smi -i {index} -mig 0, then reset the GPU) or expect a fraction "
            "of the reference."
        )
    count = _process_count(_pick(gpu, "processes", "process_count", "compute_processes"))
    used = _as_int(_pick(gpu, "memory_used_mib"))
    if count:
        causes.append(
            f"{count} other process(es) ran on {label} during the check and share its SMs and "
            "memory: stop them (nvidia-smi lists them) and re-run."
        )
    elif used is not None and used > BUSY_MEMORY_MIB:
        causes.append(
            f"{label} already had {used} MiB of memory in use before the check: another process "
            "is probably running on it and sharing its SMs; stop it (nvidia-smi lists it) and "
            "re-run."
        )
    return causes


def _torch_causes(torch_cuda: Mapping[str, Any], gpus: Sequence[Mapping[str, Any]]) -> List[str]:
    causes = []
    built = torch_cuda.get("built_cuda_version")
    if "built_cuda_version" in torch_cuda and not built:
        causes.append(
            "torch is a CPU-only build (torch.version.cuda is None): it cannot use the GPU. "
            "Install the CUDA wheel of torch in the training environment."
        )
    elif torch_cuda.get("cuda_available") is False:
        causes.append(
            "torch.cuda.is_available() is False in the training environment: a CPU-only torch "
            f"wheel or a driver problem (driver missing or too old for CUDA {built or '?'})."
        )
    arch_list = [str(a) for a in torch_cuda.get("arch_list") or []]
    caps = [c for c in (_capability(g) for g in gpus) if c]
    if not caps:
        devices = [d for d in torch_cuda.get("devices") or [] if isinstance(d, Mapping)]
        caps = [c for c in (_capability(d) for d in devices) if c]
    for cap in sorted(set(caps)) if arch_list else []:
        cover = _arch_covers(arch_list, cap)
        if cover == "none":
            causes.append(
                f"torch was built for {', '.join(arch_list)}, which does not cover this GPU's "
                f"sm_{cap[0]}{cap[1]}: install a torch build whose arch list includes it."
            )
        elif cover == "ptx":
            causes.append(
                f"torch has no sm_{cap[0]}{cap[1]} kernels and JIT-compiles them from PTX: a slow "
                "start and possibly slower kernels; install a build for this GPU."
            )
    verdict = torch_cuda.get("verdict")
    problems: List[str] = []
    if isinstance(verdict, Mapping):
        # torch_cuda_facts: {"ok": bool, "checks": [{"name", "ok", "message", "skipped"}]}
        if verdict.get("ok", verdict.get("passed")) is False:
            for check in verdict.get("checks") or []:
                if isinstance(check, Mapping) and not check.get("ok") and not check.get("skipped"):
                    problems.append(f"{check.get('name', 'check')}: {check.get('message', '')}")
            for key in ("problems", "messages", "reasons", "failures"):
                problems.extend(str(p) for p in verdict.get(key) or [])
            problems = problems or ["the verdict is not ok"]
    elif isinstance(verdict, str) and verdict.lower() not in ("ok", "pass", "passed"):
        problems.append(verdict)
    elif verdict is False:
        problems.append("the verdict is not ok")
    if problems:
        causes.append(
            f"torch_cuda_facts reports a wrong torch build or driver: {'; '.join(problems)}."
        )
    return causes


def diagnose(
    failing_modes: Sequence[str],
    nvidia_smi: Optional[Mapping[str, Any]] = None,
    torch_cuda: Optional[Mapping[str, Any]] = None,
    report: Optional[Mapping[str, Any]] = None,
) -> List[str]:
    """Likely causes of slow or failed modes, as sentences (empty when nothing failed).

    nvidia_smi is shaped like ``ansible_facts.nvidia_smi`` (gpus[] with pcie_gen_current/max,
    pcie_width_current/max, clock_event_reasons_active, mig_mode, optional processes);
    torch_cuda like ``ansible_facts.torch_cuda`` (verdict, arch_list, built_cuda_version,
    cuda_available). Unknown or missing fields are ignored.
    """
    if not failing_modes:
        return []
    causes: List[str] = []
    gpus: List[Mapping[str, Any]] = []
    if nvidia_smi:
        gpus = [g for g in nvidia_smi.get("gpus") or [] if isinstance(g, Mapping)]
    for position, gpu in enumerate(gpus):
        causes.extend(_gpu_causes(position, gpu))
    if nvidia_smi:
        total = _process_count(_pick(nvidia_smi, "processes", "process_count"))
        per_gpu = sum(
            _process_count(_pick(g, "processes", "process_count", "compute_processes"))
            for g in gpus
        )
        if total and not per_gpu:
            causes.append(
                f"{total} other process(es) ran on the GPUs during the check and share them: "
                "stop them (nvidia-smi lists them) and re-run."
            )
    if torch_cuda:
        causes.extend(_torch_causes(torch_cuda, gpus))
    h2d = ((report or {}).get("probes") or {}).get("h2d") or {}
    if h2d.get("status") == "ok" and h2d.get("gb_s") is not None and h2d["gb_s"] < 10:
        causes.append(
            f"pinned host-to-device copies reach only {h2d['gb_s']:.1f} GB/s (PCIe Gen4 x16 "
            "gives ~25, Gen5 ~50): the PCIe path is slow."
        )
    if not causes:
        if nvidia_smi or torch_cuda:
            causes.append(
                "No host-level cause shows in the facts (PCIe link, clocks, MIG, other processes "
                "and the torch build look normal): compare the batch size and the torch/cuDNN "
                "versions with the reference's, and re-run to rule out noise."
            )
        else:
            causes.append(
                "No nvidia_smi or torch_cuda facts were given: gather them (nvidia_smi_facts, "
                "torch_cuda_facts) so that the check can name a cause."
            )
    return causes


def outlier_causes(
    judgement: Mapping[str, Any], nvidia_smi: Optional[Mapping[str, Any]] = None
) -> List[str]:
    """For each GPU that trails the host's others: its index, bus id and likely cause."""
    gpus = {}
    for position, gpu in enumerate((nvidia_smi or {}).get("gpus") or []):
        if isinstance(gpu, Mapping):
            gpus[_as_int(gpu.get("index")) if gpu.get("index") is not None else position] = (
                position,
                gpu,
            )
    out = []
    for o in judgement.get("gpu_outliers") or []:
        position, gpu = gpus.get(o["gpu"], (None, {}))
        bus = o.get("bus_id") or gpu.get("pci_bus_id") or "bus id unknown"
        table = "passes the table" if o.get("table_status") == "pass" else "fails the table too"
        text = (
            f"GPU {o['gpu']} ({bus}) trains {o['mode']} at {fmt_int(o['img_s'])} img/s, "
            f"{o['ratio']:.0%} of the median of the host's other GPUs "
            f"({fmt_int(o['host_median'])}), and {table}"
        )
        causes = _gpu_causes(position, gpu) if gpu else []
        text += (
            ": " + " ".join(causes)
            if causes
            else ": no cause shows in its nvidia-smi facts (PCIe link, clocks, MIG, processes); "
            "reset it or re-run, and replace it if it stays behind."
        )
        out.append(text)
    return out


def _why_not_run(judgement: Mapping[str, Any], name: str) -> Optional[str]:
    entry = (judgement.get("modes") or {}).get(name) or (judgement.get("probes") or {}).get(name)
    return (entry or {}).get("reason")


def failure_message(
    judgement: Mapping[str, Any],
    causes: Sequence[str],
    gpu_name: Optional[str] = None,
) -> str:
    """One actionable message naming each failing mode, measured vs reference, and causes."""
    parts = []
    for mode in judgement["failed_modes"]:
        entry = judgement["modes"][mode]
        if entry.get("ratio") is not None and entry.get("ratio") < entry.get("tolerance", 0):
            unit = " per GPU" if entry.get("per_gpu") else ""
            parts.append(
                f"{mode} {fmt_int(entry['img_s'])} img/s{unit} vs reference "
                f"{fmt_int(entry['reference'])} ({entry['ratio']:.2f}, {entry['source']})"
            )
        elif entry.get("ratio") is not None:
            parts.append(f"{mode}: {entry.get('reason')}")
        else:
            parts.append(f"{mode} did not run: {entry.get('reason')}")
    for o in judgement.get("gpu_outliers") or []:
        parts.append(
            f"GPU {o['gpu']} trails the host's other GPUs in {o['mode']}: "
            f"{fmt_int(o['img_s'])} img/s vs their median {fmt_int(o['host_median'])} "
            f"({o['ratio']:.2f}, margin {judgement.get('gpu_margin', DEFAULT_GPU_MARGIN):.0%})"
        )
    for probe in judgement.get("failed_probes") or []:
        parts.append((judgement.get("probes") or {}).get(probe, {}).get("reason") or probe)
    if judgement.get("require_all") and judgement.get("not_run"):
        parts.append(
            "not run, and every check is required (require_all): "
            + "; ".join(
                f"{name} ({_why_not_run(judgement, name)})" for name in judgement["not_run"]
            )
        )
    message = (
        f"GPU throughput check failed on {gpu_name or 'this host'} ({judgement['gpu_key']}) at "
        f"tolerance {judgement['tolerance']:.2f}: {'; '.join(parts)}."
    )
    if causes:
        message += " Likely causes: " + " ".join(causes)
    return message
