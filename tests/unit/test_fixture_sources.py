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
from ansible.module_utils import gpu_compat, stack_plan

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
UBUNTU_REPO = "compute/cuda/repos/ubuntu2204/x86_64"
REDIST = "compute/cudnn/redist"
MANIFEST = f"{REDIST}/redistrib_9.13.0.json"
TARBALL_TOP = "cudnn-linux-x86_64-9.13.0.50_cuda13-archive"
TARBALL = f"{REDIST}/cudnn/linux-x86_64/{TARBALL_TOP}.tar.xz"

# The fixture repositories: {repo id: (path, {branch: driver version})}, and the Debian
# revision of the driver packages per layout.
FIXTURE_BRANCHES = {
    "debian12": (APT_REPO, {"550": "550.54.15", "580": "580.95.05"}),
    "ubuntu2204": (UBUNTU_REPO, {"550": "550.54.15", "580": "580.95.05", "590": "590.48.01"}),
}
REVISION = {"debian": "1", "ubuntu": "0ubuntu1"}
PINNING_REVISION = {"debian": "1", "ubuntu": "1ubuntu1"}
DEBIAN_MODULES = {"proprietary": "nvidia-kernel-dkms", "open": "nvidia-kernel-open-dkms"}

EXPECTED_VERSIONS = {
    "cuda-keyring": ["1.1-1"],
    "nvidia-driver": ["550.54.15-1", "580.95.05-1"],
    "nvidia-kernel-dkms": ["550.54.15-1", "580.95.05-1"],
    "nvidia-kernel-open-dkms": ["550.54.15-1", "580.95.05-1"],
    "nvidia-open": ["550.54.15-1", "580.95.05-1"],
    "cuda-drivers-550": ["550.54.15-1"],
    "cuda-drivers-580": ["580.95.05-1"],
    "cuda-toolkit-13-0": ["13.0.2-1"],
    "cuda-toolkit-12-4": ["12.4.1-1"],
    "cuda": ["13.0.2-1"],
    "libcudnn9-cuda-13": ["9.14.0.64-1"],
    "libcudnn9-dev-cuda-13": ["9.14.0.64-1"],
    "cudnn9-cuda-13": ["9.14.0.64-1"],
    "libcudnn9-cuda-12": ["9.14.0.64-1"],
    "libcudnn9-dev-cuda-12": ["9.14.0.64-1"],
    "cudnn9-cuda-12": ["9.14.0.64-1"],
    "datacenter-gpu-manager": ["1:3.3.9"],
    "nvidia-container-toolkit": ["1.17.8-1"],
    "kindling-fixture-canary": ["1.0-1"],
    # fabric manager and NSCQ beside each driver release (names: the catalogue's rows)
    "nvidia-fabricmanager-550": ["550.54.15-1"],
    "libnvidia-nscq-550": ["550.54.15-1"],
    "nvidia-fabricmanager": ["580.95.05-1"],
    "libnvidia-nscq": ["580.95.05-1"],
    "nvlsm": ["2025.10.11-1"],
}
EXPECTED_UBUNTU_VERSIONS = {
    "cuda-keyring": ["1.1-1"],
    "cuda-drivers-550": ["550.54.15-0ubuntu1"],
    "nvidia-driver-550": ["550.54.15-0ubuntu1"],
    "nvidia-driver-550-open": ["550.54.15-0ubuntu1"],
    "cuda-drivers-580": ["580.95.05-0ubuntu1"],
    "nvidia-driver-580": ["580.95.05-0ubuntu1"],
    "nvidia-driver-580-open": ["580.95.05-0ubuntu1"],
    "cuda-drivers": ["590.48.01-0ubuntu1"],
    "nvidia-driver": ["590.48.01-0ubuntu1"],
    "nvidia-driver-open": ["590.48.01-0ubuntu1"],
    "nvidia-driver-pinning-590": ["590-1ubuntu1"],
    "nvidia-fabricmanager-550": ["550.54.15-1"],
    "libnvidia-nscq-550": ["550.54.15-1"],
    "nvidia-fabricmanager": ["580.95.05-1", "590.48.01-1ubuntu1"],
    "libnvidia-nscq": ["580.95.05-1", "590.48.01-1ubuntu1"],
    "nvlsm": ["2025.10.11-1"],
}
# NVIDIA's fabric manager packages carry revision 1, not the Ubuntu driver's 0ubuntu1; Ubuntu's
# branches with a pinning package (590+) 1ubuntu1 (build_fixtures.FABRIC_MANAGER_REVISION).
FABRIC_MANAGER_REVISION = {
    ("debian12", "550"): "1",
    ("debian12", "580"): "1",
    ("ubuntu2204", "550"): "1",
    ("ubuntu2204", "580"): "1",
    ("ubuntu2204", "590"): "1ubuntu1",
}
LATER_REPO = "later/compute/cuda/repos/debian12/x86_64"

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


def _deb(repo: Path, name: str, version: str | None = None) -> Path:
    """The .deb of a package: at `version`, or the newest of the debian12 repository."""
    version = (version or EXPECTED_VERSIONS[name][-1]).split(":")[-1]
    matches = list(repo.glob(f"{name}_{version}_*.deb"))
    assert len(matches) == 1, matches
    return matches[0]


@pytest.fixture(scope="session")
def extracted(srv, tmp_path_factory):
    """Extract a package's files into a temporary root (cached per package and version)."""
    cache: dict[tuple, Path] = {}

    def extract(name: str, version: str | None = None, repo: str = APT_REPO) -> Path:
        key = (repo, name, version)
        if key not in cache:
            root = tmp_path_factory.mktemp(name)
            proc = _run(["dpkg-deb", "-x", _deb(srv / repo, name, version), root])
            assert proc.returncode == 0, proc.stderr
            cache[key] = root
        return cache[key]

    return extract


def _smi(root: Path, *args, **env):
    environment = {
        **os.environ,
        "KINDLING_FAKE_SMI_DIR": str(root / "usr/share/kindling-fixture/nvidia-smi"),
        "KINDLING_FAKE_SMI_FAIL_FILE": str(root / "no-such-fail-file"),
        "KINDLING_FAKE_PERSISTENCE_FILE": str(root / "no-such-persistence-file"),
        "KINDLING_FAKE_SMI_CASE_FILE": str(root / "no-such-case-file"),
        "KINDLING_FAKE_FABRIC_STATE_FILE": str(root / "no-such-fabric-state-file"),
        **env,
    }
    return _run([root / "usr/bin/nvidia-smi", *args], env=environment)


