"""Floors for what one GPU can show (module_utils/gpu_floors.py): PCIe copies both ways and
the link under load, device memory bandwidth, dense matmul per precision.

Every probe document below is constructed (shaped like the program's ``probes``), not a
reading of a real host: the lead's H100 run gives the real figures (docs/GPU_RUNS.md).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Dict, Optional

import pytest
import yaml
from ansible.module_utils.gpu_floors import (
    ANCHORS,
    FLOOR_NAMES,
    FLOORS,
    PCIE_GENERATIONS,
    apply_to_judgement,
    datasheet,
    failure_reasons,
    judge_floors,
    link_gb_s,
)
from ansible.module_utils.gpu_throughput_ref import KNOWN_GPUS, gpu_model_key
from ansible.module_utils.vendor_catalogue import CATALOGUE

REPO_ROOT = Path(__file__).resolve().parents[2]
H100 = gpu_model_key("NVIDIA H100 80GB HBM3")


def link(gen: int = 5, width: int = 16, gen_max: int = 5, width_max: int = 16, gpu_max: int = 5):
    return {
        "gen": gen,
        "width": width,
        "gen_max": gen_max,
        "width_max": width_max,
        "gen_gpu_max": gpu_max,
        "source": "nvidia-smi",
    }


def report(
    h2d: float = 53.0,
    d2h: float = 54.0,
    membw: Optional[float] = 2900.0,
    matmul: Optional[Dict[str, float]] = None,
    link_under_load: Optional[Dict[str, Any]] = None,
    device: str = "cuda",
) -> Dict[str, Any]:
    """A constructed report of a healthy H100 SXM on a Gen5 x16 link (unless told)."""
    tflops = {"fp32": 50.0, "tf32": 380.0, "bf16": 700.0, "fp16": 710.0}
    tflops.update(matmul or {})
    probes: Dict[str, Any] = {
        "h2d": {
            "status": "ok",
            "reason": None,
            "gb_s": h2d,
            "d2h_gb_s": d2h,
            "gpu_index": 0,
            "link_under_load": link() if link_under_load is None else link_under_load,
        },
        "matmul": {
            "status": "ok",
            "results": {k: {"status": "ok", "tflop_s": v} for k, v in tflops.items()},
        },
    }
    if membw is not None:
        probes["membw"] = {"status": "ok", "reason": None, "gb_s": membw}
    return {"config": {"device": device}, "probes": probes}


def by_name(judged: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {entry["name"]: entry for entry in judged["floors"]}


# ----------------------------------------------------------------------------- the data


def test_pcie_rates_per_generation() -> None:
    # 8b/10b to Gen2, 128b/130b Gen3 to Gen5, Flit (no encoding) Gen6 (linux_pcie_speed2mbs).
    assert link_gb_s(1, 16) == pytest.approx(2.5 * 0.8 * 2)
    assert link_gb_s(3, 16) == pytest.approx(8 * 128 / 130 * 2)
    assert link_gb_s(4, 16) == pytest.approx(31.51, abs=0.01)
    assert link_gb_s(5, 16) == pytest.approx(63.02, abs=0.01)
    assert link_gb_s(5, 8) == pytest.approx(link_gb_s(5, 16) / 2)
    assert link_gb_s(6, 16) == pytest.approx(128.0)
    assert link_gb_s(7, 16) is None and link_gb_s(5, None) is None and link_gb_s(None, 16) is None
    assert sorted(PCIE_GENERATIONS) == [1, 2, 3, 4, 5, 6]


def test_every_floor_has_levels_and_a_source() -> None:
    assert FLOOR_NAMES == (
        "pcie_link",
        "h2d",
        "d2h",
        "membw",
        "matmul_fp32",
        "matmul_tf32",
        "matmul_bf16",
        "matmul_fp16",
    )
    for name, spec in FLOORS.items():
        assert spec["source"] and "[no source found]" not in spec["source"], name
        assert spec["warn"] is not None, name
        if isinstance(spec["fail"], float):
            # NHC's warning band: warn at 1.05 x the fail floor.
            assert spec["warn"] == pytest.approx(spec["fail"] * 1.05), name
    # The floors: at least 75% of the link and of the datasheet's bandwidth.
    assert FLOORS["h2d"]["fail"] >= 0.75 and FLOORS["d2h"]["fail"] >= 0.75
    assert FLOORS["membw"]["fail"] == 0.75
    # Matmul is warn-only.
    assert all(FLOORS[n]["fail"] is None for n in FLOOR_NAMES if n.startswith("matmul_"))


def test_anchors_name_known_cards_with_sources() -> None:
    for key, row in ANCHORS.items():
        assert key in KNOWN_GPUS, key
        assert row["source"]
        assert row.get("nhc_h2d_d2h_gbs") or row.get("dcgm_membw_gbs"), key
    # DCGM's H100 SXM floor (0.75 x the 2540 GB/s it measured) and NHC's Gen5 floor.
    assert ANCHORS["h100-sxm"]["dcgm_membw_gbs"] == 1905.0
    assert ANCHORS["h100-sxm"]["nhc_h2d_d2h_gbs"] == 48


def test_waiver_choices_match_the_floors() -> None:
    from pathlib import Path

    specs = yaml.safe_load(
        (
            Path(__file__).resolve().parents[2] / "roles/gpu_check/meta/argument_specs.yml"
        ).read_text()
    )
    option = specs["argument_specs"]["main"]["options"]["gpu_check_floor_waivers"]
    assert option["choices"] == list(FLOOR_NAMES)
    assert option["default"] == []


# ----------------------------------------------------------------------------- judging


def test_healthy_gen5_x16_h100_passes_every_floor() -> None:
    judged = judge_floors(report(), H100)
    floors = by_name(judged)
    assert judged["verdict"] == "pass" and judged["failed"] == [] and judged["warned"] == []
    assert judged["counts"]["pass"] == len(FLOOR_NAMES)
    h2d = floors["h2d"]
    assert h2d["floor"]["fail"] == pytest.approx(0.75 * 63.02, abs=0.01)
    assert h2d["floor"]["warn"] == pytest.approx(0.7875 * 63.02, abs=0.01)
    assert h2d["basis"].startswith("Gen5 x16 under load")
    assert h2d["anchor"]["fail_below"] == 48 and "NHC" in h2d["anchor"]["tool"]
    membw = floors["membw"]
    assert membw["floor"]["fail"] == pytest.approx(0.75 * 3350)
    assert membw["anchor"]["fail_below"] == 1905.0
    assert floors["pcie_link"]["measured"] == "Gen5 x16"
    assert floors["matmul_bf16"]["floor"] == {"warn": pytest.approx(989.5 / 2), "fail": None}
    for entry in judged["floors"]:
        assert set(entry) >= {
            "name",
            "measured",
            "floor",
            "status",
            "reason",
            "source",
            "unit",
            "basis",
        }


def test_gen4_link_under_load_on_a_gen5_card_and_slot_fails_naming_both() -> None:
    # A Gen5 slot and card, a link that trained to Gen4: the link fails; the copies are
    # held to the Gen4 link they ran on, and pass there.
    judged = judge_floors(report(h2d=25.5, d2h=26.0, link_under_load=link(gen=4)), H100)
    floors = by_name(judged)
    assert floors["pcie_link"]["status"] == "fail"
    assert "Gen4 x16 under load" in floors["pcie_link"]["reason"]
    assert "Gen5 x16" in floors["pcie_link"]["reason"]
    assert floors["h2d"]["status"] == "pass" and floors["d2h"]["status"] == "pass"
    assert floors["h2d"]["floor"]["fail"] == pytest.approx(0.75 * 31.51, abs=0.01)
    assert judged["verdict"] == "fail" and judged["failed"] == ["pcie_link"]
    assert "FAIL pcie_link Gen4 x16" in judged["line"]


def test_gen4_slot_under_a_gen5_card_warns() -> None:
    # The slot supports Gen4 only (pcie.link.gen.max 4): the card runs below its own
    # generation, which is a warning, not a fault of this GPU.
    judged = judge_floors(report(h2d=25.5, d2h=26.0, link_under_load=link(gen=4, gen_max=4)), H100)
    floors = by_name(judged)
    assert floors["pcie_link"]["status"] == "warn"
    assert "card supports Gen5" in floors["pcie_link"]["reason"]
    assert judged["verdict"] == "warn" and judged["failed"] == []


def test_x8_link_fails_the_link_and_slow_copies_fail_their_floor() -> None:
    judged = judge_floors(report(h2d=20.0, d2h=29.0, link_under_load=link(width=8)), H100)
    floors = by_name(judged)
    assert floors["pcie_link"]["status"] == "fail" and "x8" in floors["pcie_link"]["reason"]
    # On a Gen5 x8 link (31.5 GB/s), 20 GB/s is below 75% (23.6), 29 passes.
    assert floors["h2d"]["status"] == "fail"
    assert floors["h2d"]["floor"]["fail"] == pytest.approx(0.75 * 31.51, abs=0.01)
    assert floors["d2h"]["status"] == "pass"
    assert judged["failed"] == ["pcie_link", "h2d"]
    reasons = failure_reasons(judged)
    assert any("pinned host-to-device copies: 20.0 GB/s" in r for r in reasons)


def test_copies_between_the_fail_and_the_warn_floor_warn() -> None:
    # Gen5 x16: fail below 47.26 GB/s, warn below 49.63.
    judged = judge_floors(report(h2d=48.5), H100)
    assert by_name(judged)["h2d"]["status"] == "warn"
    assert judged["verdict"] == "warn" and judged["warned"] == ["h2d"]
    assert by_name(judge_floors(report(h2d=47.0), H100))["h2d"]["status"] == "fail"


def test_slow_memory_bandwidth_fails() -> None:
    judged = judge_floors(report(membw=2100.0), H100)
    membw = by_name(judged)["membw"]
    assert membw["status"] == "fail" and judged["failed"] == ["membw"]
    assert "2,100 GB/s" in membw["reason"] and "2,512.5 GB/s" in membw["reason"]
    assert membw["datasheet"] == 3350 and "H100" in membw["datasheet_source"]
    assert by_name(judge_floors(report(membw=2600.0), H100))["membw"]["status"] == "warn"


def test_slow_matmul_only_warns() -> None:
    judged = judge_floors(report(matmul={"bf16": 100.0}), H100)
    assert by_name(judged)["matmul_bf16"]["status"] == "warn"
    assert judged["verdict"] == "warn" and judged["failed"] == []


def test_missing_datasheet_is_not_run_with_the_reason() -> None:
    key = gpu_model_key("NVIDIA Imaginary X1")
    assert datasheet(key) == {}
    judged = judge_floors(report(), key)
    floors = by_name(judged)
    assert floors["membw"]["status"] == "not_run"
    assert "no datasheet memory bandwidth" in floors["membw"]["reason"]
    assert floors["membw"]["measured"] == 2900.0
    assert floors["matmul_fp16"]["status"] == "not_run"
    assert "no datasheet fp16 TFLOP/s" in floors["matmul_fp16"]["reason"]
    # The link floors need no datasheet.
    assert floors["h2d"]["status"] == "pass" and floors["pcie_link"]["status"] == "pass"


def test_missing_probe_and_cpu_are_not_run() -> None:
    judged = judge_floors(report(membw=None), H100)
    assert by_name(judged)["membw"]["status"] == "not_run"
    assert by_name(judged)["membw"]["reason"] == "the membw probe was not in this run"
    skipped = report()
    skipped["probes"]["h2d"] = {"status": "skipped", "reason": "budget used up"}
    floors = by_name(judge_floors(skipped, H100))
    assert floors["h2d"]["status"] == "not_run" and "budget used up" in floors["h2d"]["reason"]
    assert floors["pcie_link"]["status"] == "not_run"
    cpu = judge_floors(report(device="cpu"), "cpu")
    assert cpu["verdict"] == "not_run" and cpu["counts"]["not_run"] == len(FLOOR_NAMES)


def test_link_not_read_under_load_falls_back_to_the_facts_maximum() -> None:
    doc = report(h2d=53.0, link_under_load={"reason": "nvidia-smi is not on PATH"})
    facts = {"gpus": [{"index": 0, "pcie_gen_max": 5, "pcie_width_max": 16}]}
    floors = by_name(judge_floors(doc, H100, facts))
    assert floors["pcie_link"]["status"] == "not_run"
    assert "nvidia-smi is not on PATH" in floors["pcie_link"]["reason"]
    assert floors["h2d"]["status"] == "pass"
    assert "not read under load" in floors["h2d"]["basis"]
    # Without facts either, the copies are measured but not judged.
    bare = by_name(judge_floors(doc, H100))
    assert bare["h2d"]["status"] == "not_run" and bare["h2d"]["measured"] == 53.0


def test_waived_floor_is_reported_never_failed() -> None:
    doc = report(membw=2100.0, link_under_load=link(width=8), h2d=30.0, d2h=30.0)
    judged = judge_floors(doc, H100, waivers=["membw", "pcie_link"])
    floors = by_name(judged)
    assert floors["membw"]["status"] == "waived" and floors["membw"]["waived_status"] == "fail"
    assert floors["membw"]["reason"].startswith(
        "gpu_check_floor_waivers waives this floor; it would be fail: device memory bandwidth"
    )
    assert floors["pcie_link"]["status"] == "waived"
    assert judged["failed"] == [] and judged["verdict"] == "pass"
    assert judged["counts"]["waived"] == 2
    # A waiver of a passing floor is reported too.
    assert by_name(judge_floors(report(), H100, waivers=["h2d"]))["h2d"]["waived_status"] == "pass"
    with pytest.raises(ValueError, match="unknown floor"):
        judge_floors(report(), H100, waivers=["nvlink"])


def test_a_failed_floor_fails_the_host_verdict() -> None:
    judgement = {"verdict": "pass"}
    apply_to_judgement(judgement, judge_floors(report(membw=1000.0), H100))
    assert judgement["verdict"] == "fail" and judgement["failed_floors"] == ["membw"]
    kept = {"verdict": "pass"}
    apply_to_judgement(kept, judge_floors(report(matmul={"fp16": 1.0}), H100))
    assert kept["verdict"] == "pass" and kept["failed_floors"] == []


def test_judging_does_not_change_the_report() -> None:
    doc = report()
    before = copy.deepcopy(doc)
    judge_floors(doc, H100, {"gpus": [{"index": 0, "pcie_gen_max": 5}]})
    assert doc == before


def test_catalogue_section_cites_dcgm_and_nhc() -> None:
    sources = CATALOGUE["throughput_floors"]
    assert "Multiply by .75" in FLOORS["membw"]["source"]
    assert "check_gpu_bw 48 335" in FLOORS["h2d"]["source"]
    assert "128/130" in sources["pcie_generations"]["source"]


# ----------------------------------------------------------------------------- the reports


def test_gpu_check_json_carries_the_floors() -> None:
    tasks = yaml.safe_load((REPO_ROOT / "roles/gpu_check/tasks/report.yml").read_text())
    write = next(t for t in tasks[0]["block"] if t["name"] == "Write the JSON report")
    fields = write["vars"]["gpu_check__report"]
    assert fields["floors"] == "{{ gpu_check__result.floors | default([]) }}"
    assert fields["floors_summary"] == "{{ gpu_check__result.floors_line | default('') }}"
    measure = yaml.safe_load((REPO_ROOT / "roles/gpu_check/tasks/measure.yml").read_text())
    start = next(t for t in measure if "gpu_throughput_measure" in t)
    assert start["gpu_throughput_measure"]["floor_waivers"] == "{{ gpu_check_floor_waivers }}"


# ----------------------------------------------------------------------------- the module


def module_doc(tmp_path: Path, **probes: Any) -> Path:
    """The FAKE program's constructed H200 document, every mode passing, with these probes."""
    from test_gpu_throughput_module import SLOW_DOC

    doc = json.loads(SLOW_DOC.read_text())
    doc["modes"]["amp_fp16_cl"]["img_s"] = 6180.0  # at its reference: the modes pass
    doc["probes"]["h2d"].update(gpu_index=0, link_under_load=link())
    doc["probes"].update(probes)
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    return path


