"""Reference table, judging and diagnosis of module_utils/gpu_throughput_ref.py."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, Dict

import pytest
from ansible.module_utils.gpu_throughput_ref import (
    DATASHEETS,
    DEFAULT_TOLERANCE,
    FLOP_PER_IMAGE,
    HARNESSES,
    KNOWN_GPUS,
    MODE_ORDER,
    PEAK_TFLOPS,
    REFERENCES,
    SOURCE_KINDLING,
    SOURCE_SEED,
    clock_event_reasons,
    derived_model,
    derived_reference,
    diagnose,
    diagnose_causes,
    failure_message,
    gpu_model_key,
    judge_mode,
    judge_report,
    mfu,
    peak_tflops_arg,
    reference_for,
    summary_line,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
SLOW_DOC = REPO_ROOT / "tests" / "fixtures" / "throughput" / "h200_slow.json"

# Values of the real H200 capture (tests/fixtures/captures/h200/nvidia-smi-q.xml and
# query-full.csv), shaped like ansible_facts.nvidia_smi.gpus[]: a healthy GPU at idle.
H200_GPU: Dict[str, Any] = {
    "index": 0,
    "name": "NVIDIA H200",
    "uuid": "GPU-5c946a6f-2d05-2890-2c42-69566d27687f",
    "pci_bus_id": "00000000:00:06.0",
    "compute_capability": "9.0",
    "memory_total_mib": 143771,
    "memory_used_mib": 0,
    "pcie_gen_current": 5,
    "pcie_gen_max": 5,
    "pcie_width_current": 16,
    "pcie_width_max": 16,
    "clock_event_reasons_active": ["gpu_idle"],
    "mig_mode": False,
    "power_limit_w": 700.0,
    "temperature_c": 37,
}
H200_FACTS = {"present": True, "driver_version": "580.159.04", "gpu_count": 1, "gpus": [H200_GPU]}
# From tests/fixtures/captures/h200/torch-facts.json, shaped like ansible_facts.torch_cuda.
H200_TORCH = {
    "importable": True,
    "torch_version": "2.11.0+cu130",
    "built_cuda_version": "13.0",
    "cuda_available": True,
    "arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
    "verdict": {"ok": True, "checks": [{"name": "arch_covered", "ok": True, "message": "ok"}]},
}

ALLOWED_SOURCES = tuple(HARNESSES.values())


def facts_with(**changes: Any) -> Dict[str, Any]:
    gpu = dict(H200_GPU, **changes)
    return dict(H200_FACTS, gpus=[gpu])


def report_with(modes: Dict[str, Dict[str, Any]], **extra: Any) -> Dict[str, Any]:
    base = {"status": "ok", "reason": None, "batch_size": 256, "mfu": None}
    doc: Dict[str, Any] = {
        "schema_version": 1,
        "config": {"image_size": 224},
        "modes": {m: dict(base, **r) for m, r in modes.items()},
        "seed_ratio": {},
    }
    doc.update(extra)
    return doc


# ----------------------------------------------------------------------------- the table


@pytest.mark.parametrize(
    "name, key",
    [
        ("NVIDIA H200", "h200"),
        ("NVIDIA H200 NVL", "h200-nvl"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
        ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("Tesla V100-SXM2-16GB", "v100-16gb"),
        ("Tesla V100-SXM2-32GB", "v100-32gb"),
        ("Tesla V100-PCIE-16GB", "v100-pcie-16gb"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 NVL", "h100-nvl"),
        ("NVIDIA GH200 480GB", "gh200"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 3090", "rtx-3090"),
        ("NVIDIA RTX A6000", "rtx-a6000"),
        ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
        ("Tesla T4", "t4"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA A10", "a10"),
        ("NVIDIA A10G", "a10g"),
        ("NVIDIA B200", "b200"),
        ("NVIDIA GeForce GTX 1080", "gtx-1080"),
        ("cpu", "cpu"),
        ("", "unknown"),
        (None, "unknown"),
    ],
)
def test_gpu_model_key(name: Any, key: str) -> None:
    assert gpu_model_key(name) == key


def test_every_row_names_an_allowed_source() -> None:
    for (gpu, mode), row in REFERENCES.items():
        assert mode in MODE_ORDER, (gpu, mode)
        assert row["img_s"] > 0 and row["batch"] > 0 and row["note"]
        assert row["source"] in ALLOWED_SOURCES, (gpu, mode, row["source"])
        assert len(row["citation"]) > 20 and row["basis"] == "measured"
        assert gpu in KNOWN_GPUS, gpu
        for alt in row.get("alternatives", []):
            assert alt["source"] in ALLOWED_SOURCES


def test_the_seed_rows_and_the_h200_measurements_are_in_the_table() -> None:
    assert REFERENCES[("a100-40gb", "fp32")]["img_s"] == 380
    assert REFERENCES[("a100-40gb", "fp32")]["batch"] == 256
    assert REFERENCES[("a100-40gb", "fp32")]["source"] == "seed 001 section 7"
    ddp = REFERENCES[("a100-40gb", "ddp")]
    assert ddp["total_img_s"] == 2800 and ddp["world_size"] == 4 and ddp["img_s"] == 700
    alt = REFERENCES[("a100-40gb", "amp_fp16")]["alternatives"]
    assert {
        "img_s": 720.0,
        "batch": 512,
        "source": SOURCE_SEED,
        "note": "the seed's AMP row",
    } in alt
    h200 = {m: REFERENCES[("h200", m)]["img_s"] for m in MODE_ORDER if ("h200", m) in REFERENCES}
    assert h200 == {
        "fp32": 1064,
        "tf32": 2216,
        "amp_fp16": 3096,
        "amp_bf16": 2452,
        "amp_fp16_cl": 6180,
        "amp_bf16_cl": 4703,
        "compile": 7948,  # batch 512 from 2026-12-02 (7,557 at 384 is its alternative)
    }
    assert all(REFERENCES[("h200", m)]["source"] == SOURCE_KINDLING for m in h200)
    assert all("2026-11-29" in REFERENCES[("h200", m)]["citation"] for m in h200 if m != "compile")
    assert "2026-12-02" in REFERENCES[("h200", "compile")]["citation"]
    assert REFERENCES[("h200", "compile")]["batch"] == 512


def test_peak_tflops_and_mfu() -> None:
    for key, row in PEAK_TFLOPS.items():
        assert len(row["source"]) > 20, key
        assert row["fp32"] > 0 and row.get("fp16", row["fp32"] + 1) > row["fp32"], key
    assert peak_tflops_arg("h200") == "bf16=989.5,fp16=989.5,fp32=67,tf32=494.5"
    # The A10G's tensor rates are unpublished: its datasheet row has FP32 only.
    assert peak_tflops_arg("a10g") == "fp32=31.52"
    assert peak_tflops_arg("quadro-rtx-8000") is None  # no datasheet row
    assert peak_tflops_arg("gtx-1080") is None
    assert mfu(6180, "h200", "fp16") == pytest.approx(6180 * FLOP_PER_IMAGE / 989.5e12, abs=1e-4)
    assert mfu(1064, "h200", "fp32") == pytest.approx(1064 * FLOP_PER_IMAGE / 67e12, abs=1e-4)
    assert mfu(1000, "v100-16gb", "bf16") is None  # no bf16 on V100
    assert mfu(None, "h200", "fp16") is None


def test_ddp_uses_its_own_row_or_the_single_gpu_row_of_its_config() -> None:
    seed = reference_for("a100-40gb", "ddp", "amp_fp16_cl")
    assert seed is not None and seed["img_s"] == 700 and seed["per_gpu"]
    via = reference_for("h200", "ddp", "amp_fp16_cl")
    assert via is not None and via["img_s"] == 6180 and via["via_mode"] == "amp_fp16_cl"
    assert reference_for("h200", "ddp", None) is None
    assert reference_for("v100-32gb", "amp_fp16_cl")["img_s"] == 1200  # alias of v100-16gb
    assert reference_for("h200", "seed_recipe")["img_s"] == 3096


# ----------------------------------------------------------------------------- judging


@pytest.mark.parametrize(
    "measured, status",
    [
        (6180 * 0.8, "pass"),  # exactly at the tolerance
        (6180 * 0.8 + 0.01, "pass"),
        (6180 * 0.8 - 0.01, "fail"),
        (6180 * 1.3, "pass"),
        (100.0, "fail"),
    ],
)
def test_tolerance_boundary(measured: float, status: str) -> None:
    entry = judge_mode("h200", "amp_fp16_cl", {"status": "ok", "img_s": measured})
    assert entry["status"] == status
    assert entry["ratio"] == pytest.approx(measured / 6180, abs=1e-4)
    assert entry["reference"] == 6180 and entry["source"] == SOURCE_KINDLING
    assert entry["reference_basis"] == "measured" and entry["tolerance"] == 0.8


def test_custom_tolerance_and_ratio_math() -> None:
    entry = judge_mode("a100-40gb", "fp32", {"status": "ok", "img_s": 342.0}, tolerance=0.9)
    assert entry["ratio"] == 0.9 and entry["status"] == "pass"
    entry = judge_mode("a100-40gb", "fp32", {"status": "ok", "img_s": 341.0}, tolerance=0.9)
    assert entry["status"] == "fail" and entry["ratio"] == pytest.approx(341 / 380, abs=1e-4)
    assert "seed 001 section 7" in entry["reason"] and "below 90%" in entry["reason"]
    with pytest.raises(ValueError):
        judge_report(report_with({}), "h200", tolerance=0.0)
    with pytest.raises(ValueError):
        judge_report(report_with({}), "h200", tolerance=1.5)


def test_unknown_gpu_or_mode_only_reports() -> None:
    doc = report_with({"fp32": {"img_s": 1.0}, "amp_fp16_cl": {"img_s": 2.0}})
    judged = judge_report(doc, "geforce-rtx-4090")
    assert judged["failed_modes"] == [] and judged["verdict"] == "not_run"
    for entry in judged["modes"].values():
        assert entry["status"] == "not_run" and entry["ratio"] is None
        assert "no reference for geforce-rtx-4090" in entry["reason"]
    assert judged["not_run"] == ["fp32", "amp_fp16_cl"]
    # A known GPU without a row for the mode, nor a mode ratio or model for it: reported only.
    assert judge_mode("h100-sxm", "compile", {"status": "ok", "img_s": 1})["status"] == ("not_run")


def test_skipped_failed_and_non_224_modes() -> None:
    skipped = judge_mode("h200", "amp_bf16", {"status": "skipped", "reason": "no bf16"})
    assert skipped["status"] == "not_run" and skipped["reason"] == "skipped: no bf16"
    failed = judge_mode(
        "h200", "compile", {"status": "failed", "reason": "CUDA out of memory at batch size 2048"}
    )
    assert failed["status"] == "fail" and "batch size 2048" in failed["reason"]
    small = judge_report(
        report_with({"fp32": {"img_s": 5000.0}}, config={"image_size": 32}), "h200"
    )
    assert small["modes"]["fp32"]["status"] == "not_run"
    assert "224x224" in small["modes"]["fp32"]["reason"]


def test_ddp_is_judged_per_gpu() -> None:
    ddp = {
        "img_s": 8 * 5000.0,
        "img_s_per_gpu": 5000.0,
        "world_size": 8,
        "base_mode": "amp_fp16_cl",
        "scaling_efficiency": 0.86,
    }
    entry = judge_mode("h200", "ddp", dict(ddp, status="ok"))
    assert entry["status"] == "pass" and entry["per_gpu"] and entry["img_s"] == 5000.0
    assert entry["img_s_total"] == 40000.0 and entry["world_size"] == 8
    slow = judge_mode("h200", "ddp", dict(ddp, status="ok", img_s_per_gpu=3000.0))
    assert slow["status"] == "fail" and "per GPU" in slow["reason"]


def test_judge_report_on_the_fake_slow_document() -> None:
    doc = json.loads(SLOW_DOC.read_text())
    judged = judge_report(doc, gpu_model_key(doc["environment"]["gpus"][0]["name"]))
    assert judged["gpu_key"] == "h200" and judged["tolerance"] == DEFAULT_TOLERANCE
    assert list(judged["modes"]) == ["fp32", "amp_fp16", "amp_fp16_cl"]
    statuses = {m: e["status"] for m, e in judged["modes"].items()}
    assert statuses == {"fp32": "pass", "amp_fp16": "pass", "amp_fp16_cl": "fail"}
    assert judged["failed_modes"] == ["amp_fp16_cl"] and judged["verdict"] == "fail"
    # Two modes and the h2d probe pass.
    assert judged["counts"] == {"pass": 3, "fail": 1, "not_run": 0}
    assert judged["probes"] == {"h2d": {"status": "pass", "reason": None}}
    assert judged["modes"]["amp_fp16_cl"]["ratio"] == pytest.approx(3000 / 6180, abs=1e-4)
    assert judged["modes"]["amp_fp16"]["mfu"] == pytest.approx(
        2950 * FLOP_PER_IMAGE / 989.5e12, abs=1e-4
    )
    line = summary_line(judged, "NVIDIA H200")
    assert line.startswith("NVIDIA H200 (h200); FAIL: 3 pass, 1 fail, 0 not_run")
    assert "SLOW amp_fp16_cl 3,000 vs 6,180" in line and "1.02x the seed recipe" in line


# ----------------------------------------------------------------------------- diagnosis


def test_no_diagnosis_without_failures() -> None:
    assert diagnose([], facts_with(pcie_gen_current=1)) == []


def test_healthy_h200_capture_names_no_host_cause() -> None:
    causes = diagnose(["amp_fp16_cl"], H200_FACTS, H200_TORCH)
    assert len(causes) == 1 and causes[0].startswith("No host-level cause shows in the facts")


def test_no_facts_asks_for_them() -> None:
    causes = diagnose(["fp32"])
    assert len(causes) == 1 and "nvidia_smi_facts" in causes[0]


def test_downgraded_pcie_link() -> None:
    (cause,) = diagnose(["fp32"], facts_with(pcie_width_current=8))
    assert "downgraded PCIe link: Gen5 x8 of a possible Gen5 x16" in cause
    assert "idle GPU" not in cause  # a narrower link is never a power-saving state
    (cause,) = diagnose(["fp32"], facts_with(pcie_gen_current="3"))
    assert "Gen3 x16 of a possible Gen5 x16" in cause and "idle GPU" in cause
    nested = dict(H200_GPU)
    for key in ("pcie_gen_current", "pcie_gen_max", "pcie_width_current", "pcie_width_max"):
        nested.pop(key)
    nested["pcie"] = {"gen_current": 4, "gen_max": 5, "width_current": 16, "width_max": 16}
    (cause,) = diagnose(["fp32"], dict(H200_FACTS, gpus=[nested]))
    assert "Gen4 x16 of a possible Gen5 x16" in cause


@pytest.mark.parametrize(
    ("reasons", "code", "words"),
    [
        (["sw_thermal_slowdown"], "thermal-slowdown", "for heat (sw_thermal_slowdown"),
        (["clocks_event_reason_hw_thermal_slowdown"], "thermal-slowdown", "temperature 37"),
        (["hw_slowdown"], "hw-slowdown", "hardware slowdown engaged"),
        (0x80, "power-brake", "hardware power brake"),
        ("0x0000000000000008", "hw-slowdown", "hw_slowdown"),
    ],
)
def test_throttle_reasons_are_told_apart(reasons: Any, code: str, words: str) -> None:
    (row,) = diagnose_causes(["amp_fp16_cl"], facts_with(clock_event_reasons_active=reasons))
    assert row["code"] == code and row["fault"] and row["gpu"] == 0
    assert words in row["message"] and row["remedy"]
    legacy = dict(H200_GPU, clock_event_reasons_active=reasons, temperature=81, power_limit=500)
    (row,) = diagnose_causes(["amp_fp16_cl"], dict(H200_FACTS, gpus=[legacy]))
    assert row["code"] == code


@pytest.mark.parametrize(
    "reasons",
    [
        {
            "clocks_event_reason_sw_power_cap": "Active",
            "clocks_event_reason_gpu_idle": "Not Active",
        },
        "0x0000000000000004",
        ["sw_power_cap"],
    ],
)
def test_the_power_cap_alone_is_no_fault(reasons: Any) -> None:
    cap, none = diagnose_causes(["amp_fp16_cl"], facts_with(clock_event_reasons_active=reasons))
    assert cap["code"] == "power-cap-reached" and cap["fault"] is False
    assert "700.0 W power limit under load" in cap["message"]
    assert "not a power or cooling fault" in cap["message"]
    assert "Check cooling" not in cap["message"] and cap["remedy"] is None
    assert none["code"] == "no-host-cause"  # the cap explains, it is no cause


def test_idle_and_sync_boost_are_not_throttling() -> None:
    assert clock_event_reasons("0x0000000000000001") == ["gpu_idle"]  # the capture's value
    assert clock_event_reasons(0x11) == ["gpu_idle", "sync_boost"]
    causes = diagnose(["fp32"], facts_with(clock_event_reasons_active=0x11))
    assert causes[0].startswith("No host-level cause")


def test_lowered_power_limit() -> None:
    (cause,) = diagnose(["fp32"], facts_with(power_limit_w=400.0, power_default_limit=700.0))
    assert "power limit lowered to 400 W of 700 W" in cause


@pytest.mark.parametrize("mig", ["Enabled", {"current": "Enabled", "pending": "Enabled"}, True])
def test_mig_on(mig: Any) -> None:
    (cause,) = diagnose(["fp32"], facts_with(mig_mode=mig))
    assert cause.startswith("MIG is enabled on GPU 0 (NVIDIA H200)")
    assert "nvidia-smi -i 0 -mig 0" in cause


def test_memory_in_use_before_the_check() -> None:
    (cause,) = diagnose(["fp32"], facts_with(memory_used_mib=40960))
    assert "already had 40960 MiB of memory in use before the check" in cause
    assert diagnose(["fp32"], facts_with(memory_used_mib=300))[0].startswith("No host-level")


def test_other_processes() -> None:
    (cause,) = diagnose(["fp32"], facts_with(processes=2))
    assert cause.startswith("2 other process(es) ran on GPU 0 (NVIDIA H200)")
    # processes without a name: a container hides them
    (cause,) = diagnose(["fp32"], facts_with(processes=[{"pid": 1}, {"pid": 2}, {"pid": 3}]))
    assert cause.startswith("nvidia-smi reports 3 processes on GPU 0 that this host cannot see")
    named = [{"pid": 448, "name": "python3", "used_memory_mib": 964}]
    (cause,) = diagnose(["fp32"], facts_with(processes=named))
    assert cause.startswith(
        "GPU 0 (NVIDIA H200) was in use by another process before the check: pid 448 "
        "(python3, 964 MiB)."
    )
    (cause,) = diagnose(["fp32"], dict(H200_FACTS, processes=1))
    assert cause.startswith("1 other process(es) ran on the GPUs")


def test_cpu_only_torch_wheel() -> None:
    torch = dict(H200_TORCH, built_cuda_version=None, cuda_available=False, arch_list=[])
    (cause,) = diagnose(["fp32"], H200_FACTS, torch)
    assert cause.startswith("torch is a CPU-only build") and "CUDA wheel" in cause


def test_cuda_unavailable_with_a_cuda_build() -> None:
    torch = dict(H200_TORCH, cuda_available=False)
    (cause,) = diagnose(["fp32"], H200_FACTS, torch)
    assert "torch.cuda.is_available() is False" in cause and "CUDA 13.0" in cause


def test_arch_list_does_not_cover_the_gpu() -> None:
    torch = dict(H200_TORCH, arch_list=["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"])
    (cause,) = diagnose(["fp32"], H200_FACTS, torch)
    assert "does not cover this GPU's sm_90" in cause
    ptx = dict(H200_TORCH, arch_list=["sm_80", "sm_86", "compute_86"])
    (cause,) = diagnose(["fp32"], H200_FACTS, ptx)
    assert "no sm_90 kernels and JIT-compiles them from PTX" in cause


def test_torch_cuda_facts_verdict_checks() -> None:
    checks = [
        {"name": "arch_covered", "ok": True, "message": "covered: sm_90 via sass"},
        {"name": "driver_new_enough", "ok": False, "message": "driver 525 < 580 for CUDA 13.0"},
        {"name": "tensor_op", "ok": False, "message": "skipped: no GPU", "skipped": True},
    ]
    torch = dict(H200_TORCH, verdict={"ok": False, "checks": checks})
    (cause,) = diagnose(["fp32"], H200_FACTS, torch)
    assert cause == (
        "torch_cuda_facts reports a wrong torch build or driver: driver_new_enough: driver 525 "
        "< 580 for CUDA 13.0."
    )


def test_torch_verdict_problems() -> None:
    bad = dict(H200_TORCH, verdict={"ok": False, "problems": ["driver too old for CUDA 13.0"]})
    (cause,) = diagnose(["fp32"], H200_FACTS, bad)
    assert cause == (
        "torch_cuda_facts reports a wrong torch build or driver: driver too old for CUDA 13.0."
    )
    (cause,) = diagnose(["fp32"], H200_FACTS, dict(H200_TORCH, verdict="arch not covered"))
    assert "arch not covered" in cause


def test_slow_host_to_device_copies_from_the_report() -> None:
    doc = {"probes": {"h2d": {"status": "ok", "gb_s": 6.2}}}
    causes = diagnose(["fp32"], H200_FACTS, H200_TORCH, doc)
    assert causes == [
        "pinned host-to-device copies reach only 6.2 GB/s (PCIe Gen4 x16 gives ~25, Gen5 ~50): "
        "the PCIe path is slow."
    ]


def test_several_causes_together() -> None:
    facts = facts_with(pcie_width_current=4, mig_mode="Enabled", processes=1)
    causes = diagnose(["amp_fp16_cl"], facts, dict(H200_TORCH, verdict="driver too old"))
    # another process first, then the hardware, then torch
    assert [c.split()[0] for c in causes] == ["1", "GPU", "MIG", "torch_cuda_facts"]


def test_failure_message_names_modes_numbers_and_causes() -> None:
    doc = json.loads(SLOW_DOC.read_text())
    doc["modes"]["compile"] = {
        "status": "failed",
        "reason": "CUDA out of memory at batch size 4096: try a smaller batch, e.g. --batch "
        "compile=2048",
    }
    judged = judge_report(doc, "h200")
    assert judged["failed_modes"] == ["amp_fp16_cl", "compile"]
    causes = diagnose(judged["failed_modes"], facts_with(pcie_gen_current=3), H200_TORCH, doc)
    message = failure_message(judged, causes, "NVIDIA H200")
    assert message.startswith(
        "GPU throughput check failed on NVIDIA H200 (h200) at tolerance 0.80: amp_fp16_cl 3,000 "
        "img/s vs reference 6,180 (0.49, Kindling's gpu_throughput_measure.py); compile did "
        "not run: the program could not run compile: CUDA out of memory at batch size 4096"
    )
    assert "Likely causes: GPU 0 (NVIDIA H200) runs a downgraded PCIe link: Gen3 x16" in message


def test_module_utils_is_python38_and_stdlib_only() -> None:
    path = REPO_ROOT / "module_utils" / "gpu_throughput_ref.py"
    tree = ast.parse(path.read_text(), feature_version=(3, 8))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    # Only the standard library, plus gpu_compat: the one copy of the arch-coverage rule.
    assert imported <= {"__future__", "math", "re", "typing", "ansible"}
    assert "from ansible.module_utils.gpu_compat import arch_coverage" in path.read_text()


# ----------------------------------------------------------------------------- rented cards


# The cards the issue names (T4 up to B200), by their nvidia-smi names.
RENTED = {
    "Tesla T4": "t4",
    "NVIDIA L4": "l4",
    "NVIDIA A10": "a10",
    "NVIDIA L40S": "l40s",
    "NVIDIA GeForce RTX 4090": "rtx-4090",
    "NVIDIA GeForce RTX 3090": "rtx-3090",
    "NVIDIA RTX A6000": "rtx-a6000",
    "NVIDIA RTX 6000 Ada Generation": "rtx-6000-ada",
    "NVIDIA A100-PCIE-40GB": "a100-pcie-40gb",
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb",
    "NVIDIA A100-SXM4-40GB": "a100-40gb",
    "NVIDIA A100-SXM4-80GB": "a100-80gb",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 NVL": "h100-nvl",
    "NVIDIA H200": "h200",
    "NVIDIA B200": "b200",
}


@pytest.mark.parametrize("name", sorted(RENTED))
def test_every_rented_card_gets_the_seed_recipe_judged(name: str) -> None:
    key = gpu_model_key(name)
    assert key == RENTED[name]
    ref = reference_for(key, "amp_fp16")
    assert ref is not None and ref["img_s"] > 0, key
    assert ref["basis"] in ("measured", "derived")
    entry = judge_mode(key, "amp_fp16", {"status": "ok", "img_s": ref["img_s"]})
    assert entry["status"] == "pass" and entry["reference_basis"] == ref["basis"]


def test_measured_rows_win_over_the_derived_model() -> None:
    # A10, RTX cards, B200: Lambda measured them; T4, L4, L40S, H100 NVL: derived.
    for key in ("a10", "rtx-4090", "rtx-3090", "rtx-a6000", "rtx-6000-ada", "b200"):
        assert reference_for(key, "amp_fp16")["basis"] == "measured", key
    for key in ("t4", "l4", "l40s", "h100-nvl"):
        assert reference_for(key, "amp_fp16")["basis"] == "derived", key
    assert reference_for("a10", "amp_fp16")["img_s"] == 638
    assert reference_for("t4", "tf32") is None  # Turing has no TF32 tensor cores


def test_a10g_takes_the_a10s_references_and_unknown_cards_are_not_run() -> None:
    assert "a10g" in KNOWN_GPUS and "fp16" not in DATASHEETS["a10g"]
    entry = judge_mode("a10g", "amp_fp16", {"status": "ok", "img_s": 500.0})
    assert entry["reference"] == 638 and entry["reference_basis"] == "derived"
    assert "a10's measured amp_fp16 reference 638" in entry["reference_derivation"]
    assert entry["status"] == "pass"  # 500 / 638 = 0.78, above 0.80 x 0.67 (widest)
    entry = judge_mode("gtx-1080", "amp_fp16", {"status": "ok", "img_s": 500.0})
    assert entry["status"] == "not_run" and "no datasheet row for this GPU" in entry["reason"]
    entry = judge_mode("t4", "compile", {"status": "ok", "img_s": 500.0})
    assert entry["status"] == "not_run" and "has no datasheet model" in entry["reason"]


def _refit(points):
    """An independent least-squares fit (numpy-free normal equations, by Cramer's rule)."""
    import math

    rows = [(1.0, math.log(p), math.log(m), math.log(y)) for p, m, y in points]
    a = [[sum(r[i] * r[j] for r in rows) for j in range(3)] for i in range(3)]
    b = [sum(r[i] * r[3] for r in rows) for i in range(3)]

    def det(m):
        return (
            m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
        )

    d = det(a)
    out = []
    for col in range(3):
        m = [[b[i] if j == col else a[i][j] for j in range(3)] for i in range(3)]
        out.append(det(m) / d)
    return out


@pytest.mark.parametrize("mode", ["amp_fp16", "tf32"])
def test_the_derived_model_is_the_least_squares_fit_of_its_calibration(mode: str) -> None:
    import math

    model = derived_model(mode)
    assert model is not None and model["harness"] == "lambda"
    rows = [r for r in model["calibration"]]
    assert len(rows) >= 5
    assert "b200" not in {r["gpu"] for r in rows}  # calibrates: false (a harness floor)
    precision = model["precision"]
    points = [
        (
            DATASHEETS[r["gpu"]][precision],
            DATASHEETS[r["gpu"]]["memory_bandwidth_gbs"],
            r["img_s"],
        )
        for r in rows
    ]
    c = _refit(points)
    coef = model["coefficients"]
    assert coef["log_c"] == pytest.approx(c[0], rel=1e-6)
    assert coef["peak_exponent"] == pytest.approx(c[1], rel=1e-6)
    assert coef["bandwidth_exponent"] == pytest.approx(c[2], rel=1e-6)
    # The tolerance factor is the worst leave-one-out ratio, floored to 2 decimals.
    worst = min(r["loo_ratio"] for r in rows)
    assert model["tolerance_factor"] == math.floor(min(worst, 1.0) * 100) / 100
    assert 0.5 < model["tolerance_factor"] <= 1.0


def test_a_derived_reference_is_judged_at_the_wider_tolerance() -> None:
    ref = derived_reference("l4", "amp_fp16")
    factor = ref["tolerance_factor"]
    assert ref["basis"] == "derived" and ref["batch"] is None
    assert "121 TFLOP/s and 300 GB/s" in ref["note"]
    limit = round(DEFAULT_TOLERANCE * factor, 4)
    ok = judge_mode("l4", "amp_fp16", {"status": "ok", "img_s": ref["img_s"] * limit + 0.5})
    assert ok["status"] == "pass" and ok["tolerance"] == limit
    slow = judge_mode("l4", "amp_fp16", {"status": "ok", "img_s": ref["img_s"] * limit - 0.5})
    assert slow["status"] == "fail"
    assert "of the derived reference" in slow["reason"] and f"below {limit:.0%}" in slow["reason"]
    # The same ratio passes only because the reference is derived: a measured one fails it.
    measured = judge_mode("a10", "amp_fp16", {"status": "ok", "img_s": 638 * limit + 0.5})
    assert measured["status"] == "fail" and measured["tolerance"] == DEFAULT_TOLERANCE


def test_the_catalogue_rows_are_well_formed() -> None:
    """YAML traps: a flow mapping cut at a comma, a number where a name word is meant."""
    from ansible.module_utils.vendor_catalogue import CATALOGUE

    allowed = {"gpu", "mode", "img_s", "batch", "harness", "note", "source"}
    allowed |= {"world_size", "total_img_s", "calibrates"}
    for raw in CATALOGUE["throughput_references"]["rows"]:
        assert set(raw) <= allowed, raw
        assert raw["harness"] in HARNESSES and raw["mode"] in MODE_ORDER, raw
        assert isinstance(raw["note"], str) and raw["note"], raw
    keys = [row["key"] for row in CATALOGUE["throughput_gpus"]["rows"]]
    assert len(keys) == len(set(keys))
    for row in CATALOGUE["throughput_gpus"]["rows"]:
        assert all(isinstance(w, str) for w in row["words"]), row["key"]
        assert row.get("judge_as") in (None, *keys)


# ----------------------------------------------------------------------------- every GPU


def eight_gpu_report(rates: Dict[int, float], mode: str = "amp_fp16_cl") -> Dict[str, Any]:
    """A program report of an 8-GPU host: per_gpu entries and the host median per mode."""
    import statistics

    per_gpu = [
        {
            "index": i,
            "name": "NVIDIA H200",
            "bus_id": f"00000000:{0x18 + 0x10 * i:02X}:00.0",
            "modes": {mode: {"status": "ok", "img_s": rate, "batch_size": 256}},
        }
        for i, rate in sorted(rates.items())
    ]
    return report_with({mode: {"img_s": statistics.median(rates.values())}}, per_gpu=per_gpu)


def test_a_gpu_that_passes_the_table_but_trails_its_host_fails_the_host() -> None:
    # GPU 7 passes the table (5,200 >= 0.80 x 6,180) but trails the other seven by 16%.
    rates = {i: 6150.0 + i for i in range(7)}
    rates[7] = 5200.0
    judged = judge_report(eight_gpu_report(rates), "h200")
    gpus = {g["index"]: g for g in judged["gpus"]}
    assert gpus[7]["modes"]["amp_fp16_cl"]["status"] == "pass"  # the table alone passes it
    assert gpus[7]["verdict"] == "fail" and gpus[7]["outliers"][0]["mode"] == "amp_fp16_cl"
    assert gpus[7]["modes"]["amp_fp16_cl"]["vs_host"] == pytest.approx(5200 / 6153, abs=1e-3)
    assert all(gpus[i]["verdict"] == "pass" for i in range(7))
    assert judged["verdict"] == "fail" and judged["failed_modes"] == []
    (outlier,) = judged["gpu_outliers"]
    assert outlier["gpu"] == 7 and outlier["bus_id"] == "00000000:88:00.0"
    assert "GPU 7 TRAILS the host's other GPUs in amp_fp16_cl (5,200 vs median 6,153)" in (
        summary_line(judged, "NVIDIA H200")
    )
    message = failure_message(judged, [], "NVIDIA H200")
    assert "GPU 7 trails the host's other GPUs in amp_fp16_cl: 5,200 img/s vs their median" in (
        message
    )


def test_an_outlier_gpu_is_named_with_its_bus_id_and_cause() -> None:
    from ansible.module_utils.gpu_throughput_ref import outlier_causes

    rates = {i: 6150.0 for i in range(8)}
    rates[3] = 4000.0
    judged = judge_report(eight_gpu_report(rates), "h200")
    facts = {
        "gpus": [
            dict(H200_GPU, index=i, pci_bus_id=f"00000000:{0x18 + 0x10 * i:02X}:00.0")
            for i in range(8)
        ]
    }
    facts["gpus"][3].update(pcie_gen_current=3, pcie_width_current=8)
    (cause,) = outlier_causes(judged, facts)
    assert cause.startswith(
        "GPU 3 (00000000:48:00.0) trains amp_fp16_cl at 4,000 img/s, 65% of the median of "
        "the host's other GPUs (6,150), and fails the table too: "
    )
    assert "downgraded PCIe link: Gen3 x8 of a possible Gen5 x16" in cause
    facts["gpus"][3].update(pcie_gen_current=5, pcie_width_current=16)
    (cause,) = outlier_causes(judged, facts)
    assert cause.endswith("reset it or re-run, and replace it if it stays behind.")


def test_identical_gpus_within_the_margin_all_pass() -> None:
    judged = judge_report(eight_gpu_report({i: 6100.0 + 10 * i for i in range(8)}), "h200")
    assert judged["verdict"] == "pass" and judged["gpu_outliers"] == []
    assert {g["verdict"] for g in judged["gpus"]} == {"pass"}
    # A tighter margin flags the slowest against the others' median.
    tight = judge_report(
        eight_gpu_report({i: 6100.0 + 10 * i for i in range(8)}), "h200", gpu_margin=0.005
    )
    assert [o["gpu"] for o in tight["gpu_outliers"]] == [0]
    with pytest.raises(ValueError):
        judge_report(report_with({}), "h200", gpu_margin=0.0)


def test_a_gpu_failing_the_table_fails_the_host_mode() -> None:
    rates = {0: 6150.0, 1: 4000.0}
    judged = judge_report(eight_gpu_report(rates), "h200")
    entry = judged["modes"]["amp_fp16_cl"]
    # The host entry is the median (5,075: passes), but GPU 1 fails the table.
    assert entry["status"] == "fail" and entry["reason"].startswith("GPU 1: amp_fp16_cl 4,000")
    assert judged["failed_modes"] == ["amp_fp16_cl"]


def test_require_all_turns_not_run_into_failure() -> None:
    doc = report_with(
        {
            "amp_fp16_cl": {"img_s": 6150.0},
            "amp_bf16": {"status": "skipped", "reason": "the --max-seconds budget was used up"},
        },
        probes={"h2d": {"status": "skipped", "reason": "device is cpu"}},
    )
    relaxed = judge_report(doc, "h200")
    assert relaxed["verdict"] == "pass" and relaxed["not_run"] == ["amp_bf16", "h2d"]
    assert relaxed["counts"] == {"pass": 1, "fail": 0, "not_run": 2}
    strict = judge_report(doc, "h200", require_all=True)
    assert strict["verdict"] == "fail" and strict["failed_modes"] == []
    assert "NOT RUN (required): amp_bf16, h2d" in summary_line(strict)
    message = failure_message(strict, [])
    assert "every check is required (require_all): amp_bf16 (skipped: the --max-seconds" in message
    assert "h2d (skipped: device is cpu)" in message


def test_a_failed_probe_fails_the_verdict() -> None:
    doc = report_with(
        {"amp_fp16_cl": {"img_s": 6150.0}},
        probes={"matmul": {"status": "failed", "reason": "RuntimeError: CUBLAS_STATUS_ALLOC"}},
    )
    judged = judge_report(doc, "h200")
    assert judged["verdict"] == "fail" and judged["failed_probes"] == ["matmul"]
    assert judged["probes"]["matmul"]["status"] == "fail"
    assert "the matmul probe failed: RuntimeError" in failure_message(judged, [])
    assert "FAILED probe matmul" in summary_line(judged)


def test_nothing_judged_is_not_run_never_pass() -> None:
    judged = judge_report(report_with({}), "h200")
    assert judged["verdict"] == "not_run" and judged["counts"]["pass"] == 0
    assert judge_report(report_with({}), "h200", require_all=True)["verdict"] == "not_run"
    # A passing probe does not make an unjudged host pass ...
    doc = report_with({"fp32": {"img_s": 900.0}}, probes={"h2d": {"status": "ok"}})
    assert judge_report(doc, "gtx-1080")["verdict"] == "not_run"
    # ... unless the run asked for probes only (gpu_check_modes: [none]).
    probes_only = report_with({}, probes={"matmul": {"status": "ok"}})
    assert judge_report(probes_only, "cpu")["verdict"] == "pass"
