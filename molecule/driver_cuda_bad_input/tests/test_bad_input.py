"""Every bad input failed before the host changed (testinfra)."""


def test_no_repository_entry(host):
    out = host.run("ls /etc/apt/sources.list.d/").stdout.split()
    assert not [f for f in out if f.startswith("cuda")]


def test_no_keyring_trusted(host):
    assert not host.file("/usr/share/keyrings/cuda-archive-keyring.gpg").exists


def test_no_nvidia_or_cuda_packages(host):
    out = host.check_output("dpkg-query -W -f='${Package} ${Status}\\n'")
    installed = [ln.split()[0] for ln in out.splitlines() if ln.endswith(" installed")]
    bad = [p for p in installed if p.startswith(("nvidia", "cuda", "libcudnn", "libnvidia"))]
    assert bad == []


def test_no_pins_or_environment(host):
    assert not host.file("/etc/apt/preferences.d/kindling-nvidia-driver").exists
    assert not host.file("/etc/apt/preferences.d/kindling-cudnn").exists
    assert not host.file("/etc/profile.d/cuda.sh").exists
    assert not host.file("/usr/local/cuda").exists


def test_wrong_checksum_left_no_tarball(host):
    out = host.run("ls -A /var/lib/kindling/cuda 2>/dev/null").stdout.split()
    assert out == []


def test_no_reboot_requested(host):
    assert not host.file("/var/lib/kindling/reboot-required.json").exists
