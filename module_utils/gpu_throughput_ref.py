"""Reference ResNet-50 training throughput per GPU model and mode, and the judge.

``library/gpu_throughput_measure.py`` runs the program ``roles/gpu_check/files/kindling_bench/``
on a host and hands its JSON report to :func:`judge_report`. Each mode's measured images/s is
divided by the reference for (GPU model key, mode); the mode passes when the ratio
reaches the tolerance (default 0.80). :func:`diagnose` turns ``ansible_facts.nvidia_smi``
and ``ansible_facts.torch_cuda`` into the likely causes of a slow mode.

The references are data: ``throughput_references`` and ``throughput_gpus`` of
data/vendor_catalogue.yml (generated into module_utils/vendor_catalogue.py), every row
with its source and the software that measured it. A reference is

- ``measured``: a row of the table (Lambda's benchmark, NVIDIA's DeepLearningExamples,
  the seed article, this project's own H200 runs);
- ``derived``: where no row measures (gpu, mode), the GPU's own reference in another
  mode times the ratio of the two modes on cards of its architecture (:func:`derive`,
  ``mode_ratio`` of the catalogue), or a rate from the GPU's datasheet (dense TFLOP/s of
  the mode's precision and memory bandwidth) calibrated on the measured rows of one
  harness (:func:`derived_model`); judged at a wider tolerance that the derivation's own
  leave-one-out error sets, at most ``max_widening`` (1.5x) wider;
- none: the GPU has no datasheet row, or the mode no calibration: ``unknown``, reported,
  never failed.

Python 3.8 compatible, standard library only (it runs inside Ansible modules).
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible.module_utils.gpu_busy import BUSY_MEMORY_MIB as _BUSY_MEMORY_MIB
from ansible.module_utils.gpu_busy import busy_text, plural, process_text
from ansible.module_utils.gpu_compat import arch_coverage, architecture_for, gpu_product_for
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
    note = (
        f"{model['precision']} {peak:g} TFLOP/s and {bandwidth:g} GB/s through the fit on "
        f"{len(model['calibration'])} {label} rows of {mode}"
    )
    return {
        "img_s": round(img_s, 0),
        "batch": None,
        "harness": model["harness"],
        "source": f"derived from the datasheet ({label} calibration)",
        "citation": sheet["source"],
        "note": note,
        "basis": "derived",
        "derivation": {
            "kind": "datasheet",
            "text": note,
            "error_bound": f"the fit's worst leave-one-out ratio {model['tolerance_factor']:.2f}",
        },
        "tolerance_factor": model["tolerance_factor"],
        "gpu_key": key,
        "mode": mode,
    }


# ----------------------------------------------------------------------------- mode ratio

_DERIVED = _TABLE["derived"]
# A derived reference is judged at tolerance x its factor, never below 1 / MAX_WIDENING
# (the factor rounded up to 2 decimals, so that the widening stays within the bound).
MAX_WIDENING = float(_DERIVED["max_widening"])
MIN_TOLERANCE_FACTOR = math.ceil(100.0 / MAX_WIDENING) / 100.0
# mode -> the base modes a mode-ratio derivation may start from, in order.
MODE_RATIO_BASES: Dict[str, Tuple[str, ...]] = {
    mode: tuple(bases) for mode, bases in _DERIVED["mode_ratio"].items()
}
NEAREST_ARCHITECTURE: Dict[str, str] = dict(_DERIVED["nearest_architecture"])
LEAVE_ONE_OUT_LIMIT = float(_DERIVED["leave_one_out_limit"])
# The modes whose derived references are held to the best measured MFU (mfu_cap).
MFU_CAP_MODES: Tuple[str, ...] = tuple(_DERIVED.get("mfu_cap_modes", ()))
# GPU key -> the card whose references it takes (A10G: A10, no source gives its tensor rates).
DERIVE_FROM: Dict[str, str] = {
    row["key"]: row["derive_from"] for row in _GPUS["rows"] if row.get("derive_from")
}
_GPU_ROWS: Dict[str, Mapping[str, Any]] = {row["key"]: row for row in _GPUS["rows"]}

# (gpu key, mode) -> every measured row of the table, the reference first.
Measured = Mapping[Tuple[str, str], List[Row]]


def _build_measured() -> Dict[Tuple[str, str], List[Row]]:
    out: Dict[Tuple[str, str], List[Row]] = {}
    for raw in _TABLE["rows"]:
        row = _reference_row(raw)
        row["calibrates"] = raw.get("calibrates", True)
        out.setdefault((raw["gpu"], raw["mode"]), []).append(row)
    return out


MEASURED: Dict[Tuple[str, str], List[Row]] = _build_measured()


_ARCHITECTURES: Dict[str, Optional[str]] = {}


def architecture(gpu_key: str) -> Optional[str]:
    """The GPU key's architecture ("Hopper"): gpu_products' compute capability of its name
    words, or the row's own ``cc``; None for a key without a row."""
    key = REFERENCE_ALIASES.get(gpu_key, gpu_key)
    if key not in _ARCHITECTURES:
        row = _GPU_ROWS.get(key)
        cc = row.get("cc") if row else None
        if row is not None and cc is None:
            product = gpu_product_for(" ".join(str(w) for w in row["words"]))
            cc = product["cc"] if product else None
        _ARCHITECTURES[key] = architecture_for(cc) if cc else None
    return _ARCHITECTURES[key]


