"""module_utils/stack_plan.py: one test per real-world defect it exists to prevent.

Each test's docstring names the defect. Dates are fixed (``TODAY`` = 2026-12-01, the day
the catalogue was checked) so that branch lifecycles do not move under the tests.
"""

from __future__ import annotations

import datetime
import re

import pytest
from ansible.module_utils import stack_plan as sp

TODAY = datetime.date(2026, 12, 1)
BEFORE_535_EOL = datetime.date(2026, 1, 1)
REPOS = ("ubuntu2004", "ubuntu2204", "ubuntu2404", "debian12")

SEED = {
    "driver_branch": "510",
    "cuda_version": "11.6",
    "cudnn_version": "8.4.0",
    "torch_version": "1.12.1",
    "torch_cuda_variant": "cu116",
    "python_version": "3.10",
}
SEED_GPUS = [{"name": "Tesla T4"}]
CURRENT = {
    "driver_branch": "580",
    "cuda_version": "13.0",
    "cudnn_version": "9.14.0",
    "torch_version": "2.11.0",
    "torch_cuda_variant": "cu130",
    "python_version": "3.12",
}
CURRENT_GPUS = [{"name": "NVIDIA H100 80GB HBM3"}]
B200 = {"name": "NVIDIA B200"}
GH200 = {"name": "NVIDIA GH200 480GB"}
V100 = {"name": "Tesla V100-SXM2-16GB"}


def codes(problems):
    return [p["code"] for p in problems]


def only(problems, code):
    found = [p for p in problems if p["code"] == code]
    assert len(found) == 1, codes(problems)
    return found[0]


def all_fixes(problems):
    return [fix for p in problems for fix in p["fix"]]


def every_driver_package_plan(layout, branch):
    for modules in sp.MODULE_FLAVOURS:
        for flavor in sp.PACKAGE_FLAVORS:
            plan = sp.driver_packages(layout, branch, modules, flavor)
            if plan is not None:
                yield (modules, flavor), plan


# ---------------------------------------------------------------------------
# Package names
# ---------------------------------------------------------------------------


def test_debian12_cuda_repo_uses_debians_names():
    """Defect: Debian 12 was given Ubuntu's names (nvidia-driver-580), which do not exist there.

    NVIDIA's debian12 repository has cuda-drivers-580, which depends on the unsuffixed
    nvidia-driver and nvidia-kernel-dkms (forum 353805).
    """
    plan = sp.driver_packages("debian", "580", "proprietary", "cuda-drivers")
    assert plan["packages"] == ["cuda-drivers-580", "nvidia-driver", "nvidia-kernel-dkms"]
    assert plan["version"] == "580.*"
    assert plan["pinning"] is None
    open_plan = sp.driver_packages("debian", "580", "open", "nvidia-driver")
    assert open_plan["packages"] == ["nvidia-driver", "nvidia-kernel-open-dkms"]
    for branch in ("535", "550", "570", "580", "590", "595", "610"):
        for combo, p in every_driver_package_plan("debian", branch):
            for name in p["packages"] + p["hold"]:
                assert not re.fullmatch(r"nvidia-driver-\d+(-open)?", name), (branch, combo, name)


def test_ubuntu_from_590_drops_the_branch_suffix():
    """Defect: cuda-drivers-590 / nvidia-driver-590 were asked for; from 590 they do not exist.

    NVIDIA renamed the Ubuntu packages from branch 590 and selects the branch with
    nvidia-driver-pinning-<branch> instead.
    """
    plans = dict(every_driver_package_plan("ubuntu", "590"))
    assert set(plans) == {("proprietary", "cuda-drivers"), ("open", "nvidia-driver")}
    for combo, plan in plans.items():
        for name in plan["packages"]:
            assert name not in ("cuda-drivers-590", "nvidia-driver-590", "nvidia-driver-590-open")
            assert "590" not in name, (combo, name)
        assert plan["pinning"] == "nvidia-driver-pinning-590", combo
        assert "nvidia-driver-pinning-590" in plan["hold"]
    assert plans[("proprietary", "cuda-drivers")]["packages"] == ["cuda-drivers"]
    assert plans[("open", "nvidia-driver")]["packages"] == ["nvidia-driver-open"]
    for branch in ("595", "610", "620"):
        for combo, plan in every_driver_package_plan("ubuntu", branch):
            assert not any(branch in n for n in plan["packages"]), (branch, combo)
            assert plan["pinning"] == f"nvidia-driver-pinning-{branch}"


