"""Roles compose: none ends the host, the play or the batch; one with nothing to do ends
itself (meta: end_role), right after a message that says why.

A role that ended the host (meta: end_host) in a user's own play `roles: [nouveau, jupyter]`
kept JupyterLab from running, and the run reported success. The playbooks are held to the
same rule: a stage that must skip a host gives its later tasks a condition of their own.
tests/reliability/test_roles_compose.py runs every role in one play (every_role.yml);
this file checks the YAML, and that play's order against site.yml's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest
import yaml
from conftest import REPO_ROOT

ENDS_MORE_THAN_A_ROLE = ("end_host", "end_play", "end_batch")
META = ("ansible.builtin.meta", "ansible.legacy.meta", "meta")
DEBUG = ("ansible.builtin.debug", "ansible.legacy.debug", "debug")
SET_FACT = ("ansible.builtin.set_fact", "ansible.legacy.set_fact", "set_fact")
ROLES = sorted(p.name for p in (REPO_ROOT / "roles").iterdir() if (p / "tasks").is_dir())
EVERY_ROLE_PLAY = REPO_ROOT / "tests" / "reliability" / "every_role.yml"


def yaml_files() -> List[Path]:
    """Every role's task and handler files, and every playbook (cloud ones included)."""
    found = [
        p
        for role in ROLES
        for sub in ("tasks", "handlers")
        for p in sorted((REPO_ROOT / "roles" / role / sub).glob("*.yml"))
    ]
    found += sorted((REPO_ROOT / "playbooks").rglob("*.yml"))
    return [*found, EVERY_ROLE_PLAY]


def task_lists(node) -> Iterator[List[Dict]]:
    """Each list of tasks in a task file or playbook: plays' sections and blocks' parts."""
    if isinstance(node, list):
        if all(isinstance(t, dict) for t in node):
            yield node
        for item in node:
            yield from task_lists(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
                yield from task_lists(value)


def metas(node) -> Iterator[Tuple[int, List[Dict], str]]:
    """(index, its task list, the meta action) for every meta task."""
    for tasks in task_lists(node):
        for i, task in enumerate(tasks):
            action = next((task[k] for k in META if k in task), None)
            if isinstance(action, str):
                yield i, tasks, action.strip()


def rel(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT))


@pytest.mark.parametrize("path", yaml_files(), ids=rel)
def test_nothing_ends_the_host_the_play_or_the_batch(path):
    data = yaml.safe_load(path.read_text())
    found = [action for _, _, action in metas(data) if action in ENDS_MORE_THAN_A_ROLE]
    assert not found, (
        f"{rel(path)}: meta {', '.join(found)} ends more than the role, so the roles after it in "
        "a user's play never run: say why and use meta: end_role (in a playbook, give the later "
        "tasks a condition of their own)"
    )
    # Nor a templated or free-form spelling that the parse above would not see as one.
    text = path.read_text()
    assert not any(f"meta: {a}" in text or f"meta: '{a}'" in text for a in ENDS_MORE_THAN_A_ROLE)


def reason(tasks: List[Dict], i: int) -> str:
    """The message of the debug task before tasks[i], under the same when, with only
    set_fact tasks (recording the outcome) between them; "" when there is none."""
    for before in reversed(tasks[:i]):
        if before.get("when") != tasks[i].get("when"):
            return ""
        said = next((before[k] for k in DEBUG if k in before), None)
        if isinstance(said, dict):
            return " ".join(str(said.get("msg") or "").split())
        if not any(k in before for k in SET_FACT):
            return ""
    return ""


def end_role_without_reason(path: Path) -> List[str]:
    """The end_role tasks of a file that no debug message before them explains."""
    return [
        str(tasks[i].get("name"))
        for i, tasks, action in metas(yaml.safe_load(path.read_text()))
        if action == "end_role" and not reason(tasks, i)
    ]


def role_files() -> List[Tuple[str, Path]]:
    return [
        (role, p)
        for role in ROLES
        for p in sorted((REPO_ROOT / "roles" / role / "tasks").glob("*.yml"))
    ]