def _stanzas(repo: Path) -> list[dict[str, str]]:
    stanzas = []
    for stanza in (repo / "Packages").read_text().strip().split("\n\n"):
        fields, key = {}, None
        for line in stanza.splitlines():
            if line.startswith(" ") and key:
                fields[key] += "\n" + line
            else:
                key, _, value = line.partition(": ")
                fields[key] = value
        stanzas.append(fields)
    return stanzas


def _packages(repo: Path) -> dict[str, dict[str, str]]:
    """{package: fields} (of the last stanza where a package has several versions)."""
    return {fields["Package"]: fields for fields in _stanzas(repo)}


def _index_versions(repo: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for fields in _stanzas(repo):
        found.setdefault(fields["Package"], []).append(fields["Version"])
    return {name: sorted(versions) for name, versions in found.items()}


def _stanza(repo: Path, name: str, version: str) -> dict[str, str]:
    matches = [f for f in _stanzas(repo) if (f["Package"], f["Version"]) == (name, version)]
    assert len(matches) == 1, (name, version)
    return matches[0]


# ---------------------------------------------------------------------------- build outputs


def test_build_prints_summary_and_writes_layout(built, srv):
    _out, stdout, _seconds = built
    assert stdout.count("\n") == 1
    assert stdout.startswith("kindling fixtures: built 40 debs (2 signed repos)")
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
        f"{UBUNTU_REPO}/InRelease",
        f"{UBUNTU_REPO}/Packages.gz",
        MANIFEST,
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
    assert info["apt_repositories"]["ubuntu2204"]["packages"] == EXPECTED_UBUNTU_VERSIONS
    assert info["apt_repositories"]["ubuntu2204"]["layout"] == "ubuntu"
    branches = info["apt_repository"]["driver_branches"]
    assert {b: entry["package_version"] for b, entry in branches.items()} == {
        "550": "550.54.15-1",
        "580": "580.95.05-1",
    }
    assert info["apt_repository"]["later_snapshot"]["adds"] == {
        "cuda-drivers-580": "580.105.08-1",
        "nvidia-driver": "580.105.08-1",
        "nvidia-kernel-dkms": "580.105.08-1",
        "nvidia-kernel-open-dkms": "580.105.08-1",
        "nvidia-open": "580.105.08-1",
        "nvidia-fabricmanager": "580.105.08-1",
        "libnvidia-nscq": "580.105.08-1",
        "kindling-fixture-canary": "2.0-1",
    }
    assert info["cudnn_tarball_install"]["manifest"] == MANIFEST
    assert info["cudnn_tarball_install"]["path"] == TARBALL
    assert info["cudnn_tarball_install"]["version"] == "9.13.0.50"
    page = (srv / "index.html").read_text()
    assert "Kindling test fixture server" in page
    for path in (APT_REPO, UBUNTU_REPO, MANIFEST, TARBALL):
        assert f'href="{path}' in page, path


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
    assert ("nvidia-driver", "580.105.08-1") in pairs
    assert ("nvidia-kernel-dkms", "580.105.08-1") in pairs
    assert ("nvidia-driver", "580.95.05-1") in pairs
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


@pytest.mark.parametrize(
    ("where", "name", "version"),
    [
        (APT_REPO, "nvidia-kernel-dkms", "580.95.05-1"),
        (APT_REPO, "nvidia-kernel-open-dkms", "550.54.15-1"),
        (UBUNTU_REPO, "nvidia-driver-580", "580.95.05-0ubuntu1"),
    ],
)
def test_kernel_module_postinst_waits_only_when_asked(srv, tmp_path, where, name, version):
    _run(["dpkg-deb", "-e", _deb(srv / where, name, version), tmp_path / "control"])
    postinst = (tmp_path / "control" / "postinst").read_text()
    assert "/etc/kindling-fixture/dkms-build-seconds" in postinst
    assert 'if [ "$1" = configure ] && [ -r /etc/kindling-fixture/dkms-build-seconds ]' in postinst


def test_debian_userspace_package_has_no_dkms_postinst(repo, tmp_path):
    _run(["dpkg-deb", "-e", _deb(repo, "nvidia-driver", "580.95.05-1"), tmp_path / "control"])
    assert not (tmp_path / "control" / "postinst").exists()


@pytest.mark.parametrize("where", [APT_REPO, UBUNTU_REPO])
def test_release_names_nvidia_and_says_it_is_a_fixture(srv, where):
    repo = srv / where
    release = (repo / "Release").read_text()
    assert "\nOrigin: NVIDIA\n" in "\n" + release
    assert "\nLabel: NVIDIA CUDA\n" in "\n" + release
    assert re.search(r"^Description: Kindling test fixture", release, re.M)
    packages_gz = hashlib.sha256((repo / "Packages.gz").read_bytes()).hexdigest()
    assert packages_gz in release


@pytest.mark.parametrize(
    ("where", "expected"), [(APT_REPO, EXPECTED_VERSIONS), (UBUNTU_REPO, EXPECTED_UBUNTU_VERSIONS)]
)
def test_packages_lists_each_package_with_its_exact_version(srv, where, expected):
    repo = srv / where
    assert _index_versions(repo) == {name: sorted(v) for name, v in expected.items()}
    for fields in _stanzas(repo):
        name = fields["Package"]
        synopsis = fields["Description"].splitlines()[0]
        assert synopsis == (
            f"Kindling test fixture: stand-in for NVIDIA's {name}, not the real software"
        )
        assert fields["Filename"] == f"./{Path(fields['Filename']).name}"


def test_debian_layout_relationships(repo):
    for version in ("550.54.15-1", "580.95.05-1"):
        branch = version.split(".")[0]
        meta = _stanza(repo, f"cuda-drivers-{branch}", version)
        # unversioned names with >= only, as NVIDIA's Debian packages: the reason for a pin
        assert meta["Depends"] == (
            f"nvidia-driver (>= {version}), nvidia-kernel-dkms (>= {version})"
        )
        assert _stanza(repo, "nvidia-open", version)["Depends"] == (
            f"nvidia-driver (>= {version}), nvidia-kernel-open-dkms (>= {version})"
        )
        driver = _stanza(repo, "nvidia-driver", version)
        assert (
            f"nvidia-kernel-dkms (= {version}) | nvidia-kernel-open-dkms (= {version})"
            in (driver["Depends"])
        )
        for name, other in (
            ("nvidia-kernel-dkms", "nvidia-kernel-open-dkms"),
            ("nvidia-kernel-open-dkms", "nvidia-kernel-dkms"),
        ):
            module = _stanza(repo, name, version)
            assert module["Provides"] == "kindling-fixture-nvidia-kernel-module"
            assert other in module["Conflicts"].split(", ")
    stanzas = _packages(repo)
    assert "cuda-toolkit-13-0" in stanzas["cuda"]["Depends"]
    assert "cuda-drivers-580" in stanzas["cuda"]["Depends"]
    for cuda in ("12", "13"):
        version = "9.14.0.64-1"
        assert stanzas[f"libcudnn9-dev-cuda-{cuda}"]["Depends"] == (
            f"libcudnn9-cuda-{cuda} (= {version})"
        )
        assert (
            f"libcudnn9-dev-cuda-{cuda} (= {version})" in stanzas[f"cudnn9-cuda-{cuda}"]["Depends"]
        )


def test_ubuntu_layout_relationships(srv):
    repo = srv / UBUNTU_REPO
    stanzas = _packages(repo)
    for branch, version in (("550", "550.54.15-0ubuntu1"), ("580", "580.95.05-0ubuntu1")):
        assert stanzas[f"cuda-drivers-{branch}"]["Depends"] == (
            f"nvidia-driver-{branch} (= {version})"
        )
        assert f"nvidia-driver-{branch}" in stanzas[f"nvidia-driver-{branch}-open"]["Conflicts"]
        assert "kindling-fixture-nvidia-driver" in stanzas[f"nvidia-driver-{branch}"]["Provides"]
    assert stanzas["cuda-drivers"]["Depends"] == "nvidia-driver (= 590.48.01-0ubuntu1)"
    assert "nvidia-driver" in stanzas["nvidia-driver-open"]["Conflicts"].split(", ")
    assert stanzas["nvidia-driver-pinning-590"]["Version"] == "590-1ubuntu1"
    assert not any(name.startswith("nvidia-kernel") for name in stanzas)


def _driver_choices(repo_id: str, branch: str):
    layout = stack_plan.REPOSITORIES[repo_id]["layout"]
    choices = stack_plan.driver_package_choices(layout, branch)
    assert choices, (repo_id, branch)
    return [(choice, stack_plan.driver_packages(layout, branch, *choice)) for choice in choices]


def _satisfied(relation: str, index: list[dict[str, str]], extra: set[str]) -> bool:
    """Whether one Depends entry ("a (>= 1) | b") is met by a package of the index."""
    for alternative in relation.split("|"):
        match = re.fullmatch(r"\s*([^\s(]+)\s*(?:\((<<|<=|=|>=|>>)\s*([^)\s]+)\))?\s*", alternative)
        assert match, relation
        name, op, version = match.groups()
        if name in extra:  # the base system's packages meet the stand-ins' needs
            return True
        for fields in index:
            provides = [p.strip() for p in fields.get("Provides", "").split(",") if p.strip()]
            if fields["Package"] == name:
                if op is None:
                    return True
                ops = {"<<": "lt", "<=": "le", "=": "eq", ">=": "ge", ">>": "gt"}
                cmp = _run(["dpkg", "--compare-versions", fields["Version"], ops[op], version])
                if cmp.returncode == 0:
                    return True
            elif name in provides and op is None:
                return True
    return False


# Not in NVIDIA's repository, part of every host the roles run on (the stand-ins' python3, and
# the libc6 NVIDIA's fabric manager package depends on).
BASE_SYSTEM = {"python3", "libc6"}


@pytest.mark.parametrize("repo_id", sorted(FIXTURE_BRANCHES))
def test_catalogue_driver_packages_exist_at_each_branch_version(srv, repo_id):
    """Every package the catalogue names for each branch, module and package flavour is in the
    index at the branch's version, and its Depends are satisfiable within the index."""
    where, branches = FIXTURE_BRANCHES[repo_id]
    repo = srv / where
    index = _stanzas(repo)
    layout = stack_plan.REPOSITORIES[repo_id]["layout"]
    checked = set()
    for branch, driver in branches.items():
        for choice, plan in _driver_choices(repo_id, branch):
            assert plan["version"] == f"{branch}.*"
            wanted = [(name, f"{driver}-{REVISION[layout]}") for name in plan["packages"]]
            if plan["pinning"]:
                assert plan["pinning"] == f"nvidia-driver-pinning-{branch}"
                wanted.append((plan["pinning"], f"{branch}-{PINNING_REVISION[layout]}"))
            for name, version in wanted:
                fields = _stanza(repo, name, version)
                assert re.match(plan["version_regex"], version) or name == plan["pinning"]
                for relation in filter(None, fields.get("Depends", "").split(",")):
                    assert _satisfied(relation, index, BASE_SYSTEM), (choice, name, relation)
                checked.add((name, version))
    assert len(checked) >= 3 * len(branches)


def test_cuda_and_cudnn_names_come_from_the_catalogue(repo):
    stanzas = _packages(repo)
    for cuda, version in (("13.0", "13.0.2-1"), ("12.4", "12.4.1-1")):
        (toolkit,) = stack_plan.toolkit_packages("debian", [cuda])
        assert stanzas[toolkit]["Version"] == version
        plan = gpu_compat.cudnn_packages("9.14.0.64", cuda)
        for name in (plan["runtime"], plan["dev"], plan["meta"]):
            assert stanzas[name]["Version"] == plan["version"]


def test_cuda_keyring_ships_the_fixture_key(extracted, srv):
    root = extracted("cuda-keyring")
    shipped = root / "usr/share/keyrings/cuda-archive-keyring.gpg"
    assert shipped.read_bytes() == (srv / "keys/kindling-fixture-archive-keyring.gpg").read_bytes()


# ---------------------------------------------------------------------------- stand-in tools


@pytest.mark.parametrize(
    ("where", "package", "version", "cuda"),
    [
        (APT_REPO, "nvidia-driver", "550.54.15-1", "12.4"),
        (APT_REPO, "nvidia-driver", "580.95.05-1", "13.0"),
        (UBUNTU_REPO, "nvidia-driver-550-open", "550.54.15-0ubuntu1", "12.4"),
        (UBUNTU_REPO, "nvidia-driver-open", "590.48.01-0ubuntu1", "13.1"),
    ],
)
def test_nvidia_smi_xml_carries_the_package_identity(extracted, where, package, version, cuda):
    driver = version.split("-")[0]
    root = extracted(package, version, where)
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
    branch = driver.split(".")[0]
    assert (root / "usr/share/kindling-fixture/driver-branch").read_text().strip() == branch
    assert (root / "usr/share/kindling-fixture/driver-version").read_text().strip() == driver
    assert "Kindling test stand-in" in (root / "usr/bin/nvidia-smi").read_text().split("\n", 3)[1]


@pytest.mark.parametrize(
    ("name", "flavour"),
    [("nvidia-kernel-dkms", "proprietary"), ("nvidia-kernel-open-dkms", "open")],
)
def test_debian_kernel_module_packages_carry_the_flavour(extracted, name, flavour):
    root = extracted(name, "580.95.05-1")
    assert (root / "usr/share/kindling-fixture/driver-flavour").read_text() == f"{flavour}\n"
    assert not (root / "usr/bin").exists()


def test_nvidia_smi_query_gpu(extracted):
    root = extracted("nvidia-driver", "580.95.05-1")
    proc = _smi(root, "--query-gpu=compute_cap", "--format=csv,noheader")
    assert (proc.returncode, proc.stdout) == (0, "8.0\n")
    proc = _smi(root, "--query-gpu=name,driver_version,memory.total", "--format=csv")
    assert proc.stdout == (
        "name, driver_version, memory.total [MiB]\nNVIDIA A100-SXM4-40GB, 580.95.05, 40960 MiB\n"
    )
    proc = _smi(root, "--query-gpu=memory.total,utilization.gpu", "--format=csv,noheader,nounits")
    assert proc.stdout == "40960, 0\n"
    proc = _smi(root, "--query-gpu=name,frobnication", "--format=csv")
    assert proc.returncode == 2
    assert 'Field "frobnication" is not a valid field to query.' in proc.stdout


def test_nvidia_smi_text_modes_and_failures(extracted, tmp_path):
    root = extracted("nvidia-driver", "580.95.05-1")
    table = _smi(root)
    assert table.returncode == 0
    assert "Driver Version: 580.95.05" in table.stdout and "CUDA Version: 13.0" in table.stdout
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


def test_nvidia_smi_reports_persistence_mode_from_the_state_file(extracted, tmp_path):
    root = extracted("nvidia-driver", "580.95.05-1")
    state = tmp_path / "persistence-mode"

    def report(**env):
        query = _smi(root, "--query-gpu=persistence_mode", "--format=csv,noheader", **env)
        xml = ET.fromstring(_smi(root, "-q", "-x", **env).stdout.encode())
        text = re.search(r"Persistence Mode\s+: (\S+)", _smi(root, "-q", **env).stdout)
        table = _smi(root, **env).stdout
        row = next(line for line in table.splitlines() if re.match(r"^\|\s+0\s", line))
        column = row.split("|")[1].split()[-1]
        return query.stdout.strip(), xml.findtext("gpu/persistence_mode"), text.group(1), column

    assert report() == ("Disabled", "Disabled", "Disabled", "Off")  # no state file
    state.write_text("Enabled\n")
    assert report(KINDLING_FAKE_PERSISTENCE_FILE=str(state)) == (
        "Enabled",
        "Enabled",
        "Enabled",
        "On",
    )
    state.write_text("Disabled\n")
    assert report(KINDLING_FAKE_PERSISTENCE_FILE=str(state))[0] == "Disabled"
    enabled = _smi(root, KINDLING_FAKE_PERSISTENCE_FILE=str(state)).stdout
    widths = {len(line) for line in enabled.splitlines()[1:12] if line.startswith(("|", "+"))}
    assert len(widths) == 1


def _persistenced(root: Path, state: Path, *args):
    daemon = subprocess.Popen(
        [root / "usr/bin/nvidia-persistenced", *args],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "KINDLING_FAKE_PERSISTENCED_DIR": str(state)},
        start_new_session=True,  # its own process group, so nothing it starts can outlive the test
    )
    try:
        assert "stand-in" in daemon.stderr.readline()
        mode = (state / "persistence-mode").read_text().strip()
        pid = (state / "nvidia-persistenced.pid").read_text().strip()
        daemon.terminate()
        assert daemon.wait(timeout=5) == 0
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(daemon.pid, signal.SIGKILL)
        daemon.wait(timeout=5)
        daemon.stderr.close()
    assert pid == str(daemon.pid)
    assert not (state / "persistence-mode").exists(), "removed when it stops"
    return mode


