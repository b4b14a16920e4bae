"""library/nvidia_smi_facts.py, in process and end to end through `ansible localhost -m`.

nvidia-smi is the stand-in tests/fixtures/bin/nvidia-smi, which prints the real H200
captures or a constructed case chosen by KINDLING_FAKE_SMI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nvidia_smi_facts
import pytest
from ansible.module_utils.nvidia_smi import build_facts
from ansible.module_utils.testing import patch_module_args
from conftest import CAPTURES, REPO_ROOT

BIN = REPO_ROOT / "tests" / "fixtures" / "bin"
FAKE_SMI = str(BIN / "nvidia-smi")


def run_module(args, capsys):
    """Run the module's main() in process; (failed, result)."""
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        nvidia_smi_facts.main()
    result = json.loads(capsys.readouterr().out)
    return exc.value.code != 0, result


def smi_facts(result):
    return result["ansible_facts"]["nvidia_smi"]


@pytest.fixture
def fake_smi(monkeypatch, tmp_path):
    """Select a stand-in case; returns a function reading the stand-in's call log."""
    log = tmp_path / "calls.log"
    monkeypatch.setenv("KINDLING_FAKE_SMI_LOG", str(log))

    def select(case):
        monkeypatch.setenv("KINDLING_FAKE_SMI", case)
        return lambda: log.read_text().splitlines() if log.exists() else []

    return select


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


# ---------------------------------------------------------------------------
# In process
# ---------------------------------------------------------------------------


def test_h200_capture(fake_smi, capsys):
    calls = fake_smi("h200")
    failed, result = run_module({"nvidia_smi_path": FAKE_SMI}, capsys)
    assert not failed and result["changed"] is False
    facts = smi_facts(result)
    expected = build_facts(
        (CAPTURES / "nvidia-smi-q.xml").read_text(), (CAPTURES / "query-full.csv").read_text()
    )
    assert facts == expected
    assert facts["gpus"][0]["compute_capability"] == "9.0"
    assert facts["topology"] is None  # one GPU: topo -m is not run
    assert result["commands"] == [
        f"{FAKE_SMI} -q -x",
        f"{FAKE_SMI} --query-gpu=index,pci.bus_id,uuid,compute_cap --format=csv",
    ]
    assert calls() == ["-q -x", "--query-gpu=index,pci.bus_id,uuid,compute_cap --format=csv"]


def test_eight_gpu_nvlink_host_runs_topo_once(fake_smi, capsys):
    calls = fake_smi("h100-8gpu")
    failed, result = run_module({"nvidia_smi_path": FAKE_SMI}, capsys)
    assert not failed
    facts = smi_facts(result)
    assert facts["gpu_count"] == 8
    assert facts["topology"]["all_nvlink"] is True
    assert facts["topology"]["matrix"]["GPU0"]["GPU7"] == "NV18"
    assert calls() == [
        "-q -x",
        "--query-gpu=index,pci.bus_id,uuid,compute_cap --format=csv",
        "topo -m",
    ]


def test_470_driver_without_compute_cap_field(fake_smi, capsys):
    fake_smi("v100-470")
    failed, result = run_module({"nvidia_smi_path": FAKE_SMI}, capsys)
    assert not failed
    facts = smi_facts(result)
    assert "is not a valid field to query" in facts["query_error"]
    assert facts["gpus"][0]["compute_capability"] == "7.0"
    assert facts["gpus"][0]["compute_capability_source"] == "name"
    assert facts["health"] == []
    assert [n["code"] for n in facts["health_notes"]] == ["pcie-gen-idle-downtrain"]


def test_mig(fake_smi, capsys):
    fake_smi("a100-mig")
    _, result = run_module({"nvidia_smi_path": FAKE_SMI}, capsys)
    assert [h["code"] for h in smi_facts(result)["health"]] == ["mig-enabled-unexpected"]
    _, result = run_module({"nvidia_smi_path": FAKE_SMI, "expect_mig": True}, capsys)
    assert smi_facts(result)["health"] == []
    assert len(smi_facts(result)["gpus"][0]["mig_devices"]) == 2


def test_degraded_host(fake_smi, capsys):
    fake_smi("degraded")
    failed, result = run_module({"nvidia_smi_path": FAKE_SMI, "require": True}, capsys)
    assert not failed  # health problems are reported, not fatal
    facts = smi_facts(result)
    assert [h["code"] for h in facts["health"]] == [
        "pcie-link-degraded",
        "row-remap-pending",
        "ecc-uncorrected-volatile",
        "thermal-slowdown",
        "power-slowdown",
    ]
    assert facts["topology"]["matrix"]["GPU0"] == {"GPU1": "SYS"}