def test_the_module_fails_a_host_below_a_floor_and_a_waiver_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from test_gpu_throughput_module import call_module_in_process, fake_args

    slow = module_doc(tmp_path, membw={"status": "ok", "reason": None, "gb_s": 2000.0})
    args = fake_args()
    args["extra_args"] = ["--fake-doc", str(slow)]
    result = call_module_in_process(monkeypatch, capsys, args)
    floors = {f["name"]: f for f in result["floors"]}
    assert [f["name"] for f in result["floors"]] == list(FLOOR_NAMES)
    # H200: 4,800 GB/s on its datasheet, fail below 3,600.
    assert floors["membw"]["status"] == "fail" and floors["membw"]["floor"]["fail"] == 3600.0
    assert floors["h2d"]["status"] == "pass" and floors["pcie_link"]["status"] == "pass"
    assert floors["matmul_bf16"]["status"] == "not_run"
    assert floors["matmul_bf16"]["reason"] == "the matmul probe was not in this run"
    assert result["verdict"] == "fail" and result["failed_modes"] == []
    assert "FAIL membw 2,000 < 3,600 GB/s" in result["summary"]
    assert result["failed"]
    assert (
        "Below its floors: device memory bandwidth (copy, read + write): 2,000 GB/s"
        in (result["msg"])
    )
    args["floor_waivers"] = ["membw"]
    waived = call_module_in_process(monkeypatch, capsys, args)
    assert waived["verdict"] == "pass", waived.get("msg")
    assert {f["name"]: f for f in waived["floors"]}["membw"]["status"] == "waived"
    args["floor_waivers"] = ["nvlink"]
    refused = call_module_in_process(monkeypatch, capsys, args)
    assert refused["failed"] and "floor_waivers" in refused["msg"]


