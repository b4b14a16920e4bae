"""Verify the driver upgrade 510 -> 535 (testinfra)."""

import json


def test_535_installed_and_held(host):
    for pkg in ("cuda-drivers-535", "nvidia-driver-535"):
        p = host.package(pkg)
        assert p.is_installed and p.version == "535.183.01-1"
    held = host.check_output("apt-mark showhold").split()
    assert {"cuda-drivers-535", "nvidia-driver-535"} <= set(held)


def test_510_gone_and_unheld(host):
    for pkg in ("cuda-drivers-510", "nvidia-driver-510"):
        assert not host.package(pkg).is_installed
    assert not any(p.endswith("-510") for p in host.check_output("apt-mark showhold").split())


def test_pin_follows_the_branch(host):
    pin = host.file("/etc/apt/preferences.d/kindling-nvidia-driver").content_string
    assert "Pin: version 535.*" in pin and "510" not in pin


def test_one_reboot_request_for_the_upgrade(host):
    data = json.loads(host.file("/var/lib/kindling/reboot-required.json").content_string)
    assert [r["role"] for r in data["requests"]] == ["nvidia_driver"]
    assert "nvidia-driver-535" in data["requests"][0]["reason"]
    changed = json.loads(host.file("/var/lib/kindling/nvidia_driver/changed.json").content_string)
    assert changed["removed"] == ["cuda-drivers-510", "nvidia-driver-510"] or set(
        changed["removed"]
    ) == {
        "cuda-drivers-510",
        "nvidia-driver-510",
    }


def test_nvidia_smi_reports_535(host):
    out = host.check_output("nvidia-smi --query-gpu=driver_version --format=csv,noheader")
    assert out.strip() == "535.183.01"


def test_held_535_survives_apt_get_upgrade(host):
    host.run("apt-get -y upgrade")
    assert host.package("nvidia-driver-535").version == "535.183.01-1"


def test_adopting_run_left_535_in_place(host):
    # side_effect.yml asked for branch 510 with adopt_newer: 535 stays, pinned and held.
    assert host.package("nvidia-driver-535").is_installed
    assert not host.package("nvidia-driver-510").is_installed
    assert (
        "Pin: version 535.*"
        in host.file("/etc/apt/preferences.d/kindling-nvidia-driver").content_string
    )
