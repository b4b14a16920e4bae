"""module_utils/stack_plan.py: the distributions' own driver and toolkit packages.

Install method ``distro`` (nvidia_driver_install_method, cuda_install_method) takes the
packages from the distribution's archive instead of NVIDIA's repository. The facts come
from the vendor catalogue (data/vendor_catalogue.yml -> module_utils/vendor_catalogue.py);
the tests read them from there, and where a test pins one it says that it checks the
catalogue's record.
"""

from __future__ import annotations

import pytest
from ansible.module_utils import stack_plan as sp
from ansible.module_utils.vendor_catalogue import CATALOGUE

DISTRO = CATALOGUE["distro_driver_packages"]
DEBIAN = DISTRO["debian"]
UBUNTU = DISTRO["ubuntu"]
BOOKWORM_BRANCH = DEBIAN["branches"]["12"]
DEBIAN12_TOOLKIT = CATALOGUE["distro_toolkit_packages"]["debian"]["12"]


def codes(problems):
    return [p["code"] for p in problems]


def only(problems, code):
    found = [p for p in problems if p["code"] == code]
    assert len(found) == 1, codes(problems)
    return found[0]


def test_the_catalogue_records_what_debian12_serves():
    # Checks the catalogue's record (apt-cache policy against bookworm, 2026-12-01).
    assert BOOKWORM_BRANCH == "535"
    assert DEBIAN["companions"] == ["nvidia-smi", "nvidia-persistenced"]
    served = {row["suite"]: row for row in DEBIAN["served"]["12"]}
    assert served["bookworm"]["proprietary"] == "535.261.03-1"
    assert served["bookworm"]["open"] == "535.261.03-1"
    assert served["bookworm-security"]["proprietary"] == "535.309.01-0+deb12u1"
    assert DEBIAN12_TOOLKIT["package"] == "nvidia-cuda-toolkit"
    assert DEBIAN12_TOOLKIT["cuda"] == "11.8"
    assert DEBIAN12_TOOLKIT["nvcc"] == "/usr/bin/nvcc"


# ---------------------------------------------------------------------------
# distro_driver_packages
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("modules", ["proprietary", "open"])
def test_debian12_driver_packages_with_their_companions(modules):
    plan = sp.distro_driver_packages("debian", BOOKWORM_BRANCH, modules, "12")
    assert plan is not None
    assert plan["packages"] == [p.format(branch=535) for p in DEBIAN[modules]]
    assert plan["packages"][0] == "nvidia-driver"
    assert plan["companions"] == ["nvidia-smi", "nvidia-persistenced"]
    assert plan["hold"] == plan["packages"] + plan["companions"]
    assert plan["companion_version"] == "535.*"
    assert plan["version"] == "535.*"
    assert plan["version_regex"] == r"^535\."
    assert plan["pinning"] is None
    assert plan["components"] == DEBIAN["components"]
    assert plan["suites"] == DEBIAN["suites"]
    assert plan["served_branch"] == "535"
    assert plan["served"] == DEBIAN["served"]["12"]
    assert plan["selection"] == CATALOGUE["driver_selection_packages"]["debian"]


def test_debian12_open_flavour_uses_the_open_dkms_package():
    plan = sp.distro_driver_packages("debian", "535", "open", "12")
    assert "nvidia-open-kernel-dkms" in plan["packages"]
    assert "nvidia-kernel-dkms" not in plan["packages"]


def test_an_exact_driver_version_does_not_reach_the_companions():
    """nvidia-persistenced is 535.171.04 beside driver 535.261.03: its own version."""
    version = "535.261.03-1"  # checks the catalogue's record for bookworm
    assert version in {row["proprietary"] for row in DEBIAN["served"]["12"]}
    plan = sp.distro_driver_packages("debian", "535", "proprietary", "12", version)
    assert plan["version"] == version
    assert plan["version_regex"] == r"^535\.261\.03\-1$"
    assert plan["companion_version"] == "535.*"
    assert plan["hold"] == plan["packages"] + plan["companions"]


def test_an_upstream_version_gets_a_revision_glob():
    plan = sp.distro_driver_packages("debian", "535", "proprietary", "12", "535.261.03")
    assert plan["version"] == "535.261.03-*"
    assert plan["companion_version"] == "535.*"


def test_a_branch_debian12_does_not_serve_has_no_packages():
    assert sp.distro_driver_packages("debian", "580", "proprietary", "12") is None
    assert sp.distro_driver_packages("debian", "580", "open", "12.7") is None
    # A point release is its major release.
    assert sp.distro_driver_packages("debian", "535", "proprietary", "12.7") is not None


def test_without_a_release_the_branch_is_not_checked():
    plan = sp.distro_driver_packages("debian", "580", "proprietary")
    assert plan is not None
    assert plan["served_branch"] is None
    assert plan["served"] == []


def test_ubuntu_server_packages_have_no_companions():
    plan = sp.distro_driver_packages("ubuntu", "580", "open", "22.04")
    assert plan["packages"] == ["nvidia-driver-580-server-open"]
    assert plan["companions"] == []
    assert plan["hold"] == plan["packages"]
    assert plan["components"] == UBUNTU["components"]
    assert plan["suites"] == UBUNTU["suites"]
    assert plan["served"] == []