def test_ubuntu_580_is_still_branch_suffixed():
    """Defect guard: the 590 rename must not leak back to 580, whose names carry the branch."""
    assert sp.driver_packages("ubuntu", "580", "proprietary", "cuda-drivers")["packages"] == [
        "cuda-drivers-580",
        "nvidia-driver-580",
    ]
    assert sp.driver_packages("ubuntu", "580", "open", "nvidia-driver")["packages"] == [
        "nvidia-driver-580-open"
    ]
    for _combo, plan in every_driver_package_plan("ubuntu", "580"):
        assert plan["pinning"] is None


def test_toolkit_packages_never_the_cuda_metapackage():
    """Defect: `cuda` pulls in a driver; each toolkit is cuda-toolkit-X-Y."""
    assert sp.toolkit_packages("debian", ["13.0", "12.4"]) == [
        "cuda-toolkit-13-0",
        "cuda-toolkit-12-4",
    ]
    assert sp.toolkit_packages("ubuntu", ["12.4.1"]) == ["cuda-toolkit-12-4"]


# ---------------------------------------------------------------------------
# The seed stack and repositories
# ---------------------------------------------------------------------------


def test_seed_stack_is_consistent_on_ubuntu2004():
    """Defect guard: the seed stack (510 / 11.6 / T4) is real on Ubuntu 20.04 and must pass."""
    assert sp.check_plan(SEED, SEED_GPUS, "ubuntu2004", "x86_64", TODAY) == []


def test_seed_stack_is_refused_on_ubuntu2204():
    """Defect: the seed stack was planned on 22.04, whose repository has neither CUDA 11.6
    nor cuda-drivers-510 (NVIDIA/ansible-role-nvidia-driver PR #65); apt failed half-way."""
    problems = sp.check_plan(SEED, SEED_GPUS, "ubuntu2204", "x86_64", TODAY)
    cuda = only(problems, "cuda-not-in-repository")
    assert "CUDA 11.6 is not in ubuntu2204" in cuda["message"]
    assert "use 11.7+ here, or Ubuntu 20.04" in cuda["message"]
    assert cuda["fix"] == ['cuda_version: "11.7"']
    branch = only(problems, "driver-branch-not-in-repository")
    assert "Driver branch 510 is not in ubuntu2204" in branch["message"]


@pytest.mark.parametrize("repo", ["debian12", "ubuntu2404"])
def test_seed_stack_is_refused_on_newer_repositories(repo):
    """Defect: the seed's CUDA 11.6 is not in the debian12 or ubuntu2404 repositories."""
    problems = sp.check_plan(SEED, SEED_GPUS, repo, "x86_64", TODAY)
    cuda = only(problems, "cuda-not-in-repository")
    assert f"CUDA 11.6 is not in {repo}" in cuda["message"]
    assert "Ubuntu 20.04" in cuda["message"]


