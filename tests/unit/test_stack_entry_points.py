"""One stack, checked once: each GPU stage's `stack` entry point (tasks/stack.yml).

The preflight runs every stage's entry point before any change; the stage's own preflight
imports the same file, which passes the earlier result back to gpu_stack_check (reuse),
so the stage gets the preflight's check unless an input changed. These tests hold the
wiring to that; module_utils/stack_check.py's reuse is tested in test_gpu_stack_check.py,
and a site.yml run in tests/reliability/test_check_mode.py shows it end to end.
"""

from __future__ import annotations

import re

import pytest
import yaml
from conftest import REPO_ROOT

STAGES = ("nvidia_driver", "cuda", "conda_pytorch")
ROLES = REPO_ROOT / "roles"


def tasks(role, name):
    return yaml.safe_load((ROLES / role / "tasks" / name).read_text())


def flat(items):
    """Tasks, with a block's tasks in place of the block."""
    for t in items:
        yield t
        for key in ("block", "rescue", "always"):
            yield from flat(t.get(key) or [])


def module(t):
    return next(
        (
            k
            for k in t
            if k
            not in (
                "name",
                "register",
                "when",
                "vars",
                "loop",
                "loop_control",
                "check_mode",
                "changed_when",
                "failed_when",
                "tags",
                "block",
            )
        ),
        None,
    )


def test_the_preflight_runs_every_stages_entry_point_before_any_change():
    stack = tasks("gpu_preflight", "stack.yml")
    include = next(t for t in stack if "ansible.builtin.include_role" in t)
    assert include["loop"] == list(STAGES)
    args = include["ansible.builtin.include_role"]
    assert args["tasks_from"] == "stack"
    assert args["name"] == "{{ " + include["loop_control"]["loop_var"] + " }}"
    # Its tasks keep the preflight's tags, so --tags preflight runs them too.
    assert set(args["apply"]["tags"]) == {"gpu_preflight", "preflight"}
    assert include["when"] == "gpu_preflight_check_stages | bool"


@pytest.mark.parametrize("role", STAGES)
def test_each_stage_imports_its_entry_point_before_its_first_change(role):
    preflight = tasks(role, "preflight.yml")
    imports = [t for t in preflight if t.get("ansible.builtin.import_tasks") == "stack.yml"]
    assert len(imports) == 1
    before = preflight[: preflight.index(imports[0])]
    # Only reads come first: variables, and the GPU read a stage alone needs.
    assert {module(t) for t in before} <= {
        "ansible.builtin.include_tasks",
        "ansible.builtin.include_vars",
        "ansible.builtin.include_role",
    }
    for t in before:
        if module(t) == "ansible.builtin.include_role":
            assert t[module(t)]["name"] == "gpu_preflight"
            # The host's plan (it reads the GPUs first when this run has not).
            assert t[module(t)]["tasks_from"] == "plan"
            assert t["when"] == (
                "gpu_preflight_host_plan is not defined or kindling_effective_inputs is not defined"
            )


def _gpu_reads():
    """(role/tasks/file, task) of every nvidia_smi_facts task and every include of the
    preflight's `detect` entry point in the roles."""
    found = []
    for path in sorted(ROLES.glob("*/tasks/*.yml")):
        for t in flat(yaml.safe_load(path.read_text()) or []):
            where = f"{path.parent.parent.name}/{path.name}"
            if module(t) == "nvidia_smi_facts":
                found.append((where, t))
            elif module(t) == "ansible.builtin.include_role":
                args = t["ansible.builtin.include_role"]
                if args.get("name") == "gpu_preflight" and args.get("tasks_from") in (
                    "detect",
                    "plan",
                ):
                    found.append((where, t))
    return found


def test_the_gpus_are_detected_in_one_place():
    """The first read of a host's GPUs is gpu_preflight's `detect`; a stage run alone includes
    it, under the same condition everywhere. The other nvidia_smi_facts runs read again after
    something changed what nvidia-smi reports, or before the throughput check."""
    reads = _gpu_reads()
    detection = [
        t for where, t in reads if module(t) == "nvidia_smi_facts" and where.endswith("detect.yml")
    ]
    assert len(detection) == 1 and detection[0]["nvidia_smi_facts"]["pci_facts"] is True
    includes = {
        where: t["ansible.builtin.include_role"]["tasks_from"]
        for where, t in reads
        if module(t) == "ansible.builtin.include_role"
    }
    # The stages include the plan entry point (which includes detect when this run has not
    # read the GPUs); verify, run alone, only detect.
    assert includes == {
        "nvidia_driver/preflight.yml": "plan",
        "cuda/preflight.yml": "plan",
        "conda_pytorch/preflight.yml": "plan",
        "conda_pytorch/verify.yml": "detect",
    }
    plan = yaml.safe_load((ROLES / "gpu_preflight" / "tasks" / "plan.yml").read_text())
    assert plan[0]["ansible.builtin.include_tasks"] == "detect.yml"
    assert plan[0]["when"] == "not gpu_preflight_gpus_read | default(false)"
    for where, t in reads:
        if module(t) == "ansible.builtin.include_role" and includes[where] == "detect":
            assert t["when"] == "not gpu_preflight_gpus_read | default(false)", where
    again = sorted(
        where
        for where, t in reads
        if module(t) == "nvidia_smi_facts" and not where.endswith("detect.yml")
    )
    assert again == [
        "gpu_check/facts.yml",
        "nvidia_driver/read-after-change.yml",
        "nvidia_driver/verify-driver.yml",
    ]
    for where, t in reads:
        if where.startswith("nvidia_driver/"):
            assert t.get("when"), f"{where} reads again only after a change"