def test_driver_ships_persistenced_unit_that_disables_persistence(extracted, tmp_path):
    root = extracted("nvidia-driver", "580.95.05-1")
    unit = (root / "lib/systemd/system/nvidia-persistenced.service").read_text()
    assert "Type=simple" in unit
    exec_start = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1).split()
    assert exec_start[0] == "/usr/bin/nvidia-persistenced"
    assert "--no-persistence-mode" in exec_start  # as Ubuntu's packaged unit: a role overrides it
    assert _persistenced(root, tmp_path / "a", *exec_start[1:]) == "Disabled"
    assert _persistenced(root, tmp_path / "b", "--user", "nvidia-persistenced") == "Enabled"
    assert _persistenced(root, tmp_path / "c", "--no-persistence-mode", "--persistence-mode") == (
        "Enabled"
    )


def test_toolkit_nvcc_and_usrlocal_links(extracted, repo):
    root = extracted("cuda-toolkit-13-0")
    nvcc = _run([root / "usr/lib/kindling-fixture/cuda-13.0/bin/nvcc", "--version"])
    assert nvcc.returncode == 0
    assert nvcc.stdout.startswith("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025")
    assert "Cuda compilation tools, release 13.0, V13.0.88\n" in nvcc.stdout
    assert nvcc.stdout.endswith("Build cuda_13.0.r13.0/compiler.36424714_0\n")
    assert (root / "usr/lib/kindling-fixture/cuda-13.0/lib64/libcudart.so.13.0.stub").is_file()
    assert (
        "#define CUDA_VERSION 13000"
        in (root / "usr/lib/kindling-fixture/cuda-13.0/include/cuda.h").read_text()
    )
    contents = _run(["dpkg-deb", "-c", _deb(repo, "cuda-toolkit-13-0")]).stdout
    assert "./usr/local" not in contents
    control = _run(["dpkg-deb", "-I", _deb(repo, "cuda-toolkit-13-0"), "postinst"]).stdout
    assert "ln -sfn /usr/lib/kindling-fixture/cuda-13.0 /usr/local/cuda-13.0" in control
    commands = "\n".join(line for line in control.splitlines() if not line.lstrip().startswith("#"))
    assert not re.search(r"/usr/local/cuda(\s|$)", commands), "the roles own /usr/local/cuda"
    nvcc12 = _run(
        [extracted("cuda-toolkit-12-4") / "usr/lib/kindling-fixture/cuda-12.4/bin/nvcc", "-V"]
    )
    assert "Cuda compilation tools, release 12.4, V12.4.131\n" in nvcc12.stdout