def test_h200_seed_stack_fix_exists_in_the_repository():
    """Defect: the H200 fix said CUDA 11.8 with branch 520, neither of which ubuntu2404 serves
    (and 520 is end of life): the "fix" could not be applied."""
    problems = sp.check_plan(SEED, [{"name": "NVIDIA H200"}], "ubuntu2404", "x86_64", TODAY)
    fixes = all_fixes(problems)
    assert fixes
    assert 'cuda_version: "11.8"' not in fixes
    assert 'nvidia_driver_branch: "520"' not in fixes
    gpu = only(problems, "cuda-too-old-for-gpu")
    assert gpu["fix"] == ['cuda_version: "12.5"', 'nvidia_driver_branch: "580"']
    for fix in fixes:
        match = re.fullmatch(r'cuda_version: "([0-9.]+)"', fix)
        if match:
            assert sp.cuda_in_repository("ubuntu2404", match.group(1)), fix
        match = re.fullmatch(r'nvidia_driver_branch: "(\d+)"', fix)
        if match:
            assert sp.branch_end_of_life(match.group(1), TODAY) is False, fix
            assert sp.branch_in_repository("ubuntu2404", match.group(1)) is not False, fix


def test_driver_branch_fix_uses_the_date_check_plan_was_given():
    """Defect: check_plan(today=...) passes ``today`` to check_stack's advisor but not to
    repository_problems, which builds RepositoryAdvisor(repo) with the real date.

    On 2026-01-01 R535 is not yet end of life, so RepositoryAdvisor("ubuntu2204",
    2026-01-01) suggests 535; driver-branch-not-in-repository still says 580 (the
    machine's date). With an H200 the one result then carries contradictory branch
    fixes: 535 from check_stack's problems, 580 from the repository problem.
    """
    problems = sp.check_plan(SEED, SEED_GPUS, "ubuntu2204", "x86_64", BEFORE_535_EOL)
    branch = only(problems, "driver-branch-not-in-repository")
    expected = sp.RepositoryAdvisor("ubuntu2204", BEFORE_535_EOL).branch_for("510.39.01")
    assert expected == "535"
    assert branch["fix"] == [f'nvidia_driver_branch: "{expected}"']
    h200 = sp.check_plan(SEED, [{"name": "NVIDIA H200"}], "ubuntu2204", "x86_64", BEFORE_535_EOL)
    branches = {f for f in all_fixes(h200) if f.startswith("nvidia_driver_branch:")}
    assert branches == {'nvidia_driver_branch: "535"'}


def test_repository_advisor_never_suggests_an_end_of_life_branch():
    """Defect: a fix suggested R535 after its June 2026 end of life (and 520, long gone)."""
    advisor = sp.RepositoryAdvisor("ubuntu2204", TODAY)
    assert advisor.branch_for("535.54.03") == "580"
    assert advisor.branch_for("520.61.05") == "580"
    assert advisor.branch_for("590.44.01") == "595"
    for row in sp.CATALOGUE["cuda_toolkits"]:
        for repo in (None, *REPOS):
            branch = sp.RepositoryAdvisor(repo, TODAY).branch_for(row["linux_min_driver"])
            assert sp.branch_end_of_life(branch, TODAY) is False, (row["cuda"], repo, branch)
            assert int(branch) >= int(row["linux_min_driver"].split(".")[0])
            if repo:
                assert sp.branch_in_repository(repo, branch) is not False, (repo, branch)


def test_repository_advisor_suggests_535_before_its_end_of_life():
    """Defect guard: the lifecycle is read against ``today``, not a fixed list."""
    advisor = sp.RepositoryAdvisor("ubuntu2204", BEFORE_535_EOL)
    assert advisor.branch_for("535.54.03") == "535"
    assert advisor.branch_for("520.61.05") == "535"
    assert sp.branch_end_of_life("535", BEFORE_535_EOL) is False
    assert sp.branch_end_of_life("535", TODAY) is True
    assert sp.branch_end_of_life("535", datetime.date(2026, 6, 30)) is False


def test_repository_advisor_cuda_suggestion_is_served():
    """Defect: a CUDA fix named a series the OS's repository does not have."""
    assert sp.RepositoryAdvisor("ubuntu2404", TODAY).cuda_from("11.8") == "12.5"
    assert sp.RepositoryAdvisor("debian12", TODAY).cuda_from("11.8") == "12.3"
    assert sp.RepositoryAdvisor("ubuntu2004", TODAY).cuda_from("11.8") == "11.8"
    assert sp.RepositoryAdvisor(None, TODAY).cuda_from("11.8") == "11.8"