# ----------------------------------------------------------------------------- every GPU


def eight_gpu_report(
    slow_link: int = 5, slow_hbm: int = 3, gpus: Any = range(8), **changes: Any
) -> Dict[str, Any]:
    """A CONSTRUCTED 8 x H100 SXM report, probes on every GPU (``probes.<name>.gpus``, as
    the program writes them): GPU ``slow_link``'s link trained to x8 (its copies still
    pass on the x8 link), GPU ``slow_hbm``'s memory bandwidth is 2,100 GB/s."""
    per: Dict[str, list] = {"h2d": [], "membw": [], "matmul": []}
    for index in gpus:
        one = report(
            link_under_load=link(width=8) if index == slow_link else None,
            h2d=26.0 if index == slow_link else 53.0,
            d2h=27.0 if index == slow_link else 54.0,
            membw=2100.0 if index == slow_hbm else 2900.0,
            **changes.get(index, {}),
        )["probes"]
        for name in per:
            per[name].append(dict(one[name], gpu_index=index))
    probes = {name: dict(runs[0], gpus=runs) for name, runs in per.items()}
    return {"config": {"device": "cuda"}, "probes": probes}


def test_every_gpu_is_judged_and_the_failing_gpus_are_named() -> None:
    judged = judge_floors(eight_gpu_report(), H100)
    rows = judged["floors"]
    assert len(rows) == 8 * len(FLOOR_NAMES) and judged["gpus"] == list(range(8))
    assert [r["gpu"] for r in rows[:: len(FLOOR_NAMES)]] == list(range(8))  # GPU by GPU
    failing = {(r["gpu"], r["name"]) for r in rows if r["status"] == "fail"}
    assert failing == {(5, "pcie_link"), (3, "membw")}
    assert judged["verdict"] == "fail" and judged["failed"] == ["pcie_link", "membw"]
    assert judged["failed_gpus"] == [3, 5]
    assert judged["counts"]["pass"] == 8 * len(FLOOR_NAMES) - 2
    # GPU 5's copies are held to the x8 link it ran on (31.5 GB/s), and pass there.
    gpu5 = {r["name"]: r for r in rows if r["gpu"] == 5}
    assert gpu5["h2d"]["status"] == "pass" and gpu5["h2d"]["basis"].startswith("Gen5 x8")
    line = judged["line"]
    assert line.startswith("Floors on 8 GPUs: 62 pass, 0 warn, 2 fail, 0 not_run, 0 waived")
    assert "FAIL GPU 5 pcie_link Gen5 x8 (floor Gen5 x16)" in line
    assert "FAIL GPU 3 membw 2,100 < 2,512.5 GB/s" in line
    reasons = failure_reasons(judged)
    assert reasons[0].startswith("GPU 3: device memory bandwidth (copy, read + write): 2,100")
    assert reasons[1].startswith("GPU 5: the PCIe link ran Gen5 x8 under load")
    judgement = apply_to_judgement({"verdict": "pass"}, judged)
    assert judgement["failed_floors"] == ["pcie_link", "membw"]
    assert judgement["failed_floor_gpus"] == [3, 5]


