"""Reference ResNet-50 training throughput per GPU model and mode, and the judge.

``library/gpu_throughput.py`` runs ``roles/gpu_check/files/gpu_throughput.py`` on a host
and hands its JSON report to :func:`judge_report`. Each mode's measured images/s is
divided by the reference row for (GPU model key, mode); the mode passes when the ratio
reaches the tolerance (default 0.80). A GPU model or mode without a row is ``unknown``:
it is reported, never failed. :func:`diagnose` turns ``ansible_facts.nvidia_smi`` and
``ansible_facts.torch_cuda`` into the likely causes of a slow mode.

Every reference row names its source:
- "seed 001 section 7": the seed article's A100 40G table (FP32 bs256 380 img/s, AMP
  bs512 720, 4-GPU DDP AMP 2,800);
- published numbers collected in shared/notes/PERF_REFERENCES.md (Lambda's
  deeplearning-benchmark CSVs, NVIDIA DeepLearningExamples);
- "Kindling H200 measurements 2026-11-29": this project's own program on an H200
  (shared/notes/TESTBED.md).

Python 3.8 compatible, standard library only (it runs inside Ansible modules).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible.module_utils.gpu_compat import arch_coverage

DEFAULT_TOLERANCE = 0.80
# ResNet-50 at 224x224: 4.11 GMAC forward, so ~24.7 GFLOP per image per training step.
FLOP_PER_IMAGE = 24.7e9

SOURCE_SEED = "seed 001 section 7"
SOURCE_KINDLING_H200 = "Kindling H200 measurements 2026-11-29"
SOURCE_LAMBDA = "lambdal/deeplearning-benchmark pytorch/*.csv (PERF_REFERENCES.md)"
SOURCE_DLE = (
    "NVIDIA DeepLearningExamples PyTorch/Classification/ConvNets/resnet50v1.5/README.md "
    "(PERF_REFERENCES.md)"
)

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

Row = Dict[str, Any]


def _row(img_s: float, batch: int, source: str, note: str, **extra: Any) -> Row:
    row: Row = {"img_s": float(img_s), "batch": batch, "source": source, "note": note}
    row.update(extra)
    return row


# (GPU model key, mode) -> reference. img_s is per GPU; for ddp it is per GPU of the
# DDP run (the seed's 4-GPU 2,800 img/s total = 700 per GPU).
REFERENCES: Dict[Tuple[str, str], Row] = {
    # --- A100 40GB: the seed's table, plus Lambda's SXM4 numbers where the seed has none.
    ("a100-40gb", "fp32"): _row(380, 256, SOURCE_SEED, "single-GPU FP32, batch 256"),
    ("a100-40gb", "tf32"): _row(
        929, 360, SOURCE_LAMBDA, "A100 40GB SXM4; Lambda's 'FP32' runs with TF32 on Ampere"
    ),
    ("a100-40gb", "amp_fp16"): _row(
        1455,
        720,
        SOURCE_LAMBDA,
        "A100 40GB SXM4, AMP, NCHW; the seed's AMP row (720 img/s at batch 512) is the alternative",
        alternatives=[{"img_s": 720.0, "batch": 512, "source": SOURCE_SEED}],
    ),
    ("a100-40gb", "ddp"): _row(
        700,
        512,
        SOURCE_SEED,
        "4-GPU DDP AMP 2,800 img/s total = 700 per GPU",
        per_gpu=True,
        world_size=4,
        total_img_s=2800.0,
    ),
    # --- A100 80GB SXM4
    ("a100-80gb", "tf32"): _row(
        938,
        256,
        SOURCE_DLE,
        "A100 80GB SXM4, TF32",
        alternatives=[{"img_s": 1067.0, "batch": 640, "source": SOURCE_LAMBDA}],
    ),
    ("a100-80gb", "amp_fp16"): _row(1582, 1280, SOURCE_LAMBDA, "A100 80GB SXM4, AMP, NCHW"),
    ("a100-80gb", "amp_fp16_cl"): _row(2470, 256, SOURCE_DLE, "A100 80GB SXM4, AMP, NHWC"),
    # --- V100 16GB (SXM2)
    ("v100-16gb", "fp32"): _row(
        367,
        112,
        SOURCE_DLE,
        "V100 16GB, FP32",
        alternatives=[{"img_s": 369.0, "batch": 128, "source": SOURCE_LAMBDA}],
    ),
    ("v100-16gb", "amp_fp16"): _row(833, 256, SOURCE_LAMBDA, "V100 16GB, AMP, NCHW"),
    ("v100-16gb", "amp_fp16_cl"): _row(1200, 256, SOURCE_DLE, "V100 16GB, AMP, NHWC"),
    # --- H100 (Lambda publishes a range; the lower end is the reference)
    ("h100-sxm", "tf32"): _row(
        1754, 640, SOURCE_LAMBDA, "H100 80GB SXM5, 'FP32' (TF32), range 1,754-1,898"
    ),
    ("h100-sxm", "amp_fp16"): _row(
        2616, 1280, SOURCE_LAMBDA, "H100 80GB SXM5, AMP, NCHW, range 2,616-2,791"
    ),
    ("h100-pcie", "tf32"): _row(
        1182, 640, SOURCE_LAMBDA, "H100 80GB PCIe, 'FP32' (TF32), range 1,182-1,197"
    ),
    ("h100-pcie", "amp_fp16"): _row(
        1851, 1280, SOURCE_LAMBDA, "H100 80GB PCIe, AMP, NCHW, range 1,851-1,866"
    ),
    # --- H200: this project's program on the GPU test machine (torch 2.11.0+cu130, driver
    # 580.159.04), full profile, fused SGD: docs/benchmarks/2026-11-29/full-1xh200.json.
    ("h200", "fp32"): _row(1064, 256, SOURCE_KINDLING_H200, "FP32, TF32 off"),
    ("h200", "tf32"): _row(
        2216,
        256,
        SOURCE_KINDLING_H200,
        "TF32",
        alternatives=[{"img_s": 2259.0, "batch": 1280, "source": SOURCE_LAMBDA}],
    ),
    ("h200", "amp_fp16"): _row(
        3096,
        256,
        SOURCE_KINDLING_H200,
        "AMP fp16, NCHW (the seed recipe)",
        alternatives=[{"img_s": 3079.0, "batch": 2560, "source": SOURCE_LAMBDA}],
    ),
    ("h200", "amp_bf16"): _row(2452, 256, SOURCE_KINDLING_H200, "AMP bf16, NCHW"),
    ("h200", "amp_bf16_cl"): _row(4703, 256, SOURCE_KINDLING_H200, "AMP bf16, channels_last"),
    ("h200", "amp_fp16_cl"): _row(6180, 256, SOURCE_KINDLING_H200, "AMP fp16, channels_last"),
    ("h200", "compile"): _row(
        7557,
        384,
        SOURCE_KINDLING_H200,
        "AMP fp16, channels_last, torch.compile default mode, step in a CUDA graph (58 s compile)",
    ),
}

# Same chip and clocks, different memory size: judged against the same rows.
REFERENCE_ALIASES = {"v100-32gb": "v100-16gb"}

# Peak dense TFLOP/s per precision (tensor cores for tf32/bf16/fp16; sparsity figures of
# the datasheets halved). For MFU = img/s x 24.7 GFLOP / peak.
PEAK_TFLOPS: Dict[str, Dict[str, Any]] = {
    "h200": {
        "fp32": 67.0,
        "tf32": 494.5,
        "bf16": 989.5,
        "fp16": 989.5,
        "source": "NVIDIA H200 Tensor Core GPU datasheet (SXM)",
    },
    "h200-nvl": {
        "fp32": 60.0,
        "tf32": 417.5,
        "bf16": 835.5,
        "fp16": 835.5,
        "source": "NVIDIA H200 Tensor Core GPU datasheet (NVL)",
    },
    "h100-sxm": {
        "fp32": 67.0,
        "tf32": 494.5,
        "bf16": 989.5,
        "fp16": 989.5,
        "source": "NVIDIA H100 Tensor Core GPU datasheet (SXM)",
    },
    "h100-pcie": {
        "fp32": 51.0,
        "tf32": 378.0,
        "bf16": 756.5,
        "fp16": 756.5,
        "source": "NVIDIA H100 Tensor Core GPU datasheet (PCIe)",
    },
    "h100-nvl": {
        "fp32": 60.0,
        "tf32": 417.5,
        "bf16": 835.5,
        "fp16": 835.5,
        "source": "NVIDIA H100 Tensor Core GPU datasheet (NVL)",
    },
    "a100-40gb": {
        "fp32": 19.5,
        "tf32": 156.0,
        "bf16": 312.0,
        "fp16": 312.0,
        "source": "NVIDIA A100 Tensor Core GPU datasheet",
    },
    "v100-16gb": {
        "fp32": 15.7,
        "fp16": 125.0,
        "source": "NVIDIA V100 Tensor Core GPU datasheet (SXM2)",
    },
    "v100-pcie-16gb": {
        "fp32": 14.0,
        "fp16": 112.0,
        "source": "NVIDIA V100 Tensor Core GPU datasheet (PCIe)",
    },
}
for _key in ("a100-80gb", "a100-pcie-40gb", "a100-pcie-80gb"):
    PEAK_TFLOPS[_key] = dict(PEAK_TFLOPS["a100-40gb"])
PEAK_TFLOPS["v100-32gb"] = dict(PEAK_TFLOPS["v100-16gb"])
PEAK_TFLOPS["v100-pcie-32gb"] = dict(PEAK_TFLOPS["v100-pcie-16gb"])

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


# ----------------------------------------------------------------------------- GPU keys


def gpu_model_key(name: Optional[str]) -> str:
    """Reference key for an nvidia-smi / torch GPU name.

    "NVIDIA H200" -> h200, "NVIDIA A100-SXM4-40GB" -> a100-40gb,
    "Tesla V100-SXM2-16GB" -> v100-16gb, "NVIDIA H100 80GB HBM3" -> h100-sxm,
    "NVIDIA H100 PCIe" -> h100-pcie, "cpu" -> cpu; anything else -> a slug of the name.
    """
    if not name:
        return "unknown"
    text = str(name).strip().lower()
    if text == "cpu":
        return "cpu"
    text = re.sub(r"\b(nvidia|tesla)\b", " ", text)
    compact = re.sub(r"[^a-z0-9]+", " ", text).strip()
    words = compact.split()
    memory = next((w for w in words if re.fullmatch(r"\d+gb", w)), None)
    pcie = "pcie" in words
    if "gh200" in words:
        return "gh200"
    if any(w.startswith("h200") for w in words):
        return "h200-nvl" if "nvl" in words else "h200"
    if any(w.startswith("h100") for w in words):
        if "nvl" in words:
            return "h100-nvl"
        return "h100-pcie" if pcie else "h100-sxm"
    for chip in ("a100", "v100"):
        if chip in words:
            parts = [chip] + (["pcie"] if pcie else []) + ([memory] if memory else [])
            return "-".join(parts)
    slug = "-".join(words)
    return slug or "unknown"


def canonical_mode(mode: str) -> str:
    return MODE_ALIASES.get(mode, mode)


def reference_for(gpu_key: str, mode: str, base_mode: Optional[str] = None) -> Optional[Row]:
    """The reference row for (gpu_key, mode), or None.

    ddp without its own row is judged per GPU against the single-GPU row of the config it
    replicated (``base_mode`` from the report): every GPU of a healthy host trains as fast
    as one GPU alone, within the tolerance.
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
        base = REFERENCES.get((key, canonical_mode(base_mode)))
        if base is not None:
            out = dict(base)
            out.update(
                {
                    "gpu_key": key,
                    "mode": "ddp",
                    "per_gpu": True,
                    "via_mode": base_mode,
                    "note": f"ddp judged per GPU against the single-GPU {base_mode} row "
                    f"({base['note']})",
                }
            )
            return out
    return None