@pytest.mark.parametrize("role", STAGES)
def test_each_entry_point_passes_its_own_earlier_result_back(role):
    checks = [t for t in flat(tasks(role, "stack.yml")) if module(t) == "gpu_stack_check"]
    assert len(checks) == 1
    check = checks[0]
    assert check["gpu_stack_check"]["reuse"] == "{{ " + check["register"] + " | default(omit) }}"


@pytest.mark.parametrize("role", STAGES)
def test_an_entry_point_only_reads(role):
    allowed = {
        "ansible.builtin.set_fact",
        "ansible.builtin.assert",
        "gpu_stack_check",
        "torch_cuda_facts",
        "cuda_toolkit_state",  # with adopt: reads only
        "python_interpreter_facts",
    }
    assert {module(t) for t in flat(tasks(role, "stack.yml"))} <= allowed


@pytest.mark.parametrize("role", STAGES)
def test_an_entry_points_reads_are_made_once_per_run(role):
    # A read in stack.yml is skipped when this run already read the same path, and what it
    # read is kept under a name the skipped task does not overwrite.
    stack = list(flat(tasks(role, "stack.yml")))
    reads = [
        t
        for t in stack
        if module(t) in {"torch_cuda_facts", "cuda_toolkit_state", "python_interpreter_facts"}
    ]
    assert reads, "nothing read"
    for read in reads:
        register = read["register"]
        assert register.endswith("_read")
        whens = read["when"] if isinstance(read["when"], list) else [read["when"]]
        assert any("!=" in w for w in whens), f"{register}: read again every time"
        keep = next(t for t in stack if t.get("when") == f"{register} is not skipped")
        assert module(keep) == "ansible.builtin.set_fact"


@pytest.mark.parametrize("role", STAGES)
def test_the_entry_points_spec_matches_main_and_names_every_input_it_reads(role):
    specs = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())
    main = specs["argument_specs"]["main"]["options"]
    entry = specs["argument_specs"]["stack"]["options"]
    for name, option in entry.items():
        assert name in main, name
        for key in ("type", "choices", "elements"):
            assert option.get(key) == main[name].get(key), f"{name}.{key}"
    text = (ROLES / role / "tasks" / "stack.yml").read_text()
    modules = {p.stem for p in (REPO_ROOT / "library").glob("*.py")}
    read = (
        set(re.findall(r"\b(" + role + r"_[a-z0-9_]+)\b", text))
        - modules
        - {n for n in re.findall(r"\b(" + role + r"__[a-z0-9_]+)\b", text)}
    )
    set_here = {
        key for t in flat(yaml.safe_load(text)) for key in (t.get("ansible.builtin.set_fact") or {})
    }
    assert read - set_here <= set(entry), sorted(read - set_here - set(entry))


def _includes(node):
    """Every include_role/import_role argument dict in a loaded YAML document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
                if isinstance(value, dict):
                    yield value
            else:
                yield from _includes(value)
    elif isinstance(node, list):
        for item in node:
            yield from _includes(item)


def test_a_declared_entry_point_is_included_by_its_name_so_ansible_validates_it():
    # Ansible picks the argument spec by tasks_from as written: "verify.yml" finds no entry
    # point "verify.yml" and validates nothing; "verify" runs the spec's validation first.
    entry_points = {
        spec.parent.parent.name: set(yaml.safe_load(spec.read_text())["argument_specs"])
        for spec in ROLES.glob("*/meta/argument_specs.yml")
    }
    files = [
        *(REPO_ROOT / "playbooks").glob("*.yml"),
        *ROLES.glob("*/tasks/*.yml"),
        *(REPO_ROOT / "molecule").glob("*/*.yml"),
    ]
    checked, unvalidated = 0, []
    for path in files:
        for include in _includes(yaml.safe_load(path.read_text())):
            role, tasks_from = str(include.get("name", "")), include.get("tasks_from")
            if not tasks_from or "{{" in role:
                continue
            name = str(tasks_from).removesuffix(".yml")
            if name in entry_points.get(role, set()):
                checked += 1
                if tasks_from != name:
                    unvalidated.append(f"{path.relative_to(REPO_ROOT)}: {role} {tasks_from}")
    assert checked >= 6
    assert not unvalidated, unvalidated
