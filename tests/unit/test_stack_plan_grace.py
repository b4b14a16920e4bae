"""Blackwell and Grace hosts on the default stack: whole plans, x86_64 and aarch64 (issue 35).

The package flavour ``auto`` (nvidia_driver_package_flavor's default) takes cuda-drivers where
NVIDIA's repository serves it with the kernel modules the GPUs need, else nvidia-driver; Grace
hosts (GH200, GB200) run aarch64 and are served from NVIDIA's ``sbsa`` repositories, with the
kernel-module options the catalogue's ``kernel_module_options`` rows name. The stack is the
roles' defaults, read from their defaults files, so these plans follow a new default.

The last tests build the ``sbsa`` layout of the fixture repository (dummy arm64 packages,
tests/fixture_sources/build_fixtures.py) and ask apt, for arm64, what installing the plan's
driver packages would do.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.module_utils import stack_check as sc
from ansible.module_utils import stack_plan as sp
from ansible.module_utils.gpu_compat import PLAN_KEYS
from ansible.module_utils.vendor_catalogue import CATALOGUE

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD = REPO_ROOT / "tests" / "fixture_sources" / "build_fixtures.py"

GH200 = {"name": "NVIDIA GH200 480GB"}
GB200 = {"name": "NVIDIA GB200"}
B200 = {"name": "NVIDIA B200"}
H100 = {"name": "NVIDIA H100 80GB HBM3"}
UBUNTU = {"ubuntu2204": "22.04", "ubuntu2404": "24.04"}
CDMM = "NVreg_CoherentGPUMemoryMode"


def role_defaults(role: str) -> dict:
    return yaml.safe_load((REPO_ROOT / "roles" / role / "defaults" / "main.yml").read_text())


DRIVER = role_defaults("nvidia_driver")
CUDA = role_defaults("cuda")
TORCH = role_defaults("conda_pytorch")
# The stack the roles install when nothing is set.
DEFAULT_STACK = {
    "driver_branch": str(DRIVER["nvidia_driver_branch"]),
    "driver_version": str(DRIVER["nvidia_driver_version"] or ""),
    "cuda_version": str(CUDA["cuda_version"]),
    "cudnn_version": str(CUDA["cuda_cudnn_version"]),
    "torch_version": str(TORCH["conda_pytorch_version"]),
    "torch_cuda_variant": str(TORCH["conda_pytorch_cuda_variant"]),
    "python_version": str(TORCH["conda_pytorch_python_version"]),
}


def default_check(gpu: dict, repo: str, machine: str, **overrides) -> dict:
    """gpu_stack_plan's answer for one GPU on Ubuntu ``repo`` with the roles' defaults."""
    params = {key: spec.get("default") for key, spec in sc.ARGUMENT_SPEC.items()}
    params.update({key: DEFAULT_STACK[key] for key in PLAN_KEYS})
    params.update(
        gpus=[gpu],
        distribution="Ubuntu",
        distribution_version=UBUNTU[repo],
        machine=machine,
        kernel_modules=DRIVER["nvidia_driver_kernel_modules"],
        package_flavor=DRIVER["nvidia_driver_package_flavor"],
        install_method=DRIVER["nvidia_driver_install_method"],
    )
    params.update(overrides)
    return sc.check(params)


def open_row(repo: str) -> dict:
    """The catalogue's open-module packages of the default branch in ``repo``'s layout."""
    layout = sp.REPOSITORIES[repo]["layout"]
    branch = DEFAULT_STACK["driver_branch"]
    rows = [
        sp.driver_packages(layout, branch, "open", flavor)
        for flavor in sp.PACKAGE_FLAVORS
        if sp.driver_packages(layout, branch, "open", flavor) is not None
    ]
    assert rows, f"the catalogue has no open-module packages of {branch} for {layout}"
    return rows[0]


# ---------------------------------------------------------------------------
# The defaults
# ---------------------------------------------------------------------------


def test_auto_is_the_default_package_flavour_everywhere():
    """Defect: the role's default flavour (cuda-drivers) had no open-module packages on Ubuntu,
    so every Blackwell and Grace host needed a setting before it could plan."""
    assert DRIVER["nvidia_driver_package_flavor"] == "auto"
    assert DRIVER["nvidia_driver_kernel_modules"] == "auto"
    spec = sc.ARGUMENT_SPEC["package_flavor"]
    assert spec["default"] == "auto"
    assert spec["choices"] == list(sp.PACKAGE_FLAVOR_CHOICES)
    assert sp.PACKAGE_FLAVOR_CHOICES == ("auto", "cuda-drivers", "nvidia-driver")


# ---------------------------------------------------------------------------
# Whole plans: Grace on sbsa, Blackwell on x86_64
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("repo", sorted(UBUNTU))
@pytest.mark.parametrize("gpu", [GH200, GB200], ids=["gh200", "gb200"])
def test_grace_host_plans_with_the_defaults_on_sbsa(gpu, repo):
    """Defect: a GH200 on ubuntu2404 sbsa with the defaults was refused the B200's way
    (driver-packages-not-in-repository), and no test planned a whole aarch64 host."""
    result = default_check(gpu, repo, "aarch64")
    assert result["problems"] == [], result["msg"]
    assert result["ok"] is True and result["failed"] is False
    location = result["repository"]
    assert (location["os"], location["arch"]) == (repo, "sbsa")
    assert location["cuda"]["url"] == (
        f"https://developer.download.nvidia.com/compute/cuda/repos/{repo}/sbsa/"
    )
    assert location["cuda"]["sources_file"] == f"/etc/apt/sources.list.d/cuda-{repo}-sbsa.sources"
    packages = result["packages"]
    assert packages["kernel_modules"]["flavour"] == "open"
    what = {GH200["name"]: "Grace Hopper", GB200["name"]: "Blackwell"}[gpu["name"]]
    assert packages["kernel_modules"]["why"] == f"{gpu['name']} (GPU 0) is {what}"
    driver = packages["driver"]
    assert driver["packages"] == open_row(repo)["packages"]
    assert driver["modules"] == "open"
    assert driver["package_flavor"] == "nvidia-driver"
    assert driver["why"].startswith("nvidia_driver_package_flavor auto: ")
    assert "no open-module cuda-drivers packages" in driver["why"]
    assert driver["version"] == f"{DEFAULT_STACK['driver_branch']}.*"
    major, minor = DEFAULT_STACK["cuda_version"].split(".")[:2]
    assert packages["toolkit"] == [f"cuda-toolkit-{major}-{minor}"]


@pytest.mark.parametrize("repo", sorted(UBUNTU))
@pytest.mark.parametrize("gpu", [GH200, GB200], ids=["gh200", "gb200"])
def test_grace_plan_carries_the_coherent_memory_option(gpu, repo):
    """Defect: nothing told the driver role that NVIDIA's driver puts a Grace host's GPU
    memory under the OS as a NUMA node unless NVreg_CoherentGPUMemoryMode says driver."""
    options = default_check(gpu, repo, "aarch64")["packages"]["module_options"]
    assert [o["option"] for o in options] == [CDMM]
    option = options[0]
    assert option["module"] == "nvidia"
    assert option["value"] == "driver"
    assert option["line"] == f"options nvidia {CDMM}=driver"
    assert option["module_default"] == "numa"
    assert gpu["name"] in option["why"]
    assert "open-gpu-kernel-modules" in option["source"]


@pytest.mark.parametrize("repo", sorted(UBUNTU))
def test_b200_plans_with_the_defaults_on_x86_64(repo):
    """Defect: gpu_stack_plan for a B200 with the defaults answered
    driver-packages-not-in-repository and asked for nvidia_driver_package_flavor."""
    result = default_check(B200, repo, "x86_64")
    assert result["problems"] == [], result["msg"]
    assert result["repository"]["arch"] == "x86_64"
    packages = result["packages"]
    assert packages["kernel_modules"] == {
        "flavour": "open",
        "why": "NVIDIA B200 (GPU 0) is Blackwell",
    }
    assert packages["driver"]["packages"] == open_row(repo)["packages"]
    assert packages["driver"]["package_flavor"] == "nvidia-driver"
    # A B200 is no Grace host: no coherent-memory option.
    assert packages["module_options"] == []


@pytest.mark.parametrize("repo", sorted(UBUNTU))
def test_auto_keeps_cuda_drivers_where_no_gpu_needs_the_open_modules(repo):
    """Defect to avoid: ``auto`` moving an H100 host from cuda-drivers (the former default,
    proprietary modules where cuda-drivers has no open ones) to another flavour, which would
    change the driver of every host converged before."""
    auto = default_check(H100, repo, "x86_64")
    before = default_check(H100, repo, "x86_64", package_flavor="cuda-drivers")
    assert auto["problems"] == before["problems"] == []
    for key in ("packages", "pinning", "version", "modules"):
        assert auto["packages"]["driver"][key] == before["packages"]["driver"][key]
    assert auto["packages"]["driver"]["package_flavor"] == "cuda-drivers"
    assert auto["packages"]["kernel_modules"]["flavour"] == "proprietary"
    assert "no GPU here needs the open modules" in auto["packages"]["kernel_modules"]["why"]


def test_auto_takes_cuda_drivers_where_it_serves_the_open_modules():
    """cuda-drivers is preferred wherever a catalogue row serves it with the modules needed:
    the choice follows the catalogue's rows, not a fixed answer per GPU."""
    row = {
        "layout": "ubuntu",
        "branches": {"from": "999", "to": None},
        "modules": "open",
        "package_flavor": "cuda-drivers",
        "packages": ["cuda-drivers-open-{branch}"],
        "pinning": None,
        "source": "a test row",
    }
    sp.DRIVER_PACKAGES.append(row)
    try:
        result, problems = sp.plan_packages(
            "ubuntu2404", "999", None, "cuda_repo", "auto", "auto", [B200], [], "24.04"
        )
    finally:
        sp.DRIVER_PACKAGES.remove(row)
    assert problems == []
    assert result["driver"]["packages"] == ["cuda-drivers-open-999"]
    assert result["driver"]["package_flavor"] == "cuda-drivers"
    assert "serves cuda-drivers (the CUDA driver metapackage)" in result["driver"]["why"]