def peak_tflops(gpu_key: str) -> Dict[str, float]:
    """{precision: dense TFLOP/s} for the GPU key, or {} when unknown."""
    row = PEAK_TFLOPS.get(gpu_key, {})
    return {k: float(v) for k, v in row.items() if k in ("fp32", "tf32", "bf16", "fp16")}


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
    return round(float(img_s) * FLOP_PER_IMAGE / (peak * 1e12), 4)


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
    """Judge one mode of the program's report: pass | fail | unknown | skipped."""
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
        "ratio": None,
        "status": "unknown",
        "source": ref["source"] if ref else None,
        "reference_note": ref["note"] if ref else None,
        "mfu": result.get("mfu"),
        "reason": None,
    }
    if per_gpu:
        entry["img_s_total"] = result.get("img_s")
        entry["world_size"] = result.get("world_size")
        entry["scaling_efficiency"] = result.get("scaling_efficiency")
    if entry["mfu"] is None and image_size == 224:
        entry["mfu"] = mfu(measured, gpu_key, precision)
    if status == "skipped":
        entry["status"] = "skipped"
        entry["reason"] = result.get("reason") or "skipped by the program"
        return entry
    if status != "ok" or not measured:
        entry["status"] = "fail"
        why = result.get("reason") or "no measurement"
        entry["reason"] = f"the program could not run {mode}: {why}"
        return entry
    if ref is None:
        entry["reason"] = f"no reference for {gpu_key} / {mode}: reported only"
        return entry
    if image_size != 224:
        entry["reason"] = f"image size {image_size}: the references are for 224x224; reported only"
        return entry
    ratio = float(measured) / float(ref["img_s"])
    entry["ratio"] = round(ratio, 4)
    # A tiny epsilon so that exactly tolerance x reference passes despite float rounding.
    if ratio >= tolerance - 1e-9:
        entry["status"] = "pass"
    else:
        entry["status"] = "fail"
        unit = " per GPU" if per_gpu else ""
        entry["reason"] = (
            f"{mode} {fmt_int(measured)} img/s{unit} is {ratio:.0%} of the reference "
            f"{fmt_int(ref['img_s'])} ({ref['source']}), below {tolerance:.0%}"
        )
    return entry


