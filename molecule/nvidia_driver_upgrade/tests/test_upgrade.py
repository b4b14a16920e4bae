"""Verify the driver upgrade 550 -> 580 on NVIDIA's debian12 layout (testinfra).

In that layout the branch lives in one package name only (cuda-drivers-<branch>); the
driver (nvidia-driver) and its kernel modules (nvidia-kernel-dkms) keep their names across
branches, so the upgrade replaces their versions and removes cuda-drivers-550.
"""

import json

DRIVER = ("cuda-drivers-580", "nvidia-driver", "nvidia-kernel-dkms")
VERSION = "580.95.05-1"
PIN = "/etc/apt/preferences.d/kindling-nvidia-driver"


def test_580_installed_and_held(host):
    for pkg in DRIVER:
        p = host.package(pkg)
        assert p.is_installed, pkg
        assert p.version == VERSION, pkg
    held = host.check_output("apt-mark showhold").split()
    assert set(DRIVER) <= set(held), held


def test_550_gone_and_unheld(host):
    assert not host.package("cuda-drivers-550").is_installed
    held = host.check_output("apt-mark showhold").split()
    assert not any(p.endswith("-550") for p in held), held
    versions = host.check_output(
        "dpkg-query -W -f='${Version}\\n' nvidia-driver nvidia-kernel-dkms"
    )
    assert not any(v.startswith("550.") for v in versions.split()), versions


def test_pin_follows_the_branch(host):
    pin = host.file(PIN).content_string
    assert "Package: cuda-drivers-580 nvidia-driver nvidia-kernel-dkms" in pin, pin
    assert "Pin: version 580.*" in pin and "550" not in pin, pin


def test_one_reboot_request_for_the_upgrade(host):
    data = json.loads(host.file("/var/lib/kindling/reboot-required.json").content_string)
    assert [r["role"] for r in data["requests"]] == ["nvidia_driver"]
    assert "cuda-drivers-580" in data["requests"][0]["reason"]
    changed = json.loads(host.file("/var/lib/kindling/nvidia_driver/changed.json").content_string)
    assert changed["removed"] == ["cuda-drivers-550"], changed
    assert changed["packages"] == list(DRIVER), changed


def test_nvidia_smi_reports_580(host):
    out = host.check_output("nvidia-smi --query-gpu=driver_version --format=csv,noheader")
    assert out.strip() == "580.95.05"


def test_held_580_survives_apt_get_upgrade(host):
    host.run("apt-get -y upgrade")
    for pkg in DRIVER:
        assert host.package(pkg).version == VERSION, pkg


def test_adopting_run_left_580_in_place(host):
    # side_effect.yml asked for branch 550 with adopt_newer: 580 stays, pinned and held.
    assert host.package("cuda-drivers-580").is_installed
    assert host.package("nvidia-driver").version == VERSION
    assert not host.package("cuda-drivers-550").is_installed
    assert "Pin: version 580.*" in host.file(PIN).content_string