MATRIX = [
    ("seed", "ubuntu2004", []),
    ("seed", "ubuntu2204", ["cuda-not-in-repository", "driver-branch-not-in-repository"]),
    ("seed", "ubuntu2404", ["cuda-not-in-repository"]),
    ("seed", "debian12", ["cuda-not-in-repository"]),
    ("current", "ubuntu2004", ["cuda-not-in-repository"]),
    ("current", "ubuntu2204", []),
    ("current", "ubuntu2404", []),
    ("current", "debian12", []),
]


@pytest.mark.parametrize(("stack", "repo", "refused_with"), MATRIX)
def test_stack_by_os_matrix(stack, repo, refused_with):
    """Defect: a stack was accepted on an OS whose repository can't install it, or refused
    where it can. Seed only on 20.04; the current stack (CUDA 13.0) everywhere but 20.04."""
    plan, gpus = (SEED, SEED_GPUS) if stack == "seed" else (CURRENT, CURRENT_GPUS)
    problems = sp.check_plan(plan, gpus, repo, "x86_64", TODAY)
    assert codes(problems) == refused_with
    if stack == "current" and refused_with:
        assert "CUDA 13.0 is not in ubuntu2004" in problems[0]["message"]
        assert problems[0]["fix"] == ['cuda_version: "12.9"']


def test_unknown_repository_and_arch_are_refused():
    """Defect: an OS without an NVIDIA repository (or an arch it lacks) failed at apt time."""
    assert codes(sp.check_plan(CURRENT, CURRENT_GPUS, "ubuntu1804", "x86_64", TODAY)) == [
        "unknown-repository"
    ]
    assert codes(sp.check_plan(CURRENT, CURRENT_GPUS, "ubuntu2204", "ppc64el", TODAY)) == [
        "arch-not-in-repository"
    ]
    assert sp.repository_id("Debian", "12.7") == "debian12"
    assert sp.repository_id("Ubuntu", "22.04") == "ubuntu2204"
    assert sp.repository_arch("aarch64") == "sbsa"


def test_extra_toolkits_are_checked_against_the_repository_too():
    """Defect: a second toolkit (cuda_versions_extra) bypassed the repository check."""
    plan = dict(CURRENT, cuda_versions_extra=["11.6"])
    problems = sp.check_plan(plan, CURRENT_GPUS, "ubuntu2204", "x86_64", TODAY)
    assert codes(problems) == ["cuda-not-in-repository"]
    assert "CUDA 11.6 is not in ubuntu2204" in problems[0]["message"]


# ---------------------------------------------------------------------------
# Kernel modules
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu", "branch", "flavour"),
    [(B200, "580", "open"), (GH200, "550", "open"), (V100, "580", "proprietary")],
)
def test_auto_kernel_modules_follow_the_gpu(gpu, branch, flavour):
    """Defect: Blackwell / Grace Hopper got the proprietary modules (no GPU found) and Volta
    the open ones (which do not support it)."""
    got, why, problems = sp.kernel_modules("auto", [gpu], branch)
    assert (got, problems) == (flavour, [])
    assert gpu["name"] in why


def test_open_modules_on_a_v100_are_refused():
    """Defect: nvidia_driver_kernel_modules: open on Volta gave a driver that finds no GPU."""
    _flavour, _why, problems = sp.kernel_modules("open", [V100], "580")
    p = only(problems, "gpu-cannot-run-open-modules")
    assert "Volta" in p["message"]
    assert p["fix"] == ["nvidia_driver_kernel_modules: proprietary"]


def test_proprietary_modules_on_a_b200_are_refused():
    """Defect: nvidia_driver_kernel_modules: proprietary on Blackwell never loads."""
    _flavour, _why, problems = sp.kernel_modules("proprietary", [B200], "580")
    p = only(problems, "gpu-needs-open-modules")
    assert "Blackwell" in p["message"]
    assert p["fix"] == ["nvidia_driver_kernel_modules: open"]


