"""Each role's meta/interface.yml against its tasks: one naming rule, and every variable
that crosses from one role (or play) to another declared where it is read.

The rule (docs/DEVELOPMENT.md): what a role registers or sets for its own use is
``<role>__<name>``; a ``<role>_<name>`` it sets at run time is read by another stage or the
user and is listed under ``sets``; what its tasks, handlers and templates read that another
role or a play sets is listed under ``reads``, with where it comes from. A role's own
variables (meta/argument_specs.yml) are its inputs; defaults that name another role's
variable declare that read in argument_specs already (``cuda_repo_base_url``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

import pytest
import yaml
from conftest import REPO_ROOT

ROLES = sorted(p.name for p in (REPO_ROOT / "roles").iterdir() if (p / "tasks").is_dir())
# Roles whose variables use a shorter prefix too (test_role_contracts.PREFIXES).
PREFIXES = {"conda_pytorch": ("conda_pytorch_", "pytorch_")}
CONDITIONS = ("when", "that", "loop", "failed_when", "changed_when", "until")
INCLUDE_ROLE = ("ansible.builtin.include_role", "include_role")
SET_FACT = ("ansible.builtin.set_fact", "set_fact")


# Issue 35: gpu_preflight's stack_keep.yml sets the recorded stack under the stages' own
# names (module_utils/stack_record.STACK_VARIABLES) and stage 1's effective inputs, so the
# plan and the roles see one value; its interface lists them under sets.
KEPT_STACK = (
    "nvidia_driver_branch",
    "cuda_version",
    "cuda_cudnn_version",
    "conda_pytorch_version",
    "conda_pytorch_torchvision_version",
    "conda_pytorch_cuda_variant",
    "conda_pytorch_python_version",
    "kindling_effective_inputs",
)


def prefixes(role: str) -> Tuple[str, ...]:
    return PREFIXES.get(role, (role + "_",))


def internal(role: str, name: str) -> bool:
    return any(name.startswith(p.rstrip("_") + "__") for p in prefixes(role))


def interface(role: str) -> Dict[str, Dict]:
    path = REPO_ROOT / "roles" / role / "meta" / "interface.yml"
    assert path.is_file(), f"roles/{role} has no meta/interface.yml"
    data = yaml.safe_load(path.read_text()) or {}
    assert set(data) == {"sets", "reads"}, f"roles/{role}/meta/interface.yml: sets and reads only"
    return {"sets": data["sets"] or {}, "reads": data["reads"] or {}}


def options(role: str) -> Set[str]:
    specs = yaml.safe_load((REPO_ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
    return {
        name for entry in specs["argument_specs"].values() for name in entry.get("options") or {}
    }


def task_files(role: str) -> List[Path]:
    base = REPO_ROOT / "roles" / role
    return sorted(p for sub in ("tasks", "handlers") for p in (base / sub).glob("*.yml"))


def made_names(node) -> Iterator[Tuple[str, str]]:
    """(kind, name) for every register, set_fact, task vars and loop_var in a task list;
    the vars given to include_role are the callee's inputs, not names made here."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "register" and isinstance(value, str):
                yield "register", value
            elif key in SET_FACT and isinstance(value, dict):
                yield from (("set_fact", n) for n in value if n != "cacheable")
            elif (
                key == "vars"
                and isinstance(value, dict)
                and not any(k in node for k in INCLUDE_ROLE)
            ):
                yield from (("vars", n) for n in value)
            elif key == "loop_control" and isinstance(value, dict) and "loop_var" in value:
                yield "loop_var", value["loop_var"]
            yield from made_names(value)
    elif isinstance(node, list):
        for value in node:
            yield from made_names(value)


def expressions(node, key=None) -> Iterator[str]:
    if isinstance(node, dict):
        for k, value in node.items():
            yield from expressions(value, k)
    elif isinstance(node, list):
        for value in node:
            yield from expressions(value, key)
    elif isinstance(node, str):
        if key in CONDITIONS and "{{" not in node:  # a bare expression (when, that)
            yield node
        yield from (m.group(1) for m in re.finditer(r"\{[{%](.*?)[}%]\}", node, re.S))


def read_names(role: str) -> Dict[str, Set[str]]:
    """Names with another role's prefix, or kindling_, read in tasks, handlers, templates."""
    others = [p for r in ROLES if r != role for p in prefixes(r)] + ["kindling_"]
    base = REPO_ROOT / "roles" / role
    texts: List[Tuple[str, str]] = []
    for path in task_files(role):
        texts += [(path.name, e) for e in expressions(yaml.safe_load(path.read_text()))]
    for path in sorted((base / "templates").glob("*.j2")):
        texts += [
            (path.name, m.group(1))
            for m in re.finditer(r"\{[{%](.*?)[}%]\}", path.read_text(), re.S)
        ]
    found: Dict[str, Set[str]] = {}
    for where, text in texts:
        text = re.sub(r"'[^']*'|\"[^\"]*\"", "", text)  # string literals are not reads
        for m in re.finditer(r"(?<![A-Za-z0-9_.])([a-z][a-z0-9_]*)", text):
            name = m.group(1)
            if name.startswith(tuple(others)) and not name.startswith(prefixes(role)):
                found.setdefault(name, set()).add(where)
    return found


