"""tools/fleet_report.py through ansible-runner against a Molecule-image test host.

The test host has no PyTorch environment, so verify.yml must fail on it at the torch
probe: the report has to classify the host as failed and carry the reason and the facts
gathered before the failure.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import CONTAINER, REPO_ROOT, playbook_env


def test_fleet_report_names_the_failed_host_and_why(test_host, tmp_path):
    extra = {
        "gpu_check_device": "cpu",
        "gpu_check_python": "/usr/bin/python3",
        "gpu_check_report_dir": str(tmp_path / "controller"),
    }
    result = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "tools" / "fleet_report.py"),
            "-i",
            test_host["inventory"],
            "--reports",
            str(tmp_path / "reports"),
            "-e",
            json.dumps(extra),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        # ansible-runner passes the environment on: the test host's connection plugin.
        env=playbook_env(),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"attention: {CONTAINER}" in result.stdout
    (run_dir,) = [p for p in (tmp_path / "reports").iterdir() if p.is_dir()]
    host = json.loads((run_dir / "results.json").read_text())["hosts"][CONTAINER]
    assert host["status"] == "failed"
    assert host["nvidia_smi"]["present"] is False  # gathered before the failure
    assert any(
        "torch is not importable" in e or "No module named 'torch'" in e for e in host["errors"]
    ), host["errors"]
    page = (run_dir / "index.html").read_text()
    assert (
        f'<li data-host="{CONTAINER}"><b>{CONTAINER}</b> <span class="status failed">failed</span>'
        in page
    )
    assert f"- **{CONTAINER}** (failed)" in (run_dir / "summary.md").read_text()