def _donor_ratio(rows_mode: List[Row], rows_base: List[Row]) -> Tuple[float, str]:
    """A donor's mode / base-mode ratio: from one harness where the donor has such a pair
    (the harness of its reference row first), else from the two reference rows."""
    first = rows_mode[0]["harness"]
    for harness in [first] + [h for h in HARNESSES if h != first]:
        m = next((r for r in rows_mode if r["harness"] == harness), None)
        b = next((r for r in rows_base if r["harness"] == harness), None)
        if m and b:
            return m["img_s"] / b["img_s"], HARNESSES[harness]
    label = f"{HARNESSES[first]} / {HARNESSES[rows_base[0]['harness']]}"
    return rows_mode[0]["img_s"] / rows_base[0]["img_s"], label


def _donors(key: str, mode: str, base: str, arch: str, measured: Measured) -> List[str]:
    out = []
    for donor in KNOWN_GPUS:
        if donor == key or donor in REFERENCE_ALIASES or architecture(donor) != arch:
            continue
        rows_m, rows_b = measured.get((donor, mode)), measured.get((donor, base))
        if rows_m and rows_b and rows_m[0]["calibrates"] and rows_b[0]["calibrates"]:
            out.append(donor)
    return out


def _usable(rows: Optional[List[Row]]) -> bool:
    """A measured reference a derivation may start from: not a floor the harness set
    (``calibrates: false``, the B200's Lambda rows), which would carry that floor on."""
    return bool(rows) and bool(rows[0]["calibrates"])


def _peak_ratio(key: str, mode: str, base: str) -> Optional[float]:
    """Datasheet peak of the base mode's precision / the mode's (A100, tf32 -> fp32: 8.0)."""
    peaks = peak_tflops(key)
    p_mode = peaks.get(MODE_PRECISION.get(mode, ""))
    p_base = peaks.get(MODE_PRECISION.get(base, ""))
    return p_base / p_mode if p_mode and p_base else None


def carried_ratio(
    ratio: float, donor: str, key: str, mode: str, base: str
) -> Tuple[float, Optional[str]]:
    """A donor's measured mode / base ratio carried to the card through the datasheets.

    Where the two modes run at different precisions (fp32 against tf32 or fp16), the
    donor's ratio is read as the share s of its base-mode step that runs at the base
    precision's peak (Amdahl: 1 / ratio = 1 + s (k_donor - 1), k the datasheet peak of the
    base precision over the mode's), and the card's ratio is 1 / (1 + s (k_card - 1)).
    The A100's fp32 is 1/8 of its tf32 (k = 8), an L4's 1/2 (k = 1.98), an RTX 4090's the
    same (k = 1): the A100's fp32 / tf32 of 0.41 becomes 0.83 on the L4 and 1.0 on the
    RTX 4090. Equal peak ratios, the same precision, or a datasheet without one of the
    figures leave the donor's ratio as measured (the text is then None)."""
    if MODE_PRECISION.get(mode) == MODE_PRECISION.get(base):
        return ratio, None
    k_donor, k_card = _peak_ratio(donor, mode, base), _peak_ratio(key, mode, base)
    if k_donor is None or k_card is None or abs(k_donor - 1.0) < 1e-6:
        return ratio, None
    if abs(k_donor - k_card) / k_donor < 0.01:
        return ratio, None
    share = min(1.0, max(0.0, (1.0 / ratio - 1.0) / (k_donor - 1.0)))
    carried = 1.0 / (1.0 + share * (k_card - 1.0))
    return carried, f"{ratio:.3f} carried from peak ratio {k_donor:.2f} to {k_card:.2f}"


def mfu_cap(key: str, mode: str, measured: Measured) -> Optional[Tuple[float, str]]:
    """The most images/s a derived reference may ask of the card in the mode: the highest
    share of the datasheet peak (MFU) that any measured row of the mode reaches, on the
    card's own peak of the mode's precision; None without figures. No card is asked to be
    more efficient than the best one measured (a T4's fp32). Only in MFU_CAP_MODES: fp32
    runs on the FMA units, where every measured card reaches 37-58% of its peak; the tensor
    modes spread from 12% to 32% (GeForce datasheets give the halved fp32-accumulate rate),
    and a cap there would cut measured cards (the RTX 3090's amp_fp16 by 38%)."""
    if mode not in MFU_CAP_MODES:
        return None
    precision = MODE_PRECISION.get(mode)
    peak = peak_tflops(key).get(precision or "")
    if not peak:
        return None
    best: Optional[Tuple[float, str]] = None
    for (gpu, row_mode), rows in measured.items():
        if row_mode != mode or gpu in REFERENCE_ALIASES:
            continue
        gpu_peak = peak_tflops(gpu).get(precision or "")
        for row in rows:
            if gpu_peak and row["calibrates"]:
                share = row["img_s"] * FLOP_PER_IMAGE / (gpu_peak * 1e12)
                if best is None or share > best[0]:
                    best = (share, gpu)
    if best is None:
        return None
    img_s = best[0] * peak * 1e12 / FLOP_PER_IMAGE
    return img_s, f"{best[1]}'s MFU {best[0]:.1%} on {precision} {peak:g} TFLOP/s"


def _capped(row: Optional[Row], key: str, mode: str, measured: Measured) -> Optional[Row]:
    """The derived row, lowered to mfu_cap where it asks for more."""
    cap = mfu_cap(key, mode, measured) if row is not None else None
    if row is None or cap is None or row["img_s"] <= cap[0]:
        return row
    img_s = round(cap[0], 0)
    text = f"{row['note']}; capped at {img_s:,.0f}, the best measured {mode} MFU ({cap[1]})"
    derivation = dict(row["derivation"], text=text, capped_from=row["img_s"])
    return dict(row, img_s=img_s, note=text, derivation=derivation)