@pytest.mark.parametrize(
    ("case", "kind", "reboot"),
    [
        ("driver-not-loaded", "driver_not_loaded", True),
        ("version-mismatch", "driver_library_mismatch", True),
        ("gpu-lost", "gpu_lost", True),
        ("no-devices", "no_devices", False),
    ],
)
def test_error_outputs(fake_smi, capsys, case, kind, reboot):
    calls = fake_smi(case)
    failed, result = run_module({"nvidia_smi_path": FAKE_SMI}, capsys)
    assert not failed
    facts = smi_facts(result)
    assert facts["present"] is True
    assert facts["error"]["kind"] == kind
    assert facts["reboot_required"] is reboot
    assert (facts["reboot_reason"] is not None) is reboot
    assert facts["gpu_count"] == 0 and facts["gpus"] == [] and facts["driver_version"] is None
    assert calls() == ["-q -x"]  # nothing else is tried once -q -x fails

    failed, result = run_module({"nvidia_smi_path": FAKE_SMI, "require": True}, capsys)
    assert failed
    assert result["msg"].startswith("nvidia-smi failed (rc=")
    assert ("reboot the host" in result["msg"]) is reboot
    assert smi_facts(result)["error"]["kind"] == kind


def test_absent_nvidia_smi(tmp_path, capsys):
    missing = str(tmp_path / "nope" / "nvidia-smi")
    failed, result = run_module({"nvidia_smi_path": missing}, capsys)
    assert not failed
    facts = smi_facts(result)
    assert facts["present"] is False
    assert facts["error"]["kind"] == "not_found"
    assert facts["reboot_required"] is False
    assert result["commands"] == []
    failed, result = run_module({"nvidia_smi_path": missing, "require": True}, capsys)
    assert failed
    assert missing in result["msg"] and "install the NVIDIA driver" in result["msg"]


def test_not_executable_counts_as_absent(tmp_path, capsys):
    path = tmp_path / "nvidia-smi"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o644)
    _, result = run_module({"nvidia_smi_path": str(path)}, capsys)
    assert smi_facts(result)["present"] is False


def test_default_search_uses_path(fake_smi, monkeypatch, capsys):
    fake_smi("h200")
    monkeypatch.setenv("PATH", f"{BIN}:{os.environ['PATH']}")
    failed, result = run_module({}, capsys)
    assert not failed
    assert result["commands"][0] == f"{FAKE_SMI} -q -x"
    assert smi_facts(result)["driver_version"] == "580.159.04"


