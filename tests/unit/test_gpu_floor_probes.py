"""The probes the floors judge (kindling_bench/probes.py), on the CPU.

The PCIe link must be read while copies run (an idle GPU lowers its link): these tests
stand in a fake nvidia-smi (a script on PATH that answers after a pause) or a fake
pynvml, and count the copies made while it answered. The program's run on the CPU
reports the GPU-only probes as skipped with the reason; the CUDA figures themselves come
from the lead's H100 run (docs/GPU_RUNS.md).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import types
from pathlib import Path
from typing import Any, Dict, List

import pytest
from test_gpu_throughput_program import PROGRAM, load_program_module, run_program


@pytest.fixture(scope="module")
def probes() -> Any:
    return load_program_module().probes


class FakeCtx:
    """What read_link_under_load uses of a Context: torch (for the bus id) and sync."""

    def __init__(self) -> None:
        self.syncs = 0

        class Cuda:
            @staticmethod
            def get_device_properties(index: int) -> Any:
                return types.SimpleNamespace(pci_domain_id=0, pci_bus_id=0x18, pci_device_id=0)

        self.torch = types.SimpleNamespace(cuda=Cuda())

    def sync(self) -> None:
        self.syncs += 1


def fake_smi(tmp_path: Path, answer: str, delay: float = 0.3, rc: int = 0) -> Path:
    """An nvidia-smi that logs its arguments, waits, then answers."""
    log = tmp_path / "smi-calls.txt"
    script = tmp_path / "bin" / "nvidia-smi"
    script.parent.mkdir(exist_ok=True)
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {log}\n'
        'case "$*" in *gpumax*) echo 5; exit 0;; esac\n'
        f"sleep {delay}\n"
        f"printf '%s\\n' '{answer}'\n"
        f"exit {rc}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


@pytest.fixture
def no_pynvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError


def test_parse_link_csv(probes: Any) -> None:
    assert probes.parse_link_csv("5, 16, 5, 16\n") == {
        "gen": 5,
        "width": 16,
        "gen_max": 5,
        "width_max": 16,
    }
    assert probes.parse_link_csv("4, 8x, 5, 16") == {
        "gen": 4,
        "width": 8,
        "gen_max": 5,
        "width_max": 16,
    }
    assert "reason" in probes.parse_link_csv("")
    assert "not a link" in probes.parse_link_csv("[N/A], [N/A], 5, 16")["reason"]
    assert "not a link" in probes.parse_link_csv("5, 16")["reason"]


def test_link_is_read_by_nvidia_smi_while_copies_run(
    probes: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pynvml: None
) -> None:
    fake_smi(tmp_path, "5, 16, 5, 16", delay=0.3)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    copies: List[float] = []
    ctx = FakeCtx()
    link = probes.read_link_under_load(ctx, lambda: copies.append(1.0))
    assert link["source"] == "nvidia-smi"
    assert (link["gen"], link["width"], link["gen_max"], link["width_max"]) == (5, 16, 5, 16)
    assert link["gen_gpu_max"] == 5
    # Copies kept running for the whole time nvidia-smi took to answer (0.3 s).
    assert link["copies"] >= 2 and len(copies) == link["copies"] + 1
    assert ctx.syncs == len(copies)
    # nvidia-smi was asked about this process's GPU by its PCI bus id.
    calls = (tmp_path / "smi-calls.txt").read_text()
    assert "-i 00000000:18:00.0" in calls
    assert probes.LINK_QUERY in calls


def test_link_read_failures_give_a_reason(
    probes: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pynvml: None
) -> None:
    fake_smi(tmp_path, "No devices were found", delay=0.0, rc=6)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    link = probes.read_link_under_load(FakeCtx(), lambda: None)
    assert link["reason"].startswith("nvidia-smi exited 6: No devices were found")
    assert "gen" not in link
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    link = probes.read_link_under_load(FakeCtx(), lambda: None)
    assert link["reason"] == "nvidia-smi is not on PATH and pynvml is not importable"


def test_link_read_times_out(
    probes: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pynvml: None
) -> None:
    fake_smi(tmp_path, "5, 16, 5, 16", delay=5)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(probes, "LINK_READ_SECONDS", 0.3)
    link = probes.read_link_under_load(FakeCtx(), lambda: None)
    assert link["reason"] == "nvidia-smi did not answer within 0.3 s"


def test_link_is_read_by_pynvml_between_copies_in_flight(
    probes: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: List[str] = []
    fake = types.SimpleNamespace(
        nvmlInit=lambda: events.append("init"),
        nvmlDeviceGetHandleByPciBusId=lambda bus: events.append(f"handle {bus}") or "h",
        nvmlDeviceGetCurrPcieLinkGeneration=lambda h: events.append("read") or 4,
        nvmlDeviceGetCurrPcieLinkWidth=lambda h: 16,
        nvmlDeviceGetMaxPcieLinkGeneration=lambda h: 5,
        nvmlDeviceGetMaxPcieLinkWidth=lambda h: 16,
        nvmlDeviceGetGpuMaxPcieLinkGeneration=lambda h: 5,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)

    class Ctx(FakeCtx):
        def sync(self) -> None:
            events.append("sync")

    link = probes.read_link_under_load(Ctx(), lambda: events.append("copy"))
    assert link["source"] == "nvml"
    assert (link["gen"], link["width"], link["gen_max"], link["gen_gpu_max"]) == (4, 16, 5, 5)
    assert events[:2] == ["init", "handle 00000000:18:00.0"]
    # Each reading between a copy's launch and its sync: the copy is in flight.
    assert events[2:] == ["copy", "read", "sync"] * 3


def test_membw_option_and_probe_order(probes: Any) -> None:
    cli = load_program_module().cli
    parser = cli.build_parser()
    assert probes.PROBE_ORDER == ["h2d", "membw", "matmul", "input_pipeline"]
    assert cli.resolve_plan(parser.parse_args(["--membw-mib", "64"]))["membw_mib"] == 64
    with pytest.raises(ValueError, match="--membw-mib must be >= 1"):
        cli.resolve_plan(parser.parse_args(["--membw-mib", "0"]))
    plan = cli.resolve_plan(parser.parse_args(["--probes", "matmul,membw"]))
    assert plan["probes"] == ["membw", "matmul"]


@pytest.mark.slow
def test_the_floor_probes_on_cpu_skip_or_run_with_reasons() -> None:
    # The quick profile's probes alone, no training mode: the GPU-only probes say why
    # they did not run; matmul runs on the CPU at a tiny size.
    result = run_program(
        ["--device", "cpu", "--modes", "none", "--matmul-size", "32", "--threads", "1"],
        timeout=120,
    )
    assert result["rc"] == 0, result["stderr"][-2000:]
    report: Dict[str, Any] = json.loads(result["stdout"])
    assert report["config"]["probes"] == ["h2d", "membw", "matmul"]
    probes = report["probes"]
    assert probes["h2d"]["status"] == "skipped"
    assert probes["h2d"]["reason"].startswith("device is cpu")
    assert probes["membw"]["status"] == "skipped"
    assert probes["membw"]["reason"] == "device is cpu: device memory bandwidth is a GPU's"
    assert probes["matmul"]["status"] == "ok"
    assert set(probes["matmul"]["results"]) == {"fp32", "bf16"}
    assert (PROGRAM / "probes.py").is_file()


# ----------------------------------------------------------------------------- every GPU


def test_the_link_is_asked_of_the_probed_gpu(probes: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    class NoProps:
        class cuda:
            @staticmethod
            def get_device_properties(index: int) -> Any:
                raise RuntimeError("no bus id")

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert probes._smi_target(NoProps, 5) == "5"  # PCI bus order, as nvidia-smi numbers
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    assert probes._smi_target(NoProps, 2) == "6"
    assert probes._smi_target(FakeCtx().torch, 3) == "00000000:18:00.0"


def test_the_floor_probes_run_on_each_gpu_in_turn_and_the_host_probe_once(
    probes: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On the CPU (simulated GPUs 1, 4 and 6, as when GPUs 0, 2, 3, 5 and 7 were left out):
    # the probes are stand-ins that record which GPU's context ran them, and when.
    torch = pytest.importorskip("torch")
    program = load_program_module()
    calls: List[Any] = []

    def stand_in(name: str) -> Any:
        def probe(ctx: Any) -> Dict[str, Any]:
            calls.append((name, ctx.index))
            if (name, ctx.index) == ("membw", 4):
                raise RuntimeError("boom")
            return {"status": "ok", "reason": None, "value": ctx.index}

        return probe

    for name in probes.PROBE_ORDER:
        monkeypatch.setitem(probes.PROBES, name, stand_in(name))
    plan = program.cli.resolve_plan(
        program.cli.build_parser().parse_args(
            ["--device", "cpu", "--gpus", "1,4,6", "--probes", "h2d,membw,matmul,input_pipeline"]
        )
    )
    ctx = program.context.Context(torch, None, plan)
    out = probes.run_probes(ctx, [1, 4, 6])
    # One GPU at a time, every floor probe on it; the host's probe once, last, on the first.
    assert calls == [
        *[(n, 1) for n in ("h2d", "membw", "matmul")],
        *[(n, 4) for n in ("h2d", "membw", "matmul")],
        *[(n, 6) for n in ("h2d", "membw", "matmul")],
        ("input_pipeline", 1),
    ]
    for name in ("h2d", "membw", "matmul"):
        assert [g["gpu_index"] for g in out[name]["gpus"]] == [1, 4, 6]
        # The top level is the first GPU's result, as a one-GPU report has it.
        assert out[name]["gpu_index"] == 1 and out[name]["status"] == "ok"
    assert out["membw"]["gpus"][1] == {
        "status": "failed",
        "reason": "RuntimeError: boom",
        "gpu_index": 4,
    }
    assert "gpus" not in out["input_pipeline"] and out["input_pipeline"]["value"] == 1
    # Over the budget, each GPU's probes are skipped with the reason.
    monkeypatch.setattr(program.context.Context, "over_budget", lambda self: "budget used up")
    skipped = probes.run_probes(ctx, [1, 4])
    assert [g["status"] for g in skipped["h2d"]["gpus"]] == ["skipped", "skipped"]
    assert skipped["h2d"]["gpus"][1] == {
        "status": "skipped",
        "reason": "budget used up",
        "gpu_index": 4,
    }


def test_a_gpu_that_cannot_be_set_up_fails_its_probes_and_the_others_run(
    probes: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = pytest.importorskip("torch")
    program = load_program_module()
    real = probes.Context

    def context(torch: Any, tv: Any, plan: Any, index: int = 0) -> Any:
        if index == 3:
            raise RuntimeError("CUDA error: unspecified launch failure")
        return real(torch, tv, plan, index=index)

    monkeypatch.setattr(probes, "Context", context)
    for name in probes.PER_GPU_PROBES:
        monkeypatch.setitem(probes.PROBES, name, lambda ctx: {"status": "ok", "reason": None})
    plan = program.cli.resolve_plan(
        program.cli.build_parser().parse_args(["--device", "cpu", "--probes", "h2d,matmul"])
    )
    out = probes.run_probes(real(torch, None, plan), [0, 3, 5])
    assert [g["status"] for g in out["h2d"]["gpus"]] == ["ok", "failed", "ok"]
    assert out["matmul"]["gpus"][1] == {
        "status": "failed",
        "reason": "GPU 3 could not be probed: RuntimeError: CUDA error: unspecified launch failure",
        "gpu_index": 3,
    }
