"""library/gpu_throughput_measure.py end to end, through
`ansible localhost -m gpu_throughput_measure`.

The judging and failure paths use tests/fixtures/throughput/fake_gpu_throughput.py, a
FAKE program that prints a fixed (constructed) report or exits with a chosen code. One
test runs the real program, the package directory kindling_bench, on the CPU with tiny
settings.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
ANSIBLE = VENV_BIN / "ansible"
ANSIBLE_DOC = VENV_BIN / "ansible-doc"
PY = sys.executable
PROGRAM = REPO_ROOT / "roles" / "gpu_check" / "files" / "kindling_bench"  # a package
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "throughput"
FAKE_PROGRAM = FIXTURES / "fake_gpu_throughput.py"  # FAKE: prints a fixed document
SLOW_DOC = FIXTURES / "h200_slow.json"

H200_GPU = {
    "index": 0,
    "name": "NVIDIA H200",
    "compute_capability": "9.0",
    "pcie_gen_current": 5,
    "pcie_gen_max": 5,
    "pcie_width_current": 16,
    "pcie_width_max": 16,
    "clock_event_reasons_active": ["gpu_idle"],
    "mig_mode": "Disabled",
}


def run_module(
    tmp_path: Path, args: Dict[str, Any], extra: Optional[List[str]] = None
) -> Dict[str, Any]:
    """Run the module on localhost; return its result with "failed" and "status" added.

    Ad-hoc ansible prints ``localhost | STATUS => {json}`` (the minimal callback).
    """
    env = dict(
        os.environ,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_CALLBACK_RESULT_FORMAT="json",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
    )
    for name in ("ANSIBLE_STDOUT_CALLBACK", "ANSIBLE_LOAD_CALLBACK_PLUGINS"):
        env.pop(name, None)
    cmd = [
        str(ANSIBLE),
        "localhost",
        "-i",
        "localhost,",
        "-c",
        "local",
        "-e",
        f"ansible_python_interpreter={PY}",
        "-m",
        "gpu_throughput_measure",
        "-a",
        json.dumps(args),
        *(extra or []),
    ]
    proc = subprocess.run(
        cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    output = proc.stdout + proc.stderr
    match = re.search(r"^localhost \| ([A-Z!]+)( =>)?", proc.stdout, re.MULTILINE)
    assert match, output
    result: Dict[str, Any] = {}
    if match.group(2):
        result, _ = json.JSONDecoder().raw_decode(proc.stdout[match.end() :].lstrip())
    result["status"] = match.group(1)
    result["failed"] = proc.returncode == 2
    assert proc.returncode in (0, 2), output
    assert result["failed"] == (match.group(1) == "FAILED!"), output
    result["_output"] = output
    return result


def fake_args(*fake: str, **params: Any) -> Dict[str, Any]:
    args: Dict[str, Any] = {
        "python": PY,
        "script": str(FAKE_PROGRAM),
        "extra_args": ["--fake-doc", str(SLOW_DOC), *fake],
    }
    args.update(params)
    return args


def test_documentation_renders() -> None:
    proc = subprocess.run(
        [str(ANSIBLE_DOC), "-M", "library", "gpu_throughput_measure"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    for word in ("tolerance", "fail_on_slow", "nvidia_smi", "EXAMPLES", "RETURN VALUES"):
        assert word in proc.stdout


@pytest.mark.slow
def test_real_program_on_cpu(tmp_path: Path) -> None:
    out_dir = tmp_path / "reports"
    result = run_module(
        tmp_path,
        {
            "python": PY,
            "script": str(PROGRAM),
            "device": "cpu",
            "modes": ["fp32", "amp_fp16"],
            "probes": [],
            "image_size": 32,
            "batch_size": 2,
            "output_dir": str(out_dir),
            "extra_args": ["--warmup", "1", "--steps", "1", "--windows", "2", "--threads", "1"],
        },
    )
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] is False
    assert result["gpu_key"] == "cpu" and result["gpu_name"] == "cpu"
    assert result["verdict"] == "not_run" and result["failed_modes"] == []
    assert result["diagnosis"] == []
    judgement = result["judgement"]
    assert set(judgement) == {"fp32", "amp_fp16"}
    fp32 = judgement["fp32"]
    for key in ("img_s", "reference", "ratio", "status", "source", "reference_batch", "mfu"):
        assert key in fp32
    assert fp32["status"] == "not_run" and fp32["img_s"] > 0 and fp32["reference"] is None
    assert judgement["amp_fp16"]["status"] == "not_run"
    assert judgement["amp_fp16"]["reason"].startswith("skipped: ")
    assert result["not_run"] == ["fp32", "amp_fp16"]
    (gpu,) = result["gpus"]  # one device: measured in-process, judged as GPU 0
    assert gpu["index"] == 0 and gpu["modes"]["fp32"]["img_s"] == fp32["img_s"]
    assert result["throughput"]["schema_version"] == 1
    assert result["throughput"]["modes"]["fp32"]["batch_size"] == 2
    assert result["output_file"] == str(out_dir / "gpu_throughput_measure.json")
    kept = json.loads((out_dir / "gpu_throughput_measure.json").read_text())
    assert kept["modes"]["fp32"]["img_s"] == fp32["img_s"]
    assert "--output" in result["cmd"] and "--peak-tflops" not in result["cmd"]
    assert result["summary"].startswith("cpu (cpu); NOT_RUN: 0 pass, 0 fail, 2 not_run")


def test_slow_mode_fails_with_measured_reference_and_causes(tmp_path: Path) -> None:
    facts = {"gpus": [dict(H200_GPU, pcie_gen_current=3, pcie_width_current=8)]}
    torch = {"built_cuda_version": "13.0", "cuda_available": True, "verdict": "ok",
             "arch_list": ["sm_80", "sm_90"]}  # fmt: skip
    result = run_module(tmp_path, fake_args(nvidia_smi=facts, torch_cuda=torch))
    assert result["failed"] is True and result["changed"] is False
    assert result["failed_modes"] == ["amp_fp16_cl"]
    msg = result["msg"]
    assert "amp_fp16_cl 3,000 img/s vs reference 6,180 (0.49" in msg
    assert "Kindling's gpu_throughput_measure.py" in msg
    assert "downgraded PCIe link: Gen3 x8 of a possible Gen5 x16" in msg
    assert result["diagnosis"] and "PCIe" in result["diagnosis"][0]
    judgement = result["judgement"]
    assert {m: e["status"] for m, e in judgement.items()} == {
        "fp32": "pass",
        "amp_fp16": "pass",
        "amp_fp16_cl": "fail",
    }
    assert judgement["amp_fp16_cl"]["reference"] == 6180.0
    assert judgement["amp_fp16_cl"]["ratio"] == pytest.approx(3000 / 6180, abs=1e-4)
    # The GPU was known from the facts before the run: the module passed its peaks.
    assert "--peak-tflops" in result["cmd"]


def test_fail_on_slow_false_only_warns(monkeypatch: Any, capsys: Any) -> None:
    result = call_module_in_process(monkeypatch, capsys, fake_args(fail_on_slow=False))
    assert not result.get("failed")
    assert result["failed_modes"] == ["amp_fp16_cl"] and result["verdict"] == "fail"
    warnings = json.dumps(result["warnings"])  # 2.19 returns structured warnings
    assert "amp_fp16_cl 3,000 img/s vs reference 6,180" in warnings
    assert "fail_on_slow=false" in warnings
    assert "nvidia_smi_facts" in result["diagnosis"][0]  # no facts were given


HEALTH_FACTS = {  # the shape of ansible_facts.nvidia_smi's findings
    "gpus": [H200_GPU],
    "health_notes": [
        {"code": "pcie-gen-idle-downtrain", "gpu": 0, "message": "GPU 0 idles at gen 1."}
    ],
    "health": [
        {"code": "xid-79", "gpu": 0, "message": "GPU 0 logged Xid 79 1 time(s) since boot."},
        {"code": "fabric-manager-missing", "gpu": None, "message": "no fabric manager runs."},
    ],
}


def test_health_codes_come_back_and_the_slow_message_names_the_failing_ones(
    monkeypatch: Any, capsys: Any
) -> None:
    args = fake_args(fail_on_slow=False, nvidia_smi=HEALTH_FACTS)
    result = call_module_in_process(monkeypatch, capsys, args)
    assert [(r["code"], r["gpu"], r["severity"]) for r in result["health_codes"]] == [
        ("xid-79", 0, "failing"),
        ("fabric-manager-missing", None, "failing"),
        ("pcie-gen-idle-downtrain", 0, "informational"),
    ]
    assert result["health_codes"][0]["remediation"].startswith("The GPU no longer answers")
    assert result["health_line"] == (
        "GPU health: FAILING xid-79 (GPU 0), fabric-manager-missing; "
        "notes: pcie-gen-idle-downtrain (GPU 0)"
    )
    warnings = json.dumps(result["warnings"])
    assert "Failing health codes: xid-79 (GPU 0), fabric-manager-missing." in warnings


def test_without_facts_the_health_is_unknown(monkeypatch: Any, capsys: Any) -> None:
    result = call_module_in_process(monkeypatch, capsys, fake_args(fail_on_slow=False))
    assert result["health_codes"] == []
    assert result["health_line"] == "GPU health: unknown (no nvidia_smi facts)"
    assert "Failing health codes" not in json.dumps(result["warnings"])


def test_passing_host(tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    doc = json.loads(SLOW_DOC.read_text())
    doc["modes"]["amp_fp16_cl"]["img_s"] = 6180.0 * 0.8  # exactly at the tolerance
    passing = tmp_path / "pass.json"
    passing.write_text(json.dumps(doc))
    args = fake_args()
    args["extra_args"] = ["--fake-doc", str(passing)]
    result = call_module_in_process(monkeypatch, capsys, args)
    assert not result.get("failed"), result.get("msg")
    assert result["verdict"] == "pass" and result["failed_modes"] == []
    assert result["judgement"]["amp_fp16_cl"]["status"] == "pass"
    assert result["gpu_key"] == "h200" and result["gpu_name"] == "NVIDIA H200"


def test_unknown_gpu_never_fails(monkeypatch: Any, capsys: Any) -> None:
    # A card with no datasheet row (the rented cards have one: test_gpu_throughput_ref.py).
    args = fake_args(gpu_name_override="NVIDIA GeForce GTX 1080")
    result = call_module_in_process(monkeypatch, capsys, args)
    assert not result.get("failed"), result.get("msg")
    assert result["gpu_key"] == "gtx-1080" and result["verdict"] == "not_run"
    assert {e["status"] for e in result["judgement"].values()} == {"not_run"}
    assert all("no datasheet row" in e["reason"] for e in result["judgement"].values())


def test_missing_program(tmp_path: Path) -> None:
    result = run_module(tmp_path, {"python": PY, "script": str(tmp_path / "nope.py")})
    assert result["failed"] is True
    assert "nope.py not found on the host" in result["msg"]
    assert "roles/gpu_check/files/kindling_bench" in result["msg"]


def test_a_directory_without_main_is_no_program(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    # A package directory is run through its __main__.py; a directory without one is refused.
    empty = tmp_path / "kindling_bench"
    empty.mkdir()
    result = call_module_in_process(monkeypatch, capsys, {"python": PY, "script": str(empty)})
    assert result["failed"] is True
    assert f"benchmark program {empty} not found on the host" in result["msg"]


def test_missing_interpreter(tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    args = {"python": str(tmp_path / "python"), "script": str(PROGRAM)}
    result = call_module_in_process(monkeypatch, capsys, args)
    assert result["failed"] is True
    assert "does not exist or is not executable" in result["msg"]


def test_non_zero_exit_through_ansible(tmp_path: Path) -> None:
    result = run_module(tmp_path, fake_args("--fake-exit", "4", "--fake-stderr", "FAKE stderr"))
    assert result["failed"] is True and result["rc"] == 4
    assert result["msg"].startswith("gpu_throughput_measure.py exited 4: CUDA was requested but ")
    assert "CPU-only torch wheel or a driver problem" in result["msg"]
    assert "FAKE stderr" in result["msg"] and result["stderr_tail"] == "FAKE stderr"


@pytest.mark.parametrize(
    "code, meaning",
    [
        (2, "the program rejected its arguments"),
        (3, "torch or torchvision is not importable with"),
        (4, "CPU-only torch wheel or a driver problem"),
        (1, "the program crashed"),
        (-9, "killed by signal 9"),
    ],
)
def test_non_zero_exit(monkeypatch: Any, capsys: Any, code: int, meaning: str) -> None:
    if code < 0:  # the FAKE program kills itself
        args = fake_args("--fake-kill", str(-code), "--fake-stderr", "FAKE stderr line")
    else:
        args = fake_args("--fake-exit", str(code), "--fake-stderr", "FAKE stderr line")
    result = call_module_in_process(monkeypatch, capsys, args)
    assert result["failed"] is True and result["rc"] == code
    assert result["msg"].startswith(f"gpu_throughput_measure.py exited {code}: ")
    assert meaning in result["msg"] and "FAKE stderr line" in result["msg"]


def test_no_json_on_stdout(monkeypatch: Any, capsys: Any) -> None:
    result = call_module_in_process(monkeypatch, capsys, fake_args("--fake-stdout", "not json"))
    assert result["failed"] is True
    assert "did not produce a JSON report" in result["msg"] and "'not json'" in result["msg"]


def test_timeout_kills_the_program(tmp_path: Path) -> None:
    result = run_module(tmp_path, fake_args("--fake-sleep", "60", timeout=2))
    assert result["failed"] is True
    assert "did not finish within timeout=2 s and was killed" in result["msg"]
    assert "--max-seconds" in result["cmd"]  # the module also lowered the program's budget


def call_module_in_process(monkeypatch: Any, capsys: Any, args: Dict[str, Any]) -> Dict[str, Any]:
    import gpu_throughput_measure
    from ansible.module_utils import basic

    payload = json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode()
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", payload)
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy", raising=False)
    with pytest.raises(SystemExit):
        gpu_throughput_measure.main()
    return json.loads(capsys.readouterr().out)


def test_check_mode_does_not_run(tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    # The script does not even exist: in check mode nothing is looked at or run.
    result = run_module(tmp_path, {"script": str(tmp_path / "absent.py")}, ["--check"])
    assert not result["failed"] and result["status"] == "SKIPPED"
    # The module's own result, in-process (conftest puts library/ on sys.path).
    result = call_module_in_process(
        monkeypatch, capsys, {"script": str(tmp_path / "absent.py"), "_ansible_check_mode": True}
    )
    assert result["skipped"] is True and result["changed"] is False
    assert result["msg"] == "check mode: the GPU throughput benchmark was not run"
    assert "failed" not in result


def test_bad_tolerance(monkeypatch: Any, capsys: Any) -> None:
    result = call_module_in_process(monkeypatch, capsys, fake_args(tolerance=1.5))
    assert result["failed"] is True and "tolerance must be in (0, 1]" in result["msg"]


EIGHT_DOC = FIXTURES / "h200x8_one_gpu_behind.json"  # CONSTRUCTED: see its README


def eight_gpu_facts(slow_link: bool) -> Dict[str, Any]:
    gpus = [
        dict(H200_GPU, index=i, pci_bus_id=f"00000000:{0x18 + 0x10 * i:02X}:00.0") for i in range(8)
    ]
    if slow_link:
        gpus[5].update(pcie_gen_current=3, pcie_width_current=8)
    return {"gpus": gpus}


def test_a_gpu_behind_its_host_fails_it_with_bus_id_and_cause(tmp_path: Path) -> None:
    args = fake_args(nvidia_smi=eight_gpu_facts(slow_link=True))
    args["extra_args"][1] = str(EIGHT_DOC)
    result = run_module(tmp_path, args)
    assert result["failed"] is True and result["verdict"] == "fail"
    assert result["failed_modes"] == []  # every mode passes the table on every GPU
    (outlier,) = result["gpu_outliers"]
    assert outlier["gpu"] == 5 and outlier["mode"] == "amp_fp16_cl"
    assert outlier["bus_id"] == "00000000:68:00.0"  # filled in from the nvidia-smi facts
    gpus = {g["index"]: g for g in result["gpus"]}
    assert len(gpus) == 8 and gpus[5]["verdict"] == "fail"
    assert {gpus[i]["verdict"] for i in gpus if i != 5} == {"pass"}
    assert gpus[5]["modes"]["amp_fp16_cl"]["status"] == "pass"  # the table alone passes it
    assert gpus[5]["modes"]["amp_fp16_cl"]["vs_host"] == pytest.approx(5200 / 6155, abs=1e-3)
    cause = result["diagnosis"][0]
    assert cause.startswith("GPU 5 (00000000:68:00.0) trains amp_fp16_cl at 5,200 img/s, 84%")
    assert "passes the table" in cause and "downgraded PCIe link: Gen3 x8" in cause
    assert "GPU 5 trails the host's other GPUs in amp_fp16_cl" in result["msg"]


def test_every_gpu_passing_and_require_all(tmp_path: Path) -> None:
    # The slow GPU's facts look healthy, and a margin of 20% lets it through.
    args = fake_args(nvidia_smi=eight_gpu_facts(slow_link=False), gpu_margin=0.2)
    args["extra_args"][1] = str(EIGHT_DOC)
    result = run_module(tmp_path, args)
    assert not result["failed"], result.get("msg")
    assert result["verdict"] == "pass" and result["gpu_outliers"] == []
    assert result["not_run"] == [] and result["probes_judged"]["h2d"]["status"] == "pass"
    # require_all with a mode the table has no row for (amp_bf16 on the fake's H200 doc
    # is absent, so ask the fake for a GPU the table does not know).
    args = fake_args(require_all=True, gpu_name_override="NVIDIA GeForce GTX 1080")
    result = run_module(tmp_path, args)
    assert result["failed"] is True and result["verdict"] == "fail"
    assert result["not_run"] == ["fp32", "amp_fp16", "amp_fp16_cl"]
    assert "every check is required (require_all)" in result["msg"]


def test_bad_gpu_margin_is_refused(tmp_path: Path) -> None:
    result = run_module(tmp_path, fake_args(gpu_margin=1.0))
    assert result["failed"] is True and "gpu_margin must be in (0, 1), got 1.0" in result["msg"]


def test_the_progress_file_is_passed_on_and_a_stale_one_removed(tmp_path: Path) -> None:
    stale = tmp_path / "progress.json"
    stale.write_text('{"phase": "done", "done": {"fp32": {"status": "ok", "img_s": 1}}}')
    result = run_module(tmp_path, fake_args(progress_file=str(stale)))
    assert result["cmd"][result["cmd"].index("--progress") + 1] == str(stale)
    assert not stale.exists()  # the FAKE program writes none; the last run's is gone


def test_the_progress_module_reads_the_files_and_the_job(tmp_path: Path) -> None:
    progress = tmp_path / "progress.json"
    progress.write_text(
        json.dumps({"phase": "mode", "current": "fp32", "started_at": time.time() - 5})
    )
    job = tmp_path / "job"
    job.write_text(json.dumps({"started": True, "finished": False}))
    args = {"progress_file": str(progress), "results_file": str(job)}
    env = dict(
        os.environ,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "t"),
        ANSIBLE_CALLBACK_RESULT_FORMAT="json",
    )
    cmd = [str(ANSIBLE), "localhost", "-i", "localhost,", "-c", "local", "-e",
           f"ansible_python_interpreter={PY}", "-m", "gpu_throughput_progress_info", "-a",
           json.dumps(args)]  # fmt: skip
    out = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert '"finished": false' in out.stdout
    assert re.search(r'"line": "\[\d+ s\] mode fp32 running"', out.stdout), out.stdout
    job.write_text(json.dumps({"changed": False, "verdict": "pass"}))
    out = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert '"finished": true' in out.stdout and '"changed": false' in out.stdout