@pytest.mark.parametrize(
    "role,path", role_files(), ids=lambda v: rel(v) if isinstance(v, Path) else v
)
def test_a_role_that_ends_itself_says_why_first(role, path):
    assert not end_role_without_reason(path), (
        f"{rel(path)}: put a debug task that says why right before each end_role, under the "
        "same condition"
    )
    for i, tasks, action in metas(yaml.safe_load(path.read_text())):
        if action == "end_role":
            # The user reads which role skipped: the message starts with its name.
            msg = reason(tasks, i)
            assert msg.startswith(role), f"{rel(path)}: {msg[:80]!r} does not name {role} first"


def test_the_roles_that_skip_end_themselves():
    """The roles with a case of nothing to do (tests/reliability/test_roles_compose.py)."""
    ending = {
        role
        for role, path in role_files()
        if any(a == "end_role" for _, _, a in metas(yaml.safe_load(path.read_text())))
    }
    assert {
        "site_lock",
        "nouveau",
        "nvidia_driver",
        "cuda",
        "jupyter",
        "dcgm_exporter",
        "gpu_check",
    } <= ending


def test_the_checks_can_fail(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Say why",
                    "ansible.builtin.debug": {"msg": "other: skipped"},
                    "when": "x",
                },
                {"name": "End", "ansible.builtin.meta": "end_role"},
                {"name": "Say why", "ansible.builtin.debug": {"msg": "this: skipped"}},
                {"name": "Record", "ansible.builtin.set_fact": {"this_outcome": "skipped"}},
                {"name": "End here", "ansible.builtin.meta": "end_role"},
                {"name": "Read", "ansible.builtin.stat": {"path": "/"}},
                {"name": "End too", "ansible.builtin.meta": "end_role"},
                {
                    "name": "A block",
                    "block": [{"name": "End it all", "ansible.builtin.meta": "end_host"}],
                },
            ]
        )
    )
    found = [a for _, _, a in metas(yaml.safe_load(bad.read_text()))]
    assert found == ["end_role", "end_role", "end_role", "end_host"]
    # The first message's when differs; a stat between says nothing.
    assert end_role_without_reason(bad) == ["End", "End too"]
    play = [{"name": "p", "hosts": "all", "pre_tasks": [{"name": "e", "meta": "end_play"}]}]
    assert [a for _, _, a in metas(play)] == ["end_play"]


def stage_roles() -> List[str]:
    """The roles site.yml's stages run, in order: the stage playbooks' `roles:`, and
    the roles site.yml's own plays include (site_lock)."""
    staged: List[str] = []
    for entry in yaml.safe_load((REPO_ROOT / "playbooks" / "site.yml").read_text()):
        target = entry.get("ansible.builtin.import_playbook")
        plays = (
            [entry]
            if target is None
            else yaml.safe_load((REPO_ROOT / "playbooks" / target).read_text())
        )
        for play in plays:
            names = [r["role"] for r in play.get("roles") or []]
            if target is None:
                names += [
                    t["ansible.builtin.include_role"]["name"]
                    for t in play.get("tasks") or []
                    if "ansible.builtin.include_role" in t
                ]
            staged += [n for n in names if n not in staged]
    return staged


def test_the_one_play_holds_every_role_in_site_yml_order():
    (play,) = yaml.safe_load(EVERY_ROLE_PLAY.read_text())
    roles = [entry["role"] for entry in play["roles"]]
    assert sorted(roles) == ROLES, "every_role.yml must hold every role, once"
    staged = stage_roles()
    assert staged[:3] == ["gpu_preflight", "site_lock", "nouveau"], staged
    assert [r for r in roles if r in staged] == staged
    # site.yml carries out the reboot requests at the end of the driver stage.
    assert roles.index("reboot_coordinator") == roles.index("nvidia_driver") + 1


@pytest.mark.parametrize("role", ["jupyter", "dcgm_exporter"])
def test_a_role_skips_a_host_without_systemd_whatever_steps_run(role):
    """The skip runs under any tag selection: with --skip-tags verify (the no-op re-run) a
    step tag on it used to skip the skip, and the role's install then ran on a GPU VM whose
    service manager is not systemd (found on the H100, session 32)."""
    tasks = yaml.safe_load((REPO_ROOT / "roles" / role / "tasks" / "preflight.yml").read_text())
    skip = next(
        t
        for t in tasks
        if (t.get("ansible.builtin.include_tasks") or {}).get("file") == "skip-without-systemd.yml"
    )
    assert skip["tags"] == ["always"]
    assert skip["ansible.builtin.include_tasks"]["apply"]["tags"] == ["always"]