# ---------------------------------------------------------------------------
# An explicit flavour that cannot work
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu", "repo", "machine"),
    [(B200, "ubuntu2204", "x86_64"), (GB200, "ubuntu2404", "aarch64")],
    ids=["b200-ubuntu2204", "gb200-ubuntu2404-sbsa"],
)
def test_explicit_cuda_drivers_with_open_modules_is_refused_naming_the_fix(gpu, repo, machine):
    """An explicit choice is the user's: it is not overridden, it is refused before any change
    (gpu_stack_plan fails), and the message names the flavour that has the packages."""
    result = default_check(gpu, repo, machine, package_flavor="cuda-drivers")
    assert result["ok"] is False and result["failed"] is True
    problem = next(
        p for p in result["problems"] if p["code"] == "driver-packages-not-in-repository"
    )
    assert problem["fix"] == ["nvidia_driver_package_flavor: nvidia-driver"]
    assert (
        "set nvidia_driver_package_flavor: nvidia-driver (or auto, which picks it)"
        in (problem["message"])
    )
    assert result["packages"]["driver"] is None
    explicit_fix = default_check(gpu, repo, machine, package_flavor="nvidia-driver")
    assert explicit_fix["problems"] == []
    assert (
        explicit_fix["packages"]["driver"]["why"] == "nvidia_driver_package_flavor is nvidia-driver"
    )


