"""Verify the distro-method driver and toolkit from Debian's real archive (testinfra).

Nothing here is a stand-in: the packages are Debian's own, from deb.debian.org. The
expected versions are the vendor catalogue's record of what bookworm serves
(data/vendor_catalogue.yml, distro_driver_packages and distro_toolkit_packages): when
Debian publishes a point release this test fails and names the catalogue row to update.
"""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location(
    "vendor_catalogue", ROOT / "module_utils" / "vendor_catalogue.py"
)
_cat = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cat)
CATALOGUE = _cat.CATALOGUE

DISTRO = CATALOGUE["distro_driver_packages"]["debian"]
SERVED = {row["suite"]: row for row in DISTRO["served"]["12"]}
TOOLKIT = CATALOGUE["distro_toolkit_packages"]["debian"]["12"]
DRIVER_PACKAGES = DISTRO["proprietary"]  # nvidia-driver, nvidia-kernel-dkms
COMPANIONS = DISTRO["companions"]  # nvidia-smi, nvidia-persistenced
SOURCES = "/etc/apt/sources.list.d/kindling-nvidia-distro.sources"
CATALOGUE_ROW = "data/vendor_catalogue.yml distro_driver_packages.debian.served"


def test_role_enabled_the_components_in_one_deb822_file(host):
    f = host.file(SOURCES)
    assert f.exists and f.user == "root" and f.mode == 0o644
    text = f.content_string
    assert "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\n" in text
    assert f"Components: {' '.join(DISTRO['components'])}" in text
    # The image's own entry is left as mmdebstrap wrote it (main only).
    assert host.file("/etc/apt/sources.list").content_string.split() == [
        "deb",
        "http://deb.debian.org/debian",
        "bookworm",
        "main",
    ]
    # The toolkit's component (non-free) was already there through the driver's file.
    assert not host.file("/etc/apt/sources.list.d/kindling-cuda-distro.sources").exists


def test_driver_packages_are_debians_at_the_catalogued_version(host):
    want = SERVED["bookworm"]["proprietary"]
    for name in [*DRIVER_PACKAGES, "nvidia-smi"]:
        pkg = host.package(name)
        assert pkg.is_installed, name
        assert pkg.version == want, (
            f"{name} {pkg.version}: update {CATALOGUE_ROW} if Debian moved on"
        )
    policy = host.check_output("apt-cache policy nvidia-driver")
    assert "http://deb.debian.org/debian bookworm/non-free amd64 Packages" in policy
    persistenced = host.package("nvidia-persistenced")
    assert persistenced.is_installed and persistenced.version.startswith("535.")
    assert "bookworm/contrib" in host.check_output("apt-cache policy nvidia-persistenced")
    # firmware-nvidia-gsp came from non-free-firmware, as nvidia-kernel-dkms depends on it.
    assert host.package("firmware-nvidia-gsp").version == want


def test_no_recommends_came_along(host):
    # Recommends of the driver and dkms that a server does not want.
    for name in (
        "nvidia-settings",
        "linux-headers-amd64",
        "nsight-systems",
        "nvidia-cuda-toolkit-doc",
    ):
        assert not host.package(name).is_installed, name


def test_driver_packages_and_companions_are_held(host):
    held = set(host.check_output("apt-mark showhold").split())
    assert set(DRIVER_PACKAGES + COMPANIONS) <= held, held


def test_preferences_pin_the_branch(host):
    text = host.file("/etc/apt/preferences.d/kindling-nvidia-driver").content_string
    assert f"Package: {' '.join(DRIVER_PACKAGES)} /^(lib)?nvidia-/" in text
    assert "Pin: version 535.*" in text
    assert "Pin-Priority: 1001" in text
    candidate = next(
        ln
        for ln in host.check_output("apt-cache policy nvidia-driver").splitlines()
        if "Candidate:" in ln
    )
    assert candidate.split()[-1] == SERVED["bookworm"]["proprietary"]


