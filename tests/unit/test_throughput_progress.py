"""module_utils/throughput_progress.py and the kindling_progress callback."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

from ansible.module_utils.throughput_progress import finished, line, read

REPO_ROOT = Path(__file__).resolve().parents[2]


def write(path: Path, state: dict) -> None:
    path.write_text(json.dumps(state))


def test_before_the_program_writes_anything(tmp_path):
    state = read(str(tmp_path / "progress.json"))
    assert state == {"main": None, "gpus": {}}
    assert line(state) == "starting: the program has not written its progress yet"


def test_one_gpu_mode_running_and_done(tmp_path):
    path = tmp_path / "progress.json"
    write(
        path,
        {
            "phase": "mode",
            "current": "amp_fp16_cl",
            "started_at": 1000.0,
            "done": {
                "fp32": {"status": "ok", "img_s": 1061.2},
                "amp_fp16": {"status": "ok", "img_s": 3090},
            },
        },
    )
    text = line(read(str(path)), now=1042.4)
    assert text == "[42 s] mode amp_fp16_cl running; done: fp32 1,061 img/s, amp_fp16 3,090 img/s"
    write(path, {"phase": "probe", "current": "h2d", "started_at": 1000.0, "done": {}})
    assert line(read(str(path)), now=1050) == "[50 s] probe h2d running"
    write(path, {"phase": "done", "elapsed_s": 61.0, "done": {"fp32": {"status": "failed"}}})
    assert line(read(str(path))) == "[61 s] done; done: fp32 failed"


def test_every_gpu_at_once(tmp_path):
    path = tmp_path / "progress.json"
    write(
        path,
        {"phase": "every GPU", "current": "fp32, amp_fp16", "gpus": [0, 1, 2], "started_at": 0.0},
    )
    write(
        tmp_path / "progress.json.gpu0",
        {"phase": "mode", "current": "amp_fp16", "done": {"fp32": {"status": "ok", "img_s": 1060}}},
    )
    write(
        tmp_path / "progress.json.gpu1",
        {"phase": "mode", "current": "amp_fp16", "done": {"fp32": {"status": "ok", "img_s": 900}}},
    )
    write(tmp_path / "progress.json.gpu2", {"phase": "starting", "current": None})
    (tmp_path / "progress.json.gpu9.tmp123").write_text("{")  # a half-written temp file
    state = read(str(path))
    assert sorted(state["gpus"]) == [0, 1, 2]
    assert line(state, now=30) == (
        "[30 s] every GPU at once (3): amp_fp16 on GPU 0, 1; starting on GPU 2; "
        "lowest so far: GPU 1 fp32 900 img/s"
    )


def test_finished_reads_the_async_results_file(tmp_path):
    results = tmp_path / "j1"
    assert finished(None) is False and finished(str(results)) is False
    results.write_text(json.dumps({"started": True, "finished": False, "ansible_job_id": "j1"}))
    assert finished(str(results)) is False
    results.write_text('{"verdict": "pa')  # the wrapper is still writing it
    assert finished(str(results)) is False
    results.write_text(json.dumps({"changed": False, "verdict": "pass"}))  # the module's result
    assert finished(str(results)) is True


def load_callback():
    path = REPO_ROOT / "callback_plugins" / "kindling_progress.py"
    spec = importlib.util.spec_from_file_location("kindling_progress", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_callback_prints_the_line_of_a_polled_progress_task():
    module = load_callback()
    callback = module.CallbackModule()
    shown = []
    callback._display = SimpleNamespace(display=shown.append)

    def result(action, res):
        host = SimpleNamespace(get_name=lambda: "gpu1")
        return SimpleNamespace(_task=SimpleNamespace(action=action), _result=res, _host=host)

    callback.v2_runner_retry(result("gpu_throughput_progress", {"line": "[9 s] mode fp32 running"}))
    callback.v2_runner_retry(result("ansible.builtin.async_status", {"line": "not ours"}))
    callback.v2_runner_retry(result("gpu_throughput_progress", {}))
    assert shown == ["  [gpu1] [9 s] mode fp32 running"]
    assert module.CallbackModule.CALLBACK_NEEDS_ENABLED is True


def test_the_callback_is_enabled_for_people_and_for_molecule():
    cfg = (REPO_ROOT / "ansible.cfg").read_text()
    assert "callback_plugins = callback_plugins" in cfg
    assert "kindling_progress" in cfg.split("callbacks_enabled =")[1].splitlines()[0]
    molecule = (REPO_ROOT / ".config" / "molecule" / "config.yml").read_text()
    assert "ANSIBLE_CALLBACKS_ENABLED: kindling_progress" in molecule
