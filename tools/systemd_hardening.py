"""Hardening scores of Kindling's systemd units, kept in step with docs/SYSTEMD_HARDENING.md.

The Molecule verifiers of jupyter and dcgm_exporter run ``systemd-analyze security`` on
their test hosts and pass its output to :func:`problems`, which checks that a unit's
overall exposure is at most :data:`THRESHOLD` and equal to the score that
docs/SYSTEMD_HARDENING.md records for the unit's template. tests/unit checks the doc's
table itself (every unit template has a row, levels match scores).

systemd 252 (Debian 12) has ``--json=short`` for ``security``, but its JSON holds only the
per-option table, not the overall exposure: that comes from the text output's
``Overall exposure level for UNIT: 2.0 OK`` line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

REPO_ROOT = Path(__file__).resolve().parent.parent
DOC = REPO_ROOT / "docs" / "SYSTEMD_HARDENING.md"
DOC_NAME = "docs/SYSTEMD_HARDENING.md"

# Highest overall exposure a Kindling unit may have. Inside systemd's "OK" band (1.0 to 4.9)
# and below every unit's score before the units were tightened (3.0 to 3.7), so undoing the
# hardening fails even if the doc is updated to match. docs/SYSTEMD_HARDENING.md says more.
THRESHOLD = 2.5

# systemd's bands (src/analyze/analyze-security.c, badness_table), in tenths: a score is
# the first level whose lower bound it reaches.
LEVELS = (
    (100, "DANGEROUS"),
    (90, "UNSAFE"),
    (75, "EXPOSED"),
    (50, "MEDIUM"),
    (10, "OK"),
    (1, "SAFE"),
    (0, "PERFECT"),
)

_OVERALL = re.compile(
    r"Overall exposure level for (?P<unit>\S+): (?P<score>\d+\.\d) (?P<level>[A-Z]+)"
)
_SYSTEMD_VERSION = re.compile(r"\bsystemd (\d+)\b")


def level_for(score: str) -> str:
    """systemd's name for an overall exposure such as "2.0"."""
    tenths = round(float(score) * 10)
    for bound, name in LEVELS:
        if tenths >= bound:
            return name
    raise ValueError(score)


def overall(output: str) -> Tuple[str, str, str]:
    """(unit, score, level) from ``systemd-analyze security UNIT``'s text output."""
    found = _OVERALL.findall(output)
    if len(found) != 1:
        raise ValueError(
            "expected one 'Overall exposure level' line in systemd-analyze output, got "
            f"{len(found)}:\n{output[-2000:]}"
        )
    return found[0]


def costly_options(json_short: str) -> List[Tuple[str, str]]:
    """(option, exposure) still costing points, highest first, from ``--json=short``."""
    rows = json.loads(json_short)
    costly = [
        (row["name"], row["exposure"])
        for row in rows
        if row.get("exposure") and float(row["exposure"]) > 0
    ]
    return sorted(costly, key=lambda item: (-float(item[1]), item[0]))


def _cells(line: str) -> List[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def recorded_scores(text: str) -> Dict[str, Tuple[str, str]]:
    """Template path -> (score, level) from the doc's score table.

    Rows look like ``| `roles/x/templates/y.service.j2` | `y.service` ... | 2.0 OK | ... |``:
    the first cell names the template, the third holds the score and the level.
    """
    scores: Dict[str, Tuple[str, str]] = {}
    for line in text.splitlines():
        if not line.startswith("| `roles/"):
            continue
        cells = _cells(line)
        template = cells[0].strip("`")
        match = re.fullmatch(r"(\d+\.\d) ([A-Z]+)", cells[2]) if len(cells) > 2 else None
        if match is None:
            raise ValueError(f"{DOC_NAME}: no 'score LEVEL' in the third cell of: {line}")
        if template in scores:
            raise ValueError(f"{DOC_NAME}: {template} has two rows")
        scores[template] = (match.group(1), match.group(2))
    return scores


def recorded_systemd_version(text: str) -> Optional[int]:
    """The systemd major version the doc says the scores were measured with."""
    for line in text.splitlines():
        if line.lower().startswith("measured") and _SYSTEMD_VERSION.search(line):
            return int(_SYSTEMD_VERSION.search(line).group(1))
    return None


def problems(
    template: str,
    analyze_output: str,
    json_short: str = "[]",
    systemd_version: str = "",
    doc_text: Optional[str] = None,
) -> List[str]:
    """What is wrong with a unit's score, as messages for a failing test (empty: all good).

    template: the unit's template, as the doc's table names it (roles/.../x.service.j2);
    analyze_output: ``systemd-analyze security UNIT --no-pager``; json_short: the same with
    ``--json=short`` (for the message); systemd_version: ``systemd-analyze --version``.
    """
    if doc_text is None:
        doc_text = DOC.read_text(encoding="utf-8")
    unit, score, level = overall(analyze_output)
    costly = ", ".join(f"{name} {exp}" for name, exp in costly_options(json_short)[:6])
    found: List[str] = []
    if float(score) > THRESHOLD:
        found.append(
            f"{unit} ({template}): overall exposure {score} {level} is above the threshold "
            f"{THRESHOLD} (tools/systemd_hardening.py, justified in {DOC_NAME}). Harden the "
            f"unit rather than raise the threshold. Options costing most: {costly}"
        )
    recorded = recorded_scores(doc_text).get(template)
    if recorded is None:
        found.append(
            f"{DOC_NAME} has no row for {template}: add one with '{score} {level}' "
            f"(measured: {unit} {score} {level}; options costing most: {costly})"
        )
    elif recorded != (score, level):
        found.append(
            f"{unit} ({template}): systemd-analyze security says {score} {level}, but "
            f"{DOC_NAME} records {recorded[0]} {recorded[1]}. Update the doc: its table, "
            f"the date, and the options that still cost points (now: {costly})"
        )
    measured_with = _SYSTEMD_VERSION.search(systemd_version)
    doc_version = recorded_systemd_version(doc_text)
    if measured_with and doc_version != int(measured_with.group(1)):
        found.append(
            f"the test host runs systemd {measured_with.group(1)}, {DOC_NAME} says the scores "
            f"were measured with systemd {doc_version}: re-measure and update the doc"
        )
    return found
