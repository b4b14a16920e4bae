"""Verify the nvidia_driver stage on the Molecule test host (testinfra)."""

import json

REPO_FILE = "/etc/apt/sources.list.d/cuda-debian12-x86_64.list"
KEYRING = "/usr/share/keyrings/cuda-archive-keyring.gpg"
PIN = "/etc/apt/preferences.d/kindling-nvidia-driver"


def test_repository_entry_uses_signed_by(host):
    f = host.file(REPO_FILE)
    assert f.exists and f.mode == 0o644
    lines = [ln for ln in f.content_string.splitlines() if ln.startswith("deb ")]
    assert len(lines) == 1
    assert lines[0].startswith(f"deb [signed-by={KEYRING}] http://127.0.0.1:")
    assert lines[0].endswith("/compute/cuda/repos/debian12/x86_64/ /")


def test_keyring_holds_the_fixture_key(host):
    f = host.file(KEYRING)
    assert f.exists and f.user == "root" and f.mode == 0o644
    out = host.check_output(f"gpg --batch --with-colons --show-keys {KEYRING}")
    fprs = [ln.split(":")[9] for ln in out.splitlines() if ln.startswith("fpr:")]
    assert fprs, out
    # apt trusts the repository with it: the driver came from there.
    policy = host.check_output("apt-cache policy cuda-drivers-510")
    assert "/compute/cuda/repos/debian12/x86_64" in policy


def test_driver_packages_pinned_version_and_held(host):
    for pkg in ("cuda-drivers-510", "nvidia-driver-510"):
        p = host.package(pkg)
        assert p.is_installed
        assert p.version == "510.47.03-1"
    held = host.check_output("apt-mark showhold").split()
    assert "cuda-drivers-510" in held and "nvidia-driver-510" in held
    sel = host.check_output("dpkg --get-selections nvidia-driver-510")
    assert sel.split() == ["nvidia-driver-510", "hold"]


def test_preferences_pin(host):
    f = host.file(PIN)
    assert f.exists
    text = f.content_string
    assert "Package: cuda-drivers-510 nvidia-driver-510" in text
    assert "Pin: version 510.*" in text
    assert "Pin-Priority: 1001" in text
    policy = host.check_output("apt-cache policy nvidia-driver-510")
    assert "1001" in policy


def test_no_cuda_metapackage(host):
    assert not host.package("cuda").is_installed


def test_persistenced_enabled_and_running(host):
    svc = host.service("nvidia-persistenced")
    assert svc.is_enabled
    assert svc.is_running


def test_reboot_recorded_not_done(host):
    record = host.file("/var/lib/kindling/reboot-required.json")
    assert record.exists
    data = json.loads(record.content_string)
    assert data["boot_id"] == host.file("/proc/sys/kernel/random/boot_id").content_string.strip()
    assert [r["role"] for r in data["requests"]] == ["nvidia_driver"]
    req = data["requests"][0]
    assert req["policy"] == "auto" and req["needed"] is True
    assert "driver packages changed in this boot" in req["reason"]
    assert "cuda-drivers-510" in req["reason"]
    assert host.run("systemctl is-system-running").stdout.strip() in ("running", "degraded")


def test_nvidia_smi_reports_the_installed_driver(host):
    out = host.check_output("nvidia-smi --query-gpu=driver_version,name --format=csv,noheader")
    assert out.strip().startswith("510.47.03, NVIDIA A100-SXM4-40GB")
