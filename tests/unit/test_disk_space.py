"""module_utils/disk_space.py and library/disk_space_facts.py: free space from os.statvfs.

Every number is checked against the real filesystem: this machine's df for the same path
(the command the gpu_preflight role ran before), and tmpfs mounts of a known size made in a
private mount namespace (``unshare --mount``), where the free space is exact. The role's own
sizing tasks then run in a real ansible-playbook on such a tmpfs.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import disk_space_facts
import pytest
import yaml
from ansible.module_utils.disk_space import (
    GIB,
    free_gib,
    measure,
    mount_source,
    nearest_existing,
)
from ansible.module_utils.testing import patch_module_args
from conftest import REPO_ROOT

UNSHARE = shutil.which("unshare")
ANSIBLE_PLAYBOOK = REPO_ROOT / ".venv" / "bin" / "ansible-playbook"
MiB = 1 << 20


def df(path, field: str, block: str) -> str:
    out = subprocess.run(
        ["df", f"--output={field}", f"-B{block}", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.splitlines()[1].strip()


def df_gib(path) -> int:
    """What the role parsed before: `df --output=avail -BG` ("64G" -> 64)."""
    return int(df(path, "avail", "G").rstrip("G"))


# ---------------------------------------------------------------------------
# rounding and the nearest existing path
# ---------------------------------------------------------------------------


def test_free_gib_rounds_up_as_df_does():
    assert [free_gib(n) for n in (0, 1, GIB - 1, GIB, GIB + 1, 40 * GIB, 40 * GIB - 1)] == [
        0,
        1,
        1,
        1,
        2,
        40,
        40,
    ]


def test_an_existing_path_is_measured_itself(tmp_path):
    got = measure(str(tmp_path))
    assert got["path"] == got["measured"] == str(tmp_path)
    assert got["exists"] is True and got["error"] == ""
    st = os.statvfs(tmp_path)
    # Free space moves while other programs write: allow what a busy /tmp does in a moment.
    assert abs(got["free_bytes"] - st.f_bavail * st.f_frsize) < 256 * MiB
    assert got["size_bytes"] == st.f_blocks * st.f_frsize


def test_the_numbers_are_dfs(tmp_path):
    for _ in range(3):  # a GiB boundary crossed between the two reads: read again
        got, by_df = measure(str(tmp_path)), df_gib(tmp_path)
        if got["free_gib"] == by_df:
            break
    assert got["free_gib"] == by_df
    assert abs(got["free_bytes"] - int(df(tmp_path, "avail", "1"))) < 256 * MiB
    assert got["mount"] == df(tmp_path, "target", "1")
    assert got["device"] == df(tmp_path, "source", "1")
    assert got["fstype"] == df(tmp_path, "fstype", "1")


def test_a_missing_path_is_measured_at_its_nearest_existing_parent(tmp_path):
    (tmp_path / "opt").mkdir()
    asked = tmp_path / "opt" / "conda" / "envs"
    got = measure(str(asked))
    assert got["path"] == str(asked)
    assert got["measured"] == str(tmp_path / "opt")
    assert got["exists"] is False
    assert got["free_gib"] == measure(str(tmp_path))["free_gib"]
    assert got["mount"] == measure(str(tmp_path))["mount"]


def test_a_path_below_a_file_is_measured_at_the_file(tmp_path):
    (tmp_path / "opt").write_text("not a directory\n")
    got = measure(str(tmp_path / "opt" / "conda"))
    assert got["measured"] == str(tmp_path / "opt")
    assert got["exists"] is False and got["error"] == ""


def test_a_trailing_slash_still_counts_as_the_path_itself(tmp_path):
    got = measure(str(tmp_path) + "/")
    assert got["exists"] is True and got["measured"] == str(tmp_path)


def test_a_path_that_cannot_be_read_has_no_numbers():
    # Root reads every directory, so the refusal comes from a statvfs stand-in here.
    def refuse(path):
        raise PermissionError(13, "Permission denied", path)

    got = measure("/srv/locked/opt", statvfs=refuse)
    assert got["free_bytes"] is None and got["free_gib"] is None and got["measured"] is None
    assert got["error"] == "Permission denied (/srv/locked/opt)"
    with pytest.raises(PermissionError):
        nearest_existing("/srv/locked/opt", refuse)


def test_mount_source_reads_mountinfo_escapes_and_the_last_mount_wins():
    text = (
        "24 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        "30 24 0:27 / /mnt/my\\040disk rw shared:9 - tmpfs my\\040tmpfs rw,size=1024k\n"
        "31 24 0:28 / /opt rw shared:10 - xfs /dev/nvme0n1p1 rw\n"
        "32 31 0:29 / /opt rw shared:11 - tmpfs tmpfs rw,size=2048k\n"
    )
    assert mount_source("/", text) == ("/dev/sda1", "ext4")
    assert mount_source("/mnt/my disk", text) == ("my tmpfs", "tmpfs")
    assert mount_source("/opt", text) == ("tmpfs", "tmpfs")
    assert mount_source("/srv", text) == ("", "")


def test_mount_source_of_this_machines_root_is_dfs():
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        device, fstype = mount_source("/", handle.read())
    assert device == df("/", "source", "1")
    assert fstype == df("/", "fstype", "1")


# ---------------------------------------------------------------------------
# tmpfs mounts of a known size, in a private mount namespace
# ---------------------------------------------------------------------------


def in_namespace(tmp_path: Path, mounts, command: str) -> subprocess.CompletedProcess:
    """Run ``command`` with tmpfs mounts (dir name -> size option) in a new mount namespace
    (as root here; as a user in a user namespace elsewhere). Skips where that is refused."""
    if UNSHARE is None:
        pytest.skip("unshare is not installed")
    script = "set -e\n"
    for name, size in mounts.items():
        target = tmp_path / name
        target.mkdir(parents=True, exist_ok=True)
        script += f"mount -t tmpfs -o size={size} kindling-test {shlex.quote(str(target))}\n"
    script += command + "\n"
    flags = ["--mount"] if os.geteuid() == 0 else ["--mount", "--map-root-user"]
    probe = subprocess.run(
        [UNSHARE, *flags, "sh", "-c", f"mount -t tmpfs -o size=1m t {shlex.quote(str(tmp_path))}"],
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace here: {probe.stderr.decode().strip()}")
    return subprocess.run(
        [UNSHARE, *flags, "sh", "-c", script],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=REPO_ROOT,
    )


MEASURE = f"{shlex.quote(sys.executable)} -c " + shlex.quote(
    "import json, sys; sys.path.insert(0, 'module_utils'); import disk_space; "
    "print(json.dumps([disk_space.measure(p) for p in sys.argv[1:]]))"
)


def test_tmpfs_of_a_known_size(tmp_path):
    paths = [
        tmp_path / "small",  # 100 MiB: 0.1 GiB, which df -BG shows as 1
        tmp_path / "exact",  # 2 GiB: exactly 2
        tmp_path / "odd",  # 2049 MiB: just over 2 GiB, so 3
        tmp_path / "small" / "conda" / "envs",  # not there yet: measured at its tmpfs
    ]
    run = in_namespace(
        tmp_path,
        {"small": "100m", "exact": "2g", "odd": "2049m"},
        MEASURE
        + " "
        + " ".join(shlex.quote(str(p)) for p in paths)
        + f"; df --output=avail -BG {shlex.quote(str(tmp_path / 'odd'))}",
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    small, exact, odd, missing = json.loads(lines[0])
    assert (small["free_bytes"], small["size_bytes"], small["free_gib"]) == (
        100 * MiB,
        100 * MiB,
        1,
    )
    assert (exact["free_bytes"], exact["free_gib"]) == (2 * GIB, 2)
    assert (odd["free_bytes"], odd["free_gib"]) == (2049 * MiB, 3)
    assert lines[-1].strip() == "3G"  # and df agrees
    for got, name in ((small, "small"), (exact, "exact"), (odd, "odd")):
        assert got["mount"] == str(tmp_path / name)
        assert (got["device"], got["fstype"]) == ("kindling-test", "tmpfs")
    assert missing["measured"] == str(tmp_path / "small") and missing["exists"] is False
    assert missing["free_gib"] == 1 and missing["mount"] == str(tmp_path / "small")


# ---------------------------------------------------------------------------
# library/disk_space_facts.py
# ---------------------------------------------------------------------------


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        disk_space_facts.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("check_mode", [False, True])
def test_module_lists_every_path_in_order(tmp_path, capsys, check_mode):
    asked = [str(tmp_path / "opt" / "conda"), str(tmp_path)]
    args = {"paths": asked, **({"_ansible_check_mode": True} if check_mode else {})}
    failed, result = run_module(args, capsys)
    assert not failed and result["changed"] is False
    found = result["ansible_facts"]["disk_space"]["paths"]
    assert [p["path"] for p in found] == asked
    assert [p["measured"] for p in found] == [str(tmp_path), str(tmp_path)]
    assert [p["exists"] for p in found] == [False, True]
    assert all(isinstance(p["free_gib"], int) for p in found)
    assert not (tmp_path / "opt").exists()  # nothing created
    assert "warnings" not in result


def test_module_warns_about_a_path_it_cannot_measure(capsys, monkeypatch):
    # Root reads every directory: the refusal comes from a statvfs stand-in.
    def refuse_srv(path):
        if str(path).startswith("/srv/locked"):
            raise PermissionError(13, "Permission denied", path)
        return os.statvfs(path)

    monkeypatch.setattr(disk_space_facts, "measure", lambda p: measure(p, statvfs=refuse_srv))
    failed, result = run_module({"paths": ["/srv/locked/opt", "/"]}, capsys)
    assert not failed
    locked, root = result["ansible_facts"]["disk_space"]["paths"]
    assert locked["free_gib"] is None and root["free_gib"] is not None
    warnings = json.dumps(result["warnings"])  # 2.19 returns structured warnings
    assert len(result["warnings"]) == 1
    assert (
        "Free space under /srv/locked/opt is unknown: Permission denied (/srv/locked/opt)"
        in warnings
    )


# ---------------------------------------------------------------------------
# the role's sizing tasks (roles/gpu_preflight/tasks/sizing.yml), in a real run
# ---------------------------------------------------------------------------


def _sizing_play(tmp_path: Path, paths, min_gb: int) -> Path:
    tasks = yaml.safe_load((REPO_ROOT / "roles/gpu_preflight/tasks/sizing.yml").read_text())
    play = [
        {
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "vars": {
                "gpu_preflight_disk_paths": [str(p) for p in paths],
                "gpu_preflight_min_free_disk_gb": min_gb,
                "gpu_preflight_ram_per_gpu_memory": 2.0,
                "gpu_preflight_min_nic_mbps": 10000,
            },
            "tasks": [
                # Only the disk findings: plenty of RAM, an NVMe device, no GPU, one host.
                # Facts live under ansible_facts only (ansible.cfg inject_facts_as_vars), so
                # a module of the test's sets them (_FACTS_MODULE).
                {
                    "name": "Facts of a host with plenty of RAM and an NVMe device",
                    "kindling_test_facts": {
                        "facts": {
                            "memtotal_mb": 1 << 20,
                            "devices": {"nvme0n1": {}},
                            "interfaces": [],
                        }
                    },
                },
                {"name": "No GPU", "nvidia_smi_facts": {"read_kernel_log": False}},
                *tasks,
                {
                    "name": "Keep the warnings",
                    "ansible.builtin.copy": {
                        "content": "{{ gpu_preflight__warnings | to_json }}",
                        "dest": str(tmp_path / "warnings.json"),
                        "mode": "0644",
                    },
                    "check_mode": False,
                },
            ],
        }
    ]
    path = tmp_path / "sizing.yml"
    path.write_text(yaml.safe_dump(play))
    library = tmp_path / "library"
    library.mkdir(exist_ok=True)
    (library / "kindling_test_facts.py").write_text(_FACTS_MODULE)
    return path


# A module that returns its argument as facts (the play's stand-in for gathered facts).
_FACTS_MODULE = """#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule

