"""Every role keeps its defaults, argument specs, README and docs/VARIABLES.md in step.

Each role's defaults/main.yml, the READMEs' variable tables and docs/VARIABLES.md are generated
from the argument specs by tools/variables_doc.py; its check mode is part of `make lint`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import REPO_ROOT

ROLES = sorted(p.name for p in (REPO_ROOT / "roles").iterdir() if (p / "tasks").is_dir())
# Roles whose variables use a shorter prefix than the role name, with the reason.
PREFIXES = {
    # The issue and users call these pytorch_* (pytorch_python, pytorch_version ...).
    "conda_pytorch": ("pytorch_", "conda_pytorch_"),
}


def _specs(role: str) -> dict:
    path = REPO_ROOT / "roles" / role / "meta" / "argument_specs.yml"
    assert path.is_file(), f"roles/{role} has no meta/argument_specs.yml"
    return yaml.safe_load(path.read_text())["argument_specs"]


def _defaults(role: str) -> dict:
    path = REPO_ROOT / "roles" / role / "defaults" / "main.yml"
    return (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}


def test_there_are_roles():
    assert "nouveau" in ROLES and "reboot_coordinator" in ROLES


@pytest.mark.parametrize("role", ROLES)
def test_defaults_match_argument_specs(role):
    options = _specs(role)["main"].get("options") or {}
    defaults = _defaults(role)
    assert set(defaults) <= set(options), (
        f"roles/{role}: defaults without an argument spec: {sorted(set(defaults) - set(options))}"
    )
    for name, spec in options.items():
        if name in defaults and "default" in spec:
            assert spec["default"] == defaults[name], (
                f"roles/{role}: {name} defaults to {defaults[name]!r} but the spec says "
                f"{spec['default']!r}"
            )
        if not spec.get("required"):
            assert name in defaults or "default" not in spec, (
                f"roles/{role}: {name} has a spec default but none in defaults/main.yml"
            )
        assert spec.get("description"), f"roles/{role}: {name} has no description"


@pytest.mark.parametrize("role", ROLES)
def test_variables_carry_the_role_prefix(role):
    prefixes = PREFIXES.get(role, (role + "_",))
    for entry in _specs(role).values():
        for name in entry.get("options") or {}:
            assert name.startswith(prefixes), f"roles/{role}: {name} lacks the prefix {prefixes}"


@pytest.mark.parametrize("role", ROLES)
def test_readme_documents_every_default(role):
    readme = REPO_ROOT / "roles" / role / "README.md"
    assert readme.is_file(), f"roles/{role} has no README.md"
    text = readme.read_text()
    missing = [name for name in _defaults(role) if not re.search(rf"\b{name}\b", text)]
    assert not missing, f"roles/{role}/README.md does not mention: {missing}"


def test_variables_doc_is_current():
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "variables_doc.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _variables_doc(root, *args):
    return subprocess.run(
        [sys.executable, str(root / "tools" / "variables_doc.py"), *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def doc_copy(tmp_path):
    """What tools/variables_doc.py reads and writes, copied: the tests edit the copy only."""
    for tool in ("variables_doc.py", "marked_block.py"):
        (tmp_path / "tools").mkdir(exist_ok=True)
        shutil.copy(REPO_ROOT / "tools" / tool, tmp_path / "tools" / tool)
    shutil.copytree(
        REPO_ROOT / "module_utils",
        tmp_path / "module_utils",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO_ROOT / "docs" / "VARIABLES.md", tmp_path / "docs" / "VARIABLES.md")
    for role in ROLES:
        for rel in ("meta/argument_specs.yml", "defaults/main.yml", "README.md"):
            target = tmp_path / "roles" / role / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO_ROOT / "roles" / role / rel, target)
    result = _variables_doc(tmp_path, "--check")
    assert result.returncode == 0, result.stdout + result.stderr
    return tmp_path


def test_readme_table_edited_by_hand_is_stale(doc_copy):
    readme = doc_copy / "roles" / "nouveau" / "README.md"
    text = readme.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `nouveau_unload` |"))
    readme.write_text(text.replace(row, row[: -len(" |")] + " Edited by hand. |"))
    result = _variables_doc(doc_copy, "--check")
    assert result.returncode == 1
    assert (
        "roles/nouveau/README.md is out of date: run python tools/variables_doc.py" in result.stderr
    )
    assert "VARIABLES.md" not in result.stderr, "only the edited file is stale"
    # Without --check the tool puts the generated row back.
    assert _variables_doc(doc_copy).returncode == 0
    assert readme.read_text() == text


def test_readme_without_markers_is_refused(doc_copy):
    readme = doc_copy / "roles" / "site_lock" / "README.md"
    text = readme.read_text()
    unmarked = "\n".join(
        line for line in text.splitlines() if "variables" not in line or "<!--" not in line
    )
    readme.write_text(unmarked)
    for args in (("--check",), ()):
        result = _variables_doc(doc_copy, *args)
        assert result.returncode == 1, args
        assert "roles/site_lock/README.md lacks the markers" in result.stderr, args
    assert readme.read_text() == unmarked, "a README without markers is left alone"


def test_defaults_edited_by_hand_are_stale(doc_copy):
    defaults = doc_copy / "roles" / "nouveau" / "defaults" / "main.yml"
    text = defaults.read_text()
    edited = text.replace("nouveau_unload: true", "nouveau_unload: false")
    assert edited != text
    defaults.write_text(edited)
    result = _variables_doc(doc_copy, "--check")
    assert result.returncode == 1
    assert "roles/nouveau/defaults/main.yml is out of date" in result.stderr
    assert "README.md" not in result.stderr, "only the edited file is stale"
    assert _variables_doc(doc_copy).returncode == 0
    assert defaults.read_text() == text


def test_defaults_follow_the_spec(doc_copy):
    """A default and its description changed in the spec reach defaults/main.yml, where
    Ansible reads them; a multi-line default is copied as written."""
    spec = doc_copy / "roles" / "nouveau" / "meta" / "argument_specs.yml"
    text = spec.read_text()
    # The option's whole block, up to the next option.
    head, rest = text.split("      nouveau_unload:\n", 1)
    _block, tail = rest.split("\n      nouveau_", 1)
    spec.write_text(
        head
        + "      nouveau_unload:\n"
        + "        type: str\n"
        + "        default: >-\n"
        + "          {{ nouveau_blacklist_enabled\n"
        + "          and not ansible_check_mode }}\n"
        + "        description:\n"
        + "          - Run C(modprobe -r nouveau) when nouveau is loaded.\n"
        + "          - Changed by this test.\n"
        + "      nouveau_"
        + tail
    )
    assert _variables_doc(doc_copy, "--check").returncode == 1
    assert _variables_doc(doc_copy).returncode == 0
    defaults = (doc_copy / "roles" / "nouveau" / "defaults" / "main.yml").read_text()
    assert (
        "# Run `modprobe -r nouveau` when nouveau is loaded. Changed by this test.\n"
        "nouveau_unload: >-\n"
        "  {{ nouveau_blacklist_enabled\n"
        "  and not ansible_check_mode }}\n"
    ) in defaults
    assert yaml.safe_load(defaults)["nouveau_unload"] == (
        "{{ nouveau_blacklist_enabled and not ansible_check_mode }}"
    )
    assert _variables_doc(doc_copy, "--check").returncode == 0
