"""Verify the cuda stage on the Molecule test host (testinfra)."""

PROFILE = "/etc/profile.d/cuda.sh"
LD_CONF = "/etc/ld.so.conf.d/cuda-11-6.conf"


def test_cuda_link_points_at_the_selected_toolkit(host):
    link = host.file("/usr/local/cuda")
    assert link.is_symlink
    assert link.linked_to in ("/usr/local/cuda-11.6", "/usr/lib/kindling-fixture/cuda-11.6")
    assert host.check_output("readlink /usr/local/cuda") == "/usr/local/cuda-11.6"


def test_toolkits_side_by_side_without_the_metapackage(host):
    assert host.package("cuda-toolkit-11-6").is_installed
    assert host.package("cuda-toolkit-12-4").is_installed
    assert not host.package("cuda").is_installed
    assert not host.package("cuda-drivers-510").is_installed
    assert "release 12.4," in host.check_output("/usr/local/cuda-12.4/bin/nvcc --version")


def test_nvcc_reports_the_selected_version(host):
    out = host.check_output("/usr/local/cuda/bin/nvcc --version")
    assert "Cuda compilation tools, release 11.6," in out


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
    assert "/usr/local/cuda-11.6/lib64" in f.content_string.splitlines()
    # ldconfig reads the entry (-N: don't rebuild the cache, just list what it scans).
    scanned = host.check_output("ldconfig -v -N 2>/dev/null | grep -v '^\\s'")
    assert any(line.startswith("/usr/local/cuda-11.6/lib64:") for line in scanned.splitlines())
    assert not host.file("/etc/ld.so.conf.d/cuda-12-4.conf").exists


def test_cudnn_pinned_and_held(host):
    for pkg in ("libcudnn8", "libcudnn8-dev"):
        p = host.package(pkg)
        assert p.is_installed and p.version == "8.4.0.27-1+cuda11.6"
    held = host.check_output("apt-mark showhold").split()
    assert "libcudnn8" in held and "libcudnn8-dev" in held
    pin = host.file("/etc/apt/preferences.d/kindling-cudnn").content_string
    assert "Package: libcudnn8 libcudnn8-dev" in pin
    # The matrix knows 8.4.0's exact build for CUDA 11.6, so the pin names it (a narrower
    # form of the 8.4.0.*-1+cuda11.6).
    assert "Pin: version 8.4.0.27-1+cuda11.6" in pin
    assert "Pin-Priority: 1001" in pin
    header = host.file("/usr/include/cudnn_version.h").content_string
    assert "#define CUDNN_MAJOR 8" in header and "#define CUDNN_MINOR 4" in header


def test_cudnn_tarball_unpacked_into_the_cuda_tree(host):
    # side_effect.yml installed the fixture tarball (sha256 checked) by the seed's manual method.
    header = host.file("/usr/local/cuda-11.6/include/cudnn_version.h")
    assert header.exists and "#define CUDNN_MAJOR 8" in header.content_string
    lib = host.file("/usr/local/cuda-11.6/lib64/libcudnn.so.8")
    assert lib.is_symlink and lib.linked_to.endswith("libcudnn.so.8.4.0")
    assert host.file("/usr/local/cuda-11.6/lib64/libcudnn.so.8.4.0").exists
