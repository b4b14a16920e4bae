"""The busy-GPU policy (gpu_check_busy_gpu: skip | wait | measure) and its module wiring.

The decision (module_utils/gpu_busy.decide) is driven by a fake reader and a fake clock.
The readings are the REAL H100 ones of tests/fixtures/captures/h100-contention/ (idle,
busy, memheld) and CONSTRUCTED two-GPU documents built from them in code (``two_gpus``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest
from ansible.module_utils import gpu_busy
from ansible.module_utils import nvidia_smi as ns
from test_gpu_throughput_module import call_module_in_process, fake_args

REPO_ROOT = Path(__file__).resolve().parents[2]
REAL = REPO_ROOT / "tests" / "fixtures" / "captures" / "h100-contention"


def reading(prefix: str) -> Dict[str, Any]:
    return ns.parse_xml((REAL / f"{prefix}-q.xml").read_text())


def two_gpus(first: str, second: str) -> Dict[str, Any]:
    """CONSTRUCTED: two real one-GPU readings as GPU 0 and GPU 1 of one host."""
    a, b = reading(first), reading(second)
    gpu1 = dict(b["gpus"][0], index=1)
    return dict(a, gpu_count=2, gpus=[a["gpus"][0], gpu1])


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: List[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def reader(sequence: List[Dict[str, Any]]):
    """A fake nvidia-smi: each call returns the next reading; the last one repeats."""
    calls = {"n": 0}

    def read() -> Dict[str, Any]:
        calls["n"] += 1
        return sequence[min(calls["n"], len(sequence)) - 1]

    return read


def test_skip_leaves_the_busy_gpu_out_at_once() -> None:
    clock = FakeClock()
    decision = gpu_busy.decide(
        "skip", 120, reader([two_gpus("idle", "memheld")]), clock, clock.sleep
    )
    assert decision["reads"] == 1 and clock.sleeps == []
    assert decision["busy"] == [1] and decision["skipped"] == [1] and decision["measure"] == [0]
    assert [g["skipped"] for g in decision["gpus"]] == [False, True]
    assert decision["gpus"][1]["why"] == ["process", "memory"]


def test_wait_measures_a_gpu_that_becomes_free() -> None:
    clock = FakeClock()
    sequence = [reading("busy"), reading("busy"), reading("idle")]
    decision = gpu_busy.decide("wait", 120, reader(sequence), clock, clock.sleep, interval=5)
    assert decision["reads"] == 3 and clock.sleeps == [5, 5]
    assert decision["busy_at_start"] == [0] and decision["busy"] == []
    assert decision["skipped"] == [] and decision["measure"] == [0]
    assert decision["waited_s"] == 10.0


def test_wait_gives_up_after_busy_wait_then_skips() -> None:
    clock = FakeClock()
    decision = gpu_busy.decide("wait", 12, reader([reading("busy")]), clock, clock.sleep, 5)
    # reads at 0, 5, 10 and 12 s: never longer than the wait
    assert clock.sleeps == [5, 5, 2] and decision["reads"] == 4
    assert decision["skipped"] == [0] and decision["measure"] == []
    assert gpu_busy.skipped_text(decision) == [
        "GPU 0 (NVIDIA H100 80GB HBM3) not measured: busy after waiting 12 s: another "
        "process uses it: pid 448 (python3, 964 MiB)"
    ]


def test_wait_zero_is_skip() -> None:
    clock = FakeClock()
    decision = gpu_busy.decide("wait", 0, reader([reading("memheld")]), clock, clock.sleep)
    assert decision["reads"] == 1 and decision["skipped"] == [0]


def test_measure_runs_every_gpu_and_keeps_the_busy_list() -> None:
    clock = FakeClock()
    decision = gpu_busy.decide("measure", 120, reader([reading("busy")]), clock, clock.sleep)
    assert decision["busy"] == [0] and decision["skipped"] == [] and decision["measure"] == [0]
    assert clock.sleeps == []


def test_an_idle_host_is_measured_whole_at_the_first_read() -> None:
    clock = FakeClock()
    decision = gpu_busy.decide("wait", 120, reader([reading("idle")]), clock, clock.sleep)
    assert decision["reads"] == 1 and decision["busy"] == [] and decision["measure"] == [0]


def test_an_unreadable_nvidia_smi_measures_every_gpu() -> None:
    def broken() -> Dict[str, Any]:
        raise ValueError("nvidia-smi exited 9")

    clock = FakeClock()
    decision = gpu_busy.decide("wait", 120, broken, clock, clock.sleep)
    assert decision["measure"] is None and decision["skipped"] == []
    assert "nvidia-smi exited 9" in decision["error"]


def test_only_the_gpus_the_program_would_measure_are_decided() -> None:
    clock = FakeClock()
    decision = gpu_busy.decide(
        "skip", 0, reader([two_gpus("memheld", "idle")]), clock, clock.sleep, wanted=[1]
    )
    assert decision["skipped"] == [] and decision["measure"] == [1]


def test_bad_policy_and_wait_are_refused() -> None:
    clock = FakeClock()
    with pytest.raises(ValueError, match="skip, wait, measure"):
        gpu_busy.decide("later", 1, reader([reading("idle")]), clock, clock.sleep)
    with pytest.raises(ValueError, match=">= 0"):
        gpu_busy.decide("wait", -1, reader([reading("idle")]), clock, clock.sleep)


def test_gpus_argument_and_the_gpus_wanted() -> None:
    assert gpu_busy.gpus_arg([3]) == "3," and gpu_busy.gpus_arg([0, 2]) == "0,2"
    assert gpu_busy.wanted_gpus(None, [0, 1, 2]) == [0, 1, 2]
    assert gpu_busy.wanted_gpus("2", [0, 1, 2]) == [0, 1]
    assert gpu_busy.wanted_gpus("1,2", [0, 1, 2]) == [1, 2]


def test_the_program_tree_from_proc() -> None:
    parents = {10: 1, 11: 10, 12: 11, 13: 10, 20: 1}
    assert gpu_busy.descendants(10, parents) == {10, 11, 12, 13}
    assert 1 in gpu_busy.proc_parents() or gpu_busy.proc_parents()  # this host's /proc


def test_with_gpus_replaces_an_earlier_value() -> None:
    import gpu_throughput_measure

    cmd = ["py", "bench", "--gpus", "all", "--profile", "quick", "--gpus=2"]
    assert gpu_throughput_measure.with_gpus(cmd, [1]) == [
        "py",
        "bench",
        "--profile",
        "quick",
        "--gpus",
        "1,",
    ]
    assert gpu_throughput_measure.option_value(["--gpus=0,1"], "--gpus") == "0,1"


# ----------------------------------------------------------------------------- the module


def fake_smi(monkeypatch: Any, parsed: Dict[str, Any]) -> None:
    import gpu_throughput_measure
    from ansible.module_utils.basic import AnsibleModule

    monkeypatch.setattr(gpu_throughput_measure, "read_smi", lambda smi: parsed)
    monkeypatch.setattr(gpu_throughput_measure, "pid_visible", lambda pid: True)
    monkeypatch.setattr(AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/fake/smi")


def test_module_every_gpu_busy_does_not_run_the_program(monkeypatch: Any, capsys: Any) -> None:
    fake_smi(monkeypatch, reading("memheld"))
    args = fake_args("--fake-exit", "9", busy_gpu="skip")  # the program would fail if run
    result = call_module_in_process(monkeypatch, capsys, args)
    assert result["failed"] and result["verdict"] == "not_measured"
    assert result["headline"] == "could not measure"
    assert result["msg"].startswith("could not measure: every GPU is busy: GPU 0")
    assert "pid 559 (python3, 76294 MiB)" in result["msg"]
    assert "cmd" not in result or "--fake-exit" in " ".join(result["cmd"])
    assert result["not_measured"] == [0] and result["busy"]["skipped"] == [0]
    assert [c["code"] for c in result["causes"]] == ["gpu-busy"]
    assert "NOT MEASURED: busy (pid 559" in result["summary"]
    assert "rc" not in result  # the program never ran


def test_module_measure_names_the_process_first(monkeypatch: Any, capsys: Any) -> None:
    fake_smi(monkeypatch, reading("busy"))
    args = fake_args(busy_gpu="measure", nvidia_smi=ns.build_facts(
        (REAL / "idle-q.xml").read_text()))  # fmt: skip
    result = call_module_in_process(monkeypatch, capsys, args)
    assert result["failed"] and result["verdict"] == "fail" and result["headline"] == "is slow"
    assert result["busy"]["busy"] == [0] and result["not_measured"] == []
    assert result["causes"][0]["code"] == "gpu-busy"
    assert "pid 448 (python3, 964 MiB)" in result["diagnosis"][0]
    assert "contention" in result


def test_module_skips_one_busy_gpu_of_two(monkeypatch: Any, capsys: Any) -> None:
    fake_smi(monkeypatch, two_gpus("idle", "memheld"))
    result = call_module_in_process(monkeypatch, capsys, fake_args(busy_gpu="skip"))
    assert result["cmd"][-2:] == ["--gpus", "0,"]
    assert result["not_measured"] == [1]
    assert result["causes"][0]["code"] == "gpu-busy" and result["causes"][0]["gpu"] == 1
    assert "GPU 1 NOT MEASURED: busy (pid 559" in result["summary"]


def test_module_full_profile_leaves_the_busy_gpu_out_of_every_mode_and_ddp(
    monkeypatch: Any, capsys: Any
) -> None:
    # CONSTRUCTED: eight real idle readings as GPUs 0-7, GPU 5 the real memheld one. The
    # program gets the kept GPUs as --gpus: its single-GPU modes, its probes and its ddp
    # world are those GPUs (tests/unit/test_gpu_throughput_program.py runs the program so).
    idle, held = reading("idle"), reading("memheld")
    gpus = [dict((held if i == 5 else idle)["gpus"][0], index=i) for i in range(8)]
    fake_smi(monkeypatch, dict(idle, gpu_count=8, gpus=gpus))
    args = fake_args(busy_gpu="skip", profile="full")
    result = call_module_in_process(monkeypatch, capsys, args)
    cmd = result["cmd"]
    assert cmd[cmd.index("--profile") + 1] == "full"
    assert cmd[-2:] == ["--gpus", "0,1,2,3,4,6,7"] and cmd.count("--gpus") == 1
    assert "--world-size" not in cmd  # ddp's world follows --gpus
    assert result["not_measured"] == [5] and result["busy"]["measure"] == [0, 1, 2, 3, 4, 6, 7]