def _mode_ratio(
    key: str, mode: str, measured: Measured, factors: Optional[Mapping[str, float]]
) -> Optional[Row]:
    """(key, mode) as the key's base-mode reference x the donors' mode / base ratio."""
    bases = MODE_RATIO_BASES.get(mode, ())
    arch = architecture(key)
    if not bases or arch is None:
        return None
    own = [b for b in bases if _usable(measured.get((key, b)))]
    for donor_arch in (arch, NEAREST_ARCHITECTURE.get(arch)):
        if donor_arch is None:
            continue
        for base in bases:
            if own and base not in own:
                continue
            base_ref = measured[(key, base)][0] if own else derived_reference(key, base)
            if base_ref is None:
                continue
            donors = _donors(key, mode, base, donor_arch, measured)
            if not donors:
                continue
            pairs = []
            for d in donors:
                measured_ratio, harness = _donor_ratio(measured[(d, mode)], measured[(d, base)])
                carried, how = carried_ratio(measured_ratio, d, key, mode, base)
                pairs.append((d, carried, f"{harness}; {how}" if how else harness))
            ratio = math.exp(sum(math.log(r) for _, r, _ in pairs) / len(pairs))
            same = donor_arch == arch
            kind = "mode_ratio" if own else "datasheet_mode_ratio"
            if not same:
                factor = MIN_TOLERANCE_FACTOR
                bound = (
                    f"no {arch} card measures both modes: {donor_arch}'s ratio, unmeasured "
                    f"error, judged at the widest tolerance (x{factor:.2f})"
                )
            else:
                ratio_factor = (factors or {}).get(mode, MIN_TOLERANCE_FACTOR)
                factor = ratio_factor
                bound = f"same-architecture ratios' worst leave-one-out ratio {ratio_factor:.2f}"
                if not own:
                    factor = base_ref["tolerance_factor"] * ratio_factor
                    bound = (
                        f"datasheet model x{base_ref['tolerance_factor']:.2f} times the "
                        f"same-architecture ratios' x{ratio_factor:.2f}"
                    )
                factor = max(MIN_TOLERANCE_FACTOR, math.floor(factor * 100) / 100.0)
            donor_text = ", ".join(f"{d} {r:.3f} ({h})" for d, r, h in pairs)
            base_kind = "measured" if own else "derived from the datasheet"
            if not own and measured.get((key, base)):
                base_kind += f"; its measured {base} row is a floor the harness set"
            derivation = (
                f"{key} {base} {base_ref['img_s']:,.0f} ({base_kind}) x {mode}/{base} "
                f"{ratio:.3f} of {donor_arch} {'card' if len(pairs) == 1 else 'cards'} "
                f"{donor_text}"
            )
            return {
                "img_s": round(base_ref["img_s"] * ratio, 0),
                "batch": None,
                "harness": base_ref["harness"],
                "source": f"derived: {mode}/{base} ratio of {', '.join(donors)}",
                "citation": base_ref["citation"],
                "note": derivation,
                "basis": "derived",
                "derivation": {
                    "kind": kind,
                    "base_mode": base,
                    "base_img_s": base_ref["img_s"],
                    "ratio": round(ratio, 4),
                    "donors": donors,
                    "donor_architecture": donor_arch,
                    "same_architecture": same,
                    "text": derivation,
                    "error_bound": bound,
                },
                "tolerance_factor": factor,
                "gpu_key": key,
                "mode": mode,
            }
    return None


def derive(
    gpu_key: str,
    mode: str,
    measured: Optional[Measured] = None,
    factors: Optional[Mapping[str, float]] = None,
) -> Optional[Row]:
    """A derived reference for (gpu_key, mode), or None: the card's own measured reference
    in a base mode x the mode ratio of same-architecture donors (each donor's ratio carried
    to the card through the datasheet peaks, :func:`carried_ratio`); else the datasheet
    model; else the datasheet-derived base reference x the ratio; never above
    :func:`mfu_cap`. A measured row that is a harness floor (``calibrates: false``) is no
    base. ``measured`` replaces the table (the leave-one-out test drops the row it derives)."""
    key = REFERENCE_ALIASES.get(gpu_key, gpu_key)
    mode = canonical_mode(mode)
    table = MEASURED if measured is None else measured
    if factors is None and measured is None:
        factors = mode_ratio_factors()
    sibling = DERIVE_FROM.get(key)
    if sibling:
        rows = table.get((sibling, mode))
        base = dict(rows[0], gpu_key=sibling, mode=mode) if rows else None
        base = base or derive(sibling, mode, table, factors)
        if base is None:
            return None
        text = (
            f"{sibling}'s {base['basis']} {mode} reference {base['img_s']:,.0f} "
            f"({base.get('note')}): {key} has no measurement and no source gives its tensor rates"
        )
        return dict(
            base,
            basis="derived",
            batch=None,
            source=f"derived: {sibling}'s reference",
            note=text,
            derivation={
                "kind": "sibling",
                "sibling": sibling,
                "text": text,
                "error_bound": f"unmeasured: judged at the widest tolerance "
                f"(x{MIN_TOLERANCE_FACTOR:.2f})",
            },
            tolerance_factor=MIN_TOLERANCE_FACTOR,
            gpu_key=key,
            mode=mode,
        )
    own = any(_usable(table.get((key, b))) for b in MODE_RATIO_BASES.get(mode, ()))
    if own:
        return _capped(_mode_ratio(key, mode, table, factors), key, mode, table)
    datasheet = derived_reference(key, mode)
    if datasheet is not None:
        return _capped(datasheet, key, mode, table)
    return _capped(_mode_ratio(key, mode, table, factors), key, mode, table)


