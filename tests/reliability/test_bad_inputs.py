"""Bad inputs are refused with a clear message before anything on the host changes.

Each case of tests/reliability/cases.py runs its own playbook; a case whose playbook is a
stage playbook runs a second time through site.yml, whose stage 1 must refuse it before
stage 2 (the first play that changes the host) starts.

The batch cases (cases.BATCH_CASES) share one run, to keep the suite's time down: one
`site.yml --check` over an inventory of aliases of the one test host, each alias with one
case's bad input as its host variables. Each alias must be refused with its own message.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from cases import BATCH_CASES, NO_GPU, SINGLE_CASES, SITE_CASES, STAGE_2
from conftest import (
    CONTAINER,
    REPO_ROOT,
    one_line,
    playbook_command,
    playbook_env,
    podman,
    run_playbook,
    snapshot,
    snapshot_diff,
)

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


@pytest.mark.parametrize("case", SINGLE_CASES, ids=[c["id"] for c in SINGLE_CASES])
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


# --- the batch cases: one site.yml --check, one inventory alias of the test host per case


def _alias_text(stdout: str, alias: str) -> str:
    """The lines of the run's output about one alias: each result line and its indented body."""
    lines, keep = [], False
    for line in stdout.splitlines():
        if line[:1] not in (" ", "\t", ""):
            keep = f"[{alias}]" in line
        if keep:
            lines.append(line)
    return one_line("\n".join(lines))


@pytest.fixture(scope="module")
def batch_run(test_host, tmp_path_factory):
    hosts = {
        str(case["id"]): {
            "ansible_host": CONTAINER,
            "ansible_connection": "kindling_podman",
            "ansible_python_interpreter": "/usr/bin/python3",
            **_expand(case["vars"]),
        }
        for case in BATCH_CASES
    }
    inventory = tmp_path_factory.mktemp("batch") / "aliases.yml"
    inventory.write_text(json.dumps({"all": {"children": {"gpu_hosts": {"hosts": hosts}}}}))
    before = snapshot()
    command = playbook_command(
        test_host,
        "site.yml",
        NO_GPU,
        "--check",
        "--forks",
        "6",
        inventory=str(inventory),
    )
    result = subprocess.run(
        command,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
        # Many aliases of one container gather facts at once: give setup time on a busy machine.
        env=dict(playbook_env(), ANSIBLE_GATHER_TIMEOUT="120", ANSIBLE_TIMEOUT="120"),
    )
    after = snapshot()
    return {"result": result, "before": before, "after": after}


def test_batch_run_changed_nothing_and_stopped_in_stage_1(batch_run):
    result = batch_run["result"]
    output = one_line(result.stdout + result.stderr)
    assert result.returncode != 0, result.stdout[-3000:]
    assert one_line(STAGE_2) not in output, "the batch run reached stage 2"
    assert batch_run["before"] == batch_run["after"], snapshot_diff(
        batch_run["before"], batch_run["after"]
    )
    recap = re.findall(r"\bchanged=(\d+)", result.stdout.rsplit("PLAY RECAP", 1)[-1])
    assert recap and all(n == "0" for n in recap), result.stdout[-2000:]


@pytest.mark.parametrize("case", BATCH_CASES, ids=[c["id"] for c in BATCH_CASES])
def test_batch_case_is_refused_in_one_site_check(case, batch_run):
    result = batch_run["result"]
    text = _alias_text(result.stdout, str(case["id"]))
    where = f"{case['id']} (an alias in one site.yml --check)"
    assert f"fatal: [{case['id']}]" in text, f"{where} was not refused:\n{text[-3000:]}"
    for expected in [case["expect"], *case.get("expect_also", [])]:
        assert one_line(str(expected)) in text, f"{where}: {expected!r} not in\n{text[-4000:]}"
    for forbidden in case.get("forbid", []):
        assert one_line(str(forbidden)) not in text, f"{where}: {forbidden!r} in\n{text[-4000:]}"
    everything = one_line(result.stdout + result.stderr)
    for expected in case.get("expect_in_run", []):
        assert one_line(str(expected)) in everything, (
            f"{where}: {expected!r} not in the run's output"
        )
    recap = re.search(rf"^{re.escape(str(case['id']))}\s*:.*$", result.stdout, re.M)
    assert recap and "changed=0" in recap.group(0) and "failed=1" in recap.group(0), (
        recap.group(0) if recap else result.stdout[-2000:]
    )