module = AnsibleModule(argument_spec={"facts": {"type": "dict"}}, supports_check_mode=True)
module.exit_json(changed=False, ansible_facts=module.params["facts"])
"""


def _playbook_argv(path: Path, *extra: str) -> list:
    return [
        str(ANSIBLE_PLAYBOOK),
        "--module-path",
        str(path.parent / "library"),
        "-i",
        "localhost,",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        str(path),
        *extra,
    ]


@pytest.mark.slow
def test_the_roles_sizing_warnings_on_small_tmpfs(tmp_path):
    paths = [tmp_path / "usr-local", tmp_path / "opt" / "conda", tmp_path / "big"]
    play = _sizing_play(tmp_path, paths, 40)
    run = in_namespace(
        tmp_path,
        {"usr-local": "100m", "opt": "39g", "big": "40g"},
        shlex.join(_playbook_argv(play, "--check")),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads((tmp_path / "warnings.json").read_text()) == [
        f"{paths[0]} has only 1 GB free; CUDA and conda need about 40 GB.",
        f"{paths[1]} has only 39 GB free; CUDA and conda need about 40 GB.",
    ]


@pytest.mark.slow
def test_the_roles_sizing_warnings_match_df(tmp_path):
    paths = [tmp_path, tmp_path / "opt" / "conda"]
    play = _sizing_play(tmp_path, paths, 100000)
    before = df_gib(tmp_path)
    run = subprocess.run(
        _playbook_argv(play),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    after = df_gib(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    warnings = json.loads((tmp_path / "warnings.json").read_text())
    assert len(warnings) == 2
    for path, line in zip(paths, warnings):
        assert line in {
            f"{path} has only {n} GB free; CUDA and conda need about 100000 GB."
            for n in (before, after)
        }
