"""The test-fixture package sources (tests/fixture_sources): build once, serve, check them.

The fixtures stand in for NVIDIA's apt repository, its cuDNN tarball server and the PyTorch
wheel index in Molecule tests (docs/FIXTURES.md). These tests build them into a temporary
directory once per session, serve them on a free loopback port and check what the roles rely
on: signatures, exact package versions, the stand-in tools' output, the tarball checksum, and
that apt and pip accept the sources.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCES = REPO_ROOT / "tests" / "fixture_sources"
BUILD = SOURCES / "build_fixtures.py"
SERVE = SOURCES / "serve_fixtures.py"
TORCH_WHEEL = Path(
    os.environ.get(
        "KINDLING_TORCH_WHEEL", "/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    )
)
# Downloaded dependency wheels are kept between sessions so that reruns stay offline.
WHEEL_CACHE = REPO_ROOT / ".cache" / "fixture-wheel-cache"
APT_REPO = "compute/cuda/repos/debian12/x86_64"
TARBALL = (
    "compute/cudnn/redist/cudnn/linux-x86_64/cudnn-linux-x86_64-8.4.0.27_cuda11.6-archive.tar.xz"
)

EXPECTED_VERSIONS = {
    "cuda-keyring": "1.1-1",
    "nvidia-driver-510": "510.47.03-1",
    "nvidia-driver-535": "535.183.01-1",
    "nvidia-driver-535-open": "535.183.01-1",
    "nvidia-driver-550": "550.54.15-1",
    "nvidia-driver-550-open": "550.54.15-1",
    "cuda-drivers-510": "510.47.03-1",
    "cuda-drivers-535": "535.183.01-1",
    "cuda-drivers-550": "550.54.15-1",
    "cuda-toolkit-11-6": "11.6.2-1",
    "cuda-toolkit-12-4": "12.4.1-1",
    "cuda": "11.6.2-1",
    "libcudnn8": "8.4.0.27-1+cuda11.6",
    "libcudnn8-dev": "8.4.0.27-1+cuda11.6",
    "libcudnn9-cuda-12": "9.1.0.70-1",
    "libcudnn9-dev-cuda-12": "9.1.0.70-1",
    "cudnn9-cuda-12": "9.1.0.70-1",
    "datacenter-gpu-manager": "1:3.3.9",
    "nvidia-container-toolkit": "1.17.8-1",
    "kindling-fixture-canary": "1.0-1",
}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        any(
            shutil.which(tool) is None
            for tool in ("equivs-build", "apt-ftparchive", "gpg", "gpgv", "dpkg-deb")
        ),
        reason="needs equivs, apt-utils, gnupg and dpkg-dev (apt-get install them)",
    ),
    pytest.mark.skipif(
        not TORCH_WHEEL.is_file(),
        reason=f"the CPU torch wheel the index fixture serves is not at {TORCH_WHEEL}",
    ),
]


def _run(cmd, **kwargs):
    return subprocess.run(
        [str(part) for part in cmd], capture_output=True, text=True, check=False, **kwargs
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """Build the fixtures once per session; returns (out dir, build stdout, seconds)."""
    out = tmp_path_factory.mktemp("fixture-sources") / "out"
    started = time.monotonic()
    proc = _run([sys.executable, BUILD, "--out", out, "--wheel-cache", WHEEL_CACHE])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out, proc.stdout, time.monotonic() - started


@pytest.fixture(scope="session")
def srv(built) -> Path:
    return built[0] / "srv"


@pytest.fixture(scope="session")
def repo(srv) -> Path:
    return srv / APT_REPO


@pytest.fixture(scope="session")
def server(built):
    """Serve the build on a free loopback port for the session; yields the base URL."""
    out = built[0]
    port = _free_port()
    proc = _run([sys.executable, SERVE, "start", "--out", out, "--port", port])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    yield f"http://127.0.0.1:{port}"
    _run([sys.executable, SERVE, "stop", "--out", out, "--port", port])


def _deb(repo: Path, name: str) -> Path:
    version = EXPECTED_VERSIONS[name].split(":")[-1]
    matches = list(repo.glob(f"{name}_{version}_*.deb"))
    assert len(matches) == 1, matches
    return matches[0]


@pytest.fixture(scope="session")
def extracted(repo, tmp_path_factory):
    """Extract a package's files into a temporary root (cached per package)."""
    cache: dict[str, Path] = {}

    def extract(name: str) -> Path:
        if name not in cache:
            root = tmp_path_factory.mktemp(name)
            proc = _run(["dpkg-deb", "-x", _deb(repo, name), root])
            assert proc.returncode == 0, proc.stderr
            cache[name] = root
        return cache[name]

    return extract