@pytest.mark.parametrize("requested", ["auto", "open", "proprietary"])
def test_b200_and_v100_on_one_host_conflict(requested):
    """Defect: a host with a Blackwell and a Volta GPU got one flavour that fails one GPU."""
    flavour, _why, problems = sp.kernel_modules(requested, [B200, V100], "580")
    assert flavour is None
    assert codes(problems) == ["kernel-modules-conflict"]
    assert "GPU 0" in problems[0]["message"] and "GPU 1" in problems[0]["message"]


def test_open_modules_on_branch_510_are_refused():
    """Defect: open modules were asked of branch 510; they start with R515."""
    _flavour, _why, problems = sp.kernel_modules("open", [], "510")
    p = only(problems, "open-modules-need-newer-branch")
    assert p["fix"] == ['nvidia_driver_branch: "515"']


def test_auto_without_gpus_follows_nvidias_default():
    """Defect guard: with no GPU seen (check mode), auto is open from R560, proprietary before."""
    assert sp.kernel_modules("auto", [], "560")[0] == "open"
    assert sp.kernel_modules("auto", None, "580")[0] == "open"
    assert sp.kernel_modules("auto", [], "550")[0] == "proprietary"


def test_branch_after_580_drops_volta():
    """Defect: a V100 host was planned on 590, which has no support for it."""
    _flavour, _why, problems = sp.kernel_modules("auto", [V100], "590")
    assert only(problems, "branch-drops-pre-turing-gpu")["fix"] == ['nvidia_driver_branch: "580"']


# ---------------------------------------------------------------------------
# plan_packages
# ---------------------------------------------------------------------------


def test_auto_on_debian12_580_cuda_drivers_falls_back_to_proprietary():
    """Defect: auto chose open on Debian 12 / 580 / cuda-drivers, a combination that has no
    packages, and the plan failed instead of using the proprietary modules."""
    result, problems = sp.plan_packages(
        "debian12", "580", None, "cuda_repo", "auto", "cuda-drivers", [], ["13.0"], "12"
    )
    assert problems == []
    assert result["kernel_modules"]["flavour"] == "proprietary"
    why = result["kernel_modules"]["why"]
    assert "no open-module cuda-drivers packages of branch 580" in why
    assert "nvidia_driver_package_flavor nvidia-driver" in why
    assert result["driver"]["packages"] == [
        "cuda-drivers-580",
        "nvidia-driver",
        "nvidia-kernel-dkms",
    ]
    assert result["toolkit"] == ["cuda-toolkit-13-0"]


def test_b200_with_cuda_drivers_flavour_is_refused_with_the_flavour_fix():
    """Defect: a B200 on Ubuntu 22.04 / 580 with cuda-drivers fell back to proprietary
    modules (which do not run Blackwell) instead of asking for the nvidia-driver flavour."""
    result, problems = sp.plan_packages(
        "ubuntu2204", "580", None, "cuda_repo", "auto", "cuda-drivers", [B200], ["13.0"], "22.04"
    )
    p = only(problems, "driver-packages-not-in-repository")
    assert p["fix"] == ["nvidia_driver_package_flavor: nvidia-driver"]
    assert "nvidia_driver_package_flavor: nvidia-driver" in p["message"]
    assert result["driver"] is None
    assert result["kernel_modules"]["flavour"] == "open"
    fixed, ok = sp.plan_packages(
        "ubuntu2204", "580", None, "cuda_repo", "auto", "nvidia-driver", [B200], ["13.0"], "22.04"
    )
    assert ok == []
    assert fixed["driver"]["packages"] == ["nvidia-driver-580-open"]


