"""docs/RELIABILITY.md stays in step with the case catalogue."""

from __future__ import annotations

from cases import (
    CASES,
    CHECKS,
    CLASSES,
    EXPOSURE,
    FAULTS,
    ROLES,
    SITE_CASES,
    case_count,
    render_markdown,
    through_site_count,
)
from conftest import REPO_ROOT

# Every class of mistake, and every role, has cases of its own.
REQUIRED_CLASSES = [
    "type",
    "path",
    "url",
    "range",
    "pattern",
    "injection",
    "unit-shadow",
    "secret",
    "rule",
    "stack-defaults",
    "unknown-variable",
    "dict-key",
]
STAGE_ROLES = [role for role in ROLES if role != "inventory"]


def test_reliability_doc_is_current():
    doc = REPO_ROOT / "docs" / "RELIABILITY.md"
    assert doc.read_text() == render_markdown(), "run: python tests/reliability/cases.py"


def test_catalogue_has_distinct_cases():
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))


def test_every_case_names_its_class_role_and_playbook():
    for case in CASES:
        assert case["class"] in CLASSES, case["id"]
        assert case["role"] in ROLES, case["id"]
        assert (REPO_ROOT / "playbooks" / str(case["playbook"])).is_file(), case["id"]
        assert case["expect"] and case["input"], case["id"]


def test_every_class_and_role_has_cases():
    for name in REQUIRED_CLASSES:
        assert any(c["class"] == name for c in CASES), f"no case of class {name}"
    for role in STAGE_ROLES:
        assert sum(c["role"] == role for c in CASES) >= 2, f"fewer than 2 cases for {role}"


def test_a_case_kept_out_of_site_yml_says_why():
    for case in CASES:
        if case.get("site") is False:
            assert case["playbook"] != "site.yml" and case.get("site_why"), case["id"]
        else:
            assert "site_why" not in case, case["id"]
    assert through_site_count() == sum(c["playbook"] == "site.yml" for c in CASES) + len(SITE_CASES)


def test_readme_counts_the_cases():
    readme = " ".join((REPO_ROOT / "README.md").read_text().split())
    for phrase in (
        f"{case_count()} cases in",
        f"{len(CASES)} bad inputs",
        f"{through_site_count()} of them refused through site.yml",
        f"{len(FAULTS)} faults",
        f"{len(CHECKS)} check-mode and idempotence cases",
        f"{len(EXPOSURE)} secrets and exposure cases",
    ):
        assert phrase in readme, f"README.md should say '{phrase}' (tests/reliability/cases.py)"