def _smi(root: Path, *args, **env):
    environment = {
        **os.environ,
        "KINDLING_FAKE_SMI_DIR": str(root / "usr/share/kindling-fixture/nvidia-smi"),
        "KINDLING_FAKE_SMI_FAIL_FILE": str(root / "no-such-fail-file"),
        **env,
    }
    return _run([root / "usr/bin/nvidia-smi", *args], env=environment)


def _packages(repo: Path) -> dict[str, dict[str, str]]:
    stanzas = {}
    for stanza in (repo / "Packages").read_text().strip().split("\n\n"):
        fields, key = {}, None
        for line in stanza.splitlines():
            if line.startswith(" ") and key:
                fields[key] += "\n" + line
            else:
                key, _, value = line.partition(": ")
                fields[key] = value
        stanzas[fields["Package"]] = fields
    return stanzas


# ---------------------------------------------------------------------------- build outputs


def test_build_prints_summary_and_writes_layout(built, srv):
    _out, stdout, _seconds = built
    assert stdout.count("\n") == 1 and stdout.startswith("kindling fixtures: built 20 debs")
    for path in (
        "index.html",
        "fixtures.json",
        "checksums.json",
        "keys/kindling-fixture-archive-keyring.gpg",
        "keys/kindling-fixture-archive-keyring.asc",
        "keys/wrong-archive-keyring.gpg",
        "keys/fingerprints.json",
        f"{APT_REPO}/InRelease",
        f"{APT_REPO}/Release.gpg",
        f"{APT_REPO}/Packages.gz",
        TARBALL,
        TARBALL + ".sha256",
        "whl/cpu/index.html",
        "whl/cpu/torch/index.html",
        f"whl/cpu/{TORCH_WHEEL.name}",
    ):
        assert (srv / path).is_file(), path
    info = json.loads((srv / "fixtures.json").read_text())
    assert info["kind"] == "kindling-test-fixture"
    assert info["apt_repository"]["packages"] == EXPECTED_VERSIONS
    assert "Kindling test fixture server" in (srv / "index.html").read_text()


def test_fingerprints_recorded_and_distinct(srv):
    fingerprints = json.loads((srv / "keys/fingerprints.json").read_text())
    fixture, wrong = fingerprints["fixture"]["fingerprint"], fingerprints["wrong"]["fingerprint"]
    assert re.fullmatch(r"[0-9A-F]{40}", fixture) and re.fullmatch(r"[0-9A-F]{40}", wrong)
    assert fixture != wrong
    listing = _run(["gpg", "--show-keys", "--with-colons", srv / "keys/wrong-archive-keyring.gpg"])
    assert f"fpr:::::::::{wrong}:" in listing.stdout


def test_inrelease_verifies_only_with_the_fixture_keyring(repo, srv):
    good = _run(
        ["gpgv", "--keyring", srv / "keys/kindling-fixture-archive-keyring.gpg", "InRelease"],
        cwd=repo,
    )
    assert good.returncode == 0, good.stderr
    detached = _run(
        [
            "gpgv",
            "--keyring",
            srv / "keys/kindling-fixture-archive-keyring.gpg",
            "Release.gpg",
            "Release",
        ],
        cwd=repo,
    )
    assert detached.returncode == 0, detached.stderr
    wrong = _run(
        ["gpgv", "--keyring", srv / "keys/wrong-archive-keyring.gpg", "InRelease"], cwd=repo
    )
    assert wrong.returncode != 0
    assert "No public key" in wrong.stderr or "NO_PUBKEY" in wrong.stderr