# ---------------------------------------------------------------------------
# Kernel-module options
# ---------------------------------------------------------------------------


def test_coherent_memory_option_starts_with_branch_580():
    """The option is in NVIDIA's module from 580.65.06 (not in 575): older branches get none."""
    row = next(r for r in CATALOGUE["kernel_module_options"] if r["option"] == CDMM)
    assert row["branches"] == {"from": "580", "to": None}
    assert sp.module_options([GB200], "575") == []
    assert [o["option"] for o in sp.module_options([GB200], "580")] == [CDMM]
    assert [o["option"] for o in sp.module_options([GB200], "595")] == [CDMM]


@pytest.mark.parametrize(
    ("name", "wanted"),
    [
        ("NVIDIA GH200 480GB", True),
        ("NVIDIA GB200", True),
        ("NVIDIA GB300", True),
        ("NVIDIA H100 80GB HBM3", False),
        ("NVIDIA B200", False),
        ("NVIDIA GB10", False),
        ("NVIDIA GH2000", False),
    ],
)
def test_coherent_memory_option_is_for_grace_platforms_only(name, wanted):
    options = sp.module_options([{"name": name}], "580")
    assert bool(options) is wanted, options


def test_one_grace_gpu_among_others_gets_the_option_once():
    options = sp.module_options([GB200, GB200, {"name": "NVIDIA GB200"}], "580")
    assert len(options) == 1
    assert options[0]["why"].startswith("NVIDIA GB200 (GPU 0) is a Grace coherent")


