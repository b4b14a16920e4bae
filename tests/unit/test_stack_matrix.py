"""README's stack x OS table is generated from the vendor catalogue and kept current."""

from __future__ import annotations

import sys

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tools"))
import stack_matrix


def test_readme_table_is_current():
    assert stack_matrix.main(["--check"]) == 0, "run tools/stack_matrix.py"


def test_table_says_where_each_example_stack_installs():
    rows = {
        line.split("|")[1].strip(" `"): [c.strip() for c in line.split("|")[3:-1]]
        for line in stack_matrix.table().splitlines()[2:]
    }
    header = [c.strip() for c in stack_matrix.table().splitlines()[0].split("|")[3:-1]]
    seed = dict(zip(header, rows["seed_stack"]))
    current = dict(zip(header, rows["current_stack"]))
    assert seed["Ubuntu 20.04"] == "installs"
    assert seed["Ubuntu 22.04"].startswith("refused: cuda-not-in-repository")
    assert "driver-branch-not-in-repository" in seed["Ubuntu 22.04"]
    assert seed["Debian 12"].startswith("refused")
    assert current["Debian 12"] == current["Ubuntu 22.04"] == current["Ubuntu 24.04"] == "installs"
    assert current["Ubuntu 20.04"] == "refused: cuda-not-in-repository"


def test_check_fails_when_the_table_is_stale(tmp_path, monkeypatch):
    stale = tmp_path / "README.md"
    text = (REPO_ROOT / "README.md").read_text()
    stale.write_text(text.replace("| installs |", "| refused: made-up |", 1))
    monkeypatch.setattr(stack_matrix, "README", stale)
    assert stack_matrix.main(["--check"]) == 1
