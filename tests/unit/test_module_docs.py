"""Every module in library/ documents itself in a form ansible-doc reads.

A colon followed by a space inside a description makes YAML read a mapping, and the
module's documentation is then silently unreadable (ansible-doc fails, the docs site skips
it). This ran unnoticed for eight modules; the check here is what catches it.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT

# Aliases (symlinks to a renamed module) are documented by their target (test_module_names.py).
MODULES = sorted(p for p in (REPO_ROOT / "library").glob("*.py") if not p.is_symlink())
ANSIBLE_DOC = REPO_ROOT / ".venv" / "bin" / "ansible-doc"


def blocks(path: Path) -> dict:
    found = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") in (
            "DOCUMENTATION",
            "EXAMPLES",
            "RETURN",
        ):
            found[node.targets[0].id] = node.value.value
    return found


def strings_only(node, where: str):
    """Descriptions are strings or lists of strings, never mappings."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "short_description"):
                items = value if isinstance(value, list) else [value]
                assert all(isinstance(i, str) for i in items), f"{where}.{key}: {value!r}"
            strings_only(value, f"{where}.{key}")
    elif isinstance(node, list):
        for value in node:
            strings_only(value, where)


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_documentation_examples_and_return_are_yaml(path):
    found = blocks(path)
    assert set(found) == {"DOCUMENTATION", "EXAMPLES", "RETURN"}, path.name
    for name, text in found.items():
        data = yaml.safe_load(text)
        strings_only(data, f"{path.stem}.{name}")
    assert yaml.safe_load(found["DOCUMENTATION"])["module"] == path.stem


def test_ansible_doc_reads_every_module():
    names = [p.stem for p in MODULES]
    result = subprocess.run(
        [str(ANSIBLE_DOC), "-M", str(REPO_ROOT / "library"), "--json", *names],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ERROR" not in result.stderr, result.stderr[-2000:]