def _without(measured: Measured, key: Tuple[str, str]) -> Dict[Tuple[str, str], List[Row]]:
    return {k: v for k, v in measured.items() if k != key}


def leave_one_out(factors: Optional[Mapping[str, float]] = None) -> List[Dict[str, Any]]:
    """Every measured reference of a mode-ratio mode derived from the other rows, where a
    path exists without it: {gpu, mode, measured, derived, kind, error (derived/measured-1)}."""
    out = []
    for (gpu, mode), rows in sorted(MEASURED.items()):
        if mode not in MODE_RATIO_BASES or gpu in REFERENCE_ALIASES or not rows[0]["calibrates"]:
            continue
        derived = derive(gpu, mode, _without(MEASURED, (gpu, mode)), factors or {})
        if derived is None or derived.get("derivation", {}).get("kind") not in (
            "mode_ratio",
            "datasheet_mode_ratio",
        ):
            continue
        out.append(
            {
                "gpu": gpu,
                "mode": mode,
                "measured": rows[0]["img_s"],
                "derived": derived["img_s"],
                "same_architecture": derived["derivation"]["same_architecture"],
                "text": derived["derivation"]["text"],
                "error": round(derived["img_s"] / rows[0]["img_s"] - 1.0, 4),
            }
        )
    return out


_FACTORS: Dict[str, float] = {}


def mode_ratio_factors() -> Dict[str, float]:
    """mode -> the tolerance factor of same-architecture mode-ratio references: the worst
    leave-one-out measured / derived ratio (capped at 1, floored to 2 decimals), never
    below MIN_TOLERANCE_FACTOR; MIN_TOLERANCE_FACTOR where no sample measures it."""
    if not _FACTORS:
        worst: Dict[str, float] = {}
        for row in leave_one_out():
            if row["same_architecture"]:
                ratio = 1.0 / (1.0 + row["error"])
                worst[row["mode"]] = min(worst.get(row["mode"], 1.0), ratio)
        for mode in MODE_RATIO_BASES:
            factor = math.floor(worst[mode] * 100) / 100.0 if mode in worst else 0.0
            _FACTORS[mode] = max(MIN_TOLERANCE_FACTOR, factor)
    return dict(_FACTORS)


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
    return derive(key, mode)


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
# (an idle GPU shows 0 to a few MiB): module_utils/gpu_busy.py decides what "busy" is.
BUSY_MEMORY_MIB = _BUSY_MEMORY_MIB
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
        # measured (a row of the table) or derived (a mode ratio or the datasheet model,
        # wider tolerance), and for a derived one how it was derived and its error bound
        "reference_basis": ref["basis"] if ref else None,
        "reference_derivation": ref["note"] if ref and ref["basis"] == "derived" else None,
        "reference_error_bound": (
            (ref.get("derivation") or {}).get("error_bound")
            or f"datasheet model's worst leave-one-out ratio {ref['tolerance_factor']:.2f}"
            if ref and ref["basis"] == "derived"
            else None
        ),
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
        # A derived rate is as good as its derivation: the tolerance widens by its
        # worst leave-one-out ratio (at most MAX_WIDENING), and the report says so.
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
        f"no reference for {gpu_key} / {mode}: no measurement, no mode ratio to carry another "
        f"mode's reference to it, and {mode} has no datasheet model (derived rates exist for "
        f"{', '.join(sorted(set(_TABLE['derived']['modes']) | set(MODE_RATIO_BASES)))}); "
        "reported only"
    )