def test_each_gpu_is_held_to_its_own_facts_and_a_floor_failing_on_several_is_one_entry() -> None:
    # The link not read under load on any GPU: each GPU's copies fall back to its own
    # maximum in the facts (GPU 2's slot is x8), and a matmul warning on two GPUs is
    # one line entry naming both and the lowest.
    doc = eight_gpu_report(slow_link=-1, slow_hbm=-1, gpus=range(4))
    for run in doc["probes"]["h2d"]["gpus"]:
        run["link_under_load"] = {"reason": "nvidia-smi is not on PATH"}
    for index, tflops in ((1, 300.0), (2, 200.0)):
        doc["probes"]["matmul"]["gpus"][index]["results"]["bf16"]["tflop_s"] = tflops
    facts = {
        "gpus": [
            {"index": i, "pcie_gen_max": 5, "pcie_width_max": 8 if i == 2 else 16} for i in range(4)
        ]
    }
    judged = judge_floors(doc, H100, facts)
    h2d = {r["gpu"]: r for r in judged["floors"] if r["name"] == "h2d"}
    assert "Gen5 x8 the link's maximum" in h2d[2]["basis"]
    assert "Gen5 x16 the link's maximum" in h2d[0]["basis"]
    assert judged["warned"] == ["matmul_bf16"] and judged["warned_gpus"] == [1, 2]
    assert "WARN matmul_bf16 on GPU 1, 2: lowest GPU 2 200 < 494.8 TFLOP/s" in judged["line"]


