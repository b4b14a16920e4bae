"""docs/RELIABILITY.md stays in step with the case catalogue."""

from __future__ import annotations

from cases import CASES, render_markdown
from conftest import REPO_ROOT


def test_reliability_doc_is_current():
    doc = REPO_ROOT / "docs" / "RELIABILITY.md"
    assert doc.read_text() == render_markdown(), "run: python tests/reliability/cases.py"


def test_catalogue_has_distinct_cases():
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))
