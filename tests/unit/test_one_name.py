"""One name per plan value, from the inventory to the last task (issue 33).

A value the plan carries (module_utils/host_plan.PLAN_INPUTS: ``cuda_version``,
``nvidia_driver_branch``, ``conda_pytorch_version``, ...) keeps the name a user sets it by.
Another stage reads it as ``gpu_preflight_host_plan.inputs.<name>``, never copied into a variable of
its own. These tests fail when a role default, a role var, a set_fact, a task's vars or a
playbook's vars gives a plan value a second name, and when a retired name (host_plan.RENAMED,
and the internal copies that went with them) is read or set anywhere again.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest
import yaml
from ansible.module_utils import host_plan
from conftest import REPO_ROOT

ROLES = REPO_ROOT / "roles"
SET_FACT = ("ansible.builtin.set_fact", "set_fact")
INCLUDES = (
    "ansible.builtin.include_role",
    "ansible.builtin.import_role",
    "include_role",
    "import_role",
)
# Internal copies retired with the plan: no user could set them, so they are not in
# RENAMED, and they must not come back either.
RETIRED_INTERNAL = ("cuda__checked_versions", "nvidia_driver__gpus", "gpu_preflight__pci_gpus")


def yaml_files() -> List[Path]:
    files = []
    for sub in ("tasks", "handlers", "vars", "defaults", "meta"):
        files += sorted(ROLES.glob(f"*/{sub}/*.yml"))
    files += sorted((REPO_ROOT / "playbooks").glob("*.yml"))
    return files


def template_files() -> List[Path]:
    return sorted(ROLES.glob("*/templates/*.j2"))


def leaves(name: str, value) -> Iterator[Tuple[str, str]]:
    """(name or name.key..., text) of each string in a value."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(f"{name}.{key}", item)
    elif isinstance(value, list):
        for item in value:
            yield from leaves(name, item)
    elif isinstance(value, str):
        yield name, value


def named_values(node, path: Path) -> Iterator[Tuple[str, str]]:
    """(name, value text) for every variable given a value: defaults and vars files, a
    set_fact, a task's or a play's vars (not the vars given to include_role: those are the
    callee's own names)."""
    if path.parent.name in ("defaults", "vars") and isinstance(node, dict):
        for name, value in node.items():
            yield from leaves(name, value)
        return
    if isinstance(node, dict):
        for key, value in node.items():
            if key in SET_FACT and isinstance(value, dict):
                for n, v in value.items():
                    if n != "cacheable":
                        yield from leaves(n, v)
            elif key == "vars" and isinstance(value, dict) and not any(k in node for k in INCLUDES):
                for n, v in value.items():
                    yield from leaves(n, v)
            yield from named_values(value, path)
    elif isinstance(node, list):
        for value in node:
            yield from named_values(value, path)


_FILTERS = r"(\s*\|\s*(default\([^()]*\)|string|trim|bool|int|float))*"
_SOURCE = r"((gpu_preflight_host_plan\.inputs|kindling_effective_inputs)\.)?"


def copies_value(name: str, text: str) -> bool:
    """Whether ``text`` is ``name``'s value under another name: the whole expression is that
    variable (bare, or the plan's or stage 1's inputs' key) with at most a default or a type
    filter, also as a branch of an inline if whose other branch is empty."""
    ref = rf"{_SOURCE}{name}{_FILTERS}"
    expr = text.strip()
    m = re.fullmatch(r"\{\{-?\s*(.*?)\s*-?\}\}", expr, re.S)
    if not m:
        return False
    body = m.group(1)
    if re.fullmatch(ref, body, re.S):
        return True
    branches = re.fullmatch(r"(.*?)\s+if\s+.*?\s+else\s+(.*)", body, re.S)
    if not branches:
        return False
    # A choice between the value and an empty literal is the value under another name; a
    # choice between it and something read or derived is a value of its own.
    first, second = (unwrap(b) for b in branches.groups())
    empty = r"''|\"\"|\[\]|\{\}|none|None|omit"
    return bool(
        (re.fullmatch(ref, first, re.S) and re.fullmatch(empty, second))
        or (re.fullmatch(ref, second, re.S) and re.fullmatch(empty, first))
    )


def unwrap(text: str) -> str:
    text = text.strip()
    return text[1:-1].strip() if text.startswith("(") and text.endswith(")") else text