# ---------------------------------------------------------------------------
# The catalogue's sbsa facts
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("repo", sorted(UBUNTU))
def test_catalogue_lists_sbsa_for_ubuntu_with_a_source(repo):
    row = CATALOGUE["repositories"][repo]
    assert "sbsa" in row["arches"]
    assert "gpu-driver-container" in row["arches_source"]
    assert sp.repository_arch("aarch64") == sp.repository_arch("arm64") == "sbsa"
    assert sp.repository_arch("x86_64") == "x86_64"


def test_open_module_rows_cite_a_source_for_sbsa():
    layout = "ubuntu"
    for branch in ("580", "590"):
        choices = dict(
            ((m, f), sp.driver_packages(layout, branch, m, f))
            for m, f in sp.driver_package_choices(layout, branch)
        )
        assert ("open", "nvidia-driver") in choices
    rows = [
        r for r in CATALOGUE["driver_packages"] if r["layout"] == layout and r["modules"] == "open"
    ]
    assert rows and all(r.get("arches_source") for r in rows)


# ---------------------------------------------------------------------------
# The simulated install: apt, for arm64, against the sbsa layout of the fixture repository
# ---------------------------------------------------------------------------

_spec = importlib.util.spec_from_file_location("kindling_build_fixtures_sbsa", BUILD)
build_fixtures = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = build_fixtures  # dataclasses look their module up while it executes
_spec.loader.exec_module(build_fixtures)

APT = shutil.which("apt-get")
needs_apt = pytest.mark.skipif(APT is None, reason="apt-get is not installed (not Debian/Ubuntu)")
GRACE_HOSTS = [(GB200, "ubuntu2404"), (GH200, "ubuntu2204")]


def _apt(scratch: Path, repo_dir: Path, arch: str, *args: str) -> subprocess.CompletedProcess:
    """apt-get in a throwaway root of its own: only ``repo_dir`` as a source, its own lists,
    cache, empty dpkg status and no preferences; the machine's /etc/apt is not read for them."""
    for sub in ("lists/partial", "cache/archives/partial", "parts", "log"):
        (scratch / sub).mkdir(parents=True, exist_ok=True)
    status = scratch / "status"
    status.touch()
    sources = scratch / "sources.list"
    sources.write_text(f"deb [trusted=yes] file:{repo_dir}/ ./\n")
    options = {
        "Dir::Etc::sourcelist": sources,
        "Dir::Etc::sourceparts": scratch / "parts",
        "Dir::State": scratch,
        "Dir::State::Lists": scratch / "lists",
        "Dir::State::status": status,
        "Dir::State::extended_states": scratch / "extended_states",
        "Dir::Cache": scratch / "cache",
        "Dir::Log": scratch / "log",
        "Dir::Etc::preferences": "/dev/null",
        "Dir::Etc::preferencesparts": scratch / "parts",
        "APT::Architecture": arch,
        "APT::Architectures::": arch,
        "APT::Sandbox::User": "root" if os.geteuid() == 0 else "",
        "Debug::NoLocking": "true",
    }
    command = [APT]
    for key, value in options.items():
        if value != "":
            command += ["-o", f"{key}={value}"]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "LC_ALL": "C"},
    )


def _installs(output: str) -> dict[str, tuple[str, str]]:
    """apt-get -s's Inst lines: {package: (version, architecture)}."""
    return {
        name.split(":")[0]: (version, arch)
        for name, version, arch in re.findall(r"^Inst (\S+) \((\S+) .*\[(\S+)\]\)", output, re.M)
    }


