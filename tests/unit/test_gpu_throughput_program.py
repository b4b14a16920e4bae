"""The benchmark program (the package kindling_bench), run for real on the CPU with a tiny
batch and resolution.

One module-scoped run covers fp32, a bf16 autocast mode, the CPU-skipped modes (tf32,
fp16 + GradScaler), gloo DDP with two processes, a batch sweep, and the matmul,
input_pipeline and h2d probes. It runs under a small "reaper" wrapper that makes itself
the child subreaper, so that any process the program leaves behind (DataLoader workers,
DDP ranks) is re-parented to the wrapper and shows up as its child after the program
exits.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# The program is a package directory; `python PROGRAM ARGS` runs its __main__.py.
PROGRAM = REPO_ROOT / "roles" / "gpu_check" / "files" / "kindling_bench"
MODULE_UTILS = REPO_ROOT / "module_utils"
PY = sys.executable

# Runs argv, then reports every live (non-zombie) process left as its child. With
# PR_SET_CHILD_SUBREAPER (36) orphaned grandchildren are re-parented to this wrapper.
REAPER = r"""
import ctypes, json, os, subprocess, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
proc = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)

def live_children():
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open("/proc/%s/stat" % entry).read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[1]) == me and fields[0] != "Z":
            found.append({"pid": int(entry), "cmd": stat[stat.find("(") + 1:stat.rfind(")")]})
    return found

deadline = time.monotonic() + 5
while True:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
    left = live_children()
    if not left or time.monotonic() > deadline:
        break
    time.sleep(0.1)
json.dump({"rc": proc.returncode, "stdout": proc.stdout.decode(), "stderr": proc.stderr.decode(),
           "children": left}, sys.stdout)
