"""Bad inputs are refused with a clear message before anything on the host changes."""

from __future__ import annotations

import json
import os
import re

import pytest
from cases import CASES
from conftest import CONTAINER, one_line, run_playbook, snapshot, snapshot_diff

FIXTURE_URL = os.environ.get("KINDLING_FIXTURE_URL", "http://127.0.0.1:8765")


def _expand(value):
    if isinstance(value, str):
        return value.replace("{fixture}", FIXTURE_URL)
    if isinstance(value, dict):
        return {k: _expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v) for v in value]
    return value


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_bad_input_is_refused_before_any_change(case, test_host, tmp_path):
    inventory = ""
    if case.get("inventory") == "empty":
        empty = tmp_path / "empty.yml"
        empty.write_text(json.dumps({"all": {"children": {"gpu_hosts": {"hosts": {}}}}}))
        inventory = str(empty)
    before = snapshot()
    result = run_playbook(test_host, case["playbook"], _expand(case["vars"]), inventory=inventory)
    after = snapshot()
    output = one_line(result.stdout + result.stderr)
    assert result.returncode != 0, f"{case['id']} was accepted:\n{result.stdout[-3000:]}"
    assert one_line(case["expect"]) in output, output[-4000:]
    assert before == after, f"{case['id']} changed {CONTAINER} before refusing:\n" + snapshot_diff(
        before, after
    )
    if case.get("changed_zero"):
        recap = re.findall(r"\bchanged=(\d+)", result.stdout.rsplit("PLAY RECAP", 1)[-1])
        assert recap and all(n == "0" for n in recap), result.stdout[-2000:]
