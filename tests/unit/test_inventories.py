"""The shipped inventories set only variables something reads.

A variable no role, playbook or template reads is silently ignored by Ansible, so a typo or
a knob that was never built (the preinstalled inventory's kindling_adopt_existing was one)
looks like configuration and does nothing.
"""

from __future__ import annotations

import re

import pytest
import yaml
from conftest import REPO_ROOT

INVENTORIES = sorted(p for p in (REPO_ROOT / "inventories").iterdir() if p.is_dir())


def role_options():
    names = set()
    for spec in (REPO_ROOT / "roles").glob("*/meta/argument_specs.yml"):
        for entry in yaml.safe_load(spec.read_text())["argument_specs"].values():
            names.update(entry.get("options") or {})
    return names


def read_elsewhere():
    """Names the playbooks, roles' files and tools read (a fleet-wide name such as
    gpu_required is read by the defaults that take it)."""
    text = "\n".join(
        p.read_text()
        for folder in ("playbooks", "roles", "tools")
        for p in (REPO_ROOT / folder).rglob("*")
        if p.is_file() and p.suffix in (".yml", ".yaml", ".j2", ".py", ".sh")
    )
    return set(re.findall(r"\b[a-z][a-z0-9_]*\b", text))


def inventory_variables(inventory):
    """(file, name) for each group and host variable the inventory sets."""
    found = []
    for path in sorted((inventory / "group_vars").glob("*.yml")):
        found += [(path, name) for name in yaml.safe_load(path.read_text()) or {}]

    def walk(group, path):
        for host in (group.get("hosts") or {}).values():
            found.extend((path, name) for name in host or {})
        found.extend((path, name) for name in group.get("vars") or {})
        for child in (group.get("children") or {}).values():
            walk(child or {}, path)

    hosts = inventory / "hosts.yml"
    for group in (yaml.safe_load(hosts.read_text()) or {}).values():
        walk(group or {}, hosts)
    return found


@pytest.mark.parametrize("inventory", INVENTORIES, ids=lambda p: p.name)
def test_every_inventory_variable_is_read_somewhere(inventory):
    known = role_options()
    elsewhere = read_elsewhere()
    unread = [
        f"{path.relative_to(REPO_ROOT)}: {name}"
        for path, name in inventory_variables(inventory)
        if not name.startswith("ansible_") and name not in known and name not in elsewhere
    ]
    assert not unread, "set but read by nothing: " + ", ".join(unread)


def test_the_check_finds_an_unread_variable(tmp_path):
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text(
        "cuda_version: '13.0'\nkindling_adopt_all: true\n"
    )
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    h1:\n      gpu_check_profile: quick\n")
    names = [name for _, name in inventory_variables(tmp_path)]
    assert names == ["cuda_version", "kindling_adopt_all", "gpu_check_profile"]
    known, elsewhere = role_options(), read_elsewhere()
    assert [n for n in names if n not in known and n not in elsewhere] == ["kindling_adopt_all"]
