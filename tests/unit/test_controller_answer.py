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

    def run(self, tmp=None, task_vars=None):
        return {"from_base": True}

    def _execute_module(self, module_name, module_args, task_vars):
        self.module_runs.append((module_name, module_args))
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
