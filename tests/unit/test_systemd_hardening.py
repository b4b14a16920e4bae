"""tools/systemd_hardening.py and the score table in docs/SYSTEMD_HARDENING.md."""

from __future__ import annotations

import importlib.util
import json

import pytest
from conftest import REPO_ROOT

spec = importlib.util.spec_from_file_location(
    "systemd_hardening", REPO_ROOT / "tools" / "systemd_hardening.py"
)
hardening = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hardening)

# The end of `systemd-analyze security jupyter.service --no-pager` on systemd 252.
ANALYZE_OUTPUT = """\
  NAME                                 DESCRIPTION                                         EXPOSURE
✗ PrivateNetwork=                      Service has access to the host's network                 0.5
✗ UMask=                               Files created by service are group-readable by default   0.1
✓ NoNewPrivileges=                     Service processes cannot acquire new privileges

→ Overall exposure level for jupyter.service: 2.0 OK 🙂
"""
JSON_SHORT = json.dumps(
    [
        {"set": False, "name": "UMask=", "json_field": "UMask", "exposure": "0.1"},
        {"set": True, "name": "NoNewPrivileges=", "json_field": "NNP", "exposure": None},
        {"set": False, "name": "PrivateNetwork=", "json_field": "PN", "exposure": "0.5"},
        {"set": False, "name": "SupplementaryGroups=", "json_field": "SG", "exposure": None},
    ]
)
TEMPLATE = "roles/jupyter/templates/jupyter.service.j2"
DOC = f"""\
Measured 2026-11-29 with systemd 252 (252.39-1~deb12u2), on the test hosts.

| unit template | unit | exposure | how |
|---|---|---|---|
| `{TEMPLATE}` | `jupyter.service` | 2.0 OK | loaded unit |
| `roles/x/templates/y.service.j2` | `y.service` | 0.6 SAFE | offline |
"""


@pytest.mark.parametrize(
    ("score", "level"),
    [
        ("0.0", "PERFECT"),
        ("0.1", "SAFE"),
        ("0.9", "SAFE"),
        ("1.0", "OK"),
        ("4.9", "OK"),
        ("5.0", "MEDIUM"),
        ("7.5", "EXPOSED"),
        ("9.0", "UNSAFE"),
        ("10.0", "DANGEROUS"),
    ],
)
def test_levels_are_systemds(score, level):
    assert hardening.level_for(score) == level


def test_overall_and_costly_options():
    assert hardening.overall(ANALYZE_OUTPUT) == ("jupyter.service", "2.0", "OK")
    assert hardening.costly_options(JSON_SHORT) == [("PrivateNetwork=", "0.5"), ("UMask=", "0.1")]
    with pytest.raises(ValueError, match="Overall exposure level"):
        hardening.overall("Failed to connect to bus")


def test_doc_table_parsing():
    assert hardening.recorded_scores(DOC) == {
        TEMPLATE: ("2.0", "OK"),
        "roles/x/templates/y.service.j2": ("0.6", "SAFE"),
    }
    assert hardening.recorded_systemd_version(DOC) == 252
    with pytest.raises(ValueError, match="two rows"):
        hardening.recorded_scores(DOC + f"| `{TEMPLATE}` | x | 2.0 OK | y |\n")


def test_problems_none_when_in_step():
    version = "systemd 252 (252.39-1~deb12u2)\n+PAM +AUDIT"
    assert hardening.problems(TEMPLATE, ANALYZE_OUTPUT, JSON_SHORT, version, DOC) == []


def test_problems_say_to_update_the_doc():
    measured = ANALYZE_OUTPUT.replace("2.0 OK", "1.8 OK")
    (msg,) = hardening.problems(TEMPLATE, measured, JSON_SHORT, "", DOC)
    assert "says 1.8 OK" in msg and "records 2.0 OK" in msg
    assert "Update the doc" in msg and "docs/SYSTEMD_HARDENING.md" in msg
    assert "PrivateNetwork= 0.5" in msg  # what to write under "what still costs points"

    (missing,) = hardening.problems("roles/z/templates/z.service.j2", ANALYZE_OUTPUT, "[]", "", DOC)
    assert "has no row for roles/z/templates/z.service.j2" in missing

    (version,) = hardening.problems(TEMPLATE, ANALYZE_OUTPUT, "[]", "systemd 254 (254.5)", DOC)
    assert "runs systemd 254" in version and "measured with systemd 252" in version


def test_problems_above_the_threshold():
    measured = ANALYZE_OUTPUT.replace("2.0 OK", "3.3 OK")
    doc = DOC.replace("2.0 OK", "3.3 OK")
    (msg,) = hardening.problems(TEMPLATE, measured, JSON_SHORT, "", doc)
    assert f"above the threshold {hardening.THRESHOLD}" in msg


def test_the_doc_scores_every_unit_template_within_the_threshold():
    text = hardening.DOC.read_text(encoding="utf-8")
    scores = hardening.recorded_scores(text)
    units = (REPO_ROOT / "roles").glob("*/templates/*.service.j2")
    templates = {str(p.relative_to(REPO_ROOT)) for p in units}
    assert set(scores) == templates, "docs/SYSTEMD_HARDENING.md: one row per unit template"
    for template, (score, level) in scores.items():
        assert hardening.level_for(score) == level, (template, score, level)
        assert float(score) <= hardening.THRESHOLD, (template, score)
    assert hardening.recorded_systemd_version(text) == 252
