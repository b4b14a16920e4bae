"""The GPU workflow (.github/workflows/gpu.yml) keeps SSH host key checking on.

It trusts the known_hosts the user gives as a secret (KINDLING_SSH_KNOWN_HOSTS); without
one, each host's key is trusted on first use and kept in a known_hosts of the run's own,
as the cloud workflow does. Checking is never turned off.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "gpu.yml"


def _steps():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    return workflow["jobs"]["converge-and-verify"]["steps"]


def _trust_step():
    return next(s for s in _steps() if "KNOWN_HOSTS" in (s.get("env") or {}))


def test_checking_is_never_turned_off():
    text = WORKFLOW.read_text()
    assert not re.search(r"HOST_KEY_CHECKING=(False|false|0)", text)
    assert "StrictHostKeyChecking=no" not in text


def test_known_hosts_come_from_a_secret():
    step = _trust_step()
    assert step["env"]["KNOWN_HOSTS"] == "${{ secrets.KINDLING_SSH_KNOWN_HOSTS }}"


def _run(tmp_path, known_hosts: str) -> str:
    env_file = tmp_path / "env"
    env_file.write_text("")
    script = _trust_step()["run"]
    subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        check=True,
        env={
            "KNOWN_HOSTS": known_hosts,
            "RUNNER_TEMP": str(tmp_path),
            "GITHUB_ENV": str(env_file),
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
    )
    return env_file.read_text()


def test_given_known_hosts_are_the_only_ones_trusted(tmp_path):
    env = _run(tmp_path, "gpu1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample")
    assert "StrictHostKeyChecking=yes" in env
    assert f"UserKnownHostsFile={tmp_path}/known_hosts" in env
    assert "ANSIBLE_HOST_KEY_CHECKING=True" in env
    assert (tmp_path / "known_hosts").read_text().startswith("gpu1 ssh-ed25519")


def test_without_known_hosts_keys_are_trusted_on_first_use_and_kept_for_the_run(tmp_path):
    env = _run(tmp_path, "")
    assert "StrictHostKeyChecking=accept-new" in env
    assert f"UserKnownHostsFile={tmp_path}/known_hosts" in env
    assert "ANSIBLE_HOST_KEY_CHECKING=True" in env
