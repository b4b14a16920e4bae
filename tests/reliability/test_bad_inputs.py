"""Bad inputs are refused with a clear message before anything on the host changes.

Each case of tests/reliability/cases.py runs its own playbook; a case whose playbook is a
stage playbook runs a second time through site.yml, whose stage 1 must refuse it before
stage 2 (the first play that changes the host) starts.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from cases import CASES, SITE_CASES, STAGE_2
from conftest import CONTAINER, one_line, podman, run_playbook, snapshot, snapshot_diff

FIXTURE_URL = os.environ.get("KINDLING_FIXTURE_URL", "http://127.0.0.1:8765")


def _expand(value):
    if isinstance(value, str):
        return value.replace("{fixture}", FIXTURE_URL)
    if isinstance(value, dict):
        return {k: _expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v) for v in value]
    return value


def _in_host(script: str) -> None:
    podman("exec", CONTAINER, "sh", "-c", script)


def _refused(case, test_host, tmp_path, playbook: str, changed_zero: bool) -> str:
    """Run the case's variables through playbook; assert it was refused and changed nothing."""
    inventory = ""
    if case.get("inventory") == "empty":
        empty = tmp_path / "empty.yml"
        empty.write_text(json.dumps({"all": {"children": {"gpu_hosts": {"hosts": {}}}}}))
        inventory = str(empty)
    if case.get("prepare"):
        _in_host(str(case["prepare"]))
    try:
        before = snapshot()
        result = run_playbook(test_host, playbook, _expand(case["vars"]), inventory=inventory)
        after = snapshot()
    finally:
        if case.get("cleanup"):
            _in_host(str(case["cleanup"]))
    output = one_line(result.stdout + result.stderr)
    where = f"{case['id']} through {playbook}"
    assert result.returncode != 0, f"{where} was accepted:\n{result.stdout[-3000:]}"
    for expected in [case["expect"], *case.get("expect_also", [])]:
        assert one_line(str(expected)) in output, f"{where}: {expected!r} not in\n{output[-4000:]}"
    for forbidden in case.get("forbid", []):
        assert one_line(str(forbidden)) not in output, (
            f"{where}: {forbidden!r} in\n{output[-4000:]}"
        )
    assert before == after, f"{where} changed {CONTAINER} before refusing:\n" + snapshot_diff(
        before, after
    )
    if changed_zero:
        recap = re.findall(r"\bchanged=(\d+)", result.stdout.rsplit("PLAY RECAP", 1)[-1])
        assert recap and all(n == "0" for n in recap), result.stdout[-2000:]
    return output


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_bad_input_is_refused_before_any_change(case, test_host, tmp_path):
    output = _refused(
        case, test_host, tmp_path, str(case["playbook"]), bool(case.get("changed_zero"))
    )
    if case["playbook"] == "site.yml":
        assert one_line(STAGE_2) not in output, f"{case['id']}: site.yml reached stage 2"


@pytest.mark.parametrize("case", SITE_CASES, ids=[c["id"] for c in SITE_CASES])
def test_bad_input_is_refused_by_site_yml_before_stage_2(case, test_host, tmp_path):
    output = _refused(case, test_host, tmp_path, "site.yml", changed_zero=True)
    assert one_line(STAGE_2) not in output, f"{case['id']}: site.yml reached stage 2"