def judge_probes(probes: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Each probe of the report: pass (it ran and measured), fail (it errored), not_run.

    A probe run on several GPUs (``gpus``, one result per GPU) fails when it failed on
    any of them (naming the GPU), passes when it measured on one and failed on none.
    """
    out: Dict[str, Dict[str, Any]] = {}
    for name, result in (probes or {}).items():
        result = result or {}
        runs = [r for r in result.get("gpus") or [] if isinstance(r, Mapping)] or [result]
        several = len(runs) > 1
        failed = [r for r in runs if r.get("status") not in ("ok", "skipped")]
        if failed:
            out[name] = {
                "status": "fail",
                "reason": "; ".join(
                    f"the {name} probe failed"
                    + (f" on GPU {r.get('gpu_index')}" if several else "")
                    + f": {r.get('reason')}"
                    for r in failed
                ),
            }
        elif any(r.get("status") == "ok" for r in runs):
            skipped = [r.get("gpu_index") for r in runs if r.get("status") == "skipped"]
            out[name] = {
                "status": "pass",
                "reason": (
                    "skipped on GPU {}: {}".format(
                        ", ".join(str(i) for i in skipped),
                        next(r.get("reason") for r in runs if r.get("status") == "skipped"),
                    )
                    if skipped
                    else None
                ),
            }
        else:
            out[name] = {
                "status": "not_run",
                "reason": "skipped: " + (runs[0].get("reason") or "not run"),
            }
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


def cause(
    code: str,
    gpu: Optional[int],
    message: str,
    remedy: Optional[str] = None,
    fault: bool = True,
) -> Dict[str, Any]:
    """One structured cause: ``{code, gpu, message, remedy, fault}``.

    ``code`` is stable (kebab-case, listed in ``CAUSE_CODES``) so that a fleet page can group
    hosts by it; ``gpu`` is the GPU's index or None; ``message`` the whole sentence (the
    ``diagnosis`` strings are these messages); ``remedy`` the action alone, or None;
    ``fault`` False for an observation that explains but is no fault (the power cap under
    load).
    """
    return {"code": code, "gpu": gpu, "message": message, "remedy": remedy, "fault": fault}


#: Every cause code, with what it means.
CAUSE_CODES: Dict[str, str] = {
    "gpu-busy": "another process (named: pid, name, memory) used the GPU",
    "gpu-busy-hidden": "nvidia-smi lists processes on the GPU that this host cannot see",
    "gpu-memory-in-use": "memory in use (or utilisation) with no process listed",
    "pcie-link-degraded": "the PCIe link runs below its generation or width",
    "thermal-slowdown": "clocks slowed for heat (sw_thermal_slowdown, hw_thermal_slowdown)",
    "hw-slowdown": "hardware slowdown (hw_slowdown)",
    "power-brake": "the external hardware power brake (hw_power_brake_slowdown)",
    "power-limit-lowered": "the enforced power limit is below the board's default",
    "power-cap-reached": "the draw reached the power limit under load (normal, no fault)",
    "mig-enabled": "MIG is on: the benchmark got one slice",
    "torch-cpu-only": "torch is a CPU-only build",
    "torch-cuda-unavailable": "torch.cuda.is_available() is False",
    "torch-arch-not-covered": "torch's arch list does not cover the GPU",
    "torch-ptx-jit": "torch JIT-compiles this GPU's kernels from PTX",
    "torch-verdict": "torch_cuda_facts reports a wrong build or driver",
    "h2d-slow": "pinned host-to-device copies under 10 GB/s",
    "gpu-trails-peers": "a GPU trails the host's other GPUs",
    "no-host-cause": "no host-level cause shows in the facts",
    "no-facts": "no nvidia_smi or torch_cuda facts were given",
}


def _reasons(gpu: Mapping[str, Any]) -> List[str]:
    return clock_event_reasons(
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


def _label(index: Any, gpu: Mapping[str, Any]) -> str:
    return f"GPU {index} ({gpu.get('name') or 'unknown model'})"


def _by_index(rows: Any) -> Dict[Any, Mapping[str, Any]]:
    """{index: row} of a list of per-GPU rows (contention or busy states)."""
    out: Dict[Any, Mapping[str, Any]] = {}
    for row in rows or []:
        if isinstance(row, Mapping) and row.get("index") is not None:
            out[_as_int(row["index"])] = row
    return out


def _listed_processes(gpu: Mapping[str, Any]) -> Tuple[List[Mapping[str, Any]], int]:
    """(named processes, hidden count) of a facts GPU's ``processes`` list (no name: hidden)."""
    value = _pick(gpu, "processes", "compute_processes")
    if not isinstance(value, (list, tuple)):
        return [], 0
    named = [p for p in value if isinstance(p, Mapping) and p.get("name") and p.get("pid")]
    dicts = [p for p in value if isinstance(p, Mapping)]
    if not dicts:
        return [], 0
    return named, len(dicts) - len(named)


def _process_causes(
    index: Any,
    gpu: Mapping[str, Any],
    during: Optional[Mapping[str, Any]],
    before: Optional[Mapping[str, Any]],
) -> List[Dict[str, Any]]:
    """Another process on a measured GPU: named first (pid, name, memory), or counted."""
    label = _label(index, gpu)
    rows: List[Dict[str, Any]] = []
    named: List[Mapping[str, Any]] = []
    hidden = 0
    when = ""
    if during and (during.get("foreign_processes") or during.get("hidden_processes_max")):
        named = list(during.get("foreign_processes") or [])
        hidden = int(during.get("hidden_processes_max") or 0)
        when = "during the measurement"
    elif before and (before.get("processes") or before.get("hidden_processes")):
        named = list(before.get("processes") or [])
        hidden = int(before.get("hidden_processes") or 0)
        when = "when the measurement started"
    elif before is None:
        named, hidden = _listed_processes(gpu)
        when = "before the check"
    if named:
        names = ", ".join(process_text(p) for p in named)
        pids = ", ".join(str(p.get("pid")) for p in named)
        rows.append(
            cause(
                "gpu-busy",
                index,
                f"{label} was in use by another process {when}: {names}. It shares the GPU's "
                "SMs, memory bandwidth and power limit with the benchmark: the GPU was shared, "
                "not slow.",
                f"Stop process {pids} or let the check wait for the GPU "
                "(gpu_check_busy_gpu: wait), then re-run.",
            )
        )
    if hidden:
        rows.append(
            cause(
                "gpu-busy-hidden",
                index,
                f"nvidia-smi reports {plural(hidden, 'process')} on GPU {index} that this host "
                f"cannot see (another container or PID namespace) {when}: they share "
                f"{label} with the benchmark.",
                "Find them where the containers run (nvidia-smi on the host, or the container "
                "runtime) and stop them, then re-run.",
            )
        )
    if rows:
        return rows
    count = (
        0
        if before is not None
        else _process_count(_pick(gpu, "processes", "process_count", "compute_processes"))
    )
    if count:
        return [
            cause(
                "gpu-busy",
                index,
                f"{count} other process(es) ran on {label} during the check and share its SMs "
                "and memory: stop them (nvidia-smi lists them) and re-run.",
                "Stop them (nvidia-smi lists them) and re-run.",
            )
        ]
    used = _as_int(before.get("memory_used_mib") if before else _pick(gpu, "memory_used_mib"))
    if used is not None and used > BUSY_MEMORY_MIB:
        return [
            cause(
                "gpu-memory-in-use",
                index,
                f"{label} already had {used} MiB of memory in use before the check: another "
                "process is probably running on it and sharing its SMs; stop it (nvidia-smi "
                "lists it) and re-run.",
                "Stop the process that holds the memory (nvidia-smi lists it) and re-run.",
            )
        ]
    return []


