"""Every quick mode of the 12 common cards has a reference, measured or derived (issue 32 B).

module_utils/gpu_throughput_ref.py answers (gpu, mode) with a measured row of the catalogue,
or derives one: the card's own reference in another mode times the mode ratio of cards of
its architecture, or its datasheet through the calibrated model. These tests hold the
lookup at 36 of 36, the derivations to their arithmetic and their 1.5x tolerance bound, and
every derivable measured row within 25% of what the others derive for it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from ansible.module_utils import gpu_throughput_ref as ref
from ansible.module_utils.vendor_catalogue import CATALOGUE

REPO_ROOT = Path(__file__).resolve().parents[2]

# The 12 cards by the names nvidia-smi prints, and the key each maps to.
CARDS = {
    "Tesla T4": "t4",
    "NVIDIA L4": "l4",
    "NVIDIA A10G": "a10g",
    "NVIDIA L40S": "l40s",
    "NVIDIA A100-SXM4-40GB": "a100-40gb",
    "NVIDIA A100-SXM4-80GB": "a100-80gb",
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H200": "h200",
    "NVIDIA B200": "b200",
    "NVIDIA GeForce RTX 4090": "rtx-4090",
    "NVIDIA GH200 480GB": "gh200",
}
QUICK = ("fp32", "amp_fp16", "amp_fp16_cl")
PAIRS = [(name, mode) for name in CARDS for mode in QUICK]


def test_the_catalogue_lists_the_twelve_cards_and_the_quick_modes() -> None:
    assert CATALOGUE["throughput_gpus"]["common_cards"] == list(CARDS)
    assert tuple(CATALOGUE["throughput_gpus"]["quick_modes"]) == QUICK
    assert {ref.gpu_model_key(name) for name in CARDS} == set(CARDS.values())


def test_the_lookup_answers_36_of_36() -> None:
    answered = [(n, m) for n, m in PAIRS if ref.reference_for(ref.gpu_model_key(n), m)]
    assert len(PAIRS) == 36 and answered == PAIRS


@pytest.mark.parametrize(("name", "mode"), PAIRS)
def test_each_answer_is_measured_or_a_stated_derivation(name: str, mode: str) -> None:
    key = ref.gpu_model_key(name)
    assert key == CARDS[name]
    answer = ref.reference_for(key, mode)
    assert answer is not None and answer["img_s"] > 0
    rows = ref.MEASURED.get((ref.REFERENCE_ALIASES.get(key, key), mode))
    if rows:
        # A measured row always wins, and it is the table's first row.
        assert answer["basis"] == "measured" and answer["img_s"] == rows[0]["img_s"]
        assert "tolerance_factor" not in answer
    else:
        assert answer["basis"] == "derived"
        derivation = answer["derivation"]
        assert derivation["text"] and derivation["error_bound"]
        assert derivation["kind"] in ("mode_ratio", "datasheet_mode_ratio", "datasheet", "sibling")
        # At most 1.5x wider: tolerance x factor, the factor never below 1 / 1.5.
        factor = answer["tolerance_factor"]
        assert 1.0 / ref.MAX_WIDENING <= factor <= 1.0
        assert ref.MAX_WIDENING == 1.5
    # judge_mode reports the kind, and the derivation of a derived reference.
    entry = ref.judge_mode(key, mode, {"status": "ok", "img_s": answer["img_s"]})
    assert entry["status"] == "pass" and entry["reference_basis"] == answer["basis"]
    if answer["basis"] == "derived":
        assert entry["reference_derivation"] == answer["note"] and entry["reference_error_bound"]
        assert entry["tolerance"] == round(ref.DEFAULT_TOLERANCE * answer["tolerance_factor"], 4)
        assert entry["tolerance"] >= ref.DEFAULT_TOLERANCE / 1.5 - 1e-9
    else:
        assert entry["reference_derivation"] is None
        assert entry["tolerance"] == ref.DEFAULT_TOLERANCE


def test_the_kind_of_each_card_and_mode() -> None:
    kinds = {}
    for name, mode in PAIRS:
        answer = ref.reference_for(ref.gpu_model_key(name), mode)
        kinds[(CARDS[name], mode)] = (answer.get("derivation") or {}).get("kind", "measured")
    # The project's own H100 and H200 rows measure every quick mode.
    for key in ("h100-sxm", "h200"):
        assert {kinds[(key, m)] for m in QUICK} == {"measured"}
    # No T4, L4 or L40S row: amp_fp16 from the datasheet, the others on top of it.
    for key in ("t4", "l4", "l40s"):
        assert kinds[(key, "amp_fp16")] == "datasheet"
        assert kinds[(key, "fp32")] == kinds[(key, "amp_fp16_cl")] == "datasheet_mode_ratio"
    assert {kinds[("a10g", m)] for m in QUICK} == {"sibling"}
    assert kinds[("gh200", "amp_fp16")] == "measured"
    assert kinds[("gh200", "fp32")] == kinds[("gh200", "amp_fp16_cl")] == "mode_ratio"
    assert sum(k == "measured" for k in kinds.values()) == 14


def test_architectures_come_from_the_catalogue() -> None:
    expected = {
        "t4": "Turing",
        "quadro-rtx-8000": "Turing",
        "v100-32gb": "Volta",
        "a10g": "Ampere",
        "rtx-a6000": "Ampere",
        "a100-80gb": "Ampere",
        "l4": "Ada",
        "rtx-4090": "Ada",
        "rtx-6000-ada": "Ada",
        "gh200": "Hopper",
        "h100-pcie": "Hopper",
        "b200": "Blackwell",
    }
    assert {key: ref.architecture(key) for key in expected} == expected
    assert ref.architecture("gtx-1080") is None


def test_a_mode_ratio_is_its_arithmetic_over_same_architecture_donors() -> None:
    answer = ref.reference_for("h100-pcie", "amp_fp16_cl")
    d = answer["derivation"]
    assert d["kind"] == "mode_ratio" and d["same_architecture"] and d["base_mode"] == "amp_fp16"
    assert d["base_img_s"] == 1851  # H100 PCIe's own measured amp_fp16 (Lambda)
    assert set(d["donors"]) == {"h100-sxm", "h200"}
    # Each donor's ratio from one harness: Kindling's program measures both modes on each.
    h100 = 5031.63 / 2794.57
    h200 = 6180 / 3096
    assert d["ratio"] == pytest.approx(math.sqrt(h100 * h200), abs=1e-4)
    assert answer["img_s"] == round(1851 * math.sqrt(h100 * h200))
    assert answer["tolerance_factor"] == ref.mode_ratio_factors()["amp_fp16_cl"]
    for donor in d["donors"]:
        assert ref.architecture(donor) == ref.architecture("h100-pcie") == "Hopper"


def test_without_a_same_architecture_donor_the_nearest_one_at_the_widest_tolerance() -> None:
    answer = ref.reference_for("rtx-4090", "amp_fp16_cl")
    d = answer["derivation"]
    assert not d["same_architecture"] and d["donor_architecture"] == "Ampere"
    assert ref.NEAREST_ARCHITECTURE["Ada"] == "Ampere"
    assert answer["tolerance_factor"] == ref.MIN_TOLERANCE_FACTOR == 0.67
    assert "unmeasured error" in d["error_bound"]


def test_a10g_is_judged_as_the_a10_at_the_widest_tolerance() -> None:
    for mode in QUICK:
        answer = ref.reference_for("a10g", mode)
        a10 = ref.reference_for("a10", mode)
        assert answer["img_s"] == a10["img_s"] and answer["derivation"]["sibling"] == "a10"
        assert answer["tolerance_factor"] == ref.MIN_TOLERANCE_FACTOR


def test_leave_one_out_holds_every_derivable_row_within_25_percent() -> None:
    rows = ref.leave_one_out(ref.mode_ratio_factors())
    assert ref.LEAVE_ONE_OUT_LIMIT == 0.25
    derived = {(r["gpu"], r["mode"]) for r in rows}
    # The rows that have a path without themselves, in each quick mode.
    for pair in [("h100-sxm", "fp32"), ("h200", "fp32"), ("h100-sxm", "amp_fp16_cl")]:
        assert pair in derived
    assert ("h200", "amp_fp16_cl") in derived and ("gh200", "amp_fp16") in derived
    assert len(rows) >= 15
    worst = max(rows, key=lambda r: abs(r["error"]))
    assert abs(worst["error"]) <= ref.LEAVE_ONE_OUT_LIMIT, worst
    for r in rows:
        assert r["error"] == pytest.approx(r["derived"] / r["measured"] - 1.0, abs=1e-3)


def test_the_ratio_tolerance_factor_is_the_worst_same_architecture_leave_one_out() -> None:
    factors = ref.mode_ratio_factors()
    rows = [r for r in ref.leave_one_out(factors) if r["same_architecture"]]
    for mode in QUICK:
        ratios = [1.0 / (1.0 + r["error"]) for r in rows if r["mode"] == mode]
        assert ratios, mode
        expected = max(ref.MIN_TOLERANCE_FACTOR, math.floor(min(min(ratios), 1.0) * 100) / 100)
        assert factors[mode] == expected


def test_a_derived_reference_is_judged_at_its_wider_tolerance() -> None:
    answer = ref.reference_for("gh200", "fp32")
    limit = round(ref.DEFAULT_TOLERANCE * answer["tolerance_factor"], 4)
    assert limit < ref.DEFAULT_TOLERANCE
    ok = ref.judge_mode("gh200", "fp32", {"status": "ok", "img_s": answer["img_s"] * limit + 0.5})
    slow = ref.judge_mode("gh200", "fp32", {"status": "ok", "img_s": answer["img_s"] * limit - 0.5})
    assert ok["status"] == "pass" and slow["status"] == "fail"
    assert "of the derived reference" in slow["reason"]


def test_the_h100_rows_are_the_raw_json_of_the_run() -> None:
    doc = json.loads((REPO_ROOT / "docs/gpu-runs/2026-12-05/h100-modes.json").read_text())
    assert doc["environment"]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert doc["config"]["profile"] == "quick"
    kindling = {
        mode: rows
        for (gpu, mode), rows in ref.MEASURED.items()
        if gpu == "h100-sxm"
        for rows in [[r for r in rows if r["citation"].startswith("Kindling H100")]]
        if rows
    }
    assert set(kindling) == set(doc["modes"])
    for mode, rows in kindling.items():
        assert rows[0]["img_s"] == doc["modes"][mode]["img_s"]
        assert rows[0]["batch"] == doc["modes"][mode]["batch_size"]
        assert ref.MEASURED[("h100-sxm", mode)][0] is rows[0]  # the project's own row first
    source = CATALOGUE["sources"]["kindling_h100_20261205"]
    env = doc["environment"]
    raw = "docs/gpu-runs/2026-12-05/h100-modes.json"
    for fact in (env["torch"], env["driver"], raw, "--profile quick", "docs/GPU_RUNS.md"):
        assert fact in source, fact


# Successor cards of one segment, (predecessor, successor): a successor is not slower in any
# quick mode. The only inversions allowed are those a measured row of the successor states,
# listed here with the reason; any other, or one of these whose successor row stops being
# measured, fails.
SUCCESSORS = [
    ("t4", "l4"),
    ("l4", "l40s"),
    ("a100-80gb", "h100-sxm"),
    ("h100-sxm", "h200"),
    ("h200", "b200"),
]
ALLOWED_INVERSIONS = {
    # Lambda's NCHW harness gives the B200 3,076 and the H200 3,079: the harness, not the
    # GPU, sets it (the row is `calibrates: false`); H200's reference is Kindling's 3,096.
    ("h200", "b200", "amp_fp16"),
}


def test_a_successor_is_not_slower_than_its_predecessor() -> None:
    inversions = set()
    for old, new in SUCCESSORS:
        for mode in QUICK:
            before, after = ref.reference_for(old, mode), ref.reference_for(new, mode)
            if after["img_s"] < before["img_s"]:
                inversions.add((old, new, mode))
    assert inversions == ALLOWED_INVERSIONS
    for _old, new, mode in ALLOWED_INVERSIONS:
        assert ref.reference_for(new, mode)["basis"] == "measured", (new, mode)


def test_the_donor_ratio_is_carried_through_the_datasheet_peaks() -> None:
    # The A100's fp32 is 1/8 of its tf32, an L4's 1/2 and an RTX 4090's 1/1: the A100's
    # measured fp32 / tf32 is not handed over as it is.
    a100 = 380 / 928  # seed FP32 / Lambda TF32, the A100 40GB's reference rows
    share = (1 / a100 - 1) / (156.0 / 19.5 - 1)
    l4 = ref.reference_for("l4", "fp32")
    assert l4["derivation"]["donors"] == ["a100-40gb"]
    expected = 1 / (1 + share * (60.0 / 30.3 - 1))
    assert l4["derivation"]["ratio"] == pytest.approx(expected, abs=1e-4)
    assert 0.8 < expected < 0.85 and "carried from peak ratio 8.00 to 1.98" in l4["note"]
    rtx = ref.reference_for("rtx-4090", "fp32")
    assert rtx["derivation"]["ratio"] == pytest.approx(1.0, abs=1e-4)
    assert rtx["img_s"] == ref.reference_for("rtx-4090", "tf32")["img_s"] == 721
    # The same precision (amp_fp16_cl / amp_fp16) or the same peak ratio keeps the ratio.
    ratio, how = ref.carried_ratio(1.5, "a100-80gb", "l4", "amp_fp16_cl", "amp_fp16")
    assert (ratio, how) == (1.5, None)
    ratio, how = ref.carried_ratio(0.5, "h200", "h100-sxm", "fp32", "tf32")
    assert (ratio, how) == (0.5, None)


def test_a_harness_floor_is_no_base() -> None:
    # The B200's Lambda rows are floors (calibrates: false): its fp32 and amp_fp16_cl
    # start from its datasheet model, not from them.
    for mode in ("fp32", "amp_fp16_cl"):
        d = ref.reference_for("b200", mode)["derivation"]
        assert d["kind"] == "datasheet_mode_ratio" and not d["same_architecture"]
        assert "a floor the harness set" in d["text"]
    assert ref.reference_for("b200", "amp_fp16")["basis"] == "measured"


def test_fp32_is_held_to_the_best_measured_mfu() -> None:
    cap, text = ref.mfu_cap("t4", "fp32", ref.MEASURED)
    best = max(
        row["img_s"] * ref.FLOP_PER_IMAGE / (ref.peak_tflops(gpu)["fp32"] * 1e12)
        for (gpu, mode), rows in ref.MEASURED.items()
        if mode == "fp32" and ref.peak_tflops(gpu).get("fp32")
        for row in rows
    )
    assert cap == pytest.approx(best * 8.1e12 / ref.FLOP_PER_IMAGE) and "v100-16gb" in text
    t4 = ref.reference_for("t4", "fp32")
    assert t4["img_s"] == round(cap) and t4["derivation"]["capped_from"] > cap
    # Not in the tensor modes, whose MFU spreads too far between cards.
    assert ref.MFU_CAP_MODES == ("fp32",) and ref.mfu_cap("t4", "amp_fp16_cl", ref.MEASURED) is None
