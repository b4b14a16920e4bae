"""module_utils/controller_answer.py: the shape the action plugins share, on a stand-in for
ActionBase (each plugin's own tests run it through ansible-playbook against a host that
refuses SSH)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import ClassVar

from ansible.module_utils.controller_answer import ControllerAnswer


class StandInActionBase:
    """What the mixin uses of ActionBase: the task's args, run() and _execute_module()."""

    def __init__(self, args):
        self._task = SimpleNamespace(args=args)
        self.module_runs = []
        self.module_vars = []

    def run(self, tmp=None, task_vars=None):
        return {"from_base": True}

    def _execute_module(self, module_name, module_args, task_vars):
        self.module_runs.append((module_name, module_args))
        self.module_vars.append(task_vars)
        return {"changed": False, "read_on": "host"}


class Plan(ControllerAnswer, StandInActionBase):
    MODULE = "example_plan"
    SPEC: ClassVar[dict] = {
        "count": {"type": "int", "required": True},
        "read": {"type": "dict"},
    }
    CONTROLLER_ONLY = ("read",)

    def answer(self, params):
        if params["count"] < 0:
            raise ValueError("count must not be negative")
        if params["count"] == 99:
            raise ValueError("example_plan: already named")
        if params.get("read") is None:
            return None
        return {"changed": False, "items": tuple(range(params["count"])), "read": params["read"]}


def test_an_answer_given_here_runs_nothing_on_the_host():
    action = Plan({"count": "2", "read": {"a": 1}})
    result = action.run(task_vars={})
    assert result == {"from_base": True, "changed": False, "items": [0, 1], "read": {"a": 1}}
    assert action.module_runs == []


def test_without_an_answer_the_module_runs_without_the_controllers_arguments():
    action = Plan({"count": 3})
    assert action.run() == {"from_base": True, "changed": False, "read_on": "host"}
    action = Plan({"count": 3, "read": None})
    action.run()
    assert action.module_runs == [("example_plan", {"count": 3})]


def test_bad_arguments_are_refused_as_the_module_refuses_them():
    action = Plan({"count": "many"})
    result = action.run()
    assert result["failed"] is True
    assert result["msg"].startswith("example_plan: ")
    assert "count" in result["msg"] and action.module_runs == []
    assert "missing required arguments: count" in Plan({}).run()["msg"]


def test_a_refused_plan_names_the_module_once():
    assert Plan({"count": -1, "read": {}}).run()["msg"] == (
        "example_plan: count must not be negative"
    )
    assert Plan({"count": 99, "read": {}}).run()["msg"] == "example_plan: already named"


# --- answer reads the task variables and asks the host for a part of its answer


class PartlyOnHost(ControllerAnswer, StandInActionBase):
    MODULE = "example_check"
    SPEC: ClassVar[dict] = {"names": {"type": "list", "elements": "str", "default": []}}

    def answer(self, params):
        values = {n: self._task_vars[n] for n in params["names"] if n in self._task_vars}
        if "bad" in values.values():
            raise ValueError("a value is bad")
        if "port" not in values:
            return {"changed": False, "values": values, "asked": None}
        asked = self.run_on_host({"checks": "host", "port": values["port"]})
        return {"changed": False, "values": values, "asked": asked}


def test_answer_reads_this_tasks_variables():
    action = PartlyOnHost({"names": ["user", "missing"]})
    result = action.run(task_vars={"user": "jupyter", "port": 8888})
    assert result["values"] == {"user": "jupyter"}
    assert result["asked"] is None and action.module_runs == []
    # Each run sees its own task's variables, not an earlier run's.
    assert action.run(task_vars={"user": "alice"})["values"] == {"user": "alice"}
    assert action.run()["values"] == {}


def test_run_on_host_runs_the_module_with_the_arguments_answer_chose():
    task_vars = {"port": 8888, "user": "jupyter"}
    action = PartlyOnHost({"names": ["port", "user"]})
    result = action.run(task_vars=task_vars)
    # Only what answer chose went to the host, never the task's own arguments.
    assert action.module_runs == [("example_check", {"checks": "host", "port": 8888})]
    assert action.module_vars == [task_vars]
    assert result == {
        "from_base": True,
        "changed": False,
        "values": {"port": 8888, "user": "jupyter"},
        "asked": {"changed": False, "read_on": "host"},
    }


def test_a_refusal_before_the_host_is_asked_runs_nothing_there():
    action = PartlyOnHost({"names": ["port", "user"]})
    result = action.run(task_vars={"port": 8888, "user": "bad"})
    assert result["failed"] is True
    assert result["msg"] == "example_check: a value is bad"
    assert action.module_runs == []


def test_every_action_plugin_shares_the_one_shape():
    """One base for the action plugins' shared logic (issue 33): each mixes ControllerAnswer
    into ActionBase, names its module and validates against that module's spec."""
    import ast

    from conftest import REPO_ROOT

    plugins = sorted(p for p in (REPO_ROOT / "action_plugins").glob("*.py") if not p.is_symlink())
    assert len(plugins) >= 10
    for path in plugins:
        tree = ast.parse(path.read_text())
        (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ActionModule"]
        assert [b.id for b in cls.bases if isinstance(b, ast.Name)] == [
            "ControllerAnswer",
            "ActionBase",
        ], path.name
        module = next(
            n.value.value
            for n in cls.body
            if isinstance(n, ast.Assign) and n.targets[0].id == "MODULE"
        )
        assert module == path.stem and (REPO_ROOT / "library" / f"{module}.py").exists()