def _versions(repo: Path) -> set[tuple[str, str]]:
    """(package, version) pairs: a flat repository may list two versions of one package."""
    pairs = set()
    for stanza in (repo / "Packages").read_text().strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line)
        pairs.add((fields["Package"], fields["Version"]))
    return pairs


def test_later_snapshot_adds_a_point_release_and_canary_2(repo, srv):
    later = srv / "later" / "compute/cuda/repos/debian12/x86_64"
    pairs = _versions(later)
    assert ("nvidia-driver-535", "535.216.03-1") in pairs
    assert ("nvidia-driver-535", "535.183.01-1") in pairs
    assert ("kindling-fixture-canary", "2.0-1") in pairs
    assert ("kindling-fixture-canary", "1.0-1") not in pairs
    assert _versions(repo) - {("kindling-fixture-canary", "1.0-1")} <= pairs
    good = _run(
        ["gpgv", "--keyring", srv / "keys/kindling-fixture-archive-keyring.gpg", "InRelease"],
        cwd=later,
    )
    assert good.returncode == 0, good.stderr


def test_rotated_copy_is_signed_by_the_wrong_key_beside_the_old_pub(repo, srv):
    rotated = srv / "rotated" / "compute/cuda/repos/debian12/x86_64"
    assert _versions(rotated) == _versions(repo)
    old = _run(
        ["gpgv", "--keyring", srv / "keys/kindling-fixture-archive-keyring.gpg", "InRelease"],
        cwd=rotated,
    )
    assert old.returncode != 0
    new = _run(
        ["gpgv", "--keyring", srv / "keys/wrong-archive-keyring.gpg", "InRelease"], cwd=rotated
    )
    assert new.returncode == 0, new.stderr
    pubs = sorted(p.name for p in rotated.glob("*.pub"))
    assert pubs == sorted(p.name for p in repo.glob("*.pub"))
    assert (rotated / pubs[0]).read_bytes() == (repo / pubs[0]).read_bytes()


def test_driver_postinst_waits_only_when_asked(repo, tmp_path):
    deb = next(repo.glob("nvidia-driver-535_*.deb"))
    _run(["dpkg-deb", "-e", deb, tmp_path / "control"])
    postinst = (tmp_path / "control" / "postinst").read_text()
    assert "/etc/kindling-fixture/dkms-build-seconds" in postinst
    assert 'if [ "$1" = configure ] && [ -r /etc/kindling-fixture/dkms-build-seconds ]' in postinst


def test_release_names_nvidia_and_says_it_is_a_fixture(repo):
    release = (repo / "Release").read_text()
    assert "\nOrigin: NVIDIA\n" in "\n" + release
    assert "\nLabel: NVIDIA CUDA\n" in "\n" + release
    assert re.search(r"^Description: Kindling test fixture", release, re.M)
    packages_gz = hashlib.sha256((repo / "Packages.gz").read_bytes()).hexdigest()
    assert packages_gz in release


def test_packages_lists_each_package_with_its_exact_version(repo):
    stanzas = _packages(repo)
    assert {name: fields["Version"] for name, fields in stanzas.items()} == EXPECTED_VERSIONS
    for name, fields in stanzas.items():
        synopsis = fields["Description"].splitlines()[0]
        assert synopsis == (
            f"Kindling test fixture: stand-in for NVIDIA's {name}, not the real software"
        )
        assert fields["Filename"] == f"./{Path(fields['Filename']).name}"


def test_package_relationships(repo):
    stanzas = _packages(repo)
    for branch, version in (
        ("510", "510.47.03-1"),
        ("535", "535.183.01-1"),
        ("550", "550.54.15-1"),
    ):
        assert (
            stanzas[f"cuda-drivers-{branch}"]["Depends"] == f"nvidia-driver-{branch} (= {version})"
        )
        driver = stanzas[f"nvidia-driver-{branch}"]
        assert "kindling-fixture-nvidia-driver" in driver["Provides"]
        assert "kindling-fixture-nvidia-driver" in driver["Conflicts"]
    for branch in ("535", "550"):
        assert f"nvidia-driver-{branch}" in stanzas[f"nvidia-driver-{branch}-open"]["Conflicts"]
    assert "cuda-toolkit-11-6" in stanzas["cuda"]["Depends"]
    assert "cuda-drivers-510" in stanzas["cuda"]["Depends"]
    assert stanzas["libcudnn8-dev"]["Depends"] == "libcudnn8 (= 8.4.0.27-1+cuda11.6)"
    assert "libcudnn9-dev-cuda-12 (= 9.1.0.70-1)" in stanzas["cudnn9-cuda-12"]["Depends"]


