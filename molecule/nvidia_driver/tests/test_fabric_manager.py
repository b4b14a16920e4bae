"""The fabric manager on the HGX-looking host of the nvidia_driver scenario (testinfra).

kindling-nvidia-driver-hgx has a constructed HGX H100 PCI tree (4 NVSwitches) and the stand-in
nvidia-smi's 8-GPU capture set, so the role installed the fixture's stand-in fabric manager
there (tests/test_nvidia_driver.py checks that the other host has none). side_effect.yml forced
a fabric manager of another point release in, checked verify's message and converged again.
"""

import pytest
import testinfra

# Molecule passes both hosts (--hosts); these tests take the HGX host themselves, so they
# run once, there, and never against the host without NVSwitch.
HGX = "podman://kindling-nvidia-driver-hgx"

# Branch 580's names (catalogue fabric_manager_packages: unsuffixed from 580).
FABRIC_MANAGER = ("nvidia-fabricmanager", "libnvidia-nscq")
DRIVER_VERSION = "580.95.05"


@pytest.fixture(scope="module")
def hgx():
    return testinfra.get_host(HGX)


def test_fabric_manager_at_the_driver_version_held_and_pinned(hgx):
    for pkg in FABRIC_MANAGER:
        # side_effect.yml forced 580.105.08 in; the converge after it put 580.95.05 back.
        assert hgx.package(pkg).version == f"{DRIVER_VERSION}-1", pkg
    held = hgx.check_output("apt-mark showhold").split()
    assert set(FABRIC_MANAGER) <= set(held), held
    # Its own pin, at the driver's exact version and above the driver's branch pin (1001),
    # in a file that sorts before the driver's (apt takes the first pin matching a package).
    pin = hgx.file("/etc/apt/preferences.d/00-kindling-nvidia-driver-fabricmanager")
    assert pin.exists and pin.mode == 0o644
    assert "Package: nvidia-fabricmanager libnvidia-nscq" in pin.content_string
    assert f"Pin: version {DRIVER_VERSION}-*" in pin.content_string
    assert "Pin-Priority: 1002" in pin.content_string
    policy = hgx.check_output("apt-cache policy nvidia-fabricmanager")
    assert "1002" in policy
    candidate = next(ln for ln in policy.splitlines() if "Candidate:" in ln)
    assert candidate.split()[-1] == f"{DRIVER_VERSION}-1"


def test_fabric_manager_runs_and_the_fabric_is_completed(hgx):
    svc = hgx.service("nvidia-fabricmanager")
    assert svc.is_enabled
    assert svc.is_running
    fabric = hgx.check_output("nvidia-smi -q -x")
    assert fabric.count("<state>Completed</state>") == 8


def test_the_version_mismatch_was_reported_with_both_versions(hgx):
    message = hgx.file("/var/lib/kindling/test-fabric-manager-mismatch.txt").content_string
    assert "nvidia-fabricmanager 580.105.08" in message
    assert f"driver's ({DRIVER_VERSION})" in message
    assert f"nvidia-fabricmanager={DRIVER_VERSION}-* libnvidia-nscq={DRIVER_VERSION}-*" in message