def test_distro_method_on_debian12_serves_only_535():
    """Defect: install_method distro on Debian 12 asked for branch 580; bookworm has 535 only."""
    result, problems = sp.plan_packages(
        "debian12", "535", None, "distro", "auto", "cuda-drivers", [], [], "12"
    )
    assert problems == []
    assert result["driver"]["packages"] == ["nvidia-driver", "nvidia-kernel-dkms"]
    assert result["driver"]["served_branch"] == "535"
    assert result["driver"]["components"] == ["non-free", "non-free-firmware", "contrib"]
    _result, problems = sp.plan_packages(
        "debian12", "580", None, "distro", "auto", "cuda-drivers", [], [], "12"
    )
    p = only(problems, "driver-packages-not-in-distribution")
    assert "Debian 12 serves branch 535 only" in p["message"]
    assert p["fix"] == ['nvidia_driver_branch: "535"']


def test_distro_method_on_ubuntu_uses_server_packages():
    """Defect guard: Ubuntu's own archive names are nvidia-driver-<branch>-server[-open]."""
    result, problems = sp.plan_packages(
        "ubuntu2204", "580", None, "distro", "auto", "cuda-drivers", [CURRENT_GPUS[0]], [], "22.04"
    )
    assert problems == []
    assert result["driver"]["packages"] == ["nvidia-driver-580-server-open"]


# ---------------------------------------------------------------------------
# Fabric manager
# ---------------------------------------------------------------------------


def test_fabric_manager_names_follow_the_branch():
    """Defect: NVSwitch hosts got nvidia-fabricmanager-580, which does not exist (unsuffixed
    from 580), or an unsuffixed name below 580."""
    fm570 = sp.fabric_manager_packages("570")
    assert fm570["packages"] == ["nvidia-fabricmanager-570", "libnvidia-nscq-570"]
    assert fm570["version"] == "570.*"
    fm580 = sp.fabric_manager_packages("580")
    assert fm580["packages"] == ["nvidia-fabricmanager", "libnvidia-nscq"]
    assert fm580["version"] == "580.*"
    assert sp.fabric_manager_packages("535")["nvlink5_packages"] == []
    assert fm570["nvlink5_packages"] == ["nvlsm", "infiniband-diags"]


def test_fabric_manager_matches_the_driver_version_exactly():
    """Defect: a fabric manager of another version than the driver refuses to start."""
    assert sp.fabric_manager_packages("580", "580.95.05")["version"] == "580.95.05-*"
    result, _problems = sp.plan_packages(
        "ubuntu2204", "580", "580.95.05-1ubuntu1", "cuda_repo", "auto", "cuda-drivers", [], []
    )
    assert result["fabric_manager"]["version"] == "580.95.05-*"
    assert result["driver"]["version"] == "580.95.05-1ubuntu1"


# ---------------------------------------------------------------------------
# Python package pins
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("python", "pin"), [("3.8", "6.29.5"), ("3.9", "6.31.0"), ("3.10", "7.3.0"), ("3.11", "7.4.0")]
)
def test_ipykernel_pin_suits_the_interpreter(python, pin):
    """Defect: ipykernel 7.4.0 (Requires-Python >=3.11) was pinned into the seed's Python 3.10."""
    assert sp.python_package_pin("ipykernel", python) == pin


def test_a_pinned_ipykernel_too_new_for_the_interpreter_names_the_fix():
    """Defect: pip failed with "no matching distribution" and no hint of the variable."""
    p = sp.python_package_problem("ipykernel", "7.4.0", "3.10", "jupyter_ipykernel_version")
    assert p["code"] == "python-package-needs-newer-python"
    assert "jupyter_ipykernel_version" in p["message"] and "7.3.0" in p["message"]
    assert p["fix"] == ['jupyter_ipykernel_version: "7.3.0"']
    assert sp.python_package_problem("ipykernel", "7.3.0", "3.10", "x") is None
    assert sp.python_package_problem("ipykernel", "0.0.1", "3.10", "x") is None  # not catalogued