@pytest.mark.parametrize("cuda", ["12", "13"])
def test_cudnn_packages_carry_real_header_format(extracted, cuda):
    header = (
        extracted(f"libcudnn9-dev-cuda-{cuda}") / "usr/include/x86_64-linux-gnu/cudnn_version_v9.h"
    ).read_text()
    for macro in (
        "#define CUDNN_MAJOR 9\n",
        "#define CUDNN_MINOR 14\n",
        "#define CUDNN_PATCHLEVEL 0\n",
        "CUDNN_MAJOR * 10000",
    ):
        assert macro in header
    lib = extracted(f"libcudnn9-cuda-{cuda}") / "usr/lib/x86_64-linux-gnu"
    assert os.readlink(lib / "libcudnn.so.9") == "libcudnn.so.9.14.0"
    assert (lib / "libcudnn.so.9.14.0").is_file()


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


def test_cudnn_redist_manifest_lists_the_tarball(srv):
    manifest = json.loads((srv / MANIFEST).read_text())
    assert {k: manifest[k] for k in ("release_label", "release_product")} == {
        "release_label": "9.13.0",
        "release_product": "cudnn",
    }
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", manifest["release_date"])
    cudnn = manifest["cudnn"]
    assert cudnn["version"] == "9.13.0.50"
    assert cudnn["cuda_variant"] == ["12", "13"]
    assert (srv / REDIST / cudnn["license_path"]).is_file()
    entry = cudnn["linux-x86_64"]["cuda13"]
    assert entry["relative_path"] == f"cudnn/linux-x86_64/{TARBALL_TOP}.tar.xz"
    data = (srv / REDIST / entry["relative_path"]).read_bytes()
    assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert entry["md5"] == hashlib.md5(data).hexdigest()
    assert entry["size"] == str(len(data))  # a string, as in NVIDIA's manifests