"""

CPU_ARGS = [
    "--device", "cpu",
    "--image-size", "32",
    "--batch-size", "2",
    "--num-classes", "10",
    "--warmup", "1",
    "--steps", "1",
    "--windows", "2",
    "--threads", "1",
    "--modes", "fp32,tf32,amp_fp16,amp_bf16_cl,ddp",
    "--cudnn-heuristics", "amp_bf16_cl",
    "--probes", "h2d,membw,matmul,input_pipeline",
    "--ddp-backend", "gloo",
    "--world-size", "2",
    "--num-workers", "0,2",
    "--pipeline-images", "64",
    "--matmul-size", "64",
    "--sweep", "optimizer=foreach,fused",
    "--sweep-modes", "fp32",
    "--ddp-mode", "fp32",
    "--peak-tflops", "fp32=1,bf16=1",
    "--max-seconds", "300",
]  # fmt: skip

MODE_KEYS = {
    "status": str,
    "reason": (str, type(None)),
    "label": str,
    "batch_size": int,
    "precision": str,
    "amp_dtype": (str, type(None)),
    "channels_last": bool,
    "compiled": bool,
    "tf32": (bool, type(None)),
    "optimizer_impl": (str, type(None)),
    "cuda_graphs": bool,
    "img_s": (float, type(None)),
    "ms_per_step": (float, type(None)),
    "peak_memory_mib": (float, type(None)),
    "mfu": (float, type(None)),
    "windows": list,
    "window_spread": (float, int, type(None)),
    "warmup_seconds": (float, type(None)),
    "first_step_seconds": (float, type(None)),
    "compile_seconds": (float, type(None)),
    "compile_mode": (str, type(None)),
    "cudnn_algorithms": (str, type(None)),
    "tf32_state": (dict, type(None)),
    "notes": list,
}
DDP_KEYS = {
    "base_mode": str,
    "base_reason": str,
    "backend": str,
    "launcher": str,
    "world_size": int,
    "img_s_per_gpu": (float, type(None)),
    "single_gpu_img_s": (float, type(None)),
    "scaling_efficiency": (float, type(None)),
}
ENV_KEYS = {
    "hostname": str,
    "python": str,
    "python_executable": str,
    "platform": str,
    "cpu_count": int,
    "torch": str,
    "torchvision": str,
    "numpy": (str, type(None)),
    "cuda_built": (str, type(None)),
    "cuda": (str, type(None)),
    "cuda_available": (bool, type(None)),
    "cudnn": (int, type(None)),
    "nccl": (str, type(None)),
    "driver": (str, type(None)),
    "device": str,
    "gpu_count": int,
    "gpus": list,
    "arch_list": list,
    "bf16_supported": bool,
}


def run_program(args: List[str], python: str = PY, timeout: int = 240) -> Dict[str, Any]:
    proc = subprocess.run(
        [PY, "-c", REAPER, python, str(PROGRAM), *args],
        capture_output=True,
        timeout=timeout,
        check=True,
        cwd=REPO_ROOT,
    )
    return json.loads(proc.stdout)


def load_program_module() -> Any:
    """The package, imported in this process as kindling_bench (its modules import each
    other relative to it); torch is imported only when something is measured."""
    loaded = sys.modules.get("kindling_bench")
    if loaded is not None and Path(loaded.__file__).parent == PROGRAM:
        return loaded
    spec = importlib.util.spec_from_file_location("kindling_bench", PROGRAM / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["kindling_bench"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cpu_run() -> Dict[str, Any]:
    result = run_program(CPU_ARGS)
    assert result["rc"] == 0, result["stderr"][-3000:]
    result["report"] = json.loads(result["stdout"])  # stdout carries the JSON alone
    return result


@pytest.fixture(scope="module")
def report(cpu_run: Dict[str, Any]) -> Dict[str, Any]:
    return cpu_run["report"]


@pytest.fixture(scope="module")
def program() -> Any:
    return load_program_module()


def assert_keys(obj: Dict[str, Any], spec: Dict[str, Any], where: str) -> None:
    for key, types in spec.items():
        assert key in obj, f"{where}: missing {key}"
        assert isinstance(obj[key], types), f"{where}.{key}: {obj[key]!r} is not {types}"


# ----------------------------------------------------------------------------- the real run


@pytest.mark.slow
def test_top_level_schema(report: Dict[str, Any]) -> None:
    assert report["schema_version"] == 1
    assert_keys(
        report,
        {
            "schema_version": int,
            "program": str,
            "started_at": str,
            "environment": dict,
            "config": dict,
            "modes": dict,
            "probes": dict,
            "seed_ratio": dict,
            "sweep": list,
            "children_at_exit": list,
            "wall_seconds": float,
        },
        "report",
    )
    assert report["wall_seconds"] > 0
    assert_keys(report["environment"], ENV_KEYS, "environment")
    env = report["environment"]
    assert env["device"] == "cpu" and env["gpu_count"] == 0 and env["cpu_count"] >= 1
    config = report["config"]
    for key in ("profile", "device", "modes", "probes", "batch_sizes", "image_size", "warmup",
                "steps", "windows", "optimizer_impl", "compile_mode", "cuda_graphs_modes",
                "ddp_backend", "world_size", "num_workers", "peak_tflops", "max_seconds",
                "sweep", "flop_per_image", "timing", "argv"):  # fmt: skip
        assert key in config, key
    assert config["modes"] == ["fp32", "tf32", "amp_fp16", "amp_bf16_cl", "ddp"]
    assert config["timing"] == "time.perf_counter"
    assert config["peak_tflops"] == {"fp32": 1.0, "bf16": 1.0}


@pytest.mark.slow
def test_every_mode_has_the_schema(report: Dict[str, Any]) -> None:
    assert list(report["modes"]) == ["fp32", "tf32", "amp_fp16", "amp_bf16_cl", "ddp"]
    for mode, result in report["modes"].items():
        assert_keys(result, MODE_KEYS, mode)
        assert result["status"] in ("ok", "skipped", "failed")
    assert_keys(report["modes"]["ddp"], DDP_KEYS, "ddp")


@pytest.mark.slow
def test_measured_modes_have_plausible_numbers(report: Dict[str, Any]) -> None:
    fp32 = report["modes"]["fp32"]
    assert fp32["status"] == "ok", fp32["reason"]
    assert fp32["precision"] == "fp32" and fp32["tf32"] is False
    assert fp32["batch_size"] in (1, 2)
    assert fp32["img_s"] > 0 and fp32["ms_per_step"] > 0 and fp32["warmup_seconds"] > 0
    assert 0 < fp32["first_step_seconds"] <= fp32["warmup_seconds"]
    assert len(fp32["windows"]) == 2 and all(w > 0 for w in fp32["windows"])
    assert fp32["peak_memory_mib"] is None  # CPU: no CUDA allocator to ask
    assert fp32["mfu"] is not None and fp32["mfu"] > 0  # --peak-tflops fp32=1
    assert fp32["optimizer_impl"] in ("fused", "foreach")
    # --cudnn-heuristics amp_bf16_cl: what torch was set to, read back by the measurement.
    assert fp32["cudnn_algorithms"] == "autotune"
    assert report["config"]["cudnn_heuristic_modes"] == ["amp_bf16_cl"]
    assert report["modes"]["amp_fp16"]["cudnn_algorithms"] is None  # skipped on CPU
    bf16 = report["modes"]["amp_bf16_cl"]
    if report["environment"]["bf16_supported"]:
        assert bf16["status"] == "ok", bf16["reason"]
        assert bf16["cudnn_algorithms"] == "heuristics"
        assert bf16["img_s"] > 0 and bf16["amp_dtype"] == "bf16" and bf16["channels_last"]
    else:
        assert bf16["status"] == "skipped" and bf16["reason"]


@pytest.mark.slow
def test_skipped_modes_carry_reasons(report: Dict[str, Any]) -> None:
    tf32 = report["modes"]["tf32"]
    assert tf32["status"] == "skipped" and "TF32" in tf32["reason"]
    fp16 = report["modes"]["amp_fp16"]
    assert fp16["status"] == "skipped"
    assert "GradScaler" in fp16["reason"] and "CPU" in fp16["reason"]
    for result in (tf32, fp16):
        assert result["img_s"] is None and result["windows"] == []


@pytest.mark.slow
def test_gloo_ddp_with_two_processes(report: Dict[str, Any]) -> None:
    ddp = report["modes"]["ddp"]
    assert ddp["status"] == "ok", ddp["reason"]
    assert ddp["backend"] == "gloo" and ddp["world_size"] == 2
    assert ddp["img_s"] > 0 and len(ddp["windows"]) == 2
    assert ddp["img_s_per_gpu"] == pytest.approx(ddp["img_s"] / 2, rel=0.01)
    # --ddp-mode fp32 (bf16 is emulated and slow on most CPUs): the same config as the
    # fp32 mode of this run, whose img/s is the single-process baseline.
    assert ddp["base_mode"] == "fp32" and ddp["precision"] == "fp32"
    assert ddp["batch_size"] == report["modes"]["fp32"]["batch_size"]
    assert ddp["optimizer_impl"] == report["modes"]["fp32"]["optimizer_impl"]
    assert ddp["single_gpu_img_s"] == report["modes"]["fp32"]["img_s"]
    expected = ddp["img_s"] / (2 * ddp["single_gpu_img_s"])
    assert ddp["scaling_efficiency"] == pytest.approx(expected, rel=0.01)


@pytest.mark.slow
def test_probes(report: Dict[str, Any]) -> None:
    probes = report["probes"]
    assert list(probes) == ["h2d", "membw", "matmul", "input_pipeline"]
    h2d = probes["h2d"]
    assert h2d["status"] == "skipped" and "cpu" in h2d["reason"]
    assert h2d["gb_s"] is None and h2d["d2h_gb_s"] is None and h2d["link_under_load"] is None
    membw = probes["membw"]
    assert membw["status"] == "skipped" and "cpu" in membw["reason"]
    assert membw["size_mib"] == 1024 and membw["gb_s"] is None
    matmul = probes["matmul"]
    assert matmul["status"] == "ok" and matmul["size"] == 64 and matmul["device"] == "cpu"
    assert matmul["results"]["fp32"]["status"] == "ok"
    assert matmul["results"]["fp32"]["gflop_s"] > 0
    pipe = probes["input_pipeline"]
    assert pipe["status"] == "ok", pipe["reason"]
    assert [r["num_workers"] for r in pipe["results"]] == [0, 2]
    for entry in pipe["results"]:
        assert entry["status"] == "ok" and entry["img_s"] > 0
        assert entry["img_s_with_startup"] > 0 and entry["first_batch_seconds"] >= 0
        assert entry["images_delivered"] == 64
    assert pipe["best_img_s"] == max(r["img_s"] for r in pipe["results"])
    assert pipe["persistent_workers"] is False
    assert pipe["workers_alive_after"] == 0
    assert pipe["dataset_removed"] is True


@pytest.mark.slow
def test_sweep_records_every_variant(report: Dict[str, Any]) -> None:
    sweep = report["sweep"]
    assert [(s["mode"], s["variant"]) for s in sweep] == [
        ("fp32", {"optimizer": "foreach"}),
        ("fp32", {"optimizer": "fused"}),
    ]
    assert [s["status"] for s in sweep] == ["ok", "ok"]
    assert sweep[0]["optimizer_impl"] == "foreach"
    assert sweep[1]["optimizer_impl"] in ("fused", "foreach")  # fused falls back if missing
    fp32 = report["modes"]["fp32"]
    assert fp32["variant"] in [s["variant"] for s in sweep]
    assert fp32["img_s"] == max(s["img_s"] for s in sweep)


@pytest.mark.slow
def test_seed_ratio_says_why_it_is_missing(report: Dict[str, Any]) -> None:
    seed = report["seed_ratio"]
    assert seed["seed_mode"] == "amp_fp16"
    assert seed["ratio"] is None and seed["seed_img_s"] is None
    assert "amp_fp16" in seed["reason"] and "skipped" in seed["reason"]
    assert seed["best_mode"] in ("fp32", "amp_bf16_cl")  # ddp is not a single-GPU mode
    assert seed["best_img_s"] == report["modes"][seed["best_mode"]]["img_s"]


@pytest.mark.slow
def test_no_processes_left_behind(cpu_run: Dict[str, Any]) -> None:
    assert cpu_run["children"] == [], f"left behind: {cpu_run['children']!r}"
    assert cpu_run["report"]["children_at_exit"] == []


@pytest.mark.slow
def test_progress_goes_to_stderr(cpu_run: Dict[str, Any]) -> None:
    assert "[gpu_throughput_measure" in cpu_run["stderr"]
    assert "[gpu_throughput_measure" not in cpu_run["stdout"]


@pytest.mark.slow
def test_one_device_runs_in_process_with_a_per_gpu_entry(report: Dict[str, Any]) -> None:
    (gpu,) = report["per_gpu"]
    assert gpu["index"] == 0 and gpu["name"] == "cpu"
    assert set(gpu["modes"]) == {"fp32", "tf32", "amp_fp16", "amp_bf16_cl"}  # not ddp
    assert gpu["modes"]["fp32"]["img_s"] == report["modes"]["fp32"]["img_s"]


# --- every GPU at once: two simulated devices on the CPU, one process each

MULTI_ARGS = [
    "--device", "cpu",
    "--gpus", "2",
    "--image-size", "32",
    "--batch-size", "2",
    "--num-classes", "10",
    "--warmup", "1",
    "--steps", "1",
    "--windows", "2",
    "--threads", "1",
    "--modes", "fp32,ddp",
    "--probes", "none",
    "--ddp-backend", "gloo",
    "--world-size", "2",
    "--ddp-mode", "fp32",
    "--max-seconds", "300",
]  # fmt: skip


@pytest.fixture(scope="module")
def multi_run(tmp_path_factory: Any) -> Dict[str, Any]:
    progress = tmp_path_factory.mktemp("progress") / "progress.json"
    result = run_program([*MULTI_ARGS, "--progress", str(progress)])
    assert result["rc"] == 0, result["stderr"][-3000:]
    result["report"] = json.loads(result["stdout"])
    result["progress"] = progress
    return result


@pytest.mark.slow
def test_the_progress_file_ends_done_and_the_gpu_files_are_gone(multi_run: Dict[str, Any]) -> None:
    path = multi_run["progress"]
    state = json.loads(path.read_text())
    assert state["phase"] == "done" and state["current"] is None
    assert state["gpus"] == [0, 1]
    assert set(state["done"]) == {"fp32", "ddp"}
    assert state["done"]["fp32"]["status"] == "ok" and state["done"]["fp32"]["img_s"] > 0
    assert list(path.parent.glob("progress.json.*")) == []  # workers' files and temp files


@pytest.mark.slow
def test_every_device_is_measured_by_its_own_process(multi_run: Dict[str, Any]) -> None:
    report = multi_run["report"]
    assert [g["index"] for g in report["per_gpu"]] == [0, 1]
    for gpu in report["per_gpu"]:
        fp32 = gpu["modes"]["fp32"]
        assert fp32["status"] == "ok" and fp32["img_s"] > 0, fp32["reason"]
        assert set(gpu["modes"]) == {"fp32"}
    # The host entry is the lower median of the devices: a real device's result.
    host = report["modes"]["fp32"]
    rates = {str(g["index"]): g["modes"]["fp32"]["img_s"] for g in report["per_gpu"]}
    assert host["img_s_by_gpu"] == rates and host["gpu_count"] == 2
    assert host["img_s"] == min(rates.values())
    assert rates[str(host["gpu_index"])] == host["img_s"]
    # Each worker tags its progress lines; the parent says they run at once.
    stderr = multi_run["stderr"]
    assert "measuring fp32 on 2 GPU(s) at once: [0, 1]" in stderr
    assert "[gpu_throughput_measure gpu0 +" in stderr and "[gpu_throughput_measure gpu1 +" in stderr
    # DDP runs after the workers, against the host's single-device rate.
    ddp = report["modes"]["ddp"]
    assert ddp["status"] == "ok", ddp["reason"]
    assert list(report["modes"]) == ["fp32", "ddp"]


@pytest.mark.slow
def test_the_device_processes_are_gone(multi_run: Dict[str, Any]) -> None:
    assert multi_run["children"] == [], f"left behind: {multi_run['children']!r}"
    assert multi_run["report"]["children_at_exit"] == []


# --- GPUs left out (busy): --gpus 0,2 on the CPU, ddp without --world-size

KEPT_ARGS = [
    "--device", "cpu",
    "--gpus", "0,2",
    "--image-size", "32",
    "--batch-size", "2",
    "--num-classes", "10",
    "--warmup", "1",
    "--steps", "1",
    "--windows", "2",
    "--threads", "1",
    "--modes", "fp32,ddp",
    "--probes", "h2d,membw,matmul",
    "--matmul-size", "32",
    "--ddp-backend", "gloo",
    "--ddp-mode", "fp32",
    "--max-seconds", "300",
]  # fmt: skip


@pytest.fixture(scope="module")
def kept_run() -> Dict[str, Any]:
    result = run_program(KEPT_ARGS)
    assert result["rc"] == 0, result["stderr"][-3000:]
    result["report"] = json.loads(result["stdout"])
    return result


@pytest.mark.slow
def test_ddp_and_the_probes_use_only_the_gpus_of_the_list(kept_run: Dict[str, Any]) -> None:
    report = kept_run["report"]
    assert [g["index"] for g in report["per_gpu"]] == [0, 2]
    # ddp's world is the --gpus list (no --world-size): the GPU left out is not in it.
    ddp = report["modes"]["ddp"]
    assert ddp["status"] == "ok", ddp["reason"]
    assert ddp["world_size"] == 2 and ddp["gpus"] == [0, 2]
    assert "ddp: 2 process(es) on GPU(s) [0, 2], gloo" in kept_run["stderr"]
    # The floors' probes ran on each GPU of the list in turn, after the modes.
    probes = report["probes"]
    for name in ("h2d", "membw", "matmul"):
        assert [g["gpu_index"] for g in probes[name]["gpus"]] == [0, 2], name
        assert probes[name]["gpu_index"] == 0
    assert [g["status"] for g in probes["h2d"]["gpus"]] == ["skipped", "skipped"]
    assert probes["h2d"]["gpus"][1]["reason"].startswith("device is cpu")
    assert [g["status"] for g in probes["matmul"]["gpus"]] == ["ok", "ok"]
    assert (
        "probes h2d, membw, matmul on 2 GPU(s), one GPU at a time: [0, 2]" in (kept_run["stderr"])
    )
    assert kept_run["children"] == [] and report["children_at_exit"] == []


def test_ddp_ranks_see_only_the_gpus_of_the_list(
    program: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A CUDA host of 8 GPUs faked (no GPU here): GPU 5 left out by --gpus. Each rank's
    # process is started with CUDA_VISIBLE_DEVICES naming the 7 kept GPUs, so rank r's
    # cuda:r is the r-th kept GPU; the fake ranks exit 1 at once.
    from types import SimpleNamespace

    envs: List[Dict[str, str]] = []

    class Rank:
        returncode = 1

        def __init__(self, cmd: List[str], env: Dict[str, str], **kwargs: Any) -> None:
            envs.append(env)

        def poll(self) -> int:
            return 1

        def wait(self, timeout: Any = None) -> int:
            return 1

    monkeypatch.setattr(
        program.ddp, "subprocess", SimpleNamespace(Popen=Rank, DEVNULL=subprocess.DEVNULL)
    )
    torch = SimpleNamespace(
        __version__="2.11",
        cuda=SimpleNamespace(device_count=lambda: 8, get_device_capability=lambda i=0: (9, 0)),
        distributed=SimpleNamespace(is_available=lambda: True, is_nccl_available=lambda: True),
    )
    cli = program.cli

    def run(*args: str) -> Dict[str, Any]:
        plan = cli.resolve_plan(
            cli.build_parser().parse_args(["--modes", "ddp", "--ddp-mode", "fp32", *args])
        )
        ctx = SimpleNamespace(
            torch=torch, plan=plan, results={}, device="cuda", bf16=(True, None),
            over_budget=lambda: None,
        )  # fmt: skip
        return program.ddp.run_ddp(ctx)

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    result = run("--gpus", "0,1,2,3,4,6,7")
    assert result["world_size"] == 7 and result["gpus"] == [0, 1, 2, 3, 4, 6, 7]
    assert len(envs) == 7
    assert {e["CUDA_VISIBLE_DEVICES"] for e in envs} == {"0,1,2,3,4,6,7"}
    assert [e["RANK"] for e in envs] == [str(r) for r in range(7)]
    assert "ran on GPU(s) [0, 1, 2, 3, 4, 6, 7] of 8 (--gpus)" in result["notes"][0]
    assert result["status"] == "failed"  # the fake ranks
    # This process's own CUDA_VISIBLE_DEVICES maps the indices on.
    envs.clear()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "8,9,10,11,12,13,14,15")
    run("--gpus", "0,1,2,3,4,6,7")
    assert {e["CUDA_VISIBLE_DEVICES"] for e in envs} == {"8,9,10,11,12,14,15"}
    # Every GPU (the default): the whole host, as before.
    envs.clear()
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    everything = run()
    assert everything["world_size"] == 8 and len(envs) == 8
    assert {e["CUDA_VISIBLE_DEVICES"] for e in envs} == {"0,1,2,3,4,5,6,7"}
    # A world larger than the list is refused with the reason, nothing started.
    envs.clear()
    refused = run("--gpus", "0,1,2,3,4,6,7", "--world-size", "8")
    assert refused["status"] == "skipped" and envs == []
    assert refused["reason"] == "--world-size 8 but --gpus gives 7 GPU(s): [0, 1, 2, 3, 4, 6, 7]"


def test_visible_devices_maps_through_this_process(program: Any) -> None:
    visible = program.gpus.visible_devices
    assert visible([0, 2], None) == "0,2"
    assert visible([0, 2], "") == "0,2"
    assert visible([1, 3], "4, 5,6,7") == "5,7"
    assert visible([5], "GPU-aaa,GPU-bbb") == "5"  # past its list: the host's numbering


def test_measured_devices_and_the_host_entry(program: Any) -> None:
    plan = {"device": "cuda", "gpus": "all"}
    gpus = program.gpus
    assert gpus.measured_devices(plan, 8) == list(range(8))
    assert gpus.measured_devices(dict(plan, gpus=3), 8) == [0, 1, 2]
    assert gpus.measured_devices(dict(plan, gpus=[5, 7]), 8) == [5, 7]
    with pytest.raises(ValueError, match="only 1 GPU"):
        gpus.measured_devices(dict(plan, gpus=2), 1)
    with pytest.raises(ValueError, match=r"GPU\(s\) \[9\] not visible"):
        gpus.measured_devices(dict(plan, gpus=[9]), 8)
    assert gpus.measured_devices({"device": "cpu", "gpus": "all"}, 0) == [0]
    assert gpus.measured_devices({"device": "cpu", "gpus": 4}, 0) == [0, 1, 2, 3]
    assert gpus.measured_devices({"device": "cpu", "gpus": [0, 2]}, 0) == [0, 2]  # labels kept

    def gpu(index: int, img_s: Any, status: str = "ok") -> Dict[str, Any]:
        return {"index": index, "modes": {"fp32": {"status": status, "img_s": img_s}}}

    entry = gpus.host_entry([gpu(0, 10.0), gpu(1, 30.0), gpu(2, 20.0), gpu(3, 40.0)], "fp32")
    assert entry["img_s"] == 20.0 and entry["gpu_index"] == 2  # the lower median of four
    assert entry["img_s_by_gpu"] == {"0": 10.0, "1": 30.0, "2": 20.0, "3": 40.0}
    failed = gpus.host_entry([gpu(0, None, "failed"), gpu(1, None, "failed")], "fp32")
    assert failed["status"] == "failed"
    one_ok = gpus.host_entry([gpu(0, None, "failed"), gpu(1, 12.0)], "fp32")
    assert one_ok["img_s"] == 12.0 and one_ok["img_s_by_gpu"] == {"0": None, "1": 12.0}


class _Props:
    pci_domain_id, pci_bus_id, pci_device_id = 0, 0x18, 0


def test_bus_id_is_nvidia_smis_format(program: Any) -> None:
    assert program.gpus.bus_id(_Props()) == "00000000:18:00.0"
    assert program.gpus.bus_id(object()) is None


# ----------------------------------------------------------------------------- exit codes


@pytest.mark.parametrize(
    "args, message",
    [
        (["--modes", "fp8"], "unknown mode 'fp8'"),
        (["--probes", "nvlink"], "unknown probe 'nvlink'"),
        (["--batch", "fp32"], "--batch wants MODE=SIZE"),
        (["--batch", "fp32=0"], "size must be >= 1"),
        (["--sweep", "lr=1,2"], "unknown key 'lr'"),
        (["--sweep", "batch=x"], "not a positive integer"),
        (["--device", "tpu"], "invalid choice"),
        (["--peak-tflops", "fp64=1"], "unknown precision"),
        (["--image-size", "8"], "--image-size must be >= 16"),
        (["--gpus", "0"], "--gpus must be 'all', a count >= 1"),
        (["--gpus", "1,1"], "distinct GPU indices"),
        (["--gpus", "x"], "'x' is not a GPU index"),
        (["--cudnn-benchmark-limit", "-1"], "--cudnn-benchmark-limit must be >= 0"),
    ],
)
def test_bad_arguments_exit_2(args: List[str], message: str) -> None:
    proc = subprocess.run(
        [PY, str(PROGRAM), *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 2
    assert message in proc.stderr
    assert proc.stdout == ""


def fake_python_without_torch(tmp_path: Path) -> str:
    """A FAKE interpreter: the venv's python with -S, so site-packages (torch) is absent."""
    fake = tmp_path / "python-without-torch"
    fake.write_text(f'#!/bin/sh\nexec "{PY}" -S "$@"\n')
    fake.chmod(0o755)
    return str(fake)


