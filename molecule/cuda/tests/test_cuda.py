"""Verify the cuda stage on the Molecule test host (testinfra)."""

import json
import os
import urllib.request

PROFILE = "/etc/profile.d/cuda.sh"
LD_CONF = "/etc/ld.so.conf.d/cuda-13-0.conf"
FIXTURE_URL = os.environ.get("KINDLING_FIXTURE_URL", "http://127.0.0.1:8765")
MANIFEST = f"{FIXTURE_URL}/compute/cudnn/redist/redistrib_9.13.0.json"
ARCHIVE = "cudnn-linux-x86_64-9.13.0.50_cuda13-archive.tar.xz"


def test_cuda_link_points_at_the_selected_toolkit(host):
    link = host.file("/usr/local/cuda")
    assert link.is_symlink
    assert link.linked_to in ("/usr/local/cuda-13.0", "/usr/lib/kindling-fixture/cuda-13.0")
    assert host.check_output("readlink /usr/local/cuda") == "/usr/local/cuda-13.0"


def test_toolkits_side_by_side_without_the_metapackage(host):
    assert host.package("cuda-toolkit-13-0").is_installed
    assert host.package("cuda-toolkit-12-4").is_installed
    assert not host.package("cuda").is_installed
    assert not host.package("cuda-drivers-580").is_installed
    assert not host.package("nvidia-driver").is_installed
    assert "release 12.4," in host.check_output("/usr/local/cuda-12.4/bin/nvcc --version")


def test_nvcc_reports_the_selected_version(host):
    out = host.check_output("/usr/local/cuda/bin/nvcc --version")
    assert "Cuda compilation tools, release 13.0," in out


def test_login_shell_environment(host):
    f = host.file(PROFILE)
    assert f.exists and f.mode == 0o644 and f.user == "root"
    text = f.content_string
    assert "export CUDA_HOME=/usr/local/cuda" in text
    assert "/usr/local/cuda/lib64" in text
    env = host.check_output(
        "bash -lc 'echo $CUDA_HOME; echo $PATH; echo $LD_LIBRARY_PATH; command -v nvcc'"
    )
    home, path, ld, nvcc = env.splitlines()
    assert home == "/usr/local/cuda"
    assert path.split(":")[0] == "/usr/local/cuda/bin"
    assert ld.split(":")[0] == "/usr/local/cuda/lib64"
    assert nvcc == "/usr/local/cuda/bin/nvcc"


def test_bashrc_untouched(host):
    for rc in ("/root/.bashrc", "/etc/bash.bashrc", "/etc/skel/.bashrc"):
        f = host.file(rc)
        if f.exists:
            assert "cuda" not in f.content_string.lower()


def test_ld_so_conf_and_cache(host):
    f = host.file(LD_CONF)
    assert f.exists and f.mode == 0o644
    assert "/usr/local/cuda-13.0/lib64" in f.content_string.splitlines()
    # ldconfig reads the entry (-N: don't rebuild the cache, just list what it scans).
    scanned = host.check_output("ldconfig -v -N 2>/dev/null | grep -v '^\\s'")
    assert any(line.startswith("/usr/local/cuda-13.0/lib64:") for line in scanned.splitlines())
    assert not host.file("/etc/ld.so.conf.d/cuda-12-4.conf").exists


CUDNN_APT = ("libcudnn9-cuda-13", "libcudnn9-dev-cuda-13")


def test_cudnn_pinned_and_held(host):
    for pkg in CUDNN_APT:
        p = host.package(pkg)
        assert p.is_installed and p.version == "9.14.0.64-1", pkg
    # The CUDA 12 build ships the same paths and conflicts: the role chose CUDA 13's.
    assert not host.package("libcudnn9-cuda-12").is_installed
    held = host.check_output("apt-mark showhold").split()
    assert set(CUDNN_APT) <= set(held), held
    pin = host.file("/etc/apt/preferences.d/kindling-cudnn").content_string
    assert "Package: libcudnn9-cuda-13 libcudnn9-dev-cuda-13" in pin
    # The catalogue knows no 9.14.0 build number here, so the pin is a glob of the release.
    assert "Pin: version 9.14.0.*-1" in pin
    assert "Pin-Priority: 1001" in pin
    # cuDNN 9's header is where NVIDIA's Debian package puts it, under the multiarch path.
    header = host.file("/usr/include/x86_64-linux-gnu/cudnn_version_v9.h").content_string
    assert "#define CUDNN_MAJOR 9" in header
    assert "#define CUDNN_MINOR 14" in header
    assert "#define CUDNN_PATCHLEVEL 0" in header


def test_cudnn_tarball_unpacked_into_the_cuda_tree(host):
    # side_effect.yml installed cuDNN 9.13.0 by the tarball method, from the stand-in of
    # NVIDIA's redist tree.
    header = host.file("/usr/local/cuda-13.0/include/cudnn_version.h")
    assert header.exists
    assert "#define CUDNN_MAJOR 9" in header.content_string
    assert "#define CUDNN_MINOR 13" in header.content_string
    lib = host.file("/usr/local/cuda-13.0/lib64/libcudnn.so.9")
    assert lib.is_symlink and lib.linked_to.endswith("libcudnn.so.9.13.0")
    assert host.file("/usr/local/cuda-13.0/lib64/libcudnn.so.9.13.0").exists
    so = "/usr/local/cuda-13.0/lib64/libcudnn.so"
    assert host.file(so).is_symlink
    assert host.check_output(f"readlink {so}") == "libcudnn.so.9"
    # Only include/ and lib/ went into the tree.
    assert not host.file("/usr/local/cuda-13.0/KINDLING-TEST-FIXTURE.txt").exists


def test_cudnn_tarball_sha256_came_from_the_manifest(host):
    with urllib.request.urlopen(MANIFEST, timeout=30) as response:
        manifest = json.load(response)
    entry = manifest["cudnn"]["linux-x86_64"]["cuda13"]
    assert entry["relative_path"].endswith("/" + ARCHIVE)
    download = f"/var/lib/kindling/cuda/{ARCHIVE}"
    assert host.file(download).exists
    sha = host.check_output(f"sha256sum {download}").split()[0]
    assert sha == entry["sha256"]
    assert host.file(download).size == int(entry["size"])