def judge_report(
    report: Mapping[str, Any],
    gpu_key: str,
    tolerance: float = DEFAULT_TOLERANCE,
) -> Dict[str, Any]:
    """Judge every mode of a program report against the reference table."""
    if not 0 < tolerance <= 1:
        raise ValueError(f"tolerance must be in (0, 1], got {tolerance!r}")
    config = report.get("config") or {}
    image_size = int(config.get("image_size") or 224)
    modes = report.get("modes") or {}
    judged: Dict[str, Dict[str, Any]] = {}
    for mode in sorted(modes, key=_mode_sort_key):
        judged[mode] = judge_mode(gpu_key, mode, modes[mode], tolerance, image_size)
    counts = {s: 0 for s in ("pass", "fail", "unknown", "skipped")}
    for entry in judged.values():
        counts[entry["status"]] += 1
    failed = [m for m, e in judged.items() if e["status"] == "fail"]
    seed = report.get("seed_ratio") or {}
    return {
        "gpu_key": gpu_key,
        "tolerance": tolerance,
        "modes": judged,
        "counts": counts,
        "failed_modes": failed,
        "best_mode": seed.get("best_mode"),
        "best_img_s": seed.get("best_img_s"),
        "seed_ratio": seed.get("ratio"),
        "verdict": "fail" if failed else ("pass" if counts["pass"] else "unknown"),
    }


