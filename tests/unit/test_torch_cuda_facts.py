"""module_utils/torch_probe.py and library/torch_cuda_facts.py.

The probe really runs: in fake interpreters (tests/fixtures/bin/) whose `torch` is a
stand-in package driven by tests/fixtures/bin/fake_torch/cases/*.json; the H200 case
reports the values of the real capture tests/fixtures/captures/h200/torch-facts.json.
A last test uses a real torch when some interpreter here has one (skipped otherwise).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest
import torch_cuda_facts
from ansible.module_utils import torch_probe as tp
from ansible.module_utils.testing import patch_module_args
from conftest import CAPTURES, REPO_ROOT
from test_nvidia_smi_facts import run_adhoc

BIN = REPO_ROOT / "tests" / "fixtures" / "bin"
CAPTURE = json.loads((CAPTURES / "torch-facts.json").read_text())


@pytest.fixture(autouse=True)
def _base_python(monkeypatch):
    """The fake interpreters wrap the interpreter running the tests."""
    monkeypatch.setenv("KINDLING_FAKE_PYTHON_BASE", sys.executable)


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        torch_cuda_facts.main()
    captured = capsys.readouterr().out
    return exc.value.code != 0, json.loads(captured)


def fake(case, monkeypatch):
    monkeypatch.setenv("KINDLING_FAKE_TORCH", case)
    return str(BIN / "fake-torch-python")


def torch_facts(result):
    return result["ansible_facts"]["torch_cuda"]


def check(facts, name):
    (found,) = [c for c in facts["verdict"]["checks"] if c["name"] == name]
    return found


def probe(python):
    proc = subprocess.run(
        tp.probe_command(python), capture_output=True, text=True, cwd="/", check=False
    )
    return tp.normalize(tp.parse_probe_output(proc.stdout))


H200_FACTS = {
    "importable": True,
    "torch_version": "2.11.0+cu130",
    "built_cuda_version": "13.0",
    "cpu_only_build": False,
    "cudnn_version": "9.19.0",
    "cuda_available": True,
    "driver_cuda_version": "13.0",
    "device_count": 1,
    "devices": [
        {
            "index": 0,
            "name": "NVIDIA H200",
            "capability": "9.0",
            "sm": "sm_90",
            # torch's total_memory: nvidia-smi's total (143771 MiB) less its reserved 616 MiB
            "memory_total_mib": 143155,
        }
    ],
    "arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
    "nccl_version": "2.28.9",
    "bf16_supported": True,
    "tensor_ops": [{"index": 0, "ok": True, "value": 262144.0}],
    "cuda_warnings": [],
    "cuda_error": None,
}


# ---------------------------------------------------------------------------
# torch_probe helpers
# ---------------------------------------------------------------------------


def test_probe_source_is_one_python_program():
    compile(tp.PROBE_SOURCE, "<probe>", "exec")
    assert tp.PROBE_MARKER in tp.PROBE_SOURCE
    assert tp.probe_command("/x/python") == ["/x/python", "-c", tp.PROBE_SOURCE]
    assert tp.DEFAULT_PYTHON == "/opt/conda/envs/pytorch/bin/python"
    # the module carries no copy of the probe
    module_text = (REPO_ROOT / "library" / "torch_cuda_facts.py").read_text()
    assert "warnings.catch_warnings" not in module_text and "MARK =" not in module_text


def test_parse_probe_output():
    out = 'noise\nKINDLING_TORCH_PROBE={"a": 1}\nmore\nKINDLING_TORCH_PROBE={"a": 2}\n'
    assert tp.parse_probe_output(out) == {"a": 2}
    for bad, text in [
        ("nothing here", "no result line"),
        ("KINDLING_TORCH_PROBE={oops", "malformed"),
        ("KINDLING_TORCH_PROBE=[1]", "not an object"),
    ]:
        with pytest.raises(ValueError, match=text):
            tp.parse_probe_output(bad)


@pytest.mark.parametrize(
    ("value", "text"),
    [(91900, "9.19.0"), (90100, "9.1.0"), (8907, "8.9.7"), (8302, "8.3.2"), (None, None)],
)
def test_cudnn_version_string(value, text):
    assert tp.cudnn_version_string(value) == text


def test_version_strings_odd_inputs():
    assert tp.cudnn_version_string("") is None
    assert tp.cudnn_version_string("9.x") == "9.x"
    assert tp.nccl_version_string([2, 28, 9]) == "2.28.9"
    assert tp.nccl_version_string((2, 21, 5)) == "2.21.5"
    assert tp.nccl_version_string(21003) == "2.10.3"
    assert tp.nccl_version_string(2708) == "2.7.8"
    assert tp.nccl_version_string(None) is None and tp.nccl_version_string("") is None
    assert tp.nccl_version_string("weird") == "weird"
    assert tp.driver_cuda_string(13000) == "13.0"
    assert tp.driver_cuda_string(11040) == "11.4"
    assert tp.driver_cuda_string(12080) == "12.8"
    assert tp.driver_cuda_string(None) is None and tp.driver_cuda_string("x") is None


def test_normalize_keeps_device_errors():
    facts = tp.normalize(
        {
            "importable": True,
            "torch_version": "2.4.1",
            "built_cuda_version": "12.4",
            "cuda_available": True,
            "device_count": 1,
            "devices": [{"index": 0, "error": "RuntimeError: boom"}],
        }
    )
    assert facts["devices"] == [
        {
            "index": 0,
            "name": None,
            "capability": None,
            "sm": None,
            "memory_total_mib": None,
            "error": "RuntimeError: boom",
        }
    ]
    verdict = tp.verdict(facts)
    assert check({"verdict": verdict}, "arch_covered")["ok"] is False


def test_verdict_h200():
    facts = dict(H200_FACTS)
    verdict = tp.verdict(facts)
    assert verdict["ok"] is True
    assert [c["name"] for c in verdict["checks"]] == [
        "arch_covered",
        "driver_new_enough",
        "tensor_op",
    ]
    assert all(c["ok"] and not c["skipped"] for c in verdict["checks"])
    with_driver = tp.verdict(facts, driver_version="580.159.04", expect_gpus=1)
    assert with_driver["ok"] is True
    assert "580.159.04 >= 580.65.06" in with_driver["checks"][1]["message"]
    assert with_driver["checks"][3]["name"] == "gpus_visible"


def test_verdict_driver_too_old_by_version_and_by_torchs_view():
    facts = dict(H200_FACTS)
    verdict = tp.verdict(facts, driver_version="575.51.03")
    driver = check({"verdict": verdict}, "driver_new_enough")
    assert verdict["ok"] is False and driver["ok"] is False
    assert "575.51.03 < 580.65.06" in driver["message"] and "branch to 580" in driver["message"]
    older_view = dict(facts, driver_cuda_version="12.9")
    driver = check({"verdict": tp.verdict(older_view)}, "driver_new_enough")
    assert driver["ok"] is False and "needs driver >= 580.65.06" in driver["message"]
    no_view = dict(facts, driver_cuda_version=None)
    driver = check({"verdict": tp.verdict(no_view)}, "driver_new_enough")
    assert driver["ok"] is False and "could not tell the driver version" in driver["message"]


def test_verdict_binary_compatible_and_uncovered_devices():
    ada = dict(
        H200_FACTS,
        arch_list=["sm_80", "sm_86", "sm_90"],
        devices=[{"index": 0, "name": "NVIDIA L4", "capability": "8.9", "sm": "sm_89"}],
    )
    arch = check({"verdict": tp.verdict(ada)}, "arch_covered")
    assert arch["ok"] is True and arch["message"] == "covered: sm_89 via sm_86"
    blackwell = dict(
        H200_FACTS,
        arch_list=["sm_80", "sm_90"],
        devices=[{"index": 0, "name": "NVIDIA B200", "capability": "10.0", "sm": "sm_100"}],
    )
    arch = check({"verdict": tp.verdict(blackwell)}, "arch_covered")
    assert arch["ok"] is False
    assert "GPU 0 NVIDIA B200 (sm_100)" in arch["message"]
    assert "no kernel image" in arch["message"] and "pytorch_cuda_variant" in arch["message"]


def test_verdict_failed_tensor_op_and_gpu_count():
    facts = dict(
        H200_FACTS, tensor_ops=[{"index": 0, "ok": False, "error": "RuntimeError: CUDA error"}]
    )
    verdict = tp.verdict(facts, expect_gpus=2)
    assert check({"verdict": verdict}, "tensor_op")["message"].endswith("RuntimeError: CUDA error")
    visible = check({"verdict": verdict}, "gpus_visible")
    assert visible["ok"] is False and "CUDA_VISIBLE_DEVICES" in visible["message"]


def test_diagnose_cuda_unavailable():
    cpu = tp.normalize({"importable": True, "torch_version": "2.13.0+cpu", "cuda_available": False})
    assert tp.diagnose_cuda_unavailable(cpu, None) is None  # a CPU host: nothing wrong
    assert tp.diagnose_cuda_unavailable(cpu, 0) is None
    text = tp.diagnose_cuda_unavailable(cpu, 8)
    assert text.startswith("nvidia-smi sees 8 GPU(s) but torch 2.13.0+cpu is a CPU-only build")
    assert "CPU-only wheel mistake" in text and "pytorch_cuda_variant to cu130" in text
    text = tp.diagnose_cuda_unavailable(cpu, None, "570.124.06", required=True)
    assert text.startswith("torch 2.13.0+cpu is a CPU-only build")
    assert "pytorch_cuda_variant to cu126" in text  # 2.13 ships cu126/cu130; 570 runs cu126
    assert tp.diagnose_cuda_unavailable(dict(H200_FACTS), 1) is None
    assert tp.diagnose_cuda_unavailable(tp.normalize({"importable": False}), 1) is None

    old_driver = tp.normalize(
        {
            "importable": True,
            "torch_version": "2.4.1+cu124",
            "built_cuda_version": "12.4",
            "cuda_available": False,
        }
    )
    text = tp.diagnose_cuda_unavailable(old_driver, 1, "535.183.01")
    assert "the driver is too old for this wheel" in text
    assert "raise nvidia_driver_branch to 550" in text
    assert "pytorch_cuda_variant to cu121" in text
    other = tp.diagnose_cuda_unavailable(old_driver, 1, "560.35.03")
    assert "cannot initialise CUDA" in other and "CUDA_VISIBLE_DEVICES" in other
    warned = dict(old_driver, cuda_warnings=["The NVIDIA driver on your system is too old"])
    text = tp.diagnose_cuda_unavailable(warned, 1)
    assert "the driver is older than that" in text and "pytorch_cuda_variant to cu121" in text
    by_view = dict(old_driver, driver_cuda_version="11.4")
    text = tp.diagnose_cuda_unavailable(by_view, 1)
    assert "supports CUDA 11.4 only" in text
    assert "no other CUDA wheel of torch 2.4 runs on this driver" in text
    unknown_release = dict(old_driver, torch_version="9.9.9+cu999", built_cuda_version="99.0")
    text = tp.diagnose_cuda_unavailable(unknown_release, 1)
    assert "a CUDA wheel (cuXYZ) that the driver supports" in text


def test_summarize():
    facts = dict(H200_FACTS, python_version="3.12.3", verdict={"ok": True})
    assert tp.summarize(facts) == (
        "torch 2.11.0+cu130 (CUDA 13.0) on Python 3.12.3: 1 GPU(s) [NVIDIA H200], verdict ok"
    )
    assert tp.summarize({"importable": False, "import_error": "E"}) == (
        "torch is not importable: E"
    )


def test_unimportable_facts():
    facts = tp.unimportable_facts("ModuleNotFoundError: No module named 'torch'", "3.8.10")
    assert facts["importable"] is False and facts["python_version"] == "3.8.10"
    assert facts["verdict"]["ok"] is False
    assert all(c["skipped"] for c in facts["verdict"]["checks"])
    assert tp.verdict(facts) == facts["verdict"]


# ---------------------------------------------------------------------------
# The probe itself, in the fake interpreters
# ---------------------------------------------------------------------------


def test_probe_in_the_h200_fake_matches_the_capture():
    facts = probe(str(BIN / "python-h200"))
    for key, value in H200_FACTS.items():
        assert facts[key] == value, key
    assert facts["torch_version"] == CAPTURE["torch"]
    assert facts["built_cuda_version"] == CAPTURE["cuda"]
    assert facts["cudnn_version"] == tp.cudnn_version_string(CAPTURE["cudnn"])
    assert facts["cuda_available"] is CAPTURE["available"]
    assert facts["device_count"] == CAPTURE["count"]
    assert facts["arch_list"] == CAPTURE["arch_list"]
    assert facts["bf16_supported"] is CAPTURE["bf16"]
    assert facts["nccl_version"] == ".".join(str(v) for v in CAPTURE["nccl"])
    assert facts["python_version"] == ".".join(str(v) for v in sys.version_info[:3])


def test_probe_cpu_and_missing_torch():
    cpu = probe(str(BIN / "python-cpu-torch"))
    assert cpu["importable"] is True and cpu["cpu_only_build"] is True
    assert cpu["built_cuda_version"] is None and cpu["cuda_available"] is False
    assert cpu["device_count"] == 0 and cpu["arch_list"] == [] and cpu["nccl_version"] is None
    missing = probe(str(BIN / "python-no-torch"))
    assert missing["importable"] is False
    assert missing["import_error"] == "ModuleNotFoundError: No module named 'torch'"


def test_probe_records_cuda_warnings(monkeypatch):
    facts = probe(fake("old-torch-sm90", monkeypatch))
    assert facts["nccl_version"] == "2.10.3" and facts["cudnn_version"] == "8.3.2"
    assert len(facts["cuda_warnings"]) == 1
    assert "sm_90 is not compatible" in facts["cuda_warnings"][0]
    assert [op["ok"] for op in facts["tensor_ops"]] == [False, False]


# ---------------------------------------------------------------------------
# The module, in process
# ---------------------------------------------------------------------------


def test_module_h200(capsys):
    failed, result = run_module(
        {
            "python": str(BIN / "python-h200"),
            "expect_gpus": 1,
            "driver_version": "580.159.04",
            "require_cuda": True,
        },
        capsys,
    )
    assert not failed and result["changed"] is False
    facts = torch_facts(result)
    for key, value in H200_FACTS.items():
        assert facts[key] == value, key
    assert facts["verdict"]["ok"] is True
    assert [c["name"] for c in facts["verdict"]["checks"]] == [
        "arch_covered",
        "driver_new_enough",
        "tensor_op",
        "gpus_visible",
    ]
    assert result["msg"].endswith("1 GPU(s) [NVIDIA H200], verdict ok")
    assert "warnings" not in result


def test_module_cpu_torch_on_a_cpu_host(capsys):
    failed, result = run_module({"python": str(BIN / "python-cpu-torch"), "expect_gpus": 0}, capsys)
    assert not failed
    facts = torch_facts(result)
    assert facts["cuda_available"] is False and facts["cpu_only_build"] is True
    assert facts["verdict"]["ok"] is False
    assert "warnings" not in result
    assert result["msg"].endswith("CUDA not available")


def test_module_cpu_wheel_on_a_gpu_host(capsys):
    failed, result = run_module({"python": str(BIN / "python-cpu-torch"), "expect_gpus": 1}, capsys)
    assert not failed
    assert "CPU-only wheel mistake" in json.dumps(result["warnings"])
    failed, result = run_module(
        {"python": str(BIN / "python-cpu-torch"), "expect_gpus": 1, "require_cuda": True}, capsys
    )
    assert failed
    assert "nvidia-smi sees 1 GPU(s)" in result["msg"]
    assert "CPU-only wheel mistake" in result["msg"] and "pytorch_cuda_variant" in result["msg"]
    failed, result = run_module(
        {"python": str(BIN / "python-cpu-torch"), "require_cuda": True}, capsys
    )
    assert failed and "CPU-only wheel mistake" in result["msg"]


def test_module_driver_too_old(monkeypatch, capsys):
    python = fake("driver-too-old", monkeypatch)
    args = {"python": python, "expect_gpus": 1, "driver_version": "470.82.01"}
    failed, result = run_module(args, capsys)
    assert not failed
    facts = torch_facts(result)
    assert facts["cuda_available"] is False and facts["driver_cuda_version"] == "11.4"
    assert "too old" in facts["cuda_warnings"][0]
    assert check(facts, "driver_new_enough")["ok"] is False
    failed, result = run_module(dict(args, require_cuda=True), capsys)
    assert failed
    assert "the driver is too old for this wheel" in result["msg"]
    assert "raise nvidia_driver_branch to 550" in result["msg"]
    assert "pytorch_cuda_variant" in result["msg"]


def test_module_old_torch_on_sm90(monkeypatch, capsys):
    python = fake("old-torch-sm90", monkeypatch)
    failed, result = run_module({"python": python, "expect_gpus": 2}, capsys)
    assert not failed
    facts = torch_facts(result)
    assert facts["verdict"]["ok"] is False
    assert check(facts, "arch_covered")["ok"] is False
    assert check(facts, "driver_new_enough")["ok"] is True
    assert check(facts, "tensor_op")["ok"] is False
    assert check(facts, "gpus_visible")["ok"] is True
    failed, result = run_module({"python": python, "require_cuda": True}, capsys)
    assert failed
    assert "arch_covered:" in result["msg"] and "tensor_op:" in result["msg"]
    assert "torch 2.0.1 with conda_pytorch_cuda_variant cu118" in result["msg"]
    assert ".;" not in result["msg"]


def test_module_torch_missing(capsys):
    failed, result = run_module({"python": str(BIN / "python-no-torch")}, capsys)
    assert failed
    assert "ModuleNotFoundError: No module named 'torch'" in result["msg"]
    assert torch_facts(result)["importable"] is False
    failed, result = run_module(
        {"python": str(BIN / "python-no-torch"), "require_torch": False}, capsys
    )
    assert not failed
    facts = torch_facts(result)
    assert facts["import_error"] == "ModuleNotFoundError: No module named 'torch'"
    assert facts["python_version"] == ".".join(str(v) for v in sys.version_info[:3])
    assert result["msg"].startswith("torch is not importable")


def test_module_torch_import_breaks(monkeypatch, capsys):
    failed, result = run_module({"python": fake("broken-import", monkeypatch)}, capsys)
    assert failed
    assert "OSError: libcudnn.so.8: cannot open shared object file" in result["msg"]


@pytest.mark.parametrize("kind", ["missing", "not-executable", "directory"])
def test_module_bad_interpreter(kind, tmp_path, capsys):
    path = tmp_path / "python"
    if kind == "not-executable":
        path.write_text("#!/bin/sh\n")
        path.chmod(0o644)
    elif kind == "directory":
        path.mkdir()
    failed, result = run_module({"python": str(path)}, capsys)
    assert failed
    assert "pytorch_python" in result["msg"] and str(path) in result["msg"]
    failed, result = run_module({"python": str(path), "require_torch": False}, capsys)
    assert not failed
    assert "pytorch_python" in torch_facts(result)["import_error"]


def test_module_interpreter_that_is_not_python(capsys):
    failed, result = run_module({"python": str(BIN / "not-python")}, capsys)
    assert failed
    assert "did not run the torch probe" in result["msg"] and "rc=3" in result["msg"]
    assert "not a Python interpreter" in result["msg"]


def test_module_interpreter_that_cannot_exec(tmp_path, capsys):
    path = tmp_path / "python"
    path.write_bytes(b"\x7fELF garbage")
    path.chmod(0o755)
    failed, result = run_module({"python": str(path)}, capsys)
    assert failed and "could not run" in result["msg"]


def test_module_probe_timeout(monkeypatch, capsys):
    failed, result = run_module({"python": fake("hang", monkeypatch), "timeout": 2}, capsys)
    assert failed and "did not finish within 2 s" in result["msg"]


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({"timeout": 0}, "timeout must be at least 1 second"),
        ({"expect_gpus": -1}, "expect_gpus must be 0 or more"),
        ({"expect_gpus": "many"}, "expect_gpus"),
        ({"require_cuda": "perhaps"}, "require_cuda"),
    ],
)
def test_module_argument_validation(args, text, capsys):
    failed, result = run_module(dict({"python": str(BIN / "python-h200")}, **args), capsys)
    assert failed and text in result["msg"]


def test_module_check_mode_is_the_same(capsys):
    args = {"python": str(BIN / "python-h200")}
    _, normal = run_module(args, capsys)
    _, checked = run_module(dict(args, _ansible_check_mode=True), capsys)
    assert torch_facts(checked) == torch_facts(normal)


# ---------------------------------------------------------------------------
# End to end: ansible localhost -m torch_cuda_facts
# ---------------------------------------------------------------------------

E2E_ENV = {"KINDLING_FAKE_PYTHON_BASE": sys.executable}


@pytest.mark.slow
def test_e2e_h200(tmp_path):
    result = run_adhoc(
        "torch_cuda_facts",
        {"python": str(BIN / "python-h200"), "expect_gpus": 1, "require_cuda": True},
        tmp_path,
        E2E_ENV,
    )
    assert not result.get("failed")
    facts = result["ansible_facts"]["torch_cuda"]
    assert facts["torch_version"] == CAPTURE["torch"]
    assert facts["arch_list"] == CAPTURE["arch_list"]
    assert facts["devices"][0]["sm"] == "sm_90"
    assert facts["verdict"]["ok"] is True


@pytest.mark.slow
def test_e2e_cpu_wheel_on_gpu_host_fails_plainly(tmp_path):
    result = run_adhoc(
        "torch_cuda_facts",
        {"python": str(BIN / "python-cpu-torch"), "expect_gpus": 1, "require_cuda": True},
        tmp_path,
        E2E_ENV,
    )
    assert result["failed"] is True
    assert "CPU-only wheel mistake" in result["msg"]


@pytest.mark.slow
def test_e2e_torch_missing(tmp_path):
    result = run_adhoc(
        "torch_cuda_facts", {"python": str(BIN / "python-no-torch")}, tmp_path, E2E_ENV
    )
    assert result["failed"] is True
    assert "No module named 'torch'" in result["msg"]


# ---------------------------------------------------------------------------
# A real torch, where one is installed (CPU wheels on the dev machine)
# ---------------------------------------------------------------------------


def _real_torch_python():
    candidates = [os.environ.get("KINDLING_TORCH_PYTHON"), "/tmp/tv/bin/python", sys.executable]
    candidates.append(shutil.which("python3"))
    for python in candidates:
        if not python or not os.access(python, os.X_OK):
            continue
        proc = subprocess.run(
            [python, "-c", "import torch"], capture_output=True, timeout=120, check=False
        )
        if proc.returncode == 0:
            return python
    return None


@pytest.mark.slow
def test_real_torch_if_available(capsys):
    python = _real_torch_python()
    if python is None:
        pytest.skip("no interpreter with torch on this machine")
    failed, result = run_module({"python": python, "timeout": 300}, capsys)
    assert not failed
    facts = torch_facts(result)
    assert facts["importable"] is True
    assert facts["torch_version"][0].isdigit()
    assert [c["name"] for c in facts["verdict"]["checks"]][:3] == [
        "arch_covered",
        "driver_new_enough",
        "tensor_op",
    ]
    if facts["cuda_available"]:
        assert facts["device_count"] >= 1 and facts["devices"][0]["sm"].startswith("sm_")
    else:
        assert facts["verdict"]["ok"] is False
        assert facts["device_count"] == 0


def test_module_relative_interpreter_path(monkeypatch, capsys):
    monkeypatch.chdir(REPO_ROOT)
    failed, result = run_module({"python": "tests/fixtures/bin/python-h200"}, capsys)
    assert not failed and torch_facts(result)["verdict"]["ok"] is True


def test_driver_version_from_proc_capture():
    from ansible.module_utils.torch_probe import parse_proc_driver_version

    text = (CAPTURES / "proc-driver-version.txt").read_text()
    assert parse_proc_driver_version(text) == "580.159.04"
    assert (
        parse_proc_driver_version(
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.256.02  Thu May  2 2024"
        )
        == "470.256.02"
    )
    assert parse_proc_driver_version("") is None
    assert parse_proc_driver_version("no driver here") is None


# ---------------------------------------------------------------------------
# depth=build: torch's build from its version.py, torch not imported
# ---------------------------------------------------------------------------


def test_build_depth_reads_the_build_without_importing_torch(capsys, monkeypatch):
    # The "hang" case sleeps on import: a build read that imported torch would time out.
    start = time.monotonic()
    failed, result = run_module(
        {"python": fake("hang", monkeypatch), "depth": "build", "timeout": 20}, capsys
    )
    assert not failed, result
    assert time.monotonic() - start < 10
    assert result["torch_build"]["found"] is True
    assert result["torch_build"]["torch_version"] == "2.11.0+cu130"
    assert result["torch_build"]["built_cuda_version"] == "13.0"
    assert "ansible_facts" not in result  # the torch_cuda fact is the full probe's only


def test_build_depth_h200_capture_and_missing_torch(capsys):
    failed, result = run_module({"python": str(BIN / "python-h200"), "depth": "build"}, capsys)
    assert not failed and result["torch_build"]["built_cuda_version"] == CAPTURE["cuda"]
    assert result["torch_build"]["torch_version"] == CAPTURE["torch"]
    failed, result = run_module(
        {"python": str(BIN / "python-no-torch"), "depth": "build", "require_torch": False}, capsys
    )
    assert not failed and result["torch_build"]["found"] is False
    assert result["torch_build"]["error"] == "ModuleNotFoundError: No module named 'torch'"
    failed, result = run_module({"python": str(BIN / "python-no-torch"), "depth": "build"}, capsys)
    assert failed and result["msg"].startswith("torch is not installed for ")


def test_build_depth_also_answers_for_the_interpreter_it_ran(capsys, tmp_path):
    # What python_interpreter_info would say (conda_pytorch takes it instead of running the
    # same interpreter again): the probe ran it, so it exists, runs and has a major.minor.
    this = ".".join(str(v) for v in sys.version_info[:2])
    for python in (BIN / "python-h200", BIN / "python-no-torch"):
        failed, result = run_module(
            {"python": str(python), "depth": "build", "require_torch": False}, capsys
        )
        assert not failed
        assert result["interpreter"] == {
            "interpreter": str(python),
            "exists": True,
            "executable": True,
            "version": this,
            "error": "",
        }
    # Not run (missing, or not an interpreter): no answer; python_interpreter_info gives
    # the reason.
    missing = tmp_path / "gone" / "python"
    failed, result = run_module(
        {"python": str(missing), "depth": "build", "require_torch": False}, capsys
    )
    assert not failed and result["interpreter"] is None
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    failed, result = run_module(
        {"python": str(broken), "depth": "build", "require_torch": False}, capsys
    )
    assert not failed and result["interpreter"] is None
