"""Verify the nvidia_driver stage on the Molecule test hosts (testinfra), per host.

Both hosts are Debian 12, so the role must have asked for the names NVIDIA's debian12
repository uses (cuda-drivers-580 with the unsuffixed nvidia-driver and
nvidia-kernel-dkms), which the stand-in repository is generated with from the catalogue.
kindling-nvidia-driver has no NVSwitch (no NVIDIA function on its PCI bus, one GPU in the
stand-in nvidia-smi); kindling-nvidia-driver-hgx looks like an HGX H100 baseboard (a
constructed PCI tree with 4 NVSwitches, the stand-in's 8-GPU capture set), so only there the
fabric manager is installed, held and running; side_effect.yml broke its version lock once.
"""

import json

import pytest

# What each host must show: the stand-in nvidia-smi's GPUs, and whether it is an NVSwitch host.
EXPECTED = {
    "kindling-nvidia-driver": {"gpu": "NVIDIA A100-SXM4-40GB", "gpus": 1, "nvswitch": False},
    "kindling-nvidia-driver-hgx": {"gpu": "NVIDIA H100 80GB HBM3", "gpus": 8, "nvswitch": True},
}
# The fabric manager packages of branch 580 (catalogue fabric_manager_packages: unsuffixed
# from 580); tests/test_fabric_manager.py checks them on the HGX host.
FABRIC_MANAGER = ("nvidia-fabricmanager", "libnvidia-nscq")
DRIVER_VERSION = "580.95.05"


@pytest.fixture()
def expected(host):
    return EXPECTED[host.backend.get_hostname()]


REPO_FILE = "/etc/apt/sources.list.d/cuda-debian12-x86_64.sources"
# What earlier releases (and NVIDIA's cuda-keyring package) wrote; replaced by REPO_FILE.
OLD_REPO_FILE = "/etc/apt/sources.list.d/cuda-debian12-x86_64.list"
KEYRING = "/usr/share/keyrings/cuda-archive-keyring.gpg"
PIN = "/etc/apt/preferences.d/kindling-nvidia-driver"


def test_repository_entry_uses_signed_by(host):
    f = host.file(REPO_FILE)
    assert f.exists and f.mode == 0o644
    fields = dict(
        line.split(": ", 1) for line in f.content_string.splitlines() if line and line[0] != "#"
    )
    assert fields["Types"] == "deb"
    assert fields["Signed-By"] == KEYRING
    assert fields["Suites"] == "/" and "Components" not in fields
    assert fields["URIs"].startswith("http://127.0.0.1:")
    assert fields["URIs"].endswith("/compute/cuda/repos/debian12/x86_64/")
    assert not host.file(OLD_REPO_FILE).exists


def test_earlier_sources_are_gone_and_apt_is_clean(host):
    # prepare.yml left an earlier one-line source, the retired machine-learning repository
    # and an apt-key entry for the same URL; none is left, and apt reads its sources cleanly.
    for name in ("cuda-debian12-x86_64.list", "nvidia-ml.list", "cuda-apt-key.list"):
        assert not host.file(f"/etc/apt/sources.list.d/{name}").exists, name
    update = host.run("LC_ALL=C apt-get update 2>&1")
    assert update.rc == 0, update.stdout
    ours = [
        ln
        for ln in update.stdout.splitlines()
        if ln.startswith(("W:", "E:")) and ("compute/" in ln or "Signed-By" in ln)
    ]
    assert not ours, update.stdout


def test_keyring_holds_the_fixture_key(host):
    f = host.file(KEYRING)
    assert f.exists and f.user == "root" and f.mode == 0o644
    out = host.check_output(f"gpg --batch --with-colons --show-keys {KEYRING}")
    fprs = [ln.split(":")[9] for ln in out.splitlines() if ln.startswith("fpr:")]
    assert fprs, out
    # apt trusts the repository with it: the driver came from there.
    policy = host.check_output("apt-cache policy cuda-drivers-580")
    assert "/compute/cuda/repos/debian12/x86_64" in policy


DEBIAN_DRIVER = ("cuda-drivers-580", "nvidia-driver", "nvidia-kernel-dkms")


