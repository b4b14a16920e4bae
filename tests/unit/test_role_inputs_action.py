"""action_plugins/role_inputs_plan.py in-process: inputs are checked once a run.

site.yml's stage 1 checks every role's inputs; each role checks its own again as its first
step, passing stage 1's result as ``reuse``. The plugin runs here on Ansible's own
ActionBase, DataLoader and Templar, with the task's variables as a play would give them
for the jupyter role; the rule checks (module_utils/role_inputs.check_role) and the module
runs on the host (_execute_module) are counted.
"""

from __future__ import annotations

import importlib.util
import json
from types import SimpleNamespace

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from conftest import REPO_ROOT

_spec = importlib.util.spec_from_file_location(
    "role_inputs_action", REPO_ROOT / "action_plugins" / "role_inputs_plan.py"
)
action = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(action)

ROLE = REPO_ROOT / "roles" / "jupyter"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
OPTIONS = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]
OPTIONS = OPTIONS["main"]["options"]
HASH = "argon2:$argon2id$v=19$m=10240,t=10,p=8$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo"


def jupyter_vars(**changes):
    """The task variables inside the jupyter role: its defaults (the templated ones given
    plain values), the role's name and path, and the host's facts."""
    values = {k: v for k, v in DEFAULTS.items() if k in OPTIONS and "{{" not in str(v)}
    values["jupyter_kernel_python"] = "/opt/conda/envs/pytorch/bin/python"
    values["jupyter_service_name"] = "kindling-unit-test-jupyter"
    values.update(changes)
    return dict(
        values,
        role_name="jupyter",
        role_path=str(ROLE),
        ansible_facts={"architecture": "x86_64"},
    )


class Counted:
    """The plugin's rule checks and module runs on the host, counted."""

    def __init__(self, monkeypatch):
        self.rule_checks = 0
        self.module_runs = []
        self.host_answer = {"changed": False, "problems": []}
        real = action.role_inputs.check_role

        def check_role(*args, **kwargs):
            self.rule_checks += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(action.role_inputs, "check_role", check_role)

    def run(self, task_vars, **args):
        loader = DataLoader()
        task = SimpleNamespace(args=args, async_val=0, check_mode=False, action="role_inputs_plan")
        connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir="/nonexistent"))
        plugin = action.ActionModule(
            task, connection, None, loader, Templar(loader=loader, variables=task_vars)
        )

        def execute_module(module_name, module_args, task_vars):
            self.module_runs.append((module_name, module_args))
            return dict(self.host_answer)

        plugin._execute_module = execute_module
        return plugin.run(task_vars=task_vars)


@pytest.fixture
def counted(monkeypatch):
    return Counted(monkeypatch)


@pytest.fixture
def stage1(counted):
    """Stage 1's registered result for the jupyter role, the counts then reset."""
    result = counted.run(jupyter_vars())
    assert not result.get("failed"), result
    counted.rule_checks, counted.module_runs = 0, []
    return result


def test_the_first_check_checks_everything(counted):
    result = counted.run(jupyter_vars())
    assert not result.get("failed"), result
    assert result["reused"] is False
    assert result["msg"].startswith("jupyter: ") and result["msg"].endswith(" inputs checked")
    assert counted.rule_checks == 1
    ((module, args),) = counted.module_runs
    assert module == "role_inputs_plan" and args["checks"] == "host"
    assert args["values"]["jupyter_service_name"] == "kindling-unit-test-jupyter"
    assert result["effective"]["jupyter_port"] == DEFAULTS["jupyter_port"]
    assert "jupyter_password_hash" not in result["effective"]
    assert result["secret_set"] == []
    assert result["context"] == {"machine": "x86_64"}


def test_the_same_values_again_are_stage_1s_check(counted, stage1):
    result = counted.run(jupyter_vars(), reuse=stage1)
    assert not result.get("failed"), result
    assert result["reused"] is True
    assert "checked in stage 1" in result["msg"]
    assert counted.rule_checks == 0  # no rule check
    assert counted.module_runs == []  # nothing ran on the host
    # The result carries what was checked, so a later check can stand on it in turn.
    for key in ("role", "entry_point", "effective", "context", "secret_set"):
        assert result[key] == stage1[key], key
    again = counted.run(jupyter_vars(), reuse=result)
    assert again["reused"] is True and counted.module_runs == []