def test_cudnn_tarball_checksum_and_layout(srv):
    tarball = srv / TARBALL
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    assert (srv / (TARBALL + ".sha256")).read_text() == f"{digest}  {tarball.name}\n"
    checksums = json.loads((srv / "checksums.json").read_text())
    assert checksums[TARBALL]["sha256"] == digest
    assert (
        json.loads((srv / "fixtures.json").read_text())["cudnn_tarball_install"]["sha256"] == digest
    )
    top = TARBALL_TOP
    with tarfile.open(tarball) as archive:
        members = {member.name: member for member in archive.getmembers()}
        header = archive.extractfile(f"{top}/include/cudnn_version.h").read().decode()
    assert members[f"{top}/lib/libcudnn.so.9"].linkname == "libcudnn.so.9.13.0"
    assert members[f"{top}/lib/libcudnn.so"].linkname == "libcudnn.so.9"
    assert members[f"{top}/lib/libcudnn.so.9.13.0"].isfile()
    assert {member.uid for member in members.values()} == {0}
    assert all(name == top or name.startswith(top + "/") for name in members)
    for macro in ("#define CUDNN_MAJOR 9\n", "#define CUDNN_MINOR 13\n", "PATCHLEVEL 0\n"):
        assert macro in header


def test_cudnn_tarball_is_reproducible(srv, tmp_path):
    spec = importlib.util.spec_from_file_location("kindling_build_fixtures", BUILD)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    try:
        spec.loader.exec_module(module)
        again = module.build_cudnn_tarball(tmp_path)
        names = module.driver_names("debian", "580")
    finally:
        del sys.modules[spec.name]
    assert again["sha256"] == hashlib.sha256((srv / TARBALL).read_bytes()).hexdigest()
    assert names["userspace"] == "nvidia-driver" and names["meta"] == "cuda-drivers-580"


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


def test_pip_resolves_the_cp39_standin_and_real_dependencies_for_python_39(server, tmp_path):
    """The stand-in torch 2.8.0+cpu for CPython 3.9 (docs/FIXTURES.md) resolves from the
    index alone, with the releases of its dependencies that still support Python 3.9."""
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
            "3.9",
            "--platform",
            "manylinux_2_28_x86_64",
            "--index-url",
            f"{server}/whl/cpu",
            "-d",
            tmp_path,
            "torch==2.8.0+cpu",
        ],
        env=_pip_env(),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    files = {path.name for path in tmp_path.iterdir()}
    assert "torch-2.8.0+cpu-cp39-cp39-manylinux_2_28_x86_64.whl" in files
    # networkx 3.3 and later require Python 3.10: 3.2.1 is the last release for 3.9.
    assert "networkx-3.2.1-py3-none-any.whl" in files
    assert any(name.startswith("markupsafe-") and "-cp39-" in name for name in files)


def test_the_cp39_standin_is_declared(srv):
    index = json.loads((srv / "fixtures.json").read_text())["pytorch_index"]
    wheel = "torch-2.8.0+cpu-cp39-cp39-manylinux_2_28_x86_64.whl"
    assert "STAND-IN" in index["note"] and wheel in index["note"]
    standin = index["standins"][wheel]
    assert standin["stands_in_for"].startswith("https://download.pytorch.org/whl/cpu/torch-2.8.0")
    assert standin["metadata_from"]["wheel"] == "torch-2.8.0-cp39-cp39-manylinux_2_28_x86_64.whl"
    assert re.fullmatch(r"[0-9a-f]{64}", standin["metadata_from"]["wheel_sha256"])
    assert standin["requires_python"] == ">=3.9.0"
    assert not [r for r in standin["requires_dist"] if r.startswith(("nvidia", "triton"))]
    assert any(r.startswith("triton") for r in standin["dropped_cuda_only"])
    page = (srv / "whl/cpu/torch/index.html").read_text()
    assert "torch-2.8.0%2Bcpu-cp39-cp39-manylinux_2_28_x86_64.whl#sha256=" in page
    assert 'data-requires-python="&gt;=3.9.0"' in page


# ---------------------------------------------------------------------------- apt