def sets_of(role: str) -> Set[str]:
    return {n for path in task_files(role) for _, n in made_names(yaml.safe_load(path.read_text()))}


@pytest.mark.parametrize("role", ROLES)
def test_names_a_role_makes_follow_the_rule(role):
    declared = set(interface(role)["sets"]) | options(role)
    wrong = sorted(
        f"{kind} {name} ({path.name})"
        for path in task_files(role)
        for kind, name in made_names(yaml.safe_load(path.read_text()))
        if not internal(role, name) and name not in declared
    )
    assert not wrong, (
        f"roles/{role}: name these <role>__<name> (internal), or list them under sets in "
        f"meta/interface.yml: {wrong}"
    )


@pytest.mark.parametrize("role", ROLES)
def test_what_a_role_says_it_sets_it_sets(role):
    missing = sorted(set(interface(role)["sets"]) - sets_of(role))
    assert not missing, f"roles/{role}/meta/interface.yml sets what no task sets: {missing}"
    for name, why in interface(role)["sets"].items():
        if role == "gpu_preflight" and name in KEPT_STACK:
            continue  # issue 35: the kept stack, under the stages' own names (stack_keep.yml)
        assert name.startswith(prefixes(role)) and not internal(role, name), name
        assert isinstance(why, str) and why.strip(), f"roles/{role}: say what {name} is"


@pytest.mark.parametrize("role", ROLES)
def test_every_read_from_another_stage_is_declared_with_its_source(role):
    reads = interface(role)["reads"]
    found = read_names(role)
    undeclared = sorted(f"{n} ({', '.join(sorted(w))})" for n, w in found.items() if n not in reads)
    assert not undeclared, f"roles/{role}: declare under reads in meta/interface.yml: {undeclared}"
    unused = sorted(set(reads) - set(found))
    assert not unused, f"roles/{role}/meta/interface.yml reads what no task reads: {unused}"
    plays = "\n".join(p.read_text() for p in (REPO_ROOT / "playbooks").glob("*.yml"))
    for name, entry in reads.items():
        assert entry.get("why"), f"roles/{role}: say why it reads {name}"
        source = entry.get("from")
        if source == "play":
            assert name.startswith("kindling_") and name in plays, f"{name}: no playbook names it"
        else:
            assert source in ROLES and source != role, f"roles/{role}: {name} from {source!r}?"
            assert name in interface(source)["sets"] or name in options(source), (
                f"roles/{role} reads {name} from {source}, which neither sets it "
                "(meta/interface.yml) nor takes it as an input (argument_specs)"
            )


def test_the_scanner_sees_a_read_and_a_made_name():
    # The checks above can fail: a read with another role's prefix, and a non-internal name.
    tasks = [
        {"name": "x", "ansible.builtin.set_fact": {"cuda_thing": "{{ nvidia_driver_outcome }}"}},
        {"name": "y", "ansible.builtin.debug": {"msg": "hi"}, "register": "cuda__ok"},
    ]
    made = list(made_names(tasks))
    assert made == [("set_fact", "cuda_thing"), ("register", "cuda__ok")]
    assert not internal("cuda", "cuda_thing") and internal("cuda", "cuda__ok")
    assert internal("conda_pytorch", "conda_pytorch__plan")
    assert list(expressions(tasks)) == [" nvidia_driver_outcome "]


def test_the_cuda_repository_is_added_alike_by_both_roles():
    """nvidia_driver and cuda write the same source file: what shapes it must be the same."""

    def call(path: str) -> Dict:
        tasks = yaml.safe_load((REPO_ROOT / path).read_text())
        (task,) = [t for t in tasks if "apt_repository_trust" in t]
        return task["apt_repository_trust"]

    driver = call("roles/nvidia_driver/tasks/repository.yml")
    cuda = call("roles/cuda/tasks/install-packages.yml")
    assert driver["name"] == cuda["name"] and driver["header"] == cuda["header"]
    fields = ("uris", "key_url", "fingerprint", "keyring", "dest", "replaces")
    # Each from its role's gpu_stack_plan result (repository.cuda), the same field.
    for key in fields:
        mine, theirs = str(driver[key]), str(cuda[key])
        assert re.sub(r"nvidia_driver__cuda_repo|cuda__repo", "R", mine) == re.sub(
            r"nvidia_driver__cuda_repo|cuda__repo", "R", theirs
        ), key
