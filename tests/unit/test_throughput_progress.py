"""module_utils/throughput_progress.py, the kindling_progress stdout callback, and
tools/fleet_report.py's progress: the lines a person reads while the check runs."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from ansible.module_utils.throughput_progress import (
    FLEET_THRESHOLD,
    PROFILE_PLANS,
    FleetProgress,
    finished,
    host_line,
    line,
    plan_for,
    read,
    snapshot,
)

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


# --- the numbers of a progress line, and its estimate of the seconds left


def test_the_profiles_match_the_program():
    sys.path.insert(0, str(REPO_ROOT / "roles" / "gpu_check" / "files"))
    try:
        from kindling_bench.cli import PROFILES
    finally:
        sys.path.pop(0)
    for name, plan in PROFILE_PLANS.items():
        assert plan["modes"] == list(PROFILES[name]["modes"]), name
        assert plan["probes"] == list(PROFILES[name]["probes"]), name
        assert plan["budget_s"] == PROFILES[name]["max_seconds"], name


def test_the_estimate_starts_from_the_budget_then_follows_the_rate():
    quick = plan_for("quick")
    assert quick == {"modes": ["fp32", "amp_fp16", "amp_fp16_cl"], "budget_s": 85.0}
    assert plan_for("quick", ["fp32"])["modes"] == ["fp32"]
    assert plan_for("nonesuch") == {"modes": [], "budget_s": None}
    running = {"main": {"phase": "mode", "current": "fp32", "started_at": 100.0}, "gpus": {}}
    first = snapshot(running, now=120.0, plan=quick)
    assert (first["running"], first["elapsed_s"]) == ("fp32", 20.0)
    assert (first["left_s"], first["left_basis"]) == (65, "budget")  # 85 - 20
    running["main"].update(
        current="amp_fp16_cl",
        done={
            "fp32": {"status": "ok", "img_s": 1061.2},
            "amp_fp16": {"status": "ok", "img_s": 3090},
        },
    )
    later = snapshot(running, now=130.0, plan=quick)
    # Two modes in 30 s: 15 s a mode, one left.
    assert (later["done"], later["left_s"], later["left_basis"]) == (2.0, 15, "rate")
    assert later["lowest"] == {"gpu": None, "mode": "fp32", "img_s": 1061.2}
    assert snapshot(running, now=130.0)["left_basis"] == "unknown"  # no plan, no budget
    done = snapshot({"main": {"phase": "done", "elapsed_s": 33.0}, "gpus": {}}, plan=quick)
    assert (done["running"], done["left_s"], done["left_basis"]) == ("done", 0, "done")


def test_every_gpu_at_once_counts_the_mean_of_the_gpus(tmp_path):
    path = tmp_path / "progress.json"
    write(path, {"phase": "every GPU", "gpus": [0, 1], "started_at": 0.0})
    write(
        tmp_path / "progress.json.gpu0", {"current": "amp_fp16", "done": {"fp32": {"img_s": 1060}}}
    )
    write(tmp_path / "progress.json.gpu1", {"current": "fp32", "done": {}})
    numbers = snapshot(read(str(path)), now=40.0, plan=plan_for("quick"))
    assert numbers["running"] == "amp_fp16, fp32 on 2 GPUs"
    # Half a mode done on average in 40 s: 80 s a mode, 2.5 modes left.
    assert (numbers["done"], numbers["left_s"]) == (0.5, 200)
    assert numbers["lowest"] == {"gpu": 0, "mode": "fp32", "img_s": 1060.0}


def _poll(running, elapsed, left, basis="rate", done=1.0, planned=3, lowest=None):
    return {
        "running": running,
        "elapsed_s": elapsed,
        "left_s": left,
        "left_basis": basis,
        "done": done,
        "planned": planned,
        "lowest": lowest,
        "finished": False,
    }


def test_a_host_line_carries_host_mode_elapsed_and_left():
    low = {"gpu": None, "mode": "fp32", "img_s": 1061.2}
    assert host_line("gpu1", _poll("amp_fp16_cl", 42.4, 20, done=2.0, lowest=low)) == (
        "gpu check [gpu1]: amp_fp16_cl running, 42 s elapsed, about 20 s left "
        "(2 of 3 modes done; lowest so far: fp32 1,061 img/s)"
    )
    assert host_line("gpu1", _poll("fp32", 5, 80, "budget", done=0.0)) == (
        "gpu check [gpu1]: fp32 running, 5 s elapsed, at most 80 s left (0 of 3 modes done)"
    )
    low8 = {"gpu": 5, "mode": "fp32", "img_s": 1022}
    text = host_line("hgx", _poll("amp_fp16 on 8 GPUs", 34, 40, done=1.0, lowest=low8))
    assert text.startswith("gpu check [hgx]: amp_fp16 on 8 GPUs running, 34 s elapsed, about 40 s")
    assert text.endswith("lowest so far: GPU 5 fp32 1,022 img/s)")
    assert host_line("a", _poll("starting", None, None, "unknown", planned=0, done=0.0)) == (
        "gpu check [a]: starting, ? s elapsed, time left unknown"
    )
    assert "FAILED" not in text


def test_a_few_hosts_get_a_line_each_poll():
    fleet = FleetProgress(threshold=FLEET_THRESHOLD)
    for host in ("a", "b", "c"):
        fleet.started(host)
    lines = [fleet.polled(h, _poll("fp32", 10, 30)) for h in ("a", "b", "c", "a")]
    assert [t.split("]")[0] for t in lines] == [
        "gpu check [a",
        "gpu check [b",
        "gpu check [c",
        "gpu check [a",
    ]
    assert fleet.finished("a", _poll("done", 40, 0, "done")) is None


def test_above_the_threshold_one_fleet_line_per_poll_round():
    assert FLEET_THRESHOLD == 4
    fleet = FleetProgress()
    hosts = [f"gpu{i:02d}" for i in range(50)]
    for host in hosts:
        fleet.started(host)
    printed = []
    # Round 1: every host polls once, nothing printed until one polls again.
    for i, host in enumerate(hosts[:20]):
        printed.append(fleet.polled(host, _poll("fp32", 10 + i, 60)))
    assert printed == [None] * 20
    # gpu07 polls again, which closes the round: one line. It is the slowest so far (30 s
    # in, 200 s to go), and its GPU 2 the lowest img/s.
    low = {"gpu": 2, "mode": "fp32", "img_s": 812.0}
    text = fleet.polled("gpu07", _poll("amp_fp16", 30, 200, lowest=low))
    assert text == (
        "gpu check, 50 hosts: 20 running, 0 done, 30 waiting; slowest so far: gpu07 "
        "(amp_fp16 running, 30 s elapsed, about 200 s left); lowest img/s: gpu07 GPU 2 fp32 812"
    )
    # The next round: again one line, when a host polls a second time.
    others = [h for h in hosts[:20] if h != "gpu07"]
    assert [fleet.polled(h, _poll("amp_fp16", 40, 20)) for h in others] == [None] * 19
    assert fleet.polled("gpu00", _poll("amp_fp16_cl", 50, 10)).startswith(
        "gpu check, 50 hosts: 20 running"
    )
    for host in hosts:
        text = fleet.finished(host, _poll("done", 60, 0, "done"))
    assert text is not None and text.startswith("gpu check, 50 hosts: 0 running, 50 done")
    assert "slowest: " in text


def load_callback():
    path = REPO_ROOT / "callback_plugins" / "kindling_progress.py"
    spec = importlib.util.spec_from_file_location("kindling_progress", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _result(action, res, host="gpu1", task_name="Follow the measurement"):
    return SimpleNamespace(
        task=SimpleNamespace(action=action),
        result=res,
        host=SimpleNamespace(get_name=lambda: host),
        task_name=task_name,
    )


def test_the_callback_prints_progress_and_no_failed_on_a_retry():
    module = load_callback()
    callback = module.CallbackModule()
    shown = []
    callback._display = SimpleNamespace(display=lambda msg, **kw: shown.append(msg))
    callback.host_label = lambda result: result.host.get_name()
    callback._run_is_verbose = lambda result, verbosity=0: False
    callback.v2_runner_retry(
        _result(
            "gpu_throughput_progress_info",
            dict(_poll("fp32", 9, 70, "budget", done=0.0), retries=103, attempts=1),
        )
    )
    callback.v2_runner_retry(
        _result("ansible.builtin.uri", {"retries": 11, "attempts": 2}, task_name="Wait for it")
    )
    assert shown == [
        "gpu check [gpu1]: fp32 running, 9 s elapsed, at most 70 s left (0 of 3 modes done)",
        "RETRYING: [gpu1]: Wait for it (9 retries left).",
    ]
    assert module.CallbackModule.CALLBACK_TYPE == "stdout"
    assert issubclass(module.CallbackModule, module.DefaultCallback)


def test_the_callback_is_the_stdout_callback_for_people_and_for_molecule():
    cfg = (REPO_ROOT / "ansible.cfg").read_text()
    assert "callback_plugins = callback_plugins" in cfg
    assert re.search(r"^stdout_callback = kindling_progress$", cfg, re.M)
    # A stdout callback in callbacks_enabled would be skipped: it is not listed there.
    assert "kindling_progress" not in cfg.split("callbacks_enabled =")[1].splitlines()[0]
    assert re.search(r"^fleet_threshold = 4$", cfg, re.M)
    molecule = (REPO_ROOT / ".config" / "molecule" / "config.yml").read_text()
    assert "ANSIBLE_STDOUT_CALLBACK: kindling_progress" in molecule
    measure = (REPO_ROOT / "roles" / "gpu_check" / "tasks" / "measure.yml").read_text()
    follow = measure.split("gpu_throughput_progress_info:")[1].split("register:")[0]
    assert "profile: " in follow and "modes: " in follow  # what the estimate needs


PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: Start a job that takes three seconds
      ansible.builtin.command: sleep 3
      async: 60
      poll: 0
      register: job
    - name: Write its progress file
      ansible.builtin.copy:
        dest: "{{ dir }}/progress.json"
        content: '{"phase": "mode", "current": "fp32", "done": {}, "started_at": {{ now }}}'
    - name: Follow the measurement
      gpu_throughput_progress_info:
        progress_file: "{{ dir }}/progress.json"
        results_file: "{{ job.results_file }}"
        profile: quick
      register: progress
      until: progress.finished
      retries: 30
      delay: 1
"""


