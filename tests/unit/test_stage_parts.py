"""One plan, read by every stage (issue 33): each GPU stage takes its part of the host's plan.

Stage 1 works out the plan once (gpu_preflight's entry point `plan`, module_utils/host_plan.py):
the adopt-mode reads, the catalogue's answer for the whole stack and for each GPU stage's part.
It refuses there what a stage would refuse; each stage takes its part (host_plan's `part`)
before its first change and checks again only when this run changed the driver. There are
no `stack` entry points and no gpu_stack_plan tasks in the stages any more. These tests
hold the wiring to that; module_utils/host_plan.py's decisions are tested in
test_host_plan.py, and a site.yml run in tests/reliability/test_check_mode.py shows it end
to end.
"""

from __future__ import annotations

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


def all_role_tasks():
    for path in sorted(ROLES.glob("*/tasks/*.yml")):
        for t in flat(yaml.safe_load(path.read_text()) or []):
            yield f"{path.parent.parent.name}/{path.name}", t


def test_the_stack_entry_points_are_gone():
    for role in STAGES:
        assert not (ROLES / role / "tasks" / "stack.yml").exists(), role
        specs = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())
        assert "stack" not in specs["argument_specs"], role


def test_stage_1_refuses_what_each_gpu_stage_would_refuse_before_any_change():
    stack = tasks("gpu_preflight", "stack.yml")
    parts = next(t for t in stack if module(t) == "host_plan")
    assert parts["loop"] == list(STAGES)
    var = parts["loop_control"]["loop_var"]
    assert parts["host_plan"] == {
        "part": "{{ " + var + " }}",
        "plan": "{{ gpu_preflight_host_plan }}",
    }
    assert parts["when"] == "gpu_preflight_check_stages | bool"
    # And the whole stack's answer, from the plan, with or without a GPU (issue 34).
    refuse = next(t for t in stack if module(t) == "ansible.builtin.fail")
    assert refuse["ansible.builtin.fail"]["msg"] == "{{ gpu_preflight_host_plan.catalogue.msg }}"
    assert refuse["when"] == [
        "not gpu_preflight_host_plan.catalogue.ok",
        "gpu_preflight_fail_on_incompatible | bool",
    ]


@pytest.mark.parametrize("role", STAGES)
def test_each_stage_takes_its_part_before_its_first_change(role):
    preflight = tasks(role, "preflight.yml")
    takes = [t for t in preflight if module(t) == "host_plan"]
    assert len(takes) == 1
    take = takes[0]["host_plan"]
    assert take["part"] == role and take["plan"] == "{{ gpu_preflight_host_plan }}"
    if role == "nvidia_driver":
        # The driver stage is judged with the driver the plan saw.
        assert "driver_version" not in take
    else:
        # The later stages check again when the driver stage changed the driver.
        assert take["driver_version"] == (
            "{{ ansible_facts['nvidia_smi']['driver_version'] | default('', true) }}"
        )
    before = preflight[: preflight.index(takes[0])]
    # Only reads come first: variables, and the plan a stage alone works out.
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


def test_the_stages_check_nothing_the_plan_has_checked():
    """No stage runs gpu_stack_plan, and the adopt-mode reads happen once, in the plan."""
    found = [
        where
        for where, t in all_role_tasks()
        if module(t) == "gpu_stack_plan"
        or module(t) == "python_interpreter_info"
        or (module(t) == "cuda_toolkit_plan" and "adopt" in (t[module(t)] or {}))
        or (module(t) == "torch_cuda_facts" and (t[module(t)] or {}).get("depth") == "build")
    ]
    assert found == []


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
    includes = sorted(
        (where, t["ansible.builtin.include_role"]["tasks_from"])
        for where, t in reads
        if module(t) == "ansible.builtin.include_role"
    )
    # The stages include the plan entry point (which includes detect when this run has not
    # read the GPUs); verify, run alone, the plan when this run has none, else detect.
    assert includes == [
        ("conda_pytorch/preflight.yml", "plan"),
        ("conda_pytorch/verify.yml", "detect"),
        ("conda_pytorch/verify.yml", "plan"),
        ("cuda/preflight.yml", "plan"),
        ("nvidia_driver/preflight.yml", "plan"),
    ]
    plan = yaml.safe_load((ROLES / "gpu_preflight" / "tasks" / "plan.yml").read_text())
    assert plan[0]["ansible.builtin.include_tasks"] == "detect.yml"
    assert plan[0]["when"] == "not gpu_preflight_gpus_read | default(false)"
    for where, t in reads:
        if module(t) == "ansible.builtin.include_role":
            tasks_from = t["ansible.builtin.include_role"]["tasks_from"]
            if tasks_from == "detect":
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