def test_cuda_keyring_ships_the_fixture_key(extracted, srv):
    root = extracted("cuda-keyring")
    shipped = root / "usr/share/keyrings/cuda-archive-keyring.gpg"
    assert shipped.read_bytes() == (srv / "keys/kindling-fixture-archive-keyring.gpg").read_bytes()


# ---------------------------------------------------------------------------- stand-in tools


@pytest.mark.parametrize(
    ("package", "driver", "cuda"),
    [
        ("nvidia-driver-510", "510.47.03", "11.6"),
        ("nvidia-driver-535", "535.183.01", "12.2"),
        ("nvidia-driver-550-open", "550.54.15", "12.4"),
    ],
)
def test_nvidia_smi_xml_carries_the_package_identity(extracted, package, driver, cuda):
    root = extracted(package)
    proc = _smi(root, "-q", "-x")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1] == (
        "<!-- Kindling test stand-in: real H200 capture with driver/GPU identity substituted -->"
    )
    log = ET.fromstring(proc.stdout.encode())
    assert log.findtext("driver_version") == driver
    assert log.findtext("cuda_version") == cuda
    assert log.findtext("gpu/product_name") == "NVIDIA A100-SXM4-40GB"
    assert log.findtext("gpu/fb_memory_usage/total") == "40960 MiB"
    assert _smi(root, "-x", "-q").stdout == proc.stdout
    assert _smi(root, "--query", "--xml-format").stdout == proc.stdout
    branch = package.split("-")[2]
    assert (root / "usr/share/kindling-fixture/driver-branch").read_text().strip() == branch
    assert "Kindling test stand-in" in (root / "usr/bin/nvidia-smi").read_text().split("\n", 3)[1]


def test_nvidia_smi_query_gpu(extracted):
    root = extracted("nvidia-driver-510")
    proc = _smi(root, "--query-gpu=compute_cap", "--format=csv,noheader")
    assert (proc.returncode, proc.stdout) == (0, "8.0\n")
    proc = _smi(root, "--query-gpu=name,driver_version,memory.total", "--format=csv")
    assert proc.stdout == (
        "name, driver_version, memory.total [MiB]\nNVIDIA A100-SXM4-40GB, 510.47.03, 40960 MiB\n"
    )
    proc = _smi(root, "--query-gpu=memory.total,utilization.gpu", "--format=csv,noheader,nounits")
    assert proc.stdout == "40960, 0\n"
    proc = _smi(root, "--query-gpu=name,frobnication", "--format=csv")
    assert proc.returncode == 2
    assert 'Field "frobnication" is not a valid field to query.' in proc.stdout


def test_nvidia_smi_text_modes_and_failures(extracted, tmp_path):
    root = extracted("nvidia-driver-510")
    table = _smi(root)
    assert table.returncode == 0
    assert "Driver Version: 510.47.03" in table.stdout and "CUDA Version: 11.6" in table.stdout
    assert "NVIDIA A100-SXM4-40GB" in table.stdout
    widths = {len(line) for line in table.stdout.splitlines()[1:12] if line.startswith(("|", "+"))}
    assert len(widths) == 1, "the substituted table must keep its column layout"
    assert _smi(root, "-L").stdout.startswith("GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-")
    assert "Driver Version" in _smi(root, "-q").stdout
    assert "Legend:" in _smi(root, "topo", "-m").stdout
    no_driver = _smi(root, "-L", KINDLING_FAKE_SMI_FAIL="no-driver")
    assert no_driver.returncode == 9
    assert no_driver.stdout.startswith("NVIDIA-SMI has failed because it couldn't communicate")
    mismatch = _smi(root, KINDLING_FAKE_SMI_FAIL="mismatch")
    assert mismatch.returncode == 18
    assert mismatch.stdout.strip() == "Failed to initialize NVML: Driver/library version mismatch"
    switch = tmp_path / "nvidia-smi-fail"
    switch.write_text("mismatch\n")
    assert _smi(root, "-L", KINDLING_FAKE_SMI_FAIL_FILE=str(switch)).returncode == 18