def _apt_options(tmp_path: Path, base_url: str, keyring: Path, where: str = APT_REPO) -> list:
    """A scratch apt configuration: only the fixture repository, its own lists, cache and
    dpkg status (with python3 and libc6, which the base system has and NVIDIA's repository
    does not)."""
    lists = tmp_path / "lists"
    (lists / "partial").mkdir(parents=True, exist_ok=True)
    (tmp_path / "cache/archives/partial").mkdir(parents=True, exist_ok=True)
    status = tmp_path / "status"
    if not status.exists():
        status.write_text(
            "Package: python3\nStatus: install ok installed\nPriority: optional\n"
            "Section: python\nMaintainer: Kindling tests <tests@kindling.invalid>\n"
            "Architecture: amd64\nVersion: 3.11.2-1+b1\n"
            "Description: interactive high-level object-oriented language (base system)\n\n"
            "Package: libc6\nStatus: install ok installed\nPriority: optional\n"
            "Section: libs\nMaintainer: Kindling tests <tests@kindling.invalid>\n"
            "Architecture: amd64\nVersion: 2.36-9+deb12u10\nMulti-Arch: same\n"
            "Description: GNU C Library: Shared libraries (base system)\n\n"
        )
    sources = tmp_path / "fixture.list"
    sources.write_text(f"deb [signed-by={keyring}] {base_url}/{where}/ /\n")
    return [
        "-o",
        f"Dir::Etc::sourcelist={sources}",
        "-o",
        "Dir::Etc::sourceparts=-",
        "-o",
        f"Dir::State::Lists={lists}",
        "-o",
        f"Dir::State::status={status}",
        "-o",
        f"Dir::State::extended_states={tmp_path / 'extended_states'}",
        "-o",
        f"Dir::Cache={tmp_path / 'cache'}",
        "-o",
        "Dir::Etc::preferences=/dev/null",
        "-o",
        "Dir::Etc::preferencesparts=-",
        "-o",
        "APT::Architecture=amd64",
        "-o",
        "Debug::NoLocking=true",
        "-o",
        "Acquire::http::Proxy::127.0.0.1=DIRECT",
    ]


def _apt_update(tmp_path: Path, base_url: str, keyring: Path, where: str = APT_REPO):
    return _run(
        ["apt-get", *_apt_options(tmp_path, base_url, keyring, where), "update"],
        env={**os.environ, "LC_ALL": "C"},
    )


@pytest.fixture(scope="session")
def apt_scratch(server, srv, tmp_path_factory):
    """apt-get, updated against each fixture repository in its own scratch configuration."""
    keyring = srv / "keys/kindling-fixture-archive-keyring.gpg"
    configs = {}
    for repo_id, (where, _branches) in FIXTURE_BRANCHES.items():
        scratch = tmp_path_factory.mktemp(f"apt-{repo_id}")
        proc = _apt_update(scratch, server, keyring, where)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        configs[repo_id] = _apt_options(scratch, server, keyring, where)

    def simulate(repo_id: str, *packages: str):
        return _run(
            [
                "apt-get",
                *configs[repo_id],
                "install",
                "--simulate",
                "--no-install-recommends",
                *packages,
            ],
            env={**os.environ, "LC_ALL": "C"},
        )

    return simulate


def _installs(output: str) -> dict[str, str]:
    return dict(re.findall(r"^Inst (\S+) \((\S+)", output, re.M))


def _sim_cases():
    """One proprietary and one open combination of each layout (and every other one too)."""
    cases = []
    for repo_id, (_where, branches) in sorted(FIXTURE_BRANCHES.items()):
        for branch, driver in branches.items():
            for (modules, flavor), _plan in _driver_choices(repo_id, branch):
                cases.append(
                    pytest.param(
                        repo_id,
                        branch,
                        driver,
                        modules,
                        flavor,
                        id=f"{repo_id}-{branch}-{modules}-{flavor}",
                    )
                )
    return cases


@pytest.mark.skipif(os.geteuid() != 0, reason="apt-get needs root")
@pytest.mark.parametrize(("repo_id", "branch", "driver", "modules", "flavor"), _sim_cases())
def test_apt_installs_each_catalogue_combination(
    apt_scratch, repo_id, branch, driver, modules, flavor
):
    layout = stack_plan.REPOSITORIES[repo_id]["layout"]
    plan = stack_plan.driver_packages(layout, branch, modules, flavor)
    wanted = [f"{name}={plan['version']}" for name in plan["packages"]]
    if plan["pinning"]:
        wanted.insert(0, plan["pinning"])
    proc = apt_scratch(repo_id, *wanted)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    installs = _installs(proc.stdout)
    version = f"{driver}-{REVISION[layout]}"
    for name in plan["packages"]:
        assert installs.get(name) == version, (name, installs)
    if layout == "debian":
        assert installs.get(DEBIAN_MODULES[modules]) == version
        assert DEBIAN_MODULES["open" if modules == "proprietary" else "proprietary"] not in installs


@pytest.mark.skipif(os.geteuid() != 0, reason="apt-get needs root")
@pytest.mark.parametrize(
    ("repo_id", "packages"),
    [
        ("debian12", ["nvidia-kernel-dkms=550.*", "nvidia-kernel-open-dkms=550.*"]),
        ("debian12", ["nvidia-kernel-dkms=580.*", "nvidia-kernel-open-dkms=580.*"]),
        ("ubuntu2204", ["nvidia-driver-550=550.*", "nvidia-driver-550-open=550.*"]),
        ("ubuntu2204", ["nvidia-driver=590.*", "nvidia-driver-open=590.*"]),
        ("ubuntu2204", ["nvidia-driver-550=550.*", "nvidia-driver-580=580.*"]),
    ],
)
def test_apt_refuses_proprietary_and_open_modules_together(apt_scratch, repo_id, packages):
    proc = apt_scratch(repo_id, *packages)
    assert proc.returncode != 0, proc.stdout
    assert "Conflicts" in proc.stdout + proc.stderr or "broken packages" in proc.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="apt-get needs root")
def test_debian_cuda_drivers_without_a_pin_takes_the_newest_driver(apt_scratch):
    """cuda-drivers-550 depends on nvidia-driver (>= 550...) only: unpinned, apt takes 580."""
    proc = apt_scratch("debian12", "cuda-drivers-550")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    installs = _installs(proc.stdout)
    assert installs["cuda-drivers-550"] == "550.54.15-1"
    assert installs["nvidia-driver"] == "580.95.05-1"
    assert installs["nvidia-kernel-dkms"] == "580.95.05-1"


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


# ---------------------------------------------------------------------------- fabric manager


def _fabric_releases():
    """(repository path, repo id, branch, driver version) of every driver release served, the
    later snapshot's point release included."""
    found = []
    for repo_id, (where, branches) in sorted(FIXTURE_BRANCHES.items()):
        found += [(where, repo_id, branch, driver) for branch, driver in branches.items()]
    found.append((LATER_REPO, "debian12", "580", "580.105.08"))
    return found


