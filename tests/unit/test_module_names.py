"""One naming rule for Kindling's modules (issue 33): ``*_info`` reads, ``*_facts`` sets
facts, ``*_plan`` decides, and a name that carries a verb changes the host (or, for
gpu_throughput_measure, runs a workload on it). An old name a user's playbook could call
stays as an alias: a symlink to the renamed module (and to its action plugin)."""

from __future__ import annotations

import os

import pytest
import yaml
from conftest import REPO_ROOT
from test_nvidia_smi_facts import run_adhoc

LIBRARY = REPO_ROOT / "library"
ACTIONS = REPO_ROOT / "action_plugins"
MODULES = sorted(p.stem for p in LIBRARY.glob("*.py") if not p.is_symlink())
# The verbs a module that acts is named for, each with the modules that carry it.
VERBS = (
    "add",
    "remove",
    "trust",
    "install",
    "prepare",
    "create",
    "write",
    "measure",
    "share",
    "lock",
)
# Old names kept because a user's playbook could call them (README's library/ row names
# the stack check and the throughput check); the roles use the new names.
ALIASES = {"gpu_stack_check": "gpu_stack_plan", "gpu_throughput": "gpu_throughput_measure"}
# A module that also returns the facts of a *_facts module it saves a run of, in the same
# module run (docs/DEVELOPMENT.md: a read another module run already makes is made there).
ALSO_SETS = {"nvidia_driver_plan": "nvidia_kernel_module_facts"}


def kind(name: str) -> str:
    for suffix in ("info", "facts", "plan"):
        if name.endswith("_" + suffix):
            return suffix
    return "acts"


def returns(name: str) -> dict:
    text = (LIBRARY / f"{name}.py").read_text()
    block = text.split('RETURN = r"""', 1)[1].split('"""', 1)[0]
    return yaml.safe_load(block) or {}


@pytest.mark.parametrize("name", MODULES)
def test_the_name_says_what_the_module_does(name):
    text = (LIBRARY / f"{name}.py").read_text()
    sets_facts = "ansible_facts" in returns(name)
    if kind(name) == "facts":
        assert sets_facts, f"{name} is called *_facts but returns no ansible_facts"
    elif name in ALSO_SETS:
        assert ALSO_SETS[name] in returns(name)["ansible_facts"]["description"], name
    else:
        assert not sets_facts, f"{name} sets facts: call it *_facts"
    if kind(name) in ("info", "plan"):
        # Reads and decides only: it writes no file and reports no change.
        assert "write_atomic" not in text and "changed=True" not in text, name
    if kind(name) == "acts":
        words = name.split("_")
        assert any(verb in words for verb in VERBS), (
            f"{name} changes the host: name it for what it does, with a verb ({', '.join(VERBS)})"
        )


def test_the_old_names_a_user_may_call_are_aliases_of_the_new_ones():
    found = {p.stem: os.readlink(p) for p in LIBRARY.glob("*.py") if p.is_symlink()}
    assert found == {old: f"{new}.py" for old, new in ALIASES.items()}
    for old, new in ALIASES.items():
        if (ACTIONS / f"{new}.py").exists():
            assert os.readlink(ACTIONS / f"{old}.py") == f"{new}.py"


def test_the_roles_and_playbooks_call_no_alias():
    texts = [
        p.read_text()
        for pattern in ("roles/*/tasks/*.yml", "roles/*/handlers/*.yml", "playbooks/**/*.yml")
        for p in REPO_ROOT.glob(pattern)
    ]
    for old in ALIASES:
        assert not any(f"\n  {old}:" in t or f"\n      {old}:" in t for t in texts), old


def test_an_alias_runs_as_its_module(tmp_path):
    """gpu_stack_check, a user's old task, still answers (on the controller, as before)."""
    args = {"driver_branch": "580", "cuda_version": "13.0", "fail_on_problems": False}
    old = run_adhoc("gpu_stack_check", args, tmp_path)
    new = run_adhoc("gpu_stack_plan", args, tmp_path)
    assert old["ok"] is True and old["params"] == new["params"]
