"""docs/RELIABILITY.md stays in step with the case catalogue."""

from __future__ import annotations

from cases import CASES, CHECKS, EXPOSURE, FAULTS, case_count, render_markdown
from conftest import REPO_ROOT


def test_reliability_doc_is_current():
    doc = REPO_ROOT / "docs" / "RELIABILITY.md"
    assert doc.read_text() == render_markdown(), "run: python tests/reliability/cases.py"


def test_catalogue_has_distinct_cases():
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))


def test_readme_counts_the_cases():
    readme = " ".join((REPO_ROOT / "README.md").read_text().split())
    for phrase in (
        f"{case_count()} cases in",
        f"{len(CASES)} bad inputs",
        f"{len(FAULTS)} faults",
        f"{len(CHECKS)} check-mode and idempotence cases",
        f"{len(EXPOSURE)} secrets and exposure cases",
    ):
        assert phrase in readme, f"README.md should say '{phrase}' (tests/reliability/cases.py)"