def test_older_and_one_gpu_reports_read_as_before() -> None:
    # A report without ``gpus`` (older programs, GPU 0 only) and a one-GPU report of the
    # new program judge the same, and name no GPU in the line.
    old = judge_floors(report(membw=2100.0), H100)
    new = judge_floors(eight_gpu_report(slow_link=-1, slow_hbm=0, gpus=[0]), H100)
    assert old["line"] == new["line"]
    assert old["line"].endswith("FAIL membw 2,100 < 2,512.5 GB/s")
    assert {r["gpu"] for r in old["floors"]} == {0} and old["gpus"] == [0]
    assert failure_reasons(old)[0].startswith("device memory bandwidth")
    # GPU 0 left out as busy: the one GPU probed is named.
    busy = judge_floors(eight_gpu_report(slow_link=-1, slow_hbm=1, gpus=[1]), H100)
    assert busy["gpus"] == [1] and "FAIL GPU 1 membw" in busy["line"]


def test_a_probe_skipped_on_one_gpu_is_not_run_there_only() -> None:
    doc = eight_gpu_report(slow_link=-1, slow_hbm=-1, gpus=range(2))
    doc["probes"]["membw"]["gpus"][1] = {
        "status": "skipped",
        "reason": "the --max-seconds budget of 85 s was used up (86 s elapsed)",
        "gpu_index": 1,
    }
    rows = {(r["gpu"], r["name"]): r for r in judge_floors(doc, H100)["floors"]}
    assert rows[(0, "membw")]["status"] == "pass"
    assert rows[(1, "membw")]["status"] == "not_run"
    assert "budget of 85 s was used up" in rows[(1, "membw")]["reason"]