@pytest.mark.skipif(
    os.path.exists("/usr/bin/nvidia-smi"), reason="this host has a real nvidia-smi in /usr/bin"
)
def test_default_search_finds_nothing(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    _, result = run_module({}, capsys)
    facts = smi_facts(result)
    assert facts["present"] is False
    assert "PATH and /usr/bin" in facts["error"]["message"]


def test_timeout(fake_smi, capsys):
    fake_smi("hang")
    failed, result = run_module({"nvidia_smi_path": FAKE_SMI, "timeout": 1}, capsys)
    assert not failed
    assert smi_facts(result)["error"]["kind"] == "timeout"
    assert "timed out after 1 s" in smi_facts(result)["error"]["message"]
    failed, result = run_module(
        {"nvidia_smi_path": FAKE_SMI, "timeout": 1, "require": True}, capsys
    )
    assert failed and "timed out" in result["msg"]


def test_exec_failure(tmp_path, capsys):
    bad = tmp_path / "nvidia-smi"
    bad.write_text("not a script, no shebang\x00")
    bad.chmod(0o755)
    _, result = run_module({"nvidia_smi_path": str(bad)}, capsys)
    error = smi_facts(result)["error"]
    assert error["kind"] == "unknown" and "could not execute" in error["message"]


def test_unparseable_output(tmp_path, capsys):
    path = script(tmp_path, "nvidia-smi", 'echo "<html>surprise</html>"\n')
    failed, result = run_module({"nvidia_smi_path": path}, capsys)
    assert not failed
    assert smi_facts(result)["error"]["kind"] == "unparseable"
    failed, result = run_module({"nvidia_smi_path": path, "require": True}, capsys)
    assert failed and "not nvidia-smi XML" in result["msg"]


def test_zero_gpus_in_xml(tmp_path, capsys):
    path = script(
        tmp_path,
        "nvidia-smi",
        'echo "<nvidia_smi_log><driver_version>580.95.05</driver_version>'
        '<cuda_version>13.0</cuda_version><attached_gpus>0</attached_gpus></nvidia_smi_log>"\n',
    )
    failed, result = run_module({"nvidia_smi_path": path}, capsys)
    assert not failed
    assert result["commands"] == [f"{path} -q -x"]  # no query, no topo for 0 GPUs
    assert smi_facts(result)["gpu_count"] == 0
    failed, result = run_module({"nvidia_smi_path": path, "require": True}, capsys)
    assert failed and "reports no GPU" in result["msg"]


def test_topo_and_query_failures_keep_the_xml_facts(fake_smi, tmp_path, capsys):
    fake_smi("degraded")
    path = script(
        tmp_path,
        "nvidia-smi",
        'case "$1" in\n'
        '  topo) echo "topo: Unknown Error" ; exit 3 ;;\n'
        '  --query-gpu=*) echo "0, 9.0" ; exit 0 ;;\n'
        "esac\n"
        f'exec "{FAKE_SMI}" "$@"\n',
    )
    failed, result = run_module({"nvidia_smi_path": path}, capsys)
    assert not failed
    facts = smi_facts(result)
    assert facts["topology"] is None
    assert "topo: Unknown Error" in facts["topology_error"]
    assert "no header" in facts["query_error"]
    assert facts["gpus"][0]["compute_capability_source"] == "name"
    assert len(facts["health"]) == 5


def test_check_mode_is_the_same(fake_smi, capsys):
    fake_smi("h200")
    _, normal = run_module({"nvidia_smi_path": FAKE_SMI}, capsys)
    _, checked = run_module({"nvidia_smi_path": FAKE_SMI, "_ansible_check_mode": True}, capsys)
    assert smi_facts(checked) == smi_facts(normal)


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({"timeout": 0}, "timeout must be at least 1 second"),
        ({"timeout": "soon"}, "timeout"),
        ({"require": "maybe"}, "require"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_argument_validation(args, text, capsys):
    failed, result = run_module(args, capsys)
    assert failed and text in result["msg"]


# ---------------------------------------------------------------------------
# End to end: ansible localhost -m nvidia_smi_facts
# ---------------------------------------------------------------------------


def ansible_bin(name: str) -> str:
    local = Path(sys.executable).parent / name
    return str(local if local.exists() else REPO_ROOT / ".venv" / "bin" / name)


def run_adhoc(
    module: str,
    args: dict,
    tmp_path: Path,
    env: dict | None = None,
    extra_vars: dict | None = None,
) -> dict:
    """`ansible localhost -m MODULE -a JSON` from the repo root; the host's result."""
    full_env = dict(os.environ)
    full_env.update(
        {
            "ANSIBLE_STDOUT_CALLBACK": "json",
            "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
            "ANSIBLE_CACHE_PLUGIN": "memory",
            "ANSIBLE_LOCAL_TEMP": str(tmp_path / "local"),
            "ANSIBLE_REMOTE_TEMP": str(tmp_path / "remote"),
            "ANSIBLE_NOCOLOR": "1",
        }
    )
    full_env.update(env or {})
    cmd = [
        ansible_bin("ansible"),
        "localhost",
        "-i",
        "localhost,",
        "-c",
        "local",
        "-e",
        json.dumps(dict({"ansible_python_interpreter": sys.executable}, **(extra_vars or {}))),
        "-m",
        module,
        "-a",
        json.dumps(args),
    ]
    proc = subprocess.run(
        cmd, cwd=REPO_ROOT, env=full_env, capture_output=True, text=True, timeout=180, check=False
    )
    text = proc.stdout
    start = text.find("\n{") + 1 if not text.startswith("{") else 0
    data, _ = json.JSONDecoder().raw_decode(text[start:])
    return data["plays"][0]["tasks"][0]["hosts"]["localhost"]


@pytest.mark.slow
def test_e2e_h200_capture(tmp_path):
    result = run_adhoc(
        "nvidia_smi_facts", {"nvidia_smi_path": FAKE_SMI}, tmp_path, {"KINDLING_FAKE_SMI": "h200"}
    )
    assert not result.get("failed")
    facts = result["ansible_facts"]["nvidia_smi"]
    expected = build_facts(
        (CAPTURES / "nvidia-smi-q.xml").read_text(), (CAPTURES / "query-full.csv").read_text()
    )
    assert facts == expected
    assert facts["driver_version"] == "580.159.04"
    assert facts["cuda_driver_version"] == "13.0"
    gpu = facts["gpus"][0]
    assert (gpu["name"], gpu["compute_capability"], gpu["architecture"]) == (
        "NVIDIA H200",
        "9.0",
        "Hopper",
    )
    assert gpu["persistence_mode"] is True and gpu["mig_mode"] is False
    assert (gpu["pcie_gen_current"], gpu["pcie_width_current"]) == (5, 16)
    assert gpu["clock_event_reasons_active"] == ["gpu_idle"]


@pytest.mark.slow
def test_e2e_eight_gpus(tmp_path):
    result = run_adhoc(
        "nvidia_smi_facts",
        {"nvidia_smi_path": FAKE_SMI},
        tmp_path,
        {"KINDLING_FAKE_SMI": "h100-8gpu"},
    )
    facts = result["ansible_facts"]["nvidia_smi"]
    assert facts["gpu_count"] == 8
    assert facts["topology"]["link_types"] == ["NV18"]
    assert len(result["commands"]) == 3


@pytest.mark.slow
def test_e2e_version_mismatch_requires_reboot(tmp_path):
    result = run_adhoc(
        "nvidia_smi_facts",
        {"nvidia_smi_path": FAKE_SMI},
        tmp_path,
        {"KINDLING_FAKE_SMI": "version-mismatch"},
    )
    assert not result.get("failed")
    facts = result["ansible_facts"]["nvidia_smi"]
    assert facts["reboot_required"] is True
    assert "upgraded without a reboot" in facts["reboot_reason"]


@pytest.mark.slow
def test_e2e_degraded_health(tmp_path):
    result = run_adhoc(
        "nvidia_smi_facts",
        {"nvidia_smi_path": FAKE_SMI, "expect_mig": False},
        tmp_path,
        {"KINDLING_FAKE_SMI": "degraded"},
    )
    codes = [h["code"] for h in result["ansible_facts"]["nvidia_smi"]["health"]]
    assert "row-remap-pending" in codes and "pcie-link-degraded" in codes


@pytest.mark.slow
def test_e2e_absent_with_require_fails(tmp_path):
    result = run_adhoc(
        "nvidia_smi_facts", {"nvidia_smi_path": str(tmp_path / "none"), "require": True}, tmp_path
    )
    assert result["failed"] is True
    assert "nvidia-smi not found" in result["msg"]


@pytest.mark.slow
@pytest.mark.parametrize("module", ["nvidia_smi_facts", "torch_cuda_facts", "gpu_stack_check"])
def test_ansible_doc_renders(module):
    for extra in ([], ["--json"]):
        proc = subprocess.run(
            [ansible_bin("ansible-doc"), "-M", "library", *extra, module],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert "WARNING" not in proc.stderr.upper(), proc.stderr
    doc = json.loads(proc.stdout)[module]
    assert doc["doc"]["module"] == module
    assert doc["examples"].strip() and doc["return"]


def _python38():
    """A working Python 3.8 (the oldest target Kindling supports), if this machine has one."""
    candidates = [os.environ.get("KINDLING_PYTHON38"), shutil.which("python3.8")]
    candidates += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.8*/bin/python3.8"))
    for python in candidates:
        if not python:
            continue
        proc = subprocess.run(
            [python, "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode == 0 and proc.stdout.strip() == "(3, 8)":
            return python
    return None


@pytest.mark.slow
def test_e2e_modules_run_on_python_3_8(tmp_path):
    python = _python38()
    if python is None:
        pytest.skip("no Python 3.8 on this machine")
    extra = {"ansible_python_interpreter": python}
    env = {"KINDLING_FAKE_SMI": "h100-8gpu", "KINDLING_FAKE_PYTHON_BASE": python}
    smi = run_adhoc("nvidia_smi_facts", {"nvidia_smi_path": FAKE_SMI}, tmp_path, env, extra)
    assert smi["ansible_facts"]["nvidia_smi"]["topology"]["all_nvlink"] is True
    torch = run_adhoc(
        "torch_cuda_facts", {"python": str(BIN / "python-h200")}, tmp_path, env, extra
    )
    assert torch["ansible_facts"]["torch_cuda"]["python_version"].startswith("3.8.")
    assert torch["ansible_facts"]["torch_cuda"]["verdict"]["ok"] is True
    stack = run_adhoc(
        "gpu_stack_check",
        {"driver_branch": "470", "cuda_version": "11.6", "fail_on_problems": False},
        tmp_path,
        env,
        extra,
    )
    assert [p["code"] for p in stack["problems"]] == ["driver-too-old-for-cuda"]
