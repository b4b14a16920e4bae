"""Verify the conda_pytorch role (venv backend, CPU torch from the fixture index)."""

import json

ENV = "/opt/venvs/pytorch"
PY = f"{ENV}/bin/python"


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


def test_group_member_can_use_the_env(host):
    assert "pytorch" in host.user("alice").groups
    probe = "import sys, torch; print(sys.prefix, torch.__version__)"
    out = host.check_output(f"runuser -l alice -c 'python -c \"{probe}\"'")
    assert out.split() == [ENV, "2.13.0+cpu"]


def test_profile_snippet(host):
    f = host.file("/etc/profile.d/pytorch.sh")
    assert f.exists and f.user == "root" and f.mode == 0o644
    assert f"{ENV}/bin/activate" in f.content_string
    assert host.run("sh -n /etc/profile.d/pytorch.sh").rc == 0


def test_torch_version_and_no_torchvision(host):
    assert host.check_output(f"{PY} -c 'import torch; print(torch.__version__)'") == "2.13.0+cpu"
    pkgs = {
        p["name"].lower(): p["version"]
        for p in json.loads(host.check_output(f"{PY} -m pip list --format=json"))
    }
    assert pkgs["torch"] == "2.13.0+cpu"
    assert "torchvision" not in pkgs  # pytorch_install_torchvision: false (see README.md)


def test_torch_cuda_facts_reported_a_cpu_host(host):
    # converge.yml stores the facts torch_cuda_facts set; the verify step ran it.
    data = json.loads(host.file("/var/tmp/kindling-test/torch_cuda.json").content_string)
    assert data["importable"] is True
    assert data["cuda_available"] is False
    assert data["cpu_only_build"] is True
    assert data["torch_version"] == "2.13.0+cpu"
    assert data["python_version"].startswith("3.11")
