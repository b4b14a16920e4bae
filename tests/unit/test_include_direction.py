"""Includes run one way (issue 33): a stage may include the entry points of gpu_preflight
and reboot_coordinator; no role or playbook includes a task file of a role that runs after
it in site.yml, and what another role's files are included is one of its entry points
(meta/argument_specs.yml).

Every include_role/import_role in roles/*/tasks, roles/*/handlers and playbooks/*.yml is
read, a templated role name resolved through its loop, and its direction checked against
site.yml's stage order (each imported stage playbook's roles, in order).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import yaml
from conftest import REPO_ROOT

INCLUDES = (
    "ansible.builtin.include_role",
    "ansible.builtin.import_role",
    "include_role",
    "import_role",
)
# Entry points every stage may include (docs/DEVELOPMENT.md, "These rules").
SHARED = ("gpu_preflight", "reboot_coordinator")
# Stage 1's input check of every role (playbooks/preflight.yml): each role's tasks/inputs.yml
# is read-only (role_inputs), and stage 1 checks every role's inputs before any change.
STAGE1_INPUTS = ("playbooks/preflight.yml", "inputs.yml")
# The known exceptions; the list may only shrink (issue 33 emptied it: gpu_preflight no
# longer runs the GPU stages' `stack` entry points, which are gone).
KNOWN_BACKWARD: set = set()


def load(path: Path):
    return yaml.safe_load(path.read_text()) or []


def stage_order() -> Dict[str, int]:
    """Role -> the number of the first site.yml stage (play) that runs it."""
    order: Dict[str, int] = {}
    for number, play in enumerate(load(REPO_ROOT / "playbooks" / "site.yml")):
        stage = play.get("ansible.builtin.import_playbook")
        plays = load(REPO_ROOT / "playbooks" / stage) if stage else [play]
        for p in plays:
            roles = [r if isinstance(r, str) else r.get("role") for r in p.get("roles") or []]
            # A role runs in the stage that runs its main entry point (not, say, the stage 1
            # input check of every role).
            roles += [
                name
                for _, name, entry, _ in includes_in(p.get("tasks") or [], p.get("vars") or {})
                if entry == "main"
            ]
            for role in roles:
                if role and "{{" not in role:
                    order.setdefault(role, number)
    return order


def includes_in(node, play_vars: Dict) -> Iterator[Tuple[Dict, str, str, List]]:
    """(task, role name, tasks_from, loop) of each include_role/import_role, a templated name
    resolved through the task's loop (a list or a play variable)."""
    if isinstance(node, dict):
        for key in INCLUDES:
            if key in node and isinstance(node[key], dict):
                args = node[key]
                name = args.get("name", "")
                entry = str(args.get("tasks_from", "main"))
                m = re.fullmatch(r"\{\{\s*(\w+)\s*\}\}", name)
                if m:
                    loop = node.get("loop")
                    if isinstance(loop, str):
                        var = re.fullmatch(r"\{\{\s*(\w+)\s*\}\}", loop)
                        loop = play_vars.get(var.group(1)) if var else None
                    assert isinstance(loop, list), f"can't resolve the role of {node.get('name')}"
                    for role in loop:
                        yield node, role, entry, loop
                else:
                    yield node, name, entry, []
        for value in node.values():
            yield from includes_in(value, play_vars)
    elif isinstance(node, list):
        for value in node:
            yield from includes_in(value, play_vars)


def every_include() -> Iterator[Tuple[str, str, str, str]]:
    """(file, the including role or stage playbook, role included, entry)."""
    for path in sorted(REPO_ROOT.glob("roles/*/tasks/*.yml")) + sorted(
        REPO_ROOT.glob("roles/*/handlers/*.yml")
    ):
        where = str(path.relative_to(REPO_ROOT))
        for _, role, entry, _ in includes_in(load(path), {}):
            yield where, path.parent.parent.name, role, entry
    for path in sorted((REPO_ROOT / "playbooks").glob("*.yml")):
        where = str(path.relative_to(REPO_ROOT))
        for play in load(path):
            for _, role, entry, _ in includes_in(play, play.get("vars") or {}):
                yield where, f"playbook:{path.stem}", role, entry


def entry_points(role: str) -> set:
    specs = yaml.safe_load((REPO_ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
    return set(specs["argument_specs"])


def stem(entry: str) -> str:
    return entry[:-4] if entry.endswith(".yml") else entry


def violations() -> List[Tuple[str, str, str]]:
    order = stage_order()
    found = []
    for where, by, role, entry in every_include():
        if by == role:
            continue
        if (where, entry) == STAGE1_INPUTS:
            continue
        if stem(entry) not in entry_points(role):
            found.append((where, role, stem(entry)))
            continue
        if role in SHARED:
            continue
        if by.startswith("playbook:"):
            stage = by.split(":", 1)[1]
            # site.yml takes and releases the lock around the stages (site_lock's entry points).
            mine = -1 if stage == "site" else order.get(stage, order.get(role))
        else:
            mine = order[by]
        if mine != -1 and order[role] > mine:
            found.append((where, role, stem(entry)))
    return found


def test_site_yml_gives_every_role_a_stage():
    order = stage_order()
    roles = {p.name for p in (REPO_ROOT / "roles").iterdir() if (p / "tasks").is_dir()}
    assert roles <= set(order), sorted(roles - set(order))
    assert order["gpu_preflight"] < order["nouveau"] < order["nvidia_driver"] < order["cuda"]
    assert order["cuda"] < order["conda_pytorch"] < order["jupyter"] < order["dcgm_exporter"]
    assert order["dcgm_exporter"] < order["gpu_check"]


def test_includes_run_one_way():
    found = set(violations())
    new = sorted(found - KNOWN_BACKWARD)
    assert not new, (
        "a role includes a task file of a role that runs after it, or a file that is not one "
        f"of that role's entry points: {new}"
    )
    # The known ones shrink only: one fixed is taken off the list.
    assert found >= KNOWN_BACKWARD, sorted(KNOWN_BACKWARD - found)


def test_the_check_sees_a_backward_include(monkeypatch):
    import test_include_direction as me

    real = me.every_include

    def with_one():
        yield from real()
        yield "roles/nouveau/tasks/x.yml", "nouveau", "cuda", "stack"
        yield "roles/cuda/tasks/x.yml", "cuda", "nvidia_driver", "install.yml"

    monkeypatch.setattr(me, "every_include", with_one)
    found = set(me.violations())
    assert ("roles/nouveau/tasks/x.yml", "cuda", "stack") in found
    # Not an entry point: refused whatever the direction.
    assert ("roles/cuda/tasks/x.yml", "nvidia_driver", "install") in found