def test_dkms_added_the_module_but_built_it_for_no_kernel(host):
    # The container runs this machine's kernel; no headers for it exist in the image.
    out = host.check_output("dkms status")
    version = SERVED["bookworm"]["proprietary"].split("-")[0]
    assert f"nvidia-current/{version}: added" in out, out
    kernel = host.check_output("uname -r").strip()
    assert not host.file(f"/lib/modules/{kernel}").exists
    assert not host.file("/proc/driver/nvidia/version").exists


def test_real_nvidia_smi_says_the_driver_does_not_answer(host):
    run = host.run("nvidia-smi")
    assert run.rc == 9, (run.rc, run.stdout, run.stderr)
    assert "couldn't communicate with the NVIDIA driver" in run.stdout + run.stderr


def test_reboot_requested_with_the_module_state_and_next_step(host):
    data = json.loads(host.file("/var/lib/kindling/reboot-required.json").content_string)
    assert data["boot_id"] == host.file("/proc/sys/kernel/random/boot_id").content_string.strip()
    (req,) = [r for r in data["requests"] if r["role"] == "nvidia_driver"]
    assert req["needed"] is True and req["policy"] == "auto"
    version = SERVED["bookworm"]["proprietary"].split("-")[0]
    assert (
        f"driver userspace installed, kernel module {version} not built for the running kernel"
        in req["reason"]
    )
    assert "container" in req["reason"]
    # A container is never rebooted: the system is still up in the same boot.
    assert host.run("systemctl is-system-running").stdout.strip() in ("running", "degraded")
    assert data["boot_id"] == host.file("/proc/sys/kernel/random/boot_id").content_string.strip()


def test_persistenced_enabled_for_the_next_boot_not_started(host):
    svc = host.service("nvidia-persistenced")
    assert svc.is_enabled
    # It opens the GPUs, which the driver does not serve yet: the role does not start it.
    # (Debian's postinst tries once, and that start fails: the unit shows "failed" until
    # the next boot, where it starts with the loaded module.)
    assert not svc.is_running
    drop_in = "/etc/systemd/system/nvidia-persistenced.service.d/kindling-persistence-mode.conf"
    assert host.file(drop_in).exists
    assert "--no-persistence-mode" not in host.check_output(
        "systemctl show -p ExecStart nvidia-persistenced"
    )


def test_distro_toolkit_installed_and_nvcc_reports_it(host):
    pkg = host.package(TOOLKIT["package"])
    assert pkg.is_installed
    assert pkg.version == TOOLKIT["version"], (
        "update data/vendor_catalogue.yml distro_toolkit_packages"
    )
    out = host.check_output(f"{TOOLKIT['nvcc']} --version")
    assert f"release {TOOLKIT['cuda']}," in out
    assert "bookworm/non-free" in host.check_output(f"apt-cache policy {TOOLKIT['package']}")


def test_toolkit_environment_is_debians_layout(host):
    text = host.file("/etc/profile.d/cuda.sh").content_string
    assert f"export CUDA_HOME={TOOLKIT['cuda_home']}" in text
    assert "PATH=" not in text and "LD_LIBRARY_PATH" not in text
    out = host.check_output("bash -lc 'echo $CUDA_HOME; command -v nvcc'").split()
    assert out == [TOOLKIT["cuda_home"], TOOLKIT["nvcc"]]
    assert host.file(f"{TOOLKIT['cuda_home']}/include/cuda.h").exists
    # No NVIDIA-style tree, link or linker entry is made for a distribution toolkit.
    assert not host.file("/usr/local/cuda").exists
    assert not host.run("ls /etc/ld.so.conf.d/cuda-*.conf").stdout.strip()
    assert not host.file("/etc/apt/sources.list.d/cuda-debian12-x86_64.list").exists
    assert not host.file("/etc/apt/sources.list.d/cuda-debian12-x86_64.sources").exists