def summary_line(judgement: Mapping[str, Any], gpu_name: Optional[str] = None) -> str:
    """One line: GPU, verdict and counts, best mode, seed ratio, slow modes."""
    counts = judgement["counts"]
    key = judgement["gpu_key"]
    parts = [
        f"{gpu_name} ({key})" if gpu_name else key,
        f"{judgement['verdict'].upper()}: {counts['pass']} pass, {counts['fail']} fail, "
        f"{counts['unknown']} unknown, {counts['skipped']} skipped",
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
        if entry.get("ratio") is not None:
            parts.append(f"SLOW {mode} {fmt_int(entry['img_s'])} vs {fmt_int(entry['reference'])}")
        else:
            parts.append(f"FAILED {mode}")
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


def failure_message(
    judgement: Mapping[str, Any],
    causes: Sequence[str],
    gpu_name: Optional[str] = None,
) -> str:
    """One actionable message naming each failing mode, measured vs reference, and causes."""
    parts = []
    for mode in judgement["failed_modes"]:
        entry = judgement["modes"][mode]
        if entry.get("ratio") is not None:
            unit = " per GPU" if entry.get("per_gpu") else ""
            parts.append(
                f"{mode} {fmt_int(entry['img_s'])} img/s{unit} vs reference "
                f"{fmt_int(entry['reference'])} ({entry['ratio']:.2f}, {entry['source']})"
            )
        else:
            parts.append(f"{mode} did not run: {entry.get('reason')}")
    message = (
        f"GPU throughput check failed on {gpu_name or 'this host'} ({judgement['gpu_key']}) at "
        f"tolerance {judgement['tolerance']:.2f}: {'; '.join(parts)}."
    )
    if causes:
        message += " Likely causes: " + " ".join(causes)
    return message