def _hardware_causes(
    index: Any, gpu: Mapping[str, Any], during: Optional[Mapping[str, Any]], shared: bool
) -> List[Dict[str, Any]]:
    """PCIe link, each clock-event reason with its own explanation, power limit, MIG."""
    rows: List[Dict[str, Any]] = []
    label = _label(index, gpu)
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
        rows.append(
            cause(
                "pcie-link-degraded",
                index,
                f"{label} runs a downgraded PCIe link: Gen{pcie['gen_current']} "
                f"x{pcie['width_current']} of a possible Gen{pcie['gen_max']} "
                f"x{pcie['width_max']}. Host-to-device copies and input feeding slow down; "
                f"reseat the card or riser and check the BIOS PCIe settings{caveat}.",
                "Reseat the card or riser and check the BIOS PCIe settings.",
            )
        )
    reasons = _reasons(gpu)
    for reason in (during or {}).get("clock_event_reasons_seen") or []:
        if reason not in reasons:
            reasons.append(reason)
    temperature = _pick(gpu, "temperature", "temperature_gpu", "temperature_c")
    power_limit = _pick(gpu, "power_limit", "power_limit_w")
    thermal = [r for r in reasons if r in ("sw_thermal_slowdown", "hw_thermal_slowdown")]
    if thermal:
        rows.append(
            cause(
                "thermal-slowdown",
                index,
                f"{label} slowed its clocks for heat ({', '.join(thermal)}; temperature "
                f"{temperature if temperature is not None else 'unknown'}): the GPU or its "
                "memory ran too hot. Check the fans, the airflow and the inlet temperature.",
                "Check the fans, the airflow and the inlet temperature "
                "(nvidia-smi -q -d TEMPERATURE).",
            )
        )
    if "hw_slowdown" in reasons:
        rows.append(
            cause(
                "hw-slowdown",
                index,
                f"{label} has hardware slowdown engaged (hw_slowdown: the board's own thermal "
                "or power-brake signal halves its clocks or worse). Check the cooling and the "
                "chassis power supply.",
                "Check the cooling and the chassis power supply with the provider.",
            )
        )
    if "hw_power_brake_slowdown" in reasons:
        rows.append(
            cause(
                "power-brake",
                index,
                f"{label} is held by the hardware power brake (hw_power_brake_slowdown: an "
                "external signal from the chassis or power supply asked it to slow down). "
                "Check the power supply and the chassis power-brake signal.",
                "Ask the provider to check the PSU and the chassis power-brake signal.",
            )
        )
    limit = _as_int(power_limit)
    default = _as_int(
        _pick(
            gpu,
            "power_default_limit",
            "power_default_limit_w",
            "default_power_limit",
            "power_max_limit",
            "max_power_limit",
        )
    )
    lowered = bool(limit and default and limit < 0.9 * default)
    if lowered:
        rows.append(
            cause(
                "power-limit-lowered",
                index,
                f"{label} has its power limit lowered to {limit} W of {default} W: it cannot "
                "reach full clocks (nvidia-smi -pl restores it).",
                f"Restore the default limit (nvidia-smi -i {index} -pl {default}) unless the cap "
                "is intended.",
            )
        )
    if "sw_power_cap" in reasons:
        whose = "another process's load" if shared else "load"
        rows.append(
            cause(
                "power-cap-reached",
                index,
                f"{label} reached its {power_limit or 'unknown'} W power limit under {whose} "
                "(sw_power_cap): normal for a GPU at full load, not a power or cooling fault"
                + (" (but the limit itself is lowered, above)" if lowered else "")
                + ".",
                None,
                fault=False,
            )
        )
    if _mig_on(_pick(gpu, "mig_mode", "mig")):
        rows.append(
            cause(
                "mig-enabled",
                index,
                f"MIG is enabled on {label}: the benchmark gets one MIG slice, not the whole "
                f"GPU. Disable it (nvidia-smi -i {index} -mig 0, then reset the GPU) or expect "
                "a fraction of the reference.",
                f"Disable MIG (nvidia-smi -i {index} -mig 0, then reset the GPU).",
            )
        )
    return rows


def _gpu_cause_rows(
    position: int,
    gpu: Mapping[str, Any],
    during: Optional[Mapping[str, Any]] = None,
    before: Optional[Mapping[str, Any]] = None,
) -> List[Dict[str, Any]]:
    index = gpu.get("index", position)
    processes = _process_causes(index, gpu, during, before)
    shared = any(r["code"] in ("gpu-busy", "gpu-busy-hidden") for r in processes)
    return processes + _hardware_causes(index, gpu, during, shared)


def _gpu_causes(position: int, gpu: Mapping[str, Any]) -> List[str]:
    return [row["message"] for row in _gpu_cause_rows(position, gpu)]


def _torch_causes(
    torch_cuda: Mapping[str, Any], gpus: Sequence[Mapping[str, Any]]
) -> List[Dict[str, Any]]:
    causes = []
    built = torch_cuda.get("built_cuda_version")
    if "built_cuda_version" in torch_cuda and not built:
        causes.append(
            cause(
                "torch-cpu-only",
                None,
                "torch is a CPU-only build (torch.version.cuda is None): it cannot use the GPU. "
                "Install the CUDA wheel of torch in the training environment.",
                "Install the CUDA wheel of torch in the training environment.",
            )
        )
    elif torch_cuda.get("cuda_available") is False:
        causes.append(
            cause(
                "torch-cuda-unavailable",
                None,
                "torch.cuda.is_available() is False in the training environment: a CPU-only "
                f"torch wheel or a driver problem (driver missing or too old for CUDA "
                f"{built or '?'}).",
                "Check the driver (nvidia-smi) and the torch wheel.",
            )
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
                cause(
                    "torch-arch-not-covered",
                    None,
                    f"torch was built for {', '.join(arch_list)}, which does not cover this "
                    f"GPU's sm_{cap[0]}{cap[1]}: install a torch build whose arch list "
                    "includes it.",
                    "Install a torch build whose arch list includes this GPU.",
                )
            )
        elif cover == "ptx":
            causes.append(
                cause(
                    "torch-ptx-jit",
                    None,
                    f"torch has no sm_{cap[0]}{cap[1]} kernels and JIT-compiles them from PTX: "
                    "a slow start and possibly slower kernels; install a build for this GPU.",
                    "Install a torch build for this GPU.",
                )
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
            cause(
                "torch-verdict",
                None,
                f"torch_cuda_facts reports a wrong torch build or driver: {'; '.join(problems)}.",
                "Fix the torch build or the driver that torch_cuda_facts names.",
            )
        )
    return causes


