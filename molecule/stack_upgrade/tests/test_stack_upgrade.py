"""Verify issue 35's safe way to a new default (testinfra): the recorded stack was kept
without the opt-in, with the notice, and the opt-in upgraded driver and toolkit."""

import json
import os
import re

RECORDS = "/var/lib/kindling"


def _log():
    path = os.environ.get("KINDLING_MOLECULE_LOG", "")
    assert path and os.path.exists(path), "run the scenario through make molecule"
    with open(path, encoding="utf-8", errors="replace") as handle:
        return " ".join(handle.read().split())  # the callback wraps long messages


def test_the_run_without_the_opt_in_said_what_an_upgrade_changes():
    """Said by converge, which found no records (the roles' own pins stood for them), and by
    idempotence (changed=0), which found the records converge wrote."""
    log = _log()
    assert "A newer default stack exists; this host keeps the stack it was converged with" in log
    changes = r"cuda_version 12\.4 -> 13\.0, nvidia_driver_branch 550 -> 580 \(a new driver branch"
    assert re.search(changes, log), log[-3000:]
    assert "kindling_stack_upgrade: true" in log


def test_the_opt_in_said_it_upgrades():
    assert "kindling_stack_upgrade is true: this run upgrades" in _log()


def test_the_driver_and_the_toolkit_were_upgraded(host):
    assert host.package("cuda-drivers-580").is_installed
    assert host.package("nvidia-driver").version.startswith("580.")
    assert not host.package("cuda-drivers-550").is_installed
    assert host.package("cuda-toolkit-13-0").is_installed


def test_cudnn_moved_to_the_cuda_13_packages_and_is_held(host):
    """The held CUDA 12 packages were released and removed, not left to block the move."""
    assert host.package("libcudnn9-cuda-13").is_installed
    assert host.package("libcudnn9-dev-cuda-13").is_installed
    assert not host.package("libcudnn9-cuda-12").is_installed
    assert not host.package("libcudnn9-dev-cuda-12").is_installed
    held = host.check_output("apt-mark showhold").split()
    assert "libcudnn9-cuda-13" in held and "libcudnn9-cuda-12" not in held
    pin = host.file("/etc/apt/preferences.d/kindling-cudnn").content_string
    assert "Package: libcudnn9-cuda-13 libcudnn9-dev-cuda-13" in pin


def test_the_records_follow_the_upgrade(host):
    driver = json.loads(host.file(f"{RECORDS}/stack-nvidia_driver.json").content_string)
    cuda = json.loads(host.file(f"{RECORDS}/stack-cuda.json").content_string)
    assert driver == {
        "format": 1,
        "stage": "nvidia_driver",
        "stack": {"nvidia_driver_branch": "580"},
    }
    assert cuda["stack"] == {"cuda_version": "13.0", "cuda_cudnn_version": "9.14.0"}
    record = host.file(f"{RECORDS}/stack-cuda.json")
    assert record.user == "root" and record.mode == 0o644