@pytest.fixture(scope="module")
def sbsa_repos(tmp_path_factory):
    """The sbsa layout of each Grace host's repository, with the default branch's packages."""
    srv = tmp_path_factory.mktemp("sbsa") / "srv"
    branch = DEFAULT_STACK["driver_branch"]
    return {repo: build_fixtures.build_sbsa_repo(srv, repo, branch) for _gpu, repo in GRACE_HOSTS}


def test_sbsa_fixture_is_arm64_and_reproducible(sbsa_repos, tmp_path):
    repo = sbsa_repos["ubuntu2404"]
    assert repo.parts[-4:] == ("cuda", "repos", "ubuntu2404", "sbsa")
    again = build_fixtures.build_sbsa_repo(tmp_path, "ubuntu2404", DEFAULT_STACK["driver_branch"])
    assert sorted(p.name for p in again.iterdir()) == sorted(p.name for p in repo.iterdir())
    for path in repo.iterdir():
        assert (again / path.name).read_bytes() == path.read_bytes(), path.name
    index = (repo / "Packages").read_text()
    archs = set(re.findall(r"^Architecture: (\S+)$", index, re.M))
    assert archs <= {"arm64", "all"} and "arm64" in archs
    assert "Architectures: arm64" in (repo / "Release").read_text()


@needs_apt
@pytest.mark.parametrize(("gpu", "repo"), GRACE_HOSTS, ids=["gb200-ubuntu2404", "gh200-ubuntu2204"])
def test_apt_for_arm64_installs_exactly_the_plans_driver_packages(sbsa_repos, tmp_path, gpu, repo):
    """The driver stage's packages for a Grace host, as the plan names them, are what apt
    would install from the sbsa layout for arm64, each at the branch's fixture release."""
    driver = default_check(gpu, repo, "aarch64")["packages"]["driver"]
    wanted = [*([driver["pinning"]] if driver["pinning"] else []), *driver["packages"]]
    update = _apt(tmp_path, sbsa_repos[repo], "arm64", "update")
    assert update.returncode == 0, update.stdout + update.stderr
    args = [driver["pinning"]] if driver["pinning"] else []
    args += [f"{name}={driver['version']}" for name in driver["packages"]]
    proc = _apt(
        tmp_path, sbsa_repos[repo], "arm64", "-s", "--no-install-recommends", "install", *args
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    installs = _installs(proc.stdout)
    assert sorted(installs) == sorted(wanted), proc.stdout
    release = build_fixtures.fixture_release(DEFAULT_STACK["driver_branch"])["version"]
    version = f"{release}-{build_fixtures.DRIVER_REVISIONS['ubuntu']}"
    for name in driver["packages"]:
        assert installs[name] == (version, "arm64"), (name, installs)


@needs_apt
def test_apt_for_amd64_finds_none_of_the_sbsa_packages(sbsa_repos, tmp_path):
    """The arm64 answer is the architecture's: apt for amd64 finds no package there."""
    driver = default_check(GB200, "ubuntu2404", "aarch64")["packages"]["driver"]
    update = _apt(tmp_path, sbsa_repos["ubuntu2404"], "amd64", "update")
    assert update.returncode == 0, update.stdout + update.stderr
    proc = _apt(tmp_path, sbsa_repos["ubuntu2404"], "amd64", "-s", "install", *driver["packages"])
    assert proc.returncode != 0
    assert "Unable to locate package" in proc.stderr


def test_auto_with_no_flavour_serving_the_modules_is_refused():
    """Where no flavour serves the kernel modules the GPUs need, ``auto`` refuses the plan
    (it never falls back to modules a GPU can't run)."""
    saved = list(sp.DRIVER_PACKAGES)
    sp.DRIVER_PACKAGES[:] = [
        row for row in saved if not (row["layout"] == "ubuntu" and row["modules"] == "open")
    ]
    try:
        result, problems = sp.plan_packages(
            "ubuntu2404", "580", None, "cuda_repo", "auto", "auto", [GB200], [], "24.04"
        )
    finally:
        sp.DRIVER_PACKAGES[:] = saved  # the catalogue's rows, in their order
    problem = next(p for p in problems if p["code"] == "driver-packages-not-in-repository")
    assert "no open-module packages of branch 580 in any package flavour" in problem["message"]
    assert problem["fix"] == []
    assert result["driver"] is None
    assert result["kernel_modules"]["flavour"] == "open"