def test_jupyterlab_pin_for_python_38():
    """Defect: jupyterlab 4.5 (>=3.9) was pinned into Ubuntu 20.04's Python 3.8."""
    assert sp.python_package_pin("jupyterlab", "3.8") == "4.3.8"
    assert sp.python_package_pin("jupyterlab", "3.9") == "4.5.11"
    assert sp.python_package_pin("jupyterlab", "3.7") is None


def test_what_no_source_confirms_is_a_note_not_a_refusal():
    """Unknown is not guessed: debian12 on sbsa and its cuDNN packages are notes only."""
    plan = {"driver_branch": "580", "cuda_version": "13.0", "cudnn_version": "9.14.0"}
    problems = sp.check_plan(plan, [], "debian12", "sbsa")
    assert not [p for p in problems if p["code"] == "arch-not-in-repository"], problems
    notes = sp.repository_notes(plan, "debian12", "sbsa")
    assert any("sbsa" in n for n in notes), notes
    assert any("cuDNN 9" in n for n in notes), notes
    # Where a source shows cuDNN 9 (ubuntu2404), there is no such note.
    assert not any("cuDNN" in n for n in sp.repository_notes(plan, "ubuntu2404", "x86_64"))


def test_an_architecture_a_repository_does_not_serve_is_refused():
    problems = sp.check_plan({"cuda_version": "13.0"}, [], "ubuntu2204", "ppc64el")
    assert [p["code"] for p in problems] == ["arch-not-in-repository"], problems


# ---------------------------------------------------------------------------
# NVIDIA's CUDA repository: where it is and how apt trusts it (catalogue cuda_repository)
# ---------------------------------------------------------------------------


def test_cuda_repository_from_the_catalogue():
    loc = sp.cuda_repository_location("debian12", "x86_64")
    base = "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"
    assert loc["url"] == base
    assert loc["key_url"] == base + "3bf863cc.pub"
    assert loc["fingerprint"] == "EB693B3035CD5710E231E123A4B469963BF863CC"
    assert loc["keyring"] == "/usr/share/keyrings/cuda-archive-keyring.gpg"
    assert loc["sources_file"] == "/etc/apt/sources.list.d/cuda-debian12-x86_64.sources"
    assert loc["list_file"] == "/etc/apt/sources.list.d/cuda-debian12-x86_64.list"


def test_every_catalogue_repository_names_a_known_key():
    for repo, row in sp.REPOSITORIES.items():
        assert row["key"] in sp.CUDA_REPOSITORY["keys"], repo
        assert sp.cuda_repository_location(repo, "x86_64")["fingerprint"], repo


def test_cuda_repository_overrides_a_mirror_and_a_rotated_key():
    loc = sp.cuda_repository_location(
        "ubuntu2404",
        "sbsa",
        base_url="https://mirror.example/cuda/repos/",
        fingerprint="eb69 3b30 35cd 5710 e231  e123 a4b4 6996 3bf8 63cc",
        keyring="/etc/apt/keyrings/cuda.gpg",
    )
    assert loc["url"] == "https://mirror.example/cuda/repos/ubuntu2404/sbsa/"
    # The mirror serves the key file the catalogue names, beside its lists.
    assert loc["key_url"] == "https://mirror.example/cuda/repos/ubuntu2404/sbsa/3bf863cc.pub"
    assert loc["fingerprint"] == "EB693B3035CD5710E231E123A4B469963BF863CC"
    assert loc["keyring"] == "/etc/apt/keyrings/cuda.gpg"


def test_an_unknown_repository_has_no_key_unless_given_one():
    loc = sp.cuda_repository_location("debian13", "x86_64")
    assert loc["key_url"] == "" and loc["fingerprint"] == ""
    given = sp.cuda_repository_location(
        "debian13", "x86_64", key_url="https://k/x.pub", fingerprint="AB" * 20
    )
    assert given["key_url"] == "https://k/x.pub" and given["fingerprint"] == "AB" * 20
    assert sp.cuda_repository_location(None, "x86_64") is None
