"""tools/fleet_report.py: event folding, the three reports, and a real ansible-runner run."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

spec = importlib.util.spec_from_file_location(
    "fleet_report", REPO_ROOT / "tools" / "fleet_report.py"
)
fleet_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fleet_report)


def _event(kind, host, action, res, task="t"):
    return {
        "event": kind,
        "event_data": {"host": host, "task_action": action, "task": task, "res": res},
    }


def _judged(verdict, img_s, reference, status):
    return {
        "verdict": verdict,
        "summary": f"{verdict}: amp_fp16_cl {img_s} img/s",
        "judgement": {
            "amp_fp16_cl": {
                "img_s": img_s,
                "reference": reference,
                "ratio": img_s / reference,
                "status": status,
                "source": "Kindling H200 measurements",
            }
        },
        "failed_modes": ["amp_fp16_cl"] if status == "fail" else [],
        "diagnosis": ["GPU 0's PCIe link runs at gen 3 x16, below its max gen 5 x16."]
        if status == "fail"
        else [],
        "gpu_key": "h200",
        "gpu_name": "NVIDIA H200",
        "tolerance": 0.8,
        "throughput": {
            "environment": {"gpu_count": 1},
            "modes": {"amp_fp16_cl": {"batch_size": 256}},
        },
    }


EVENTS = [
    _event(
        "runner_on_ok",
        "fast",
        "nvidia_smi_facts",
        {"ansible_facts": {"nvidia_smi": {"present": True, "gpu_count": 1}}},
    ),
    _event("runner_on_ok", "fast", "gpu_throughput", _judged("pass", 5800.0, 5781.0, "pass")),
    _event(
        "runner_on_ok",
        "slow",
        "torch_cuda_facts",
        {"ansible_facts": {"torch_cuda": {"cuda_available": True}}},
    ),
    _event("runner_on_ok", "slow", "gpu_throughput", _judged("fail", 2100.0, 5781.0, "fail")),
    _event("runner_on_unreachable", "gone", "setup", {"msg": "ssh: connect to host gone port 22"}),
    _event(
        "runner_on_failed",
        "broken",
        "torch_cuda_facts",
        {"msg": "torch is the CPU-only wheel"},
        task="Probe torch.cuda",
    ),
    _event("runner_on_failed", "tolerated", "command", {"msg": "ignored"}),
    {"event": "playbook_on_stats", "event_data": {}},
]
EVENTS[6]["event_data"]["ignore_errors"] = True


def test_collect_classifies_every_host():
    hosts = fleet_report.collect(EVENTS)
    assert {h: r["status"] for h, r in hosts.items()} == {
        "fast": "ok",
        "slow": "slow",
        "gone": "unreachable",
        "broken": "failed",
        "tolerated": "no-measurement",
    }
    assert hosts["fast"]["nvidia_smi"] == {"present": True, "gpu_count": 1}
    assert hosts["slow"]["torch_cuda"] == {"cuda_available": True}
    assert hosts["slow"]["throughput"]["batch_sizes"] == {"amp_fp16_cl": 256}
    assert "ssh: connect" in hosts["gone"]["errors"][0]
    assert hosts["broken"]["errors"] == ["Probe torch.cuda: torch is the CPU-only wheel"]


def test_reports_name_the_slow_host_and_why(tmp_path):
    hosts = fleet_report.collect(EVENTS)
    meta = {"timestamp": "20261129T000000Z", "inventory": "inv", "playbook": "playbooks/verify.yml"}
    fleet_report.write_reports(hosts, tmp_path, meta)
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["hosts"]["slow"]["status"] == "slow"
    md = (tmp_path / "summary.md").read_text()
    assert "| slow | NVIDIA H200 | amp_fp16_cl | 256 | 2100 | 5781 | 0.36 | fail |" in md
    assert "- **slow** (slow)" in md and "PCIe link runs at gen 3" in md
    page = (tmp_path / "index.html").read_text()
    assert page.count('class="bar pass"') == 1 and page.count('class="bar fail"') == 1
    assert page.count('class="reference"') == 2
    assert "<b>slow</b> (slow)" in page and "<b>gone</b> (unreachable)" in page
    # A bar's width is proportional to img/s: the slow bar is shorter than the fast one.
    widths = [float(part.split('"')[0]) for part in page.split('width="')[2:4]]
    assert widths[0] > widths[1] > 0


def test_bad_arguments_exit_2():
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "fleet_report.py")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "give -i INVENTORY" in result.stderr


@pytest.mark.slow
def test_runs_verify_through_ansible_runner_on_the_local_connection(tmp_path):
    """The real thing: ansible-runner runs playbooks/verify.yml on this machine (CPU)."""
    extra = {
        "gpu_check_device": "cpu",
        "gpu_check_python": sys.executable,
        "gpu_check_modes": ["fp32"],
        "gpu_check_probes": ["none"],
        "gpu_check_batch_size": 2,
        "gpu_check_image_size": 32,
        "gpu_check_extra_args": ["--warmup", "1", "--steps", "2", "--windows", "1"],
        "gpu_check_install_dir": str(tmp_path / "bin"),
        "gpu_check_host_report_dir": str(tmp_path / "host"),
        "gpu_check_report_dir": str(tmp_path / "controller"),
    }
    result = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "tools" / "fleet_report.py"),
            "-i",
            str(REPO_ROOT / "inventories" / "local"),
            "--reports",
            str(tmp_path / "reports"),
            "-e",
            json.dumps(extra),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (run_dir,) = [p for p in (tmp_path / "reports").iterdir() if p.is_dir()]
    data = json.loads((run_dir / "results.json").read_text())
    host = data["hosts"]["localhost"]
    assert host["status"] == "ok"
    assert host["torch_cuda"]["importable"] is True
    assert host["throughput"]["judgement"]["fp32"]["status"] == "unknown"
    assert host["throughput"]["judgement"]["fp32"]["img_s"] > 0
    assert Path(tmp_path / "controller" / "localhost" / "gpu-check.md").is_file()
    assert 'class="bar unknown"' in (run_dir / "index.html").read_text()