def test_the_module_names_the_gpus_below_their_floors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from test_gpu_throughput_module import call_module_in_process, fake_args

    path = module_doc(tmp_path)
    doc = json.loads(path.read_text())
    # An H200 host's probes on eight GPUs (CONSTRUCTED): GPU 5 on an x8 link, GPU 3's
    # memory at 3,000 GB/s (the H200's fail floor is 3,600).
    eight = eight_gpu_report(slow_link=5, slow_hbm=-1)
    eight["probes"]["membw"]["gpus"][3]["gb_s"] = 3000.0
    for run in eight["probes"]["membw"]["gpus"]:
        run["gb_s"] = run["gb_s"] if run["gpu_index"] == 3 else 4300.0
    doc["probes"] = eight["probes"]
    path.write_text(json.dumps(doc))
    args = fake_args()
    args["extra_args"] = ["--fake-doc", str(path)]
    result = call_module_in_process(monkeypatch, capsys, args)
    assert result["verdict"] == "fail" and result["failed"]
    failing = [(f["gpu"], f["name"]) for f in result["floors"] if f["status"] == "fail"]
    assert failing == [(3, "membw"), (5, "pcie_link")]
    assert "FAIL GPU 5 pcie_link Gen5 x8 (floor Gen5 x16)" in result["summary"]
    assert "FAIL GPU 3 membw 3,000 < 3,600 GB/s" in result["summary"]
    assert "Below its floors: GPU 3: device memory bandwidth" in result["msg"]
    assert "; GPU 5: the PCIe link ran Gen5 x8 under load" in result["msg"]
    assert result["probes_judged"]["h2d"]["status"] == "pass"


