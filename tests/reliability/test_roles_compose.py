"""Every role in one user-style play: each runs, or says why it skips and ends itself.

tests/reliability/every_role.yml is a user's own play with every role in site.yml's order.
It runs once, in check mode (the suite's host is one nothing may change, and check mode
starts no service), on the Debian 12 test host without a GPU (gpu_required: false), with
/etc/modprobe.d moved away for the run: the host a container or a hypervisor-driven GPU VM
is. Then nouveau must say why it skips and end itself, not the host (it once ended the
host: JupyterLab never ran, and the run reported success), and every role after it must
still run its tasks. The variables are the default Molecule scenario's (the fixture
sources), with the GPU stages left to skip themselves as they do for a user.

Ansible's JSON callback gives each task's result per host, so the test reads which role's
tasks ran, in which order, and what each skip said.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Dict, List, Tuple

from cases import ROLES
from conftest import (
    CONTAINER,
    REPO_ROOT,
    one_line,
    playbook_command,
    playbook_env,
    podman,
    scenario_group_vars,
    snapshot,
    snapshot_diff,
    write_inventory,
)

PLAY = REPO_ROOT / "tests" / "reliability" / "every_role.yml"
MOVED = "/etc/modprobe.d.kindling-compose-test"

# The roles that have nothing to do on this host, and the words each one's skip says.
SKIPS = {
    "site_lock": f"site_lock skipped on {CONTAINER}: check mode changes nothing, so the run lock",
    "nouveau": f"nouveau skipped on {CONTAINER}: /etc/modprobe.d does not exist, so kernel modules "
    "are loaded outside this host",
    "nvidia_driver": f"nvidia_driver: skipped. {CONTAINER} has no NVIDIA GPU",
    "cuda": f"cuda: skipped. {CONTAINER} has no NVIDIA GPU",
    "gpu_check": f"gpu_check skipped on {CONTAINER}: no NVIDIA GPU on this host and gpu_required "
    "is false",
}
# The roles that run here, and a task of each from past its preflight that must have run
# (not been skipped): the role got that far, so nothing before it ended the host.
RUNS = {
    "gpu_preflight": "gpu_preflight : Work out the sizing warnings",
    "reboot_coordinator": "reboot_coordinator : Publish the outcome as host facts",
    "conda_pytorch": "conda_pytorch : Probe torch and CUDA in the environment",
    "jupyter": "jupyter : Record the server's URL",
    "dcgm_exporter": "dcgm_exporter : Read the installed Debian packages",
}
# A role's main entry point starts with this task (its argument_specs), so these mark where
# each role of the play begins; the entry points a stage includes (gpu_preflight's plan) do not.
STARTS = "Validating arguments against arg spec 'main'"


def play_vars() -> Dict[str, object]:
    """The default scenario's variables, less what makes the GPU stages run without a GPU."""
    found = scenario_group_vars("default")
    for name in ("nvidia_driver_skip_without_gpu", "cuda_skip_without_gpu", "gpu_check_device"):
        found.pop(name, None)
    return found


def task_results(report: Dict) -> List[Tuple[str, Dict]]:
    """(task name, this host's result) for each task of the run, in order."""
    return [
        (task["task"]["name"], task["hosts"][CONTAINER])
        for play in report["plays"]
        for task in play["tasks"]
        if CONTAINER in task["hosts"]
    ]


def role_of(task: str) -> str:
    return task.split(" : ", 1)[0] if " : " in task else ""


def ran(result: Dict) -> bool:
    return not result.get("skipped") and not result.get("failed")


def test_every_role_in_one_play_runs_or_says_why_it_skips(test_host, tmp_path, monkeypatch):
    monkeypatch.setenv("MOLECULE_EPHEMERAL_DIRECTORY", str(tmp_path))
    inventory = write_inventory(tmp_path / "hosts.yml", CONTAINER, play_vars())
    env = dict(
        playbook_env(),
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
        # Instead of profile_tasks (ansible.cfg), which prints between tasks: stdout stays one
        # JSON document (a stdout callback named here is loaded once, as the stdout callback).
        ANSIBLE_CALLBACKS_ENABLED="ansible.posix.json",
    )
    cmd = playbook_command(test_host, str(PLAY), {}, "--check", inventory=inventory)
    podman("exec", CONTAINER, "mv", "/etc/modprobe.d", MOVED)
    try:
        before = snapshot()
        started = time.monotonic()
        result = subprocess.run(
            cmd, cwd=REPO_ROOT, capture_output=True, text=True, check=False, timeout=900, env=env
        )
        took = time.monotonic() - started
        after = snapshot()
    finally:
        podman("exec", CONTAINER, "mv", MOVED, "/etc/modprobe.d")
    (tmp_path / "stdout.json").write_text(result.stdout)
    tail = result.stdout[-3000:] + result.stderr[-2000:]
    assert result.returncode == 0, tail
    report = json.loads(result.stdout)
    stats = report["stats"][CONTAINER]
    assert stats["failures"] == 0 and stats["unreachable"] == 0, stats

    results = task_results(report)
    expected = [r for r in ROLES if r != "inventory"]
    assert sorted(expected) == sorted(p.name for p in (REPO_ROOT / "roles").iterdir())
    # Every role's main entry point ran, in site.yml's order.
    starts = [i for i, (name, _) in enumerate(results) if STARTS in name]
    roles_in_order = [role_of(results[i][0]) for i in starts]
    assert roles_in_order == expected, f"roles that started, in order: {roles_in_order}"
    # Each role's part of the run: from its start to the next role's (the post_tasks' release
    # of the lock is site_lock's own again).
    ends = [*starts[1:], next(i for i, (n, _) in enumerate(results) if n == "Release the run lock")]
    part = {role: results[a:b] for role, a, b in zip(expected, starts, ends)}

    for role, words in SKIPS.items():
        said = [
            i for i, (_, r) in enumerate(part[role]) if words in one_line(str(r.get("msg", "")))
        ]
        assert said, f"{role} did not say why it skips: {[n for n, _ in part[role]]}"
        # It ended itself after saying so: nothing of it ran after its message but the
        # outcome it records (its end_role meta task reports no result) ...
        went_on = [
            name
            for name, r in part[role][said[0] + 1 :]
            if ran(r) and not name.endswith(" : Record the outcome")
        ]
        assert not went_on, f"{role} went on after its skip: {went_on}"
    for role, task in RUNS.items():
        assert any(name == task and ran(r) for name, r in part[role]), (
            f"{role}: {task!r} did not run: {[(n, ran(r)) for n, r in part[role]]}"
        )
    # ... and it ended only itself: the case this test is for, JupyterLab and the exporter
    # after nouveau's skip, each running its steps past the preflight.
    for role in ("jupyter", "dcgm_exporter"):
        assert starts[expected.index(role)] > starts[expected.index("nouveau")]
        # (a role that skips runs four: its argument check, inputs, include and message)
        assert sum(ran(r) for _, r in part[role]) >= 6, part[role]

    assert before == after, "check mode changed the host:\n" + snapshot_diff(before, after)
    print(f"every_role.yml --check: {len(results)} tasks in {took:.0f} s")