def busy_causes(busy: Optional[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """A cause per GPU that the busy-GPU policy left out: 'not measured: busy', naming why."""
    rows = []
    for state in (busy or {}).get("gpus") or []:
        if not state.get("skipped"):
            continue
        index = state.get("index")
        waited = busy.get("waited_s") or 0  # type: ignore[union-attr]
        after = f" after waiting {waited:g} s" if busy.get("policy") == "wait" else ""  # type: ignore[union-attr]
        hidden_only = not state.get("processes") and state.get("hidden_processes")
        code = (
            "gpu-busy"
            if state.get("processes")
            else ("gpu-busy-hidden" if hidden_only else "gpu-memory-in-use")
        )
        rows.append(
            cause(
                code,
                index,
                f"{_label(index, state)} not measured: busy{after}: {busy_text(state)}.",
                "Stop the other work on the GPU, or run the check when it is free; "
                "gpu_check_busy_gpu: measure measures it anyway.",
            )
        )
    return rows


def diagnose_causes(
    failing_modes: Sequence[str],
    nvidia_smi: Optional[Mapping[str, Any]] = None,
    torch_cuda: Optional[Mapping[str, Any]] = None,
    report: Optional[Mapping[str, Any]] = None,
    contention: Optional[Mapping[str, Any]] = None,
    busy: Optional[Mapping[str, Any]] = None,
) -> List[Dict[str, Any]]:
    """Structured causes (:func:`cause`), another process first.

    The GPUs the busy-GPU policy left out (``busy``, the gpu_throughput_measure module's decision)
    come first whether or not a mode failed. For failing modes, then: each measured GPU's
    other processes, seen during the measurement (``contention``), at its start (``busy``)
    or in the facts; then the hardware (PCIe link, each clock-event reason, a lowered
    power limit, MIG); then the torch build; then slow host-to-device copies.
    """
    rows = busy_causes(busy)
    if not failing_modes:
        return rows
    skipped = {_as_int(s.get("index")) for s in (busy or {}).get("gpus") or [] if s.get("skipped")}
    during_by = _by_index((contention or {}).get("gpus"))
    before_by = _by_index((busy or {}).get("gpus")) if busy and busy.get("gpus") else None
    gpus: List[Mapping[str, Any]] = []
    if nvidia_smi:
        gpus = [g for g in nvidia_smi.get("gpus") or [] if isinstance(g, Mapping)]
    processes: List[Dict[str, Any]] = []
    hardware: List[Dict[str, Any]] = []
    for position, gpu in enumerate(gpus):
        index = gpu.get("index", position)
        if _as_int(index) in skipped:
            continue
        during = during_by.get(_as_int(index))
        before = before_by.get(_as_int(index), {}) if before_by is not None else None
        found = _process_causes(index, gpu, during, before)
        processes.extend(found)
        shared = any(r["code"] in ("gpu-busy", "gpu-busy-hidden") for r in found)
        hardware.extend(_hardware_causes(index, gpu, during, shared))
    rows.extend(processes)
    if nvidia_smi:
        total = _process_count(_pick(nvidia_smi, "processes", "process_count"))
        if total and not processes:
            rows.append(
                cause(
                    "gpu-busy",
                    None,
                    f"{total} other process(es) ran on the GPUs during the check and share them: "
                    "stop them (nvidia-smi lists them) and re-run.",
                    "Stop them (nvidia-smi lists them) and re-run.",
                )
            )
    rows.extend(hardware)
    if torch_cuda:
        rows.extend(_torch_causes(torch_cuda, gpus))
    h2d_probe = ((report or {}).get("probes") or {}).get("h2d") or {}
    h2d_runs = [
        r
        for r in (h2d_probe.get("gpus") or [h2d_probe])
        if isinstance(r, Mapping) and r.get("status") == "ok" and r.get("gb_s") is not None
    ]
    h2d = min(h2d_runs, key=lambda r: r["gb_s"]) if h2d_runs else {}
    if h2d and h2d["gb_s"] < 10:
        rows.append(
            cause(
                "h2d-slow",
                h2d.get("gpu_index") if len(h2d_runs) > 1 else None,
                ("GPU {}: ".format(h2d.get("gpu_index")) if len(h2d_runs) > 1 else "")
                + f"pinned host-to-device copies reach only {h2d['gb_s']:.1f} GB/s (PCIe Gen4 x16 "
                "gives ~25, Gen5 ~50): the PCIe path is slow.",
                "Check the PCIe link (slot, riser, BIOS) and the NUMA placement.",
            )
        )
    if not any(r["fault"] for r in rows):
        if nvidia_smi or torch_cuda or contention:
            rows.append(
                cause(
                    "no-host-cause",
                    None,
                    "No host-level cause shows in the facts (PCIe link, clocks, MIG, other "
                    "processes and the torch build look normal): compare the batch size and the "
                    "torch/cuDNN versions with the reference's, and re-run to rule out noise.",
                    "Re-run to rule out noise; compare the batch size and versions.",
                    fault=False,
                )
            )
        else:
            rows.append(
                cause(
                    "no-facts",
                    None,
                    "No nvidia_smi or torch_cuda facts were given: gather them (nvidia_smi_facts, "
                    "torch_cuda_facts) so that the check can name a cause.",
                    "Gather nvidia_smi_facts and torch_cuda_facts.",
                    fault=False,
                )
            )
    return rows


def diagnose(
    failing_modes: Sequence[str],
    nvidia_smi: Optional[Mapping[str, Any]] = None,
    torch_cuda: Optional[Mapping[str, Any]] = None,
    report: Optional[Mapping[str, Any]] = None,
    contention: Optional[Mapping[str, Any]] = None,
    busy: Optional[Mapping[str, Any]] = None,
) -> List[str]:
    """Likely causes of slow or failed modes, as sentences (empty when nothing failed).

    nvidia_smi is shaped like ``ansible_facts.nvidia_smi`` (gpus[] with pcie_gen_current/max,
    pcie_width_current/max, clock_event_reasons_active, mig_mode, power_limit_w,
    power_default_limit_w, memory_used_mib, processes); torch_cuda like
    ``ansible_facts.torch_cuda`` (verdict, arch_list, built_cuda_version, cuda_available).
    Unknown or missing fields are ignored. The messages of :func:`diagnose_causes`.
    """
    rows = diagnose_causes(failing_modes, nvidia_smi, torch_cuda, report, contention, busy)
    return [row["message"] for row in rows]


def outlier_cause_rows(
    judgement: Mapping[str, Any],
    nvidia_smi: Optional[Mapping[str, Any]] = None,
    contention: Optional[Mapping[str, Any]] = None,
) -> List[Dict[str, Any]]:
    """For each GPU that trails the host's others: its index, bus id and likely cause."""
    gpus = {}
    for position, gpu in enumerate((nvidia_smi or {}).get("gpus") or []):
        if isinstance(gpu, Mapping):
            gpus[_as_int(gpu.get("index")) if gpu.get("index") is not None else position] = (
                position,
                gpu,
            )
    during_by = _by_index((contention or {}).get("gpus"))
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
        rows = (
            _gpu_cause_rows(position, gpu, during_by.get(_as_int(o["gpu"])))  # type: ignore[arg-type]
            if gpu
            else []
        )
        faults = [r for r in rows if r["fault"]]
        text += (
            ": " + " ".join(r["message"] for r in faults)
            if faults
            else ": no cause shows in its nvidia-smi facts (PCIe link, clocks, MIG, processes); "
            "reset it or re-run, and replace it if it stays behind."
        )
        code = faults[0]["code"] if faults else "gpu-trails-peers"
        out.append(
            cause(
                code,
                o["gpu"],
                text,
                faults[0]["remedy"]
                if faults
                else "Reset it or re-run; replace it if it stays behind.",
            )
        )
    return out


def outlier_causes(
    judgement: Mapping[str, Any],
    nvidia_smi: Optional[Mapping[str, Any]] = None,
    contention: Optional[Mapping[str, Any]] = None,
) -> List[str]:
    """For each GPU that trails the host's others: its index, bus id and likely cause."""
    return [row["message"] for row in outlier_cause_rows(judgement, nvidia_smi, contention)]


def not_measured_line(busy: Optional[Mapping[str, Any]]) -> str:
    """'GPU 0 NOT MEASURED: busy (pid 559 python3, 76294 MiB)' for each GPU left out."""
    parts = []
    for state in (busy or {}).get("gpus") or []:
        if state.get("skipped"):
            who = ", ".join(process_text(p) for p in state.get("processes") or [])
            if not who and state.get("hidden_processes"):
                who = f"{plural(state['hidden_processes'], 'process')} this host cannot see"
            if not who:
                who = f"{state.get('memory_used_mib')} MiB in use"
            parts.append(f"GPU {state.get('index')} NOT MEASURED: busy ({who})")
    return "; ".join(parts)


def headline(judgement: Optional[Mapping[str, Any]], verdict: str) -> str:
    """How the failing host's headline reads: 'is slow' only when a mode measured below its
    reference (or a GPU trails the others), 'could not measure' when nothing was measured,
    else 'failed the check' (a probe failed, a required mode did not run). A passing host's
    reads 'passed the check' (gpu-check.json carries it for every host)."""
    if verdict == "pass":
        return "passed the check"
    if verdict == "not_measured":
        return "could not measure"
    judged = judgement or {}
    modes = judged.get("modes") or {}
    if judged.get("gpu_outliers") or any(
        (modes.get(m) or {}).get("ratio") is not None for m in judged.get("failed_modes") or []
    ):
        return "is slow"
    measured = [
        e for e in modes.values() if e.get("ratio") is not None or e.get("status") == "pass"
    ]
    if judged.get("failed_modes") and not measured:
        return "could not measure"
    return "failed the check"


def headline_line(verdict_headline: str, host: Optional[str], diagnosis: Sequence[str]) -> str:
    """The failing host's first words: 'gpu07 is slow', 'gpu07 failed the check', or
    'could not measure gpu07: <the first cause>' (nothing measured is never called slow)."""
    name = host or "this host"
    if verdict_headline == "could not measure":
        first = diagnosis[0] if diagnosis else "no mode ran"
        return f"could not measure {name}: {first}"
    return f"{name} {verdict_headline}"


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