def test_a_probe_that_failed_on_one_gpu_fails_naming_it() -> None:
    from ansible.module_utils.gpu_throughput_ref import judge_probes

    doc = eight_gpu_report(slow_link=-1, slow_hbm=-1, gpus=range(3))
    doc["probes"]["membw"]["gpus"][2] = {
        "status": "failed",
        "reason": "CUDA out of memory",
        "gpu_index": 2,
    }
    doc["probes"]["h2d"]["gpus"][1] = {"status": "skipped", "reason": "budget", "gpu_index": 1}
    judged = judge_probes(doc["probes"])
    assert judged["membw"] == {
        "status": "fail",
        "reason": "the membw probe failed on GPU 2: CUDA out of memory",
    }
    assert judged["h2d"] == {"status": "pass", "reason": "skipped on GPU 1: budget"}
    assert judged["matmul"] == {"status": "pass", "reason": None}
    # An older report (no gpus) judges as before.
    assert judge_probes(report()["probes"])["h2d"] == {"status": "pass", "reason": None}


def test_the_slow_copies_cause_names_the_slowest_gpu() -> None:
    from ansible.module_utils.gpu_throughput_ref import diagnose_causes

    doc = eight_gpu_report(slow_link=-1, slow_hbm=-1, gpus=range(4))
    doc["probes"]["h2d"]["gpus"][2]["gb_s"] = 6.2
    rows = [r for r in diagnose_causes(["fp32"], None, None, doc) if r["code"] == "h2d-slow"]
    assert len(rows) == 1 and rows[0]["gpu"] == 2
    assert rows[0]["message"].startswith("GPU 2: pinned host-to-device copies reach only 6.2")