def test_help_works_without_torch(tmp_path: Path) -> None:
    proc = subprocess.run(
        [fake_python_without_torch(tmp_path), str(PROGRAM), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "--profile" in proc.stdout and "Exit codes" in proc.stdout


def test_missing_torch_exits_3(tmp_path: Path) -> None:
    result = run_program(["--device", "cpu"], python=fake_python_without_torch(tmp_path))
    assert result["rc"] == 3
    assert "torch is not importable" in result["stderr"]
    assert "No module named 'torch'" in result["stderr"]
    assert result["stdout"] == ""
    assert result["children"] == []


@pytest.mark.slow
def test_missing_torchvision_exits_3(tmp_path: Path) -> None:
    # A FAKE torchvision package that fails to import shadows the real one.
    fake = tmp_path / "shadow" / "torchvision"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('FAKE torchvision for a test')\n")
    proc = subprocess.run(
        [PY, str(PROGRAM), "--device", "cpu", "--modes", "fp32", "--probes", "none"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=dict(os.environ, PYTHONPATH=str(tmp_path / "shadow")),
    )
    assert proc.returncode == 3
    assert "torchvision is not importable" in proc.stderr
    assert "FAKE torchvision for a test" in proc.stderr and "(torch 2." in proc.stderr


def test_probes_only_run_needs_no_torchvision(tmp_path: Path) -> None:
    # `--modes none`: the probes run with torch alone, as in a host that has only the
    # CPU torch wheel (the Molecule test host). The same FAKE broken torchvision shadows
    # the real one, and must not matter.
    fake = tmp_path / "shadow" / "torchvision"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('FAKE torchvision for a test')\n")
    proc = subprocess.run(
        [
            PY,
            str(PROGRAM),
            "--device",
            "cpu",
            "--modes",
            "none",
            "--probes",
            "matmul",
            "--matmul-size",
            "64",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=dict(os.environ, PYTHONPATH=str(tmp_path / "shadow")),
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["modes"] == {} and report["environment"]["torchvision"] is None
    assert report["probes"]["matmul"]["status"] == "ok"
    assert report["seed_ratio"]["best_mode"] is None


@pytest.mark.slow
def test_cuda_requested_without_gpu_exits_4() -> None:
    if os.path.exists("/dev/nvidiactl") or shutil.which("nvidia-smi"):
        pytest.skip("this machine may have a usable GPU")
    proc = subprocess.run(
        [PY, str(PROGRAM), "--device", "cuda", "--modes", "fp32", "--probes", "none"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 4
    assert "CUDA requested but torch.cuda.is_available() is False" in proc.stderr
    assert "CPU-only torch wheel" in proc.stderr
    assert proc.stdout == ""


# ----------------------------------------------------------------------------- pure helpers


def test_profiles(program: Any) -> None:
    cli = program.cli
    parser = cli.build_parser()
    quick = cli.resolve_plan(parser.parse_args([]))
    assert quick["profile"] == "quick" and quick["device"] == "cuda"
    assert quick["modes"] == ["fp32", "amp_fp16", "amp_fp16_cl"]
    # The probes the floors judge (module_utils/gpu_floors.py).
    assert quick["probes"] == ["h2d", "membw", "matmul"]
    assert quick["membw_mib"] == 1024 and quick["h2d_mib"] == 512
    assert quick["batch_sizes"] == {"fp32": 256, "amp_fp16": 256, "amp_fp16_cl": 256}
    assert quick["cuda_graphs_modes"] == [] and quick["max_seconds"] == 85.0
    assert (quick["warmup"], quick["steps"], quick["windows"]) == (5, 5, 3)
    full = cli.resolve_plan(parser.parse_args(["--profile", "full"]))
    assert full["modes"] == list(program.MODE_ORDER) and full["probes"] == program.PROBE_ORDER
    assert full["batch_sizes"]["compile"] == 512 and full["batch_sizes"]["fp32"] == 256
    assert full["cuda_graphs_modes"] == ["compile"]
    # cuDNN's autotune is torch's default unless asked: fewer algorithms, faster first
    # steps, slower fp32 (docs/BENCHMARKS.md); 0 tries them all.
    assert quick["cudnn_benchmark_limit"] is None and full["cudnn_benchmark_limit"] is None
    # The quick profile's fp16 modes take cuDNN's heuristic choice (the same img/s on the
    # H200 without a first run's kernel compiles); fp32 and the full profile autotune.
    assert quick["cudnn_heuristic_modes"] == ["amp_fp16", "amp_fp16_cl"]
    assert full["cudnn_heuristic_modes"] == []
    assert (
        cli.resolve_plan(parser.parse_args(["--cudnn-heuristics", "none"]))["cudnn_heuristic_modes"]
        == []
    )
    chosen = cli.resolve_plan(parser.parse_args(["--cudnn-heuristics", "seed_recipe,fp32"]))
    assert chosen["cudnn_heuristic_modes"] == ["fp32", "amp_fp16"]
    with pytest.raises(ValueError, match="unknown mode 'fp33'"):
        cli.resolve_plan(parser.parse_args(["--cudnn-heuristics", "fp33"]))
    limited = cli.resolve_plan(parser.parse_args(["--cudnn-benchmark-limit", "0"]))
    assert limited["cudnn_benchmark_limit"] == 0
    explicit = cli.resolve_plan(
        parser.parse_args(["--profile", "full", "--batch-size", "128", "--no-cuda-graphs"])
    )
    assert set(explicit["batch_sizes"].values()) == {128}
    assert explicit["cuda_graphs_modes"] == []
    alias = cli.resolve_plan(parser.parse_args(["--modes", "seed_recipe,fp32,fp32"]))
    assert alias["modes"] == ["fp32", "amp_fp16"]


def test_batch_overrides_and_sweep_parsing(program: Any) -> None:
    cli = program.cli
    assert cli.parse_batch_overrides(["amp_bf16_cl=384", "fp32=64,seed_recipe=512"]) == {
        "amp_bf16_cl": 384,
        "fp32": 64,
        "amp_fp16": 512,
    }
    axes = cli.parse_sweep(["batch=256,384", "cuda_graphs=on,off", "compile_mode=default"])
    assert axes == {"batch": [256, 384], "cuda_graphs": [True, False], "compile_mode": ["default"]}
    assert len(program.modes.sweep_variants(axes, "compile")) == 4
    eager = program.modes.sweep_variants(axes, "amp_fp16_cl")  # compile_mode cannot affect it
    assert eager == [
        {"batch": 256, "cuda_graphs": True},
        {"batch": 256, "cuda_graphs": False},
        {"batch": 384, "cuda_graphs": True},
        {"batch": 384, "cuda_graphs": False},
    ]
    assert cli.parse_peak_tflops("989") == {k: 989.0 for k in ("fp32", "tf32", "fp16", "bf16")}


def test_oom_message_names_batch_and_suggests_smaller(program: Any) -> None:
    message = program.context.oom_reason("amp_bf16_cl", 512, "cuda")
    assert "batch size 512" in message and "--batch amp_bf16_cl=256" in message


def test_window_summary_is_the_median(program: Any) -> None:
    summarize_windows = program.train.summarize_windows
    summary = summarize_windows([100.0, 50.0, 200.0], images_per_step=10, steps=5)
    # 50 images per window: 500, 1000 and 250 img/s; the median window is 500 img/s.
    assert summary["windows"] == [500.0, 1000.0, 250.0]
    assert summary["img_s"] == 500.0 and summary["ms_per_step"] == 20.0
    assert summary["window_spread"] == 1.5  # (1000 - 250) / 500
    assert summarize_windows([], 10, 5)["window_spread"] is None


def test_seed_ratio_math(program: Any) -> None:
    ok = {"status": "ok", "reason": None}
    results = {
        "amp_fp16": dict(ok, img_s=3000.0),
        "amp_fp16_cl": dict(ok, img_s=6000.0),
        "ddp": dict(ok, img_s=48000.0),  # a total over GPUs never counts as "best"
    }
    seed = program.report.seed_ratio(results)
    assert seed["best_mode"] == "amp_fp16_cl" and seed["ratio"] == 2.0
    assert seed["seed_img_s"] == 3000.0 and seed["reason"] is None


def program_files(directory: Path = PROGRAM) -> List[Path]:
    return sorted(directory.glob("*.py"))


def test_program_is_python38_syntax() -> None:
    assert len(program_files()) >= 10
    for path in program_files():  # reference.py through its symlink
        ast.parse(path.read_text(), feature_version=(3, 8), filename=str(path))


def test_program_imports_only_stdlib_at_module_level() -> None:
    # Every module of the package imported, and --help run, in a fresh interpreter.
    code = (
        "import sys, importlib, pkgutil\n"
        f"sys.path.insert(0, {str(PROGRAM.parent)!r})\n"
        "mods = set(sys.modules)\n"
        "import kindling_bench\n"
        "for info in pkgutil.iter_modules(kindling_bench.__path__):\n"
        "    if info.name != '__main__':\n"
        "        importlib.import_module('kindling_bench.' + info.name)\n"
        "try:\n"
        "    kindling_bench.main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in set(sys.modules) - mods if m.split('.')[0] in "
        "('torch', 'torchvision', 'numpy', 'ansible')))\n"
    )
    proc = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "[]"
    assert os.path.basename(PY).startswith("python")


def test_ddp_replicates_the_best_eager_channels_last_mode(program: Any) -> None:
    from types import SimpleNamespace

    ok = {"status": "ok", "reason": None}
    ctx = SimpleNamespace(
        plan={"ddp_mode": "auto"},
        results={
            "amp_fp16_cl": dict(ok, img_s=6000.0),
            "amp_bf16_cl": dict(ok, img_s=4800.0),
            "compile": dict(ok, img_s=7500.0),  # compiled modes are not replicated
        },
    )
    base, why = program.ddp.ddp_base_mode(ctx)
    assert base == "amp_fp16_cl" and "6000.0 img/s" in why
    ctx.plan["ddp_mode"] = "amp_bf16_cl"
    assert program.ddp.ddp_base_mode(ctx) == ("amp_bf16_cl", "requested with --ddp-mode")


def test_budget_skips_with_a_reason(program: Any) -> None:
    from types import SimpleNamespace

    ctx = SimpleNamespace(plan={"max_seconds": 0.0}, deadline=0.0)
    reason = program.context.Context.over_budget(ctx)
    assert reason.startswith("the --max-seconds budget of 0 s was used up")
    ctx.deadline = float("inf")
    assert program.context.Context.over_budget(ctx) is None


# ----------------------------------------------------------------------------- the artifact


def test_flop_per_image_is_module_utils_constant(program: Any) -> None:
    from types import SimpleNamespace

    from ansible.module_utils import gpu_throughput_ref, resnet_flops

    # reference.py is a relative symlink to the one copy in module_utils (the role's copy
    # follows it, so a host gets a plain file).
    link = PROGRAM / "reference.py"
    assert link.is_symlink()
    assert os.readlink(link) == "../../../../module_utils/resnet_flops.py"
    assert link.resolve() == MODULE_UTILS / "resnet_flops.py"
    # The program's constant, read through the symlink, is the judge's.
    assert program.reference.FLOP_PER_IMAGE == resnet_flops.FLOP_PER_IMAGE == 24.7e9
    assert gpu_throughput_ref.FLOP_PER_IMAGE == program.reference.FLOP_PER_IMAGE
    cli = program.cli
    plan = cli.resolve_plan(cli.build_parser().parse_args(["--image-size", "224"]))
    assert plan["flop_per_image"] == resnet_flops.FLOP_PER_IMAGE
    half = cli.resolve_plan(cli.build_parser().parse_args(["--image-size", "112"]))
    assert half["flop_per_image"] == resnet_flops.FLOP_PER_IMAGE / 4
    # MFU: the program (given the datasheet peaks) and the judge give the same number.
    peaks = gpu_throughput_ref.peak_tflops("h200")
    ctx = SimpleNamespace(plan={"peak_tflops": peaks, "flop_per_image": plan["flop_per_image"]})
    for precision, img_s in (("fp16", 6180.0), ("fp32", 1064.0)):
        expected = gpu_throughput_ref.mfu(img_s, "h200", precision)
        assert program.modes.mfu(ctx, img_s, precision) == expected is not None
    # No second copy of the number in the package or in the judge.
    for path in [*program_files(), MODULE_UTILS / "gpu_throughput_ref.py"]:
        if not path.is_symlink():
            assert "24.7e9" not in path.read_text(), path


def test_resnet_flops_needs_nothing_but_the_standard_library() -> None:
    tree = ast.parse((MODULE_UTILS / "resnet_flops.py").read_text(), feature_version=(3, 8))
    nodes = list(ast.walk(tree))
    imported = {a.name for n in nodes if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in nodes if isinstance(n, ast.ImportFrom)}
    assert imported <= {"__future__"}


def module_imports(path: Path) -> Dict[str, set]:
    """{"relative": sibling modules, "top": absolute imports at module level,
    "lazy": absolute imports inside functions} of one module of the package."""
    tree = ast.parse(path.read_text())
    found: Dict[str, set] = {"relative": set(), "top": set(), "lazy": set()}
    top_level = set(map(id, tree.body))
    for node in ast.walk(tree):
        where = "top" if id(node) in top_level else "lazy"
        if isinstance(node, ast.ImportFrom) and node.level:
            assert node.level == 1, f"{path.name}: {ast.dump(node)}"
            if node.module:
                found["relative"].add(node.module.split(".")[0])
            else:
                found["relative"].update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found[where].add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found[where].update(alias.name.split(".")[0] for alias in node.names)
    return found


def test_the_copied_artifact_is_complete(tmp_path: Path) -> None:
    # What the role ships: the package's *.py files, the symlink followed. The directory
    # holds nothing else (a __pycache__ aside), so that glob is the whole program.
    assert {p.name for p in PROGRAM.iterdir() if p.name != "__pycache__"} == {
        p.name for p in program_files()
    }
    measure = (REPO_ROOT / "roles" / "gpu_check" / "tasks" / "measure.yml").read_text()
    assert "'kindling_bench/*.py'" in measure
    assert 'script: "{{ gpu_check_install_dir }}/kindling_bench"' in measure
    copy = tmp_path / "bin" / "kindling_bench"
    shutil.copytree(PROGRAM, copy, symlinks=False, ignore=shutil.ignore_patterns("__pycache__"))
    assert not any(p.is_symlink() for p in copy.iterdir())
    reference = (MODULE_UTILS / "resnet_flops.py").read_text()
    assert (copy / "reference.py").read_text() == reference
    stdlib = set(sys.stdlib_module_names)
    for path in program_files(copy):
        imports = module_imports(path)
        for name in imports["relative"]:
            assert (copy / f"{name}.py").is_file(), f"{path.name} imports .{name}"
        # torch, torchvision and numpy only where something is measured; pynvml
        # (nvidia-ml-py) only where the h2d probe reads the PCIe link, and only if importable.
        assert imports["top"] <= stdlib, (path.name, imports["top"] - stdlib)
        lazy = stdlib | {"torch", "torchvision", "numpy", "pynvml"}
        assert imports["lazy"] <= lazy, path.name
    # Both ways to run it, from the copy alone, without site-packages (no torch).
    bare = fake_python_without_torch(tmp_path)
    for argv, cwd in (([str(copy)], tmp_path), (["-m", "kindling_bench"], copy.parent)):
        proc = subprocess.run(
            [bare, *argv, "--help"], capture_output=True, text=True, timeout=60, cwd=cwd
        )
        assert proc.returncode == 0, proc.stderr
        assert (
            proc.stdout.startswith("usage: gpu_throughput_measure.py")
            and "Exit codes" in proc.stdout
        )
    proc = subprocess.run(
        [bare, str(copy), "--modes", "fp8"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "unknown mode 'fp8'" in proc.stderr