def declared_options() -> set:
    """Every role's user-facing variables (meta/argument_specs.yml): one whose documented
    default is another role's variable (cuda_repo_base_url defaults to
    nvidia_driver_repo_base_url) is a setting of its own, not a second name."""
    names = set()
    for spec in (REPO_ROOT / "roles").glob("*/meta/argument_specs.yml"):
        for entry in (yaml.safe_load(spec.read_text()) or {}).get("argument_specs", {}).values():
            names |= set((entry or {}).get("options") or {})
    return names


def copies() -> List[str]:
    found = []
    declared = declared_options()
    for path in yaml_files():
        if path.name in ("argument_specs.yml", "interface.yml"):
            continue
        data = yaml.safe_load(path.read_text())
        for name, text in named_values(data, path):
            # A key inside a structure (a file's path in a list of files) names no variable.
            if name in declared or "." in name:
                continue
            for value in host_plan.PLAN_INPUTS:
                if name != value and copies_value(value, text):
                    found.append(f"{path.relative_to(REPO_ROOT)}: {name} copies {value}")
    return found


def test_no_plan_value_has_a_second_name():
    found = copies()
    assert not found, "read the plan value under its own name instead:\n" + "\n".join(found)


def test_the_scan_sees_a_copy(tmp_path):
    role = tmp_path / "roles" / "x" / "defaults"
    role.mkdir(parents=True)
    path = role / "main.yml"
    path.write_text(
        "x_cuda: \"{{ cuda_version | default('13.0') }}\"\n"
        'y: "{{ gpu_preflight_host_plan.inputs.nvidia_driver_branch }}"\n'
    )
    data = yaml.safe_load(path.read_text())
    pairs = list(named_values(data, path))
    assert [n for n, t in pairs if copies_value("cuda_version", t)] == ["x_cuda"]
    assert [n for n, t in pairs if copies_value("nvidia_driver_branch", t)] == ["y"]
    # A key of another mapping is not the variable of that name; a value derived from it
    # (more than a default or a type) is not a copy.
    assert not copies_value("cuda_version", "{{ plan.cuda_version }}")
    assert not copies_value("cuda_version", "{{ cuda_version.split('.')[0] }}")
    # The retired gpu_preflight_plan's shape is caught, key by key.
    old = {
        "gpu_preflight_plan": {
            "cuda_version": (
                "{{ '' if kindling_effective_inputs.cuda_adopt_existing | default(false)\n"
                "else kindling_effective_inputs.cuda_version | default('') }}"
            )
        }
    }
    found = [n for n, t in named_values(old, role / "main.yml") if copies_value("cuda_version", t)]
    assert found == ["gpu_preflight_plan.cuda_version"]
    tasks = [{"name": "t", "ansible.builtin.set_fact": {"a_b": "{{ conda_pytorch_version }}"}}]
    assert list(named_values(tasks, tmp_path / "tasks.yml")) == [
        ("a_b", "{{ conda_pytorch_version }}")
    ]


@pytest.mark.parametrize("name", sorted(host_plan.RENAMED) + list(RETIRED_INTERNAL))
def test_a_retired_name_is_gone(name):
    places = []
    files = yaml_files() + template_files()
    files += sorted((REPO_ROOT / "molecule").glob("**/*.yml"))
    files += sorted((REPO_ROOT / "inventories").glob("**/*.yml"))
    files += sorted((REPO_ROOT / "library").glob("*.py")) + sorted(
        (REPO_ROOT / "action_plugins").glob("*.py")
    )
    for path in files:
        if re.search(rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])", path.read_text()):
            places.append(str(path.relative_to(REPO_ROOT)))
    assert not places, (
        f"{name} is retired ({host_plan.RENAMED.get(name, ('internal',))[0]}): {places}"
    )


def test_the_renamed_table_names_variables_that_exist():
    """Each new name in the table is a role variable today (or says which ones); no role
    declares an old one."""
    options = set()
    for path in ROLES.glob("*/meta/argument_specs.yml"):
        specs = yaml.safe_load(path.read_text())["argument_specs"]
        for entry in specs.values():
            options |= set(entry.get("options") or {})
    for old, (new, why) in host_plan.RENAMED.items():
        assert old not in options, old
        assert why.strip()
        named = re.findall(r"[a-z][a-z0-9_]+_[a-z0-9_]+", new)
        assert named and all(n in options for n in named), (old, new)
    # Every plan input is some role's variable.
    assert set(host_plan.PLAN_INPUTS) <= options
