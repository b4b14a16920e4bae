"""The causes of a slow or unmeasured GPU, from the real H100 readings with another process.

tests/fixtures/captures/h100-contention/ holds REAL readings (verbatim copies of the shared
set): idle, busy (another process running a bf16 matmul at the 700 W cap) and memheld
(another process holding 74 GiB). The other readings here are CONSTRUCTED: each is the real
idle reading with named elements changed in code (``constructed()``), and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest
from ansible.module_utils import gpu_busy
from ansible.module_utils import nvidia_smi as ns
from ansible.module_utils.gpu_throughput_ref import (
    CAUSE_CODES,
    busy_causes,
    diagnose,
    diagnose_causes,
    headline,
    not_measured_line,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
REAL = REPO_ROOT / "tests" / "fixtures" / "captures" / "h100-contention"


def real(prefix: str) -> str:
    return (REAL / f"{prefix}-q.xml").read_text()


def facts(text: str) -> Dict[str, Any]:
    return ns.build_facts(text)


def constructed(**changes: str) -> str:
    """CONSTRUCTED: the real idle H100 reading with these elements' text replaced.

    Keys are element tags; a clock-event reason is named without its prefix
    (``hw_slowdown="Active"``).
    """
    text = real("idle")
    for tag, value in changes.items():
        if f"<clocks_event_reason_{tag}>" in text:
            tag = f"clocks_event_reason_{tag}"
        start = text.index(f"<{tag}>") + len(f"<{tag}>")
        end = text.index(f"</{tag}>", start)
        text = text[:start] + value + text[end:]
    return text


def codes(rows: List[Dict[str, Any]]) -> List[str]:
    return [r["code"] for r in rows]


# ----------------------------------------------------------------------------- parsing


def test_the_real_readings_parse_processes_utilisation_and_reasons() -> None:
    idle, busy, held = (facts(real(p))["gpus"][0] for p in ("idle", "busy", "memheld"))
    assert idle["processes"] == [] and idle["utilization_gpu_pct"] == 0
    assert busy["processes"] == [
        {"pid": 448, "type": "C", "name": "python3", "used_memory_mib": 964}
    ]
    assert (busy["utilization_gpu_pct"], busy["utilization_memory_pct"]) == (99, 42)
    assert busy["clock_event_reasons_active"] == ["sw_power_cap"]
    assert (busy["power_limit_w"], busy["power_default_limit_w"]) == (700.0, 700.0)
    assert held["processes"][0]["used_memory_mib"] == 76294
    assert held["memory_used_mib"] == 76303 and held["utilization_gpu_pct"] == 0


def test_the_real_busy_reading_has_no_power_fault_in_health() -> None:
    busy = facts(real("busy"))
    assert busy["health"] == []
    (note,) = busy["health_notes"]
    assert note["code"] == "power-cap-reached" and "99% utilisation" in note["message"]
    assert "not a power fault" in note["message"]


# ----------------------------------------------------------------------------- real readings


def test_idle_reading_is_not_busy_and_names_no_cause() -> None:
    (state,) = [gpu_busy.gpu_state(g) for g in facts(real("idle"))["gpus"]]
    assert state["busy"] is False and state["why"] == []
    rows = diagnose_causes(["amp_fp16"], facts(real("idle")))
    assert codes(rows) == ["no-host-cause"]


def test_busy_reading_names_the_matmul_process_first_and_no_power_fault() -> None:
    smi = facts(real("busy"))
    rows = diagnose_causes(["amp_fp16"], smi)
    assert codes(rows) == ["gpu-busy", "power-cap-reached"]
    first = rows[0]
    assert first["gpu"] == 0 and first["fault"] is True
    assert "pid 448 (python3, 964 MiB)" in first["message"]
    assert "Stop process 448" in first["remedy"]
    cap = rows[1]
    assert cap["fault"] is False and "another process's load" in cap["message"]
    text = " ".join(diagnose(["amp_fp16"], smi))
    assert "Check cooling" not in text and "power supply" not in text


def test_busy_reading_is_busy_before_the_check() -> None:
    (state,) = [gpu_busy.gpu_state(g) for g in facts(real("busy"))["gpus"]]
    assert state["busy"] and state["why"] == ["process", "utilization"]
    assert gpu_busy.busy_text(state) == "another process uses it: pid 448 (python3, 964 MiB)"


def test_memheld_reading_is_not_measured_naming_the_process_and_its_memory() -> None:
    parsed = ns.parse_xml(real("memheld"))
    decision = gpu_busy.decide("skip", 0, lambda: parsed, lambda: 0.0, lambda s: None)
    assert decision["skipped"] == [0] and decision["measure"] == []
    (row,) = busy_causes(decision)
    assert row["code"] == "gpu-busy" and row["gpu"] == 0
    assert row["message"] == (
        "GPU 0 (NVIDIA H100 80GB HBM3) not measured: busy: another process uses it: "
        "pid 559 (python3, 76294 MiB)."
    )
    assert not_measured_line(decision) == "GPU 0 NOT MEASURED: busy (pid 559 (python3, 76294 MiB))"
    assert headline(None, "not_measured") == "could not measure"
    # nothing failed, yet the GPU left out is a cause
    assert codes(diagnose_causes([], None, busy=decision)) == ["gpu-busy"]


def test_a_process_seen_during_the_measurement_is_named_first() -> None:
    contention = gpu_busy.new_contention()
    gpu_busy.add_sample(contention, ns.parse_xml(real("busy")), own_pids={999}, measured=[0],
                        seconds=5.0)  # fmt: skip
    summary = gpu_busy.finish_contention(contention)
    (gpu,) = summary["gpus"]
    assert gpu["foreign_processes"][0]["pid"] == 448 and gpu["utilization_gpu_max"] == 99
    assert gpu["clock_event_reasons_seen"] == ["sw_power_cap"]
    # the facts were read idle, before the measurement; the sample saw the other process
    rows = diagnose_causes(["amp_fp16"], facts(real("idle")), contention=summary)
    assert codes(rows) == ["gpu-busy", "power-cap-reached"]
    assert "during the measurement: pid 448 (python3, 964 MiB)" in rows[0]["message"]


def test_the_benchmark_own_process_is_not_foreign() -> None:
    contention = gpu_busy.new_contention()
    gpu_busy.add_sample(contention, ns.parse_xml(real("busy")), {448}, [0], 5.0)
    (gpu,) = gpu_busy.finish_contention(contention)["gpus"]
    assert gpu["foreign_processes"] == [] and gpu["hidden_processes_max"] == 0


# ----------------------------------------------------------------------------- constructed


@pytest.mark.parametrize(
    ("reason", "code", "words"),
    [
        ("hw_slowdown", "hw-slowdown", "hardware slowdown engaged"),
        ("sw_thermal_slowdown", "thermal-slowdown", "for heat (sw_thermal_slowdown"),
        ("hw_thermal_slowdown", "thermal-slowdown", "for heat (hw_thermal_slowdown"),
        ("hw_power_brake_slowdown", "power-brake", "hardware power brake"),
    ],
)
def test_constructed_throttle_reasons_each_have_their_own_cause(
    reason: str, code: str, words: str
) -> None:
    smi = facts(constructed(gpu_idle="Not Active", **{reason: "Active"}))
    (row,) = diagnose_causes(["fp32"], smi)
    assert row["code"] == code and row["fault"] and words in row["message"] and row["remedy"]
    assert code in CAUSE_CODES
    # and a health problem of the same code
    assert [h["code"] for h in smi["health"]] == [code]


def test_constructed_sw_power_cap_under_own_load_is_no_fault() -> None:
    smi = facts(constructed(sw_power_cap="Active", gpu_util="100 %"))
    assert smi["health"] == []
    cap, none = diagnose_causes(["fp32"], smi)
    assert (cap["code"], cap["fault"], none["code"]) == (
        "power-cap-reached",
        False,
        "no-host-cause",
    )
    assert "under load (sw_power_cap)" in cap["message"]


def test_constructed_lowered_power_limit() -> None:
    smi = facts(constructed(current_power_limit="450.00 W", sw_power_cap="Active"))
    assert [n["code"] for n in smi["health_notes"]] == ["power-cap-reached", "power-limit-lowered"]
    rows = diagnose_causes(["fp32"], smi)
    assert codes(rows) == ["power-limit-lowered", "power-cap-reached"]
    assert "lowered to 450 W of 700 W" in rows[0]["message"]
    assert "nvidia-smi -i 0 -pl 700" in rows[0]["remedy"]
    assert "the limit itself is lowered" in rows[1]["message"]


HIDDEN_PROCESSES = (
    "<processes>\n"
    "\t\t\t<process_info>\n"
    "\t\t\t\t<gpu_instance_id>N/A</gpu_instance_id>\n"
    "\t\t\t\t<compute_instance_id>N/A</compute_instance_id>\n"
    "\t\t\t\t<pid>3999999</pid>\n"
    "\t\t\t\t<type>C</type>\n"
    "\t\t\t\t<process_name>python3</process_name>\n"
    "\t\t\t\t<used_memory>20480 MiB</used_memory>\n"
    "\t\t\t</process_info>\n"
    "\t\t\t<process_info>\n"
    "\t\t\t\t<pid>4000000</pid>\n"
    "\t\t\t\t<type>C</type>\n"
    "\t\t\t\t<process_name></process_name>\n"
    "\t\t\t\t<used_memory>512 MiB</used_memory>\n"
    "\t\t\t</process_info>\n"
    "\t\t</processes>"
)


def test_constructed_processes_a_container_hides() -> None:
    # CONSTRUCTED: the idle reading with two processes of another PID namespace (one pid
    # this host's /proc lacks, one without a name)
    text = real("idle").replace("<processes>\n\t\t</processes>", HIDDEN_PROCESSES)
    assert text != real("idle")
    parsed = ns.parse_xml(text)
    (state,) = [gpu_busy.gpu_state(g, pid_visible=lambda pid: False) for g in parsed["gpus"]]
    assert state["busy"] and state["processes"] == [] and state["hidden_processes"] == 2
    assert gpu_busy.busy_text(state).startswith(
        "nvidia-smi reports 2 processes on GPU 0 that this host cannot see"
    )
    decision = gpu_busy.decide(
        "skip", 0, lambda: parsed, lambda: 0.0, lambda s: None, pid_visible=lambda pid: False
    )
    (row,) = busy_causes(decision)
    assert row["code"] == "gpu-busy-hidden"
    # measured anyway: the cause counts them, first
    measured = gpu_busy.decide(
        "measure", 0, lambda: parsed, lambda: 0.0, lambda s: None, pid_visible=lambda pid: False
    )
    rows = diagnose_causes(["fp32"], ns.build_facts(text), busy=measured)
    assert rows[0]["code"] == "gpu-busy-hidden"
    assert rows[0]["message"].startswith(
        "nvidia-smi reports 2 processes on GPU 0 that this host cannot see"
    )


def test_one_hidden_process_on_a_measured_gpu_may_be_the_benchmark() -> None:
    # CONSTRUCTED: nvidia-smi prints the benchmark's pid from another namespace
    text = real("busy")
    contention = gpu_busy.new_contention()
    gpu_busy.add_sample(contention, ns.parse_xml(text), {12}, [0], 5.0, lambda pid: False)
    (gpu,) = gpu_busy.finish_contention(contention)["gpus"]
    assert gpu["hidden_processes_max"] == 0


def test_every_cause_has_the_structured_shape_and_a_known_code() -> None:
    smi = facts(constructed(hw_slowdown="Active", current_power_limit="450.00 W"))
    for row in diagnose_causes(["fp32"], smi, {"verdict": "driver too old"}):
        assert set(row) == {"code", "gpu", "message", "remedy", "fault"}
        assert row["code"] in CAUSE_CODES


def test_headlines_say_what_happened() -> None:
    slow = {"failed_modes": ["fp32"], "modes": {"fp32": {"status": "fail", "ratio": 0.5}}}
    assert headline(slow, "fail") == "is slow"
    crashed = {"failed_modes": ["fp32"], "modes": {"fp32": {"status": "fail", "ratio": None}}}
    assert headline(crashed, "fail") == "could not measure"
    probe = {"failed_modes": [], "modes": {"fp32": {"status": "pass", "ratio": 1.0}}}
    assert headline(probe, "fail") == "failed the check"
    # A passing host is not announced as failing (gpu-check.json carried "failed the check"
    # for passing hosts before).
    assert headline(slow, "pass") == "passed the check"
    assert headline(None, "pass") == "passed the check"


def test_the_headline_line_names_the_host_and_never_calls_an_unmeasured_host_slow() -> None:
    from ansible.module_utils.gpu_throughput_ref import headline_line

    assert headline_line("is slow", "gpu07", ["x"]) == "gpu07 is slow"
    assert headline_line("failed the check", None, []) == "this host failed the check"
    line = headline_line("could not measure", "gpu07", ["GPU 0 is busy: pid 559", "second"])
    assert line == "could not measure gpu07: GPU 0 is busy: pid 559"
    assert headline_line("could not measure", "gpu07", []) == "could not measure gpu07: no mode ran"