def test_an_unknown_layout_has_no_packages():
    assert sp.distro_driver_packages("fedora", "580", "open", "40") is None


# ---------------------------------------------------------------------------
# distro_driver_served
# ---------------------------------------------------------------------------


def test_distro_driver_served_rows_come_from_the_catalogue():
    assert sp.distro_driver_served("debian", "12") == DEBIAN["served"]["12"]
    assert sp.distro_driver_served("debian", "12.7") == DEBIAN["served"]["12"]
    assert sp.distro_driver_served("debian", 12) == DEBIAN["served"]["12"]
    assert sp.distro_driver_served("debian", "11") == []
    assert sp.distro_driver_served("debian", None) == []
    assert sp.distro_driver_served("ubuntu", "22.04") == []
    assert sp.distro_driver_served("fedora", "40") == []


def test_distro_driver_served_is_a_copy():
    rows = sp.distro_driver_served("debian", "12")
    rows.append({"suite": "sid"})
    assert sp.distro_driver_served("debian", "12") == DEBIAN["served"]["12"]


# ---------------------------------------------------------------------------
# distro_toolkit
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("distribution", "release"), [("debian", "12"), ("Debian", "12.7")])
def test_debian12_distro_toolkit(distribution, release):
    row = sp.distro_toolkit(distribution, release)
    assert row is not None
    assert row["package"] == DEBIAN12_TOOLKIT["package"]
    assert row["cuda"] == DEBIAN12_TOOLKIT["cuda"]
    assert row["version"] == DEBIAN12_TOOLKIT["version"]
    assert row["nvcc"] == DEBIAN12_TOOLKIT["nvcc"]
    assert row["cuda_home"] == DEBIAN12_TOOLKIT["cuda_home"]
    assert row["components"] == DEBIAN12_TOOLKIT["components"]
    # The suites whose entries get the component: the same as the driver's.
    assert row["suites"] == DEBIAN["suites"]


def test_distro_toolkit_does_not_change_the_catalogue():
    row = sp.distro_toolkit("debian", "12")
    row["suites"].append("sid")
    assert "suites" not in DEBIAN12_TOOLKIT
    assert sp.distro_toolkit("debian", "12")["suites"] == DEBIAN["suites"]


@pytest.mark.parametrize(
    ("distribution", "release"),
    [("ubuntu", "22.04"), ("ubuntu", "24.04"), ("debian", "11"), ("fedora", "40"), ("", None)],
)
def test_no_distro_toolkit(distribution, release):
    assert sp.distro_toolkit(distribution, release) is None


# ---------------------------------------------------------------------------
# distro_toolkit_plan
# ---------------------------------------------------------------------------


def test_distro_toolkit_plan_for_the_shipped_version():
    row, problems = sp.distro_toolkit_plan("debian", "12", DEBIAN12_TOOLKIT["cuda"], [])
    assert problems == []
    assert row == sp.distro_toolkit("debian", "12")
    # No version asked: the one the release ships.
    row, problems = sp.distro_toolkit_plan("debian", "12", None, [])
    assert problems == [] and row["package"] == "nvidia-cuda-toolkit"


def test_distro_toolkit_plan_refuses_another_cuda_version():
    row, problems = sp.distro_toolkit_plan("debian", "12", "12.4", [])
    assert row is not None  # the plan still says what the release ships
    p = only(problems, "toolkit-not-in-distribution")
    assert p["fix"][0] == f'cuda_version: "{DEBIAN12_TOOLKIT["cuda"]}"'
    assert p["fix"][0] == 'cuda_version: "11.8"'  # checks the catalogue's record
    assert "cuda_install_method: cuda_repo" in p["fix"]
    assert "ships CUDA 11.8" in p["message"] and "not 12.4" in p["message"]
    assert DEBIAN12_TOOLKIT["version"] in p["message"]


def test_distro_toolkit_plan_compares_major_minor():
    _row, problems = sp.distro_toolkit_plan("debian", "12", "11.8.89", [])
    assert problems == []


def test_distro_toolkit_plan_refuses_extra_toolkits():
    _row, problems = sp.distro_toolkit_plan("debian", "12", "11.8", ["12.4"])
    p = only(problems, "distro-toolkit-is-single")
    assert p["fix"] == ["cuda_versions_extra: []"]
    assert "12.4" in p["message"]
    assert codes(problems) == ["distro-toolkit-is-single"]


def test_distro_toolkit_plan_lists_every_problem():
    _row, problems = sp.distro_toolkit_plan("debian", "12", "12.4", ["12.6"])
    assert codes(problems) == ["toolkit-not-in-distribution", "distro-toolkit-is-single"]


@pytest.mark.parametrize(
    ("distribution", "release"), [("debian", "11"), ("ubuntu", "22.04"), ("", None)]
)
def test_distro_toolkit_plan_on_a_release_without_a_toolkit(distribution, release):
    row, problems = sp.distro_toolkit_plan(distribution, release, "11.8", [])
    assert row is None
    p = only(problems, "toolkit-not-in-distribution")
    assert p["fix"] == ["cuda_install_method: cuda_repo"]
    assert "Debian 12 (CUDA 11.8)" in p["message"]  # the known ones, from the catalogue