def test_driver_ships_persistenced_unit(extracted):
    root = extracted("nvidia-driver-510")
    unit = (root / "lib/systemd/system/nvidia-persistenced.service").read_text()
    assert "Type=simple" in unit and "ExecStart=/usr/bin/nvidia-persistenced" in unit
    daemon = subprocess.Popen(
        [root / "usr/bin/nvidia-persistenced"],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, so nothing it starts can outlive the test
    )
    try:
        assert "stand-in" in daemon.stderr.readline()
        daemon.terminate()
        assert daemon.wait(timeout=5) == 0
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(daemon.pid, signal.SIGKILL)
        daemon.wait(timeout=5)
        daemon.stderr.close()


def test_toolkit_nvcc_and_usrlocal_links(extracted, repo):
    root = extracted("cuda-toolkit-11-6")
    nvcc = _run([root / "usr/lib/kindling-fixture/cuda-11.6/bin/nvcc", "--version"])
    assert nvcc.returncode == 0
    assert nvcc.stdout.startswith("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2022")
    assert "Cuda compilation tools, release 11.6, V11.6.124\n" in nvcc.stdout
    assert nvcc.stdout.endswith("Build cuda_11.6.r11.6/compiler.31057947_0\n")
    assert (root / "usr/lib/kindling-fixture/cuda-11.6/lib64/libcudart.so.11.6.stub").is_file()
    assert (
        "#define CUDA_VERSION 11060"
        in (root / "usr/lib/kindling-fixture/cuda-11.6/include/cuda.h").read_text()
    )
    contents = _run(["dpkg-deb", "-c", _deb(repo, "cuda-toolkit-11-6")]).stdout
    assert "./usr/local" not in contents
    control = _run(["dpkg-deb", "-I", _deb(repo, "cuda-toolkit-11-6"), "postinst"]).stdout
    assert "ln -sfn /usr/lib/kindling-fixture/cuda-11.6 /usr/local/cuda-11.6" in control
    commands = "\n".join(line for line in control.splitlines() if not line.lstrip().startswith("#"))
    assert not re.search(r"/usr/local/cuda(\s|$)", commands), "the roles own /usr/local/cuda"
    nvcc12 = _run(
        [extracted("cuda-toolkit-12-4") / "usr/lib/kindling-fixture/cuda-12.4/bin/nvcc", "-V"]
    )
    assert "Cuda compilation tools, release 12.4, V12.4.131\n" in nvcc12.stdout


def test_cudnn_packages_carry_real_header_format(extracted):
    dev8 = extracted("libcudnn8-dev")
    header = (dev8 / "usr/include/cudnn_version.h").read_text()
    for macro in (
        "#define CUDNN_MAJOR 8\n",
        "#define CUDNN_MINOR 4\n",
        "#define CUDNN_PATCHLEVEL 0\n",
    ):
        assert macro in header
    lib8 = extracted("libcudnn8") / "usr/lib/x86_64-linux-gnu"
    assert os.readlink(lib8 / "libcudnn.so.8") == "libcudnn.so.8.4.0"
    assert (lib8 / "libcudnn.so.8.4.0").is_file()
    header9 = (
        extracted("libcudnn9-dev-cuda-12") / "usr/include/x86_64-linux-gnu/cudnn_version_v9.h"
    ).read_text()
    assert "#define CUDNN_MAJOR 9\n" in header9 and "#define CUDNN_MINOR 1\n" in header9