def test_a_changed_value_is_checked_again(counted, stage1):
    # A play's vars can differ from the inventory's.
    result = counted.run(jupyter_vars(jupyter_port=8890), reuse=stage1)
    assert not result.get("failed"), result
    assert result["reused"] is False
    assert "stage 1" not in result["msg"]
    assert counted.rule_checks == 1
    assert len(counted.module_runs) == 1  # the whole role, the host's part too
    assert result["effective"]["jupyter_port"] == 8890


def test_a_bad_changed_value_is_refused(counted, stage1):
    result = counted.run(jupyter_vars(jupyter_port=0), reuse=stage1)
    assert result["failed"] is True
    assert result["problems"] == ["jupyter_port is 0: it must be from 1 to 65535 (a TCP port)"]
    assert result["msg"] == (
        "jupyter: 1 input(s) refused before any change:\n" + result["problems"][0]
    )
    assert counted.module_runs == []  # refused on the controller, before the host


def test_a_changed_host_value_is_checked_on_the_host_again(counted, stage1):
    counted.host_answer = {
        "failed": True,
        "problems": ["jupyter_user is 'alice': an account that is not the role's"],
    }
    result = counted.run(jupyter_vars(jupyter_user="alice"), reuse=stage1)
    ((_, args),) = counted.module_runs
    assert args["values"]["jupyter_user"] == "alice"
    assert result["failed"] is True
    assert result["problems"] == counted.host_answer["problems"]


def test_a_value_no_longer_set_is_checked_again(counted, stage1):
    task_vars = jupyter_vars()
    del task_vars["jupyter_port"]
    result = counted.run(task_vars, reuse=stage1)
    assert result["reused"] is False and counted.rule_checks == 1


@pytest.mark.parametrize(
    "earlier",
    [
        pytest.param({"failed": True}, id="failed"),
        pytest.param({"role": "dcgm_exporter"}, id="another-role"),
        pytest.param({"entry_point": "other"}, id="another-entry-point"),
        pytest.param({"context": {"machine": "aarch64"}}, id="another-host-architecture"),
    ],
)
def test_another_check_does_not_stand(counted, stage1, earlier):
    result = counted.run(jupyter_vars(), reuse=dict(stage1, **earlier))
    assert not result.get("failed"), result
    assert result["reused"] is False
    assert counted.rule_checks == 1 and len(counted.module_runs) == 1


def test_a_result_without_what_it_checked_does_not_stand(counted, stage1):
    earlier = {k: v for k, v in stage1.items() if k != "effective"}
    assert counted.run(jupyter_vars(), reuse=earlier)["reused"] is False
    assert counted.rule_checks == 1


def test_with_a_secret_set_the_role_is_checked_again(counted):
    first = counted.run(jupyter_vars(jupyter_password_hash=HASH))
    assert not first.get("failed"), first
    assert first["secret_set"] == ["jupyter_password_hash"]
    assert HASH not in json.dumps(first)  # the secret is never kept in a result
    counted.rule_checks, counted.module_runs = 0, []
    result = counted.run(jupyter_vars(jupyter_password_hash=HASH), reuse=first)
    assert result["reused"] is False
    assert counted.rule_checks == 1
    assert HASH not in json.dumps(result)


def test_a_secret_set_after_stage_1_is_checked(counted, stage1):
    result = counted.run(jupyter_vars(jupyter_password_hash="hunter2"), reuse=stage1)
    assert result["failed"] is True
    assert result["problems"][0].startswith("jupyter_password_hash is (a value hidden by no_log)")
    assert "hunter2" not in json.dumps(result)


def test_a_secret_emptied_after_stage_1_is_checked_again(counted):
    first = counted.run(jupyter_vars(jupyter_password_hash=HASH))
    counted.rule_checks = 0
    result = counted.run(jupyter_vars(), reuse=first)
    assert result["reused"] is False and counted.rule_checks == 1


def test_bad_arguments_are_refused_with_the_modules_name(counted):
    result = counted.run(jupyter_vars(), reuse="stage 1")
    assert result["failed"] is True
    assert result["msg"].startswith("role_inputs_plan: ") and "reuse" in result["msg"]
    assert counted.rule_checks == 0 and counted.module_runs == []


def test_outside_a_role_it_says_so_with_the_modules_name(counted):
    task_vars = jupyter_vars()
    del task_vars["role_name"], task_vars["role_path"]
    result = counted.run(task_vars)
    assert result["failed"] is True
    assert result["msg"] == (
        "role_inputs_plan: it runs inside a role (role_name and role_path are not set)"
    )