def test_driver_packages_have_debians_names_pinned_version_and_held(host):
    for pkg in DEBIAN_DRIVER:
        p = host.package(pkg)
        assert p.is_installed, pkg
        assert p.version == "580.95.05-1", pkg
    held = host.check_output("apt-mark showhold").split()
    assert set(DEBIAN_DRIVER) <= set(held), held
    # Ubuntu's suffixed names do not exist in NVIDIA's debian12 repository.
    assert not host.package("nvidia-driver-580").is_installed
    sel = host.check_output("dpkg --get-selections nvidia-driver")
    assert sel.split() == ["nvidia-driver", "hold"]


def test_proprietary_kernel_modules_chosen(host):
    # auto on branch 580: NVIDIA's default is open, but debian12 has no open-module
    # cuda-drivers set, so the role fell back to proprietary and said why.
    assert host.package("nvidia-kernel-dkms").is_installed
    assert not host.package("nvidia-kernel-open-dkms").is_installed
    flavour = host.file("/usr/share/kindling-fixture/driver-flavour").content_string.strip()
    assert flavour == "proprietary"


def test_preferences_pin(host):
    f = host.file(PIN)
    assert f.exists
    text = f.content_string
    assert "Package: cuda-drivers-580 nvidia-driver nvidia-kernel-dkms /^(lib)?nvidia-/" in text
    assert "Pin: version 580.*" in text
    assert "Pin-Priority: 1001" in text
    policy = host.check_output("apt-cache policy nvidia-driver")
    assert "1001" in policy
    # cuda-drivers-580 depends on nvidia-driver (>= ...) only: the pin keeps apt on 580.
    candidate = next(ln for ln in policy.splitlines() if "Candidate:" in ln)
    assert "580." in candidate


def test_no_cuda_metapackage(host):
    assert not host.package("cuda").is_installed


def test_persistenced_enabled_and_running(host):
    svc = host.service("nvidia-persistenced")
    assert svc.is_enabled
    assert svc.is_running


def test_persistenced_runs_with_persistence_mode_on(host):
    # The packaged unit passes --no-persistence-mode; the role's drop-in replaces it.
    dropin = host.file(
        "/etc/systemd/system/nvidia-persistenced.service.d/kindling-persistence-mode.conf"
    )
    assert dropin.exists and dropin.mode == 0o644
    exec_start = host.check_output("systemctl show -p ExecStart nvidia-persistenced")
    assert "--persistence-mode" in exec_start
    assert "--no-persistence-mode" not in exec_start
    state = host.file("/run/nvidia-persistenced/persistence-mode").content_string.strip()
    assert state == "Enabled"
    out = host.check_output("nvidia-smi --query-gpu=persistence_mode --format=csv,noheader")
    assert out.split() == ["Enabled"] * len(out.split()) and out.split()


def test_reboot_recorded_not_done(host):
    record = host.file("/var/lib/kindling/reboot-required.json")
    assert record.exists
    data = json.loads(record.content_string)
    assert data["boot_id"] == host.file("/proc/sys/kernel/random/boot_id").content_string.strip()
    assert [r["role"] for r in data["requests"]] == ["nvidia_driver"]
    req = data["requests"][0]
    assert req["policy"] == "auto" and req["needed"] is True
    assert "driver packages changed in this boot" in req["reason"]
    assert "cuda-drivers-580" in req["reason"]
    assert host.run("systemctl is-system-running").stdout.strip() in ("running", "degraded")


def test_nvidia_smi_reports_the_installed_driver(host, expected):
    out = host.check_output("nvidia-smi --query-gpu=driver_version,name --format=csv,noheader")
    rows = [line.strip() for line in out.splitlines() if line.strip()]
    assert rows == [f"{DRIVER_VERSION}, {expected['gpu']}"] * expected["gpus"]


def test_fabric_manager_only_where_the_fabric_needs_it(host, expected):
    for pkg in FABRIC_MANAGER:
        assert host.package(pkg).is_installed is expected["nvswitch"], pkg
    unit = host.run("systemctl cat nvidia-fabricmanager.service")
    assert (unit.rc == 0) is expected["nvswitch"]