def test_nvidia_ctk_merges_docker_runtime(extracted, tmp_path):
    ctk = extracted("nvidia-container-toolkit") / "usr/bin/nvidia-ctk"
    config = tmp_path / "daemon.json"
    config.write_text('{"log-driver": "journald", "runtimes": {"runc": {"path": "runc"}}}')
    proc = _run([ctk, "runtime", "configure", "--runtime=docker", f"--config={config}"])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(config.read_text()) == {
        "log-driver": "journald",
        "runtimes": {
            "nvidia": {"args": [], "path": "nvidia-container-runtime"},
            "runc": {"path": "runc"},
        },
    }
    fresh = tmp_path / "etc/docker/daemon.json"
    assert (
        _run([ctk, "runtime", "configure", "--runtime=docker", "--config", fresh]).returncode == 0
    )
    assert json.loads(fresh.read_text()) == {
        "runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}
    }
    assert "version 1.17.8" in _run([ctk, "--version"]).stdout


def test_dcgm_needs_its_host_engine(extracted, tmp_path):
    root = extracted("datacenter-gpu-manager")
    env = {**os.environ, "KINDLING_FAKE_DCGM_PIDFILE": str(tmp_path / "hostengine.pid")}
    assert _run([root / "usr/bin/dcgmi", "discovery", "-l"], env=env).returncode != 0
    (tmp_path / "hostengine.pid").write_text(f"{os.getpid()}\n")
    listed = _run([root / "usr/bin/dcgmi", "discovery", "-l"], env=env)
    assert listed.returncode == 0 and "found." in listed.stdout
    assert "nv-hostengine -n" in (root / "lib/systemd/system/nvidia-dcgm.service").read_text()


# ---------------------------------------------------------------------------- tarball


def test_cudnn_tarball_checksum_and_layout(srv):
    tarball = srv / TARBALL
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    assert (srv / (TARBALL + ".sha256")).read_text() == f"{digest}  {tarball.name}\n"
    checksums = json.loads((srv / "checksums.json").read_text())
    assert checksums[TARBALL]["sha256"] == digest
    assert json.loads((srv / "fixtures.json").read_text())["cudnn_tarball"]["sha256"] == digest
    top = "cudnn-linux-x86_64-8.4.0.27_cuda11.6-archive"
    with tarfile.open(tarball) as archive:
        members = {member.name: member for member in archive.getmembers()}
        header = archive.extractfile(f"{top}/include/cudnn_version.h").read().decode()
    assert members[f"{top}/lib/libcudnn.so.8"].linkname == "libcudnn.so.8.4.0"
    assert members[f"{top}/lib/libcudnn.so.8.4.0"].isfile()
    assert {member.uid for member in members.values()} == {0}
    assert "#define CUDNN_MAJOR 8\n" in header and "#define CUDNN_MINOR 4\n" in header


def test_cudnn_tarball_is_reproducible(srv, tmp_path):
    spec = importlib.util.spec_from_file_location("kindling_build_fixtures", BUILD)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    try:
        spec.loader.exec_module(module)
        again = module.build_cudnn_tarball(tmp_path)
    finally:
        del sys.modules[spec.name]
    assert again["sha256"] == hashlib.sha256((srv / TARBALL).read_bytes()).hexdigest()


# ---------------------------------------------------------------------------- wheel index


def test_wheel_index_links_carry_correct_hashes(srv):
    index = srv / "whl/cpu"
    projects = re.findall(r'href="([^"/]+)/"', (index / "index.html").read_text())
    assert {"torch", "sympy", "mpmath", "jinja2", "markupsafe", "filelock"} <= set(projects)
    for project in projects:
        page = (index / project / "index.html").read_text()
        links = re.findall(r'href="\.\./([^"#]+)#sha256=([0-9a-f]{64})"', page)
        assert links, project
        for quoted, digest in links:
            wheel = index / quoted.replace("%2B", "+")
            assert hashlib.sha256(wheel.read_bytes()).hexdigest() == digest


def _pip_env():
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    env.update({"PIP_CONFIG_FILE": os.devnull, "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"})
    return env


def test_pip_downloads_torch_from_the_fixture_index(server, built, tmp_path):
    proc = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--index-url",
            f"{server}/whl/cpu",
            "-d",
            tmp_path,
            "torch==2.13.0+cpu",
        ],
        env=_pip_env(),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / TORCH_WHEEL.name).is_file()
    log = (built[0] / "server.log").read_text()
    assert "GET /whl/cpu/torch-2.13.0%2Bcpu-cp311" in log


