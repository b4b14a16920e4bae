"""module_utils/apt_policy.py and library/apt_policy_facts.py: apt-cache policy read in Python.

The fixtures are real `LC_ALL=C apt-cache policy` output from Debian 12
(tests/fixtures/apt_policy/README.md says which command made each); the module tests run
the real apt-cache of this machine, and the role's own tasks (install-distro.yml) run in a
real ansible-playbook against it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import apt_policy_facts
import pytest
import yaml
from ansible.module_utils.apt_policy import parse, policy
from ansible.module_utils.testing import patch_module_args
from conftest import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "apt_policy"
APT_CACHE = shutil.which("apt-cache")
ANSIBLE_PLAYBOOK = REPO_ROOT / ".venv" / "bin" / "ansible-playbook"
needs_apt = pytest.mark.skipif(APT_CACHE is None, reason="apt-cache is not installed here")


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


# ---------------------------------------------------------------------------
# the parser, on captured output
# ---------------------------------------------------------------------------


def test_an_installed_package_with_a_newer_candidate():
    bash = parse(fixture("bookworm-main.txt"))["bash"]
    assert bash["installed"] == "5.2.15-2+b8"
    assert bash["candidate"] == "5.2.15-2+b13"
    assert bash["pin"] is None
    assert bash["versions"] == [
        {
            "version": "5.2.15-2+b13",
            "priority": 500,
            "installed": False,
            "sources": [
                {
                    "priority": 500,
                    "source": "http://deb.debian.org/debian bookworm/main amd64 Packages",
                }
            ],
        },
        {
            "version": "5.2.15-2+b8",
            "priority": 100,
            "installed": True,
            "sources": [{"priority": 100, "source": "/var/lib/dpkg/status"}],
        },
    ]


def test_a_known_package_with_no_candidate_and_no_version():
    # nvidia-driver with only main enabled: apt knows the name, no source offers it.
    driver = parse(fixture("bookworm-main.txt"))["nvidia-driver"]
    assert driver == {"installed": None, "candidate": None, "pin": None, "versions": []}


def test_one_version_from_two_sources_and_a_package_not_installed():
    blocks = parse(fixture("bookworm-main.txt"))
    libc = blocks["libc6"]
    assert libc["installed"] == libc["candidate"] == "2.36-9+deb12u14"
    assert [v["version"] for v in libc["versions"]] == ["2.36-9+deb12u14", "2.36-9+deb12u7"]
    assert [s["priority"] for s in libc["versions"][0]["sources"]] == [500, 100]
    assert libc["versions"][0]["installed"] and not libc["versions"][1]["installed"]
    hello = blocks["hello"]
    assert hello["installed"] is None and hello["candidate"] == "2.10-3"


def test_an_unknown_package_prints_nothing_so_it_has_no_block():
    blocks = parse(fixture("bookworm-main.txt"))
    assert list(blocks) == ["bash", "nvidia-driver", "hello", "libc6"]
    assert "nonexistent-pkg-xyz" not in blocks


def test_debians_driver_packages_of_branch_535():
    entries = policy(
        ["nvidia-driver", "nvidia-kernel-dkms", "nvidia-open-kernel-dkms", "nonexistent-pkg-xyz"],
        fixture("bookworm-nonfree.txt"),
    )
    assert [e["candidate"] for e in entries] == [
        "535.309.01-0+deb12u1",
        "535.309.01-0+deb12u1",
        "535.261.03-1",
        None,
    ]
    assert [e["known"] for e in entries] == [True, True, True, False]
    driver = entries[0]
    assert driver["versions"][0]["sources"][0]["source"] == (
        "http://deb.debian.org/debian-security bookworm-security/non-free amd64 Packages"
    )
    assert entries[3] == {
        "name": "nonexistent-pkg-xyz",
        "known": False,
        "installed": None,
        "candidate": None,
        "pin": None,
        "versions": [],
    }


def test_pins_show_in_priorities_and_a_negative_pin_leaves_no_candidate():
    blocks = parse(fixture("bookworm-pinned.txt"))
    bash = blocks["bash"]
    assert bash["candidate"] == bash["installed"] == "5.2.15-2+b8"  # held below the newest
    assert [(v["version"], v["priority"]) for v in bash["versions"]] == [
        ("5.2.15-2+b13", 500),
        ("5.2.15-2+b8", 1001),
    ]
    hello = blocks["hello"]
    assert hello["candidate"] is None
    assert [(v["version"], v["priority"]) for v in hello["versions"]] == [("2.10-3", -1)]


def test_policy_keeps_the_order_asked_and_repeats():
    entries = policy(["hello", "bash", "hello"], fixture("bookworm-main.txt"))
    assert [e["name"] for e in entries] == ["hello", "bash", "hello"]
    assert [e["candidate"] for e in entries] == ["2.10-3", "5.2.15-2+b13", "2.10-3"]


def test_nothing_parsed_from_empty_output():
    assert parse("") == {}
    assert policy(["bash"], "")[0]["known"] is False


# ---------------------------------------------------------------------------
# library/apt_policy_facts.py, against this machine's apt
# ---------------------------------------------------------------------------


def run_module(args, capsys, check_mode=False):
    if check_mode:
        args = {**args, "_ansible_check_mode": True}
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        apt_policy_facts.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def _dpkg_version(package: str) -> str:
    return subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, check=True
    ).stdout


@needs_apt
@pytest.mark.parametrize("check_mode", [False, True])
def test_module_reads_this_machines_apt(capsys, check_mode):
    failed, result = run_module(
        {"packages": ["bash", "nonexistent-pkg-xyz"]}, capsys, check_mode=check_mode
    )
    assert not failed, result
    assert result["changed"] is False
    facts = result["ansible_facts"]["apt_policy"]
    bash, unknown = facts["packages"]
    assert bash["name"] == "bash" and bash["known"] is True
    assert bash["installed"] == _dpkg_version("bash")
    assert bash["candidate"]  # bash is Essential: some source or dpkg's status offers it
    assert any(v["installed"] and v["version"] == bash["installed"] for v in bash["versions"])
    assert unknown == {
        "name": "nonexistent-pkg-xyz",
        "known": False,
        "installed": None,
        "candidate": None,
        "pin": None,
        "versions": [],
    }
    assert facts["command"][1:] == ["policy", "--", "bash", "nonexistent-pkg-xyz"]


@needs_apt
def test_a_name_like_an_option_is_a_package_name(capsys):
    # After "--" apt-cache takes it as a package (an unknown one), not as its own option.
    failed, result = run_module({"packages": ["--version", "bash"]}, capsys)
    assert not failed, result
    entries = result["ansible_facts"]["apt_policy"]["packages"]
    assert [(e["name"], e["known"]) for e in entries] == [("--version", False), ("bash", True)]


@needs_apt
def test_module_fails_when_apt_cache_fails(capsys, tmp_path, monkeypatch):
    # A configuration file apt cannot parse makes the real apt-cache exit 100.
    broken = tmp_path / "apt.conf"
    broken.write_text('Dir::Cache "unterminated;\n')
    monkeypatch.setenv("APT_CONFIG", str(broken))
    failed, result = run_module({"packages": ["bash"]}, capsys)
    assert failed
    assert result["rc"] == 100
    assert "policy -- bash failed (exit 100): E: " in result["msg"]
    assert "apt.conf" in result["msg"]


def test_module_with_no_packages_runs_nothing(capsys):
    failed, result = run_module({"packages": []}, capsys)
    assert not failed
    assert result["ansible_facts"]["apt_policy"] == {"packages": [], "command": []}


# ---------------------------------------------------------------------------
# the role's tasks (roles/nvidia_driver/tasks/install-distro.yml), in a real run
# ---------------------------------------------------------------------------


def _distro_tasks():
    tasks = yaml.safe_load((REPO_ROOT / "roles/nvidia_driver/tasks/install-distro.yml").read_text())
    wanted = (
        "Ask apt which version of the distribution's driver it would install",
        "Refuse a driver package the enabled archive components don't offer",
    )
    found = [t for t in tasks if t.get("name") in wanted]
    assert [t["name"] for t in found] == list(wanted)
    return found


def _run_distro_tasks(tmp_path, packages, branch, check=False):
    play = [
        {
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "vars": {
                "nvidia_driver__packages": packages,
                "nvidia_driver_branch": branch,
                "nvidia_driver__plan": {"packages": {"driver": {"components": ["non-free"]}}},
                "nvidia_driver__components": {"changed": False},
            },
            "tasks": _distro_tasks(),
        }
    ]
    path = tmp_path / "distro.yml"
    path.write_text(yaml.safe_dump(play))
    cmd = [
        str(ANSIBLE_PLAYBOOK),
        "-i",
        "localhost,",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        str(path),
        *(["--check"] if check else []),
    ]
    return subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)


@needs_apt
@pytest.mark.slow
def test_the_roles_check_passes_on_a_candidate_of_the_branch(tmp_path):
    major = _dpkg_version("bash").split(".")[0]
    run = _run_distro_tasks(tmp_path, ["nonexistent-pkg-xyz", "bash"], major, check=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "failed=0" in run.stdout


@needs_apt
@pytest.mark.slow
def test_the_roles_check_refuses_another_branch_with_apts_candidates(tmp_path):
    run = _run_distro_tasks(tmp_path, ["bash", "nonexistent-pkg-xyz"], "535")
    assert run.returncode != 0
    out = " ".join(run.stdout.split())
    # Only the packages apt knows have a Candidate line, as in apt-cache's own output.
    shown = subprocess.run(
        [APT_CACHE, "policy", "bash"],
        capture_output=True,
        text=True,
        check=True,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
    ).stdout
    candidate = next(ln.split(":", 1)[1].strip() for ln in shown.splitlines() if "Candidate:" in ln)
    assert (
        f"bash, nonexistent-pkg-xyz: apt has no candidate of branch 535 (Candidate: {candidate}). "
        "Enable the non-free component(s) in the apt sources, or set nvidia_driver_branch to the "
        "branch the distribution ships, or use nvidia_driver_install_method: cuda_repo."
    ) in out, out


@needs_apt
@pytest.mark.slow
def test_the_roles_check_wants_the_whole_branch_not_a_prefix(tmp_path):
    # libgcc-s1 is 12.x on Debian 12: branch "1" is not branch 12, so it is refused.
    version = _dpkg_version("libgcc-s1")
    if int(version.split(".")[0].split(":")[-1]) < 10:
        pytest.skip(f"libgcc-s1 is {version} here: no version with a two-digit major")
    run = _run_distro_tasks(tmp_path, ["libgcc-s1"], version[0])
    assert run.returncode != 0
    assert f"apt has no candidate of branch {version[0]} (Candidate: " in " ".join(
        run.stdout.split()
    )
    run = _run_distro_tasks(tmp_path, ["libgcc-s1"], version.split(".")[0])
    assert run.returncode == 0, run.stdout