def test_a_real_playbook_with_an_until_loop_prints_progress_not_failed(tmp_path):
    """ansible-playbook with the project's ansible.cfg over a tiny local play that polls."""
    import time

    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
        ANSIBLE_ASYNC_DIR=str(tmp_path / "async"),
    )
    env.pop("ANSIBLE_STDOUT_CALLBACK", None)
    ansible_playbook = Path(sys.executable).parent / "ansible-playbook"
    cmd = [
        str(ansible_playbook), "-i", "localhost,", "-c", "local", str(play),
        "-e", f"ansible_python_interpreter={sys.executable}",
        "-e", f"dir={tmp_path}", "-e", f"now={time.time():.0f}",
    ]  # fmt: skip
    out = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "FAILED - RETRYING" not in out.stdout and "FAILED" not in out.stdout
    progress = re.findall(
        r"^gpu check \[localhost\]: fp32 running, \d+ s elapsed, at most \d+ s left "
        r"\(0 of 3 modes done\)$",
        out.stdout,
        re.M,
    )
    assert progress, out.stdout
    assert "TASK [Follow the measurement]" in out.stdout  # the default output otherwise


def test_fleet_report_prints_progress_from_the_runner_events():
    spec = importlib.util.spec_from_file_location(
        "fleet_report", REPO_ROOT / "tools" / "fleet_report.py"
    )
    fleet_report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fleet_report)
    out = io.StringIO()
    printer = fleet_report.ProgressPrinter(out)

    def event(kind, host, action, res=None, **data):
        return {
            "event": kind,
            "event_data": dict(data, host=host, task_action=action, res=res or {}),
        }

    assert printer({"event": "playbook_on_play_start", "event_data": {"play": "Verify"}})
    printer(event("runner_on_unreachable", "gone", "setup", {"msg": "ssh: timed out"}))
    printer(event("runner_on_ok", "gpu1", "gpu_throughput_measure", {"ansible_job_id": "1"}))
    printer(event("runner_retry", "gpu1", "gpu_throughput_progress_info", _poll("fp32", 12, 60)))
    printer(event("runner_retry", "gpu1", "async_status", {"finished": 0}))
    printer(
        event("runner_on_ok", "gpu1", "gpu_throughput_progress_info", _poll("done", 35, 0, "done"))
    )
    assert out.getvalue().splitlines() == [
        "fleet report: play Verify",
        "fleet report: gone unreachable: ssh: timed out",
        "fleet report: gpu check [gpu1]: fp32 running, 12 s elapsed, about 60 s left "
        "(1 of 3 modes done)",
    ]