@pytest.mark.parametrize(
    ("where", "repo_id", "branch", "driver"),
    _fabric_releases(),
    ids=[f"{'later-' if w == LATER_REPO else ''}{r}-{d}" for w, r, _b, d in _fabric_releases()],
)
def test_fabric_manager_packages_beside_each_driver_release(srv, where, repo_id, branch, driver):
    """The catalogue's fabric manager and NSCQ packages (stack_plan.fabric_manager_packages) are
    in each repository at exactly each driver release's version, their Depends satisfiable
    there (with the base system's libc6 and python3), and the version matches the plan's glob."""
    repo = srv / where
    index = _stanzas(repo)
    plan = stack_plan.fabric_manager_packages(branch, driver)
    version = f"{driver}-{FABRIC_MANAGER_REVISION[(repo_id, branch)]}"
    assert plan["version"] == f"{driver}-*"
    for name in plan["packages"]:
        fields = _stanza(repo, name, version)
        for relation in filter(None, fields.get("Depends", "").split(",")):
            assert _satisfied(relation, index, BASE_SYSTEM), (name, relation)
        if name.endswith(f"-{branch}"):  # a branch package stands for the unsuffixed name
            virtual = name[: -len(f"-{branch}")]
            assert fields["Provides"] == fields["Conflicts"] == fields["Replaces"] == virtual
    driver_versions = {
        f["Version"] for f in index if f["Package"] in ("nvidia-driver", f"nvidia-driver-{branch}")
    }
    assert any(v.startswith(driver + "-") for v in driver_versions), driver_versions
    for name in plan["nvlink5_packages"]:
        if name != "infiniband-diags":  # the distribution's own package: not stood in for
            assert _packages(repo)[name]["Version"] == "2025.10.11-1"


def test_fixtures_json_records_the_fabric_manager(srv):
    info = json.loads((srv / "fixtures.json").read_text())
    primary = info["apt_repository"]
    assert primary["fabric_state_file"] == "/run/nvidia-fabricmanager/fabric-state"
    assert primary["fabric_manager_fail_file"] == "/etc/kindling-fixture/fabric-manager-fail"
    assert primary["nvidia_smi_case_file"] == "/etc/kindling-fixture/nvidia-smi-case"
    assert primary["driver_branches"]["550"]["fabric_manager"] == {
        "packages": ["nvidia-fabricmanager-550", "libnvidia-nscq-550"],
        "package_version": "550.54.15-1",
        "nvlink5_packages": [],
    }
    ubuntu = info["apt_repositories"]["ubuntu2204"]["driver_branches"]["590"]["fabric_manager"]
    assert ubuntu["package_version"] == "590.48.01-1ubuntu1"
    assert ubuntu["nvlink5_packages"] == ["nvlsm", "infiniband-diags"]


@pytest.mark.parametrize(
    ("where", "name", "version", "start_script"),
    [
        (APT_REPO, "nvidia-fabricmanager-550", "550.54.15-1", False),
        (APT_REPO, "nvidia-fabricmanager", "580.95.05-1", True),
        (UBUNTU_REPO, "nvidia-fabricmanager", "590.48.01-1ubuntu1", True),
    ],
)
def test_fabric_manager_package_contents(extracted, where, name, version, start_script):
    root = extracted(name, version, where)
    upstream = version.split("-")[0]
    unit = (root / "lib/systemd/system/nvidia-fabricmanager.service").read_text()
    assert "\nType=forking\n" in unit
    assert "\nPIDFile=/run/nvidia-fabricmanager/nv-fabricmanager.pid\n" in unit
    exec_start = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1)
    if start_script:
        assert exec_start == "/usr/bin/nvidia-fabricmanager-start.sh --mode start"
        assert (root / "usr/bin/nvidia-fabricmanager-start.sh").stat().st_mode & 0o111
    else:
        assert (
            exec_start
            == "/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg"
        )
        assert not (root / "usr/bin/nvidia-fabricmanager-start.sh").exists()
    version_out = _run([root / "usr/bin/nv-fabricmanager", "--version"])
    assert version_out.stdout.splitlines()[0] == f"Fabric Manager version is : {upstream}"
    assert "DAEMONIZE=1" in (root / "usr/share/nvidia/nvswitch/fabricmanager.cfg").read_text()
    assert (root / "usr/share/kindling-fixture/fabric-manager-version").read_text() == (
        f"{upstream}\n"
    )


def _fabric_manager(root: Path, driver_root: Path, run: Path, fail: str = ""):
    """Start an extracted stand-in nv-fabricmanager as the unit does (ExecStart's command, in a
    scratch run directory, against an extracted driver package); returns (rc, stderr)."""
    env = {
        **os.environ,
        "KINDLING_FAKE_DRIVER_VERSION_FILE": str(
            driver_root / "usr/share/kindling-fixture/driver-version"
        ),
        "KINDLING_FAKE_FM_RUN_DIR": str(run),
        "KINDLING_FAKE_FM_FAIL_FILE": str(run.parent / "no-such-fail-file"),
        "KINDLING_FAKE_FM_FAIL": fail,
        "KINDLING_FAKE_FM_BIN": str(root / "usr/bin/nv-fabricmanager"),
    }
    run.parent.mkdir(parents=True, exist_ok=True)
    config = run.parent / "fabricmanager.cfg"
    shipped = (root / "usr/share/nvidia/nvswitch/fabricmanager.cfg").read_text()
    config.write_text(
        re.sub(r"(?m)^LOG_FILE_NAME=.*$", f"LOG_FILE_NAME={run.parent / 'fm.log'}", shipped)
    )
    start = root / "usr/bin/nvidia-fabricmanager-start.sh"
    command = (
        [start, "--mode", "start", "--fm-config-file", config]
        if start.exists()
        else [root / "usr/bin/nv-fabricmanager", "-c", config]
    )
    err = run.parent / "stderr"
    with err.open("w") as handle:
        proc = subprocess.run(
            [str(part) for part in command],
            stdout=handle,
            stderr=handle,
            env=env,
            timeout=30,
            check=False,
        )
    return proc.returncode, err.read_text()


def _stop_daemon(run: Path) -> None:
    pid_file = run / "nv-fabricmanager.pid"
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text())
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if not pid_file.exists():
            break
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def test_packaged_fabric_manager_refuses_another_drivers_version(extracted, tmp_path):
    """The 550 fabric manager against the 580 driver (an unpinned upgrade's result): refused
    with NVIDIA's message, nothing written, so systemctl start would fail."""
    fm = extracted("nvidia-fabricmanager-550", "550.54.15-1")
    driver = extracted("nvidia-driver", "580.95.05-1")
    run = tmp_path / "run"
    rc, output = _fabric_manager(fm, driver, run)
    assert rc == 1
    assert (
        "fabric manager NVIDIA GPU driver interface version 550.54.15 don't match with driver "
        "version 580.95.05. Please update with matching NVIDIA driver package."
    ) in output
    assert not (run / "fabric-state").exists()


