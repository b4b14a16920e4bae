"""Verify the conda_pytorch role (venv backend, CPU torch from the fixture index), per host.

testinfra runs every test once per host of molecule.yml's verifier ``hosts``: the Debian 12
host with the real torch 2.13.0+cpu wheel for Python 3.11, and the Debian 11 host with
torch 2.8.0+cpu for Python 3.9, a stand-in wheel (docs/FIXTURES.md).
"""

import json

import pytest

ENV = "/opt/venvs/pytorch"
PY = f"{ENV}/bin/python"

# What each host must have: its Debian release, the system Python the venv was made from,
# the torch release the scenario asks for there, and whether that wheel is the fixture's
# stand-in (torch.KINDLING_FIXTURE_STANDIN) or the real one.
EXPECTED = {
    "kindling-conda-pytorch": {
        "codename": "bookworm",
        "python": "3.11",
        "torch": "2.13.0+cpu",
        "standin": False,
    },
    "kindling-conda-pytorch-bullseye": {
        "codename": "bullseye",
        "python": "3.9",
        "torch": "2.8.0+cpu",
        "standin": True,
    },
}


@pytest.fixture()
def expected(host):
    return EXPECTED[host.backend.get_hostname()]


def test_host_is_the_expected_release(host, expected):
    assert host.system_info.codename == expected["codename"]
    version = host.check_output("python3 -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])'")
    assert version == expected["python"]


def test_env_exists_and_is_group_owned(host):
    env = host.file(ENV)
    assert env.is_directory
    assert env.group == "pytorch"
    assert env.mode & 0o2070 == 0o2070  # setgid, group rwx
    assert host.file(PY).exists
    # no file or directory left outside the group
    stray = host.check_output(f"find {ENV} ! -group pytorch | head -5")
    assert stray == ""
    site = host.check_output(f"{PY} -c 'import torch, os; print(os.path.dirname(torch.__file__))'")
    assert host.file(site).group == "pytorch"
    assert host.file(site).mode & 0o2070 == 0o2070


def test_group_member_can_use_the_env(host, expected):
    assert "pytorch" in host.user("alice").groups
    probe = "import sys, torch; print(sys.prefix, torch.__version__)"
    out = host.check_output(f"runuser -l alice -c 'python -c \"{probe}\"'")
    assert out.split() == [ENV, expected["torch"]]


def test_profile_snippet(host):
    f = host.file("/etc/profile.d/pytorch.sh")
    assert f.exists and f.user == "root" and f.mode == 0o644
    assert f"{ENV}/bin/activate" in f.content_string
    assert host.run("sh -n /etc/profile.d/pytorch.sh").rc == 0


def test_torch_version_and_no_torchvision(host, expected):
    assert (
        host.check_output(f"{PY} -c 'import torch; print(torch.__version__)'") == expected["torch"]
    )
    pkgs = {
        p["name"].lower(): p["version"]
        for p in json.loads(host.check_output(f"{PY} -m pip list --format=json"))
    }
    assert pkgs["torch"] == expected["torch"]
    assert "torchvision" not in pkgs  # pytorch_install_torchvision: false (see README.md)


def test_torch_is_the_real_wheel_or_the_declared_stand_in(host, expected):
    standin = host.check_output(
        f"{PY} -c 'import torch; print(getattr(torch, \"KINDLING_FIXTURE_STANDIN\", False))'"
    )
    assert standin == str(expected["standin"])
    # pip installed the wheel's real dependencies for this Python from the fixture index.
    check = host.run(f"{PY} -m pip check")
    assert check.rc == 0, check.stdout + check.stderr


def test_torch_cuda_facts_reported_a_cpu_host(host, expected):
    # converge.yml stores the facts torch_cuda_facts set; the verify step ran it.
    data = json.loads(host.file("/var/tmp/kindling-test/torch_cuda.json").content_string)
    assert data["importable"] is True
    assert data["cuda_available"] is False
    assert data["cpu_only_build"] is True
    assert data["torch_version"] == expected["torch"]
    assert data["python_version"].startswith(expected["python"] + ".")