def test_pip_resolves_torch_dependencies_from_the_fixture_index_alone(server, tmp_path):
    proc = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--only-binary=:all:",
            "--python-version",
            "3.11",
            "--platform",
            "manylinux_2_28_x86_64",
            "--index-url",
            f"{server}/whl/cpu",
            "-d",
            tmp_path,
            "torch==2.13.0+cpu",
        ],
        env=_pip_env(),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    names = {path.name.split("-")[0].lower() for path in tmp_path.iterdir()}
    assert {"torch", "sympy", "mpmath", "networkx", "jinja2", "markupsafe", "fsspec"} <= names


# ---------------------------------------------------------------------------- apt


def _apt_update(tmp_path: Path, base_url: str, keyring: Path):
    lists = tmp_path / "lists"
    (lists / "partial").mkdir(parents=True)
    (tmp_path / "cache/archives/partial").mkdir(parents=True)
    sources = tmp_path / "fixture.list"
    sources.write_text(f"deb [signed-by={keyring}] {base_url}/{APT_REPO}/ /\n")
    return _run(
        [
            "apt-get",
            "-o",
            f"Dir::Etc::sourcelist={sources}",
            "-o",
            "Dir::Etc::sourceparts=-",
            "-o",
            f"Dir::State::Lists={lists}",
            "-o",
            f"Dir::Cache={tmp_path / 'cache'}",
            "-o",
            "Acquire::http::Proxy::127.0.0.1=DIRECT",
            "update",
        ],
        env={**os.environ, "LC_ALL": "C"},
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="apt-get update needs root")
def test_apt_update_accepts_the_fixture_keyring(server, srv, tmp_path):
    proc = _apt_update(tmp_path, server, srv / "keys/kindling-fixture-archive-keyring.gpg")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not re.search(r"^(E|W: GPG error):", proc.stderr, re.M), proc.stderr
    assert any(
        path.name.endswith("_Packages") or "_Packages." in path.name
        for path in (tmp_path / "lists").iterdir()
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="apt-get update needs root")
def test_apt_update_rejects_the_wrong_keyring_with_no_pubkey(server, srv, tmp_path):
    proc = _apt_update(tmp_path, server, srv / "keys/wrong-archive-keyring.gpg")
    fingerprint = json.loads((srv / "keys/fingerprints.json").read_text())["fixture"]["fingerprint"]
    assert proc.returncode != 0
    assert f"NO_PUBKEY {fingerprint[-16:]}" in proc.stdout + proc.stderr


# ---------------------------------------------------------------------------- server / rebuild


def test_server_start_is_idempotent_and_marked(server, built):
    out = built[0]
    port = server.rsplit(":", 1)[1]
    before = json.loads((out / f"server-{port}.pid").read_text())["pid"]
    again = _run([sys.executable, SERVE, "start", "--out", out, "--port", port])
    assert again.returncode == 0 and "already serving" in again.stdout
    assert json.loads((out / f"server-{port}.pid").read_text())["pid"] == before
    assert Path(f"/proc/{before}/cmdline").read_bytes().find(b"serve_fixtures.py") != -1
    status = _run([sys.executable, SERVE, "status", "--out", out, "--port", port])
    assert status.returncode == 0 and "answering" in status.stdout
    head = _run(["curl", "-sfI", f"{server}/"]) if shutil.which("curl") else None
    if head is not None:
        assert "X-Kindling-Fixture-Server" in head.stdout


def test_second_build_is_a_fast_no_op(built):
    out, _stdout, _seconds = built
    started = time.monotonic()
    proc = _run([sys.executable, BUILD, "--out", out, "--wheel-cache", WHEEL_CACHE])
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert "up to date" in proc.stdout
    assert elapsed < 10


def test_missing_torch_wheel_fails_with_a_pointer(tmp_path):
    proc = _run([sys.executable, BUILD, "--out", tmp_path, "--torch-wheel", tmp_path / "none.whl"])
    assert proc.returncode == 1
    assert "download.pytorch.org/whl/cpu" in proc.stderr
    assert not (tmp_path / "srv").exists()