def test_packaged_fabric_manager_and_nvidia_smi_on_the_hgx_host(extracted, tmp_path):
    """Matched versions: the start script's fabric manager forks and writes the state; the
    driver's nvidia-smi, switched to the HGX host, reports the fabric Completed while it runs
    and In Progress once it stopped; a daemon of the later point release is refused."""
    fm = extracted("nvidia-fabricmanager", "580.95.05-1")
    driver = extracted("nvidia-driver", "580.95.05-1")
    run = tmp_path / "run"
    case = tmp_path / "nvidia-smi-case"
    case.write_text("hgx\n")

    def fabric():
        query = _smi(
            driver,
            "--query-gpu=fabric.state,fabric.status",
            "--format=csv,noheader",
            KINDLING_FAKE_SMI_CASE_FILE=str(case),
            KINDLING_FAKE_FABRIC_STATE_FILE=str(run / "fabric-state"),
        )
        assert query.returncode == 0, query.stdout + query.stderr
        return query.stdout.splitlines()

    assert fabric() == ["In Progress, N/A"] * 8
    try:
        rc, output = _fabric_manager(fm, driver, run)
        assert rc == 0, output
        assert output.startswith("Detected Pre-NVL5 system\n")
        assert (run / "fabric-state").read_text() == "Completed\n"
        assert fabric() == ["Completed, Success"] * 8
    finally:
        _stop_daemon(run)
    assert not (run / "fabric-state").exists()
    assert fabric() == ["In Progress, N/A"] * 8
    # the later snapshot's point release of the same branch: refused as well
    later = extracted("nvidia-driver", "580.105.08-1", LATER_REPO)
    rc, output = _fabric_manager(fm, later, tmp_path / "later" / "run")
    assert rc == 1
    assert "version 580.95.05 don't match with driver version 580.105.08" in output
    assert '"/' in output and "failed! Exit code: 1" in output


def test_driver_package_ships_the_constructed_hgx_set(extracted):
    root = extracted("nvidia-driver", "580.95.05-1")
    captures = root / "usr/share/kindling-fixture/nvidia-smi"
    readme = (captures / "hgx/README").read_text()
    assert "EVERYTHING HERE IS CONSTRUCTED" in readme
    assert "hgx/" in (captures / "README").read_text()
    for name in ("nvidia-smi-q.xml", "nvidia-smi-q.txt", "query-full.csv", "smi.txt"):
        assert (captures / "hgx" / name).is_file(), name
    nvlink = _smi(root, "nvlink", "-s", KINDLING_FAKE_SMI_CASE="hgx")
    assert nvlink.returncode == 0
    assert nvlink.stdout.count("\t Link 17: 26.562 GB/s\n") == 8
    assert _smi(root, "nvlink", "-s").stdout == ""  # the H200 set: no NVLink, no output
    xml = ET.fromstring(_smi(root, "-q", "-x", KINDLING_FAKE_SMI_CASE="hgx").stdout.encode())
    assert xml.findtext("driver_version") == "580.95.05"
    assert len(xml.findall("gpu")) == 8


@pytest.mark.skipif(os.geteuid() != 0, reason="apt-get needs root")
@pytest.mark.parametrize(
    ("repo_id", "branch", "driver"),
    [
        (repo_id, branch, driver)
        for repo_id, (_where, branches) in sorted(FIXTURE_BRANCHES.items())
        for branch, driver in branches.items()
    ],
)
def test_apt_installs_the_fabric_manager_at_the_drivers_version(
    apt_scratch, repo_id, branch, driver
):
    """What the role will run: the plan's packages at the plan's version glob install exactly
    that release (not the newest of an unsuffixed name)."""
    plan = stack_plan.fabric_manager_packages(branch, driver)
    proc = apt_scratch(repo_id, *(f"{name}={plan['version']}" for name in plan["packages"]))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    installs = _installs(proc.stdout)
    version = f"{driver}-{FABRIC_MANAGER_REVISION[(repo_id, branch)]}"
    assert {name: installs.get(name) for name in plan["packages"]} == {
        name: version for name in plan["packages"]
    }


@pytest.mark.skipif(os.geteuid() != 0, reason="apt-get needs root")
def test_apt_refuses_two_fabric_managers_together(apt_scratch):
    """A branch package conflicts with the unsuffixed name, as NVIDIA's do."""
    proc = apt_scratch("debian12", "nvidia-fabricmanager-550", "nvidia-fabricmanager")
    assert proc.returncode != 0, proc.stdout
    assert "Conflicts" in proc.stdout + proc.stderr or "broken packages" in proc.stderr


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


def test_driver_package_ships_a_libcuda_whose_cuinit_follows_the_fabric(extracted, tmp_path):
    """The stand-in libcuda.so.1 (standins/libcuda_standin.c, compiled by the build) answers
    Kindling's cuInit probe: 802 on the HGX host until the fabric manager's state says
    Completed, then 8 devices; 1 device elsewhere; the driver API of the package's CUDA."""
    from ansible.module_utils.cuda_init import interpret, probe_command

    root = extracted("nvidia-driver", "580.95.05-1")
    library = root / "usr/lib/x86_64-linux-gnu/libcuda.so.1"
    assert library.read_bytes()[:4] == b"\x7fELF"
    case, state = tmp_path / "nvidia-smi-case", tmp_path / "fabric-state"

    def probe():
        env = dict(
            os.environ,
            KINDLING_FAKE_SMI_CASE_FILE=str(case),
            KINDLING_FAKE_FABRIC_STATE_FILE=str(state),
        )
        proc = subprocess.run(
            probe_command(sys.executable, str(library)), capture_output=True, text=True, env=env
        )
        return interpret(proc.returncode, proc.stdout, proc.stderr)

    plain = probe()
    assert (plain["state"], plain["device_count"], plain["driver_api"]) == ("ok", 1, "13.0")
    case.write_text("hgx\n")
    waiting = probe()
    assert (waiting["state"], waiting["code"]) == ("failed", 802)
    assert waiting["name"] == "CUDA_ERROR_SYSTEM_NOT_READY"
    assert "fabric manager" in waiting["message"]
    state.write_text("In Progress\n")
    assert probe()["state"] == "failed"
    state.write_text("Completed\n")
    ready = probe()
    assert (ready["state"], ready["device_count"]) == ("ok", 8)
