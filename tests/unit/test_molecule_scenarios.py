"""Every Molecule scenario converges twice: its second converge must report changed=0.

Molecule's idempotence step fails a scenario whose second converge changes anything; this
test makes sure no scenario drops that step from its test sequence.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED = yaml.safe_load((REPO_ROOT / ".config" / "molecule" / "config.yml").read_text())
SCENARIOS = sorted(p.parent.name for p in (REPO_ROOT / "molecule").glob("*/molecule.yml"))


def test_there_are_scenarios():
    assert len(SCENARIOS) >= 9


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario_runs_idempotence_after_converge(scenario):
    config = yaml.safe_load((REPO_ROOT / "molecule" / scenario / "molecule.yml").read_text())
    sequence = (config.get("scenario") or {}).get("test_sequence") or SHARED["scenario"][
        "test_sequence"
    ]
    assert "converge" in sequence and "idempotence" in sequence, sequence
    assert sequence.index("idempotence") > sequence.index("converge")
    assert sequence.index("verify") > sequence.index("idempotence")
