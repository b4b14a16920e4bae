"""library/role_inputs_plan.py in-process: what the action plugin sends it, and what comes back.

The action plugin (action_plugins/role_inputs_plan.py) reads the role's argument_specs and
passes the spec without defaults, the effective values, the no_log ones apart in
secret_values, and ``checks``. These tests send the same for the jupyter role.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import pytest
import role_inputs_plan as role_inputs_module
import yaml
from ansible.module_utils import role_inputs as ri
from ansible.module_utils.testing import patch_module_args
from conftest import REPO_ROOT
from test_nvidia_smi_facts import ansible_bin

ROLE = REPO_ROOT / "roles" / "jupyter"
OPTIONS = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]
OPTIONS = OPTIONS["main"]["options"]
SPEC = {name: {k: v for k, v in o.items() if k != "default"} for name, o in OPTIONS.items()}
SECRET_NAMES = sorted(name for name, o in OPTIONS.items() if o.get("no_log"))
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
PLAIN = "hunter2-plaintext-password"
HASH = "argon2:$argon2id$v=19$m=10240,t=10,p=8$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo"


def effective(**changes):
    values = {k: v for k, v in DEFAULTS.items() if "{{" not in str(v)}
    values["jupyter_kernel_python"] = "/opt/conda/envs/pytorch/bin/python"
    # A name no unit on the test machine has, so the host check sees no collision.
    values["jupyter_service_name"] = "kindling-unit-test-jupyter"
    values.update(changes)
    return values


def module_args(checks="all", secret=None, **changes):
    values = effective(**changes)
    secret_values = {name: values.pop(name) for name in SECRET_NAMES if name in values}
    if secret is not None:
        secret_values["jupyter_password_hash"] = secret
    return {
        "role": "jupyter",
        "spec": SPEC,
        "values": values,
        "secret_values": secret_values,
        "context": {"machine": "x86_64"},
        "checks": checks,
    }


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        role_inputs_module.main()
    out = capsys.readouterr().out
    return exc.value.code != 0, json.loads(out), out


def test_the_password_hash_is_the_secret():
    assert SECRET_NAMES == ["jupyter_password_hash"]


def test_good_inputs_pass(capsys):
    args = module_args(secret=HASH)
    failed, result, out = run_module(args, capsys)
    assert not failed, result
    assert result["changed"] is False
    assert result["problems"] == []
    assert result["msg"] == f"jupyter: {len(SPEC)} inputs checked"
    assert result["effective"] == args["values"]
    assert "jupyter_password_hash" not in result["effective"]
    assert HASH not in out


def test_bad_inputs_fail_with_one_problem_each(capsys):
    failed, result, _ = run_module(module_args(jupyter_port=0, jupyter_user="Bad User"), capsys)
    assert failed
    assert result["problems"] == [
        "jupyter_user is 'Bad User': a user or group name must be lower-case letters, digits, _ "
        "and - (at most 32, starting with a letter or _); give a value like jupyter",
        "jupyter_port is 0: it must be from 1 to 65535 (a TCP port)",
    ]
    assert result["msg"] == (
        "jupyter: 2 input(s) refused before any change:\n" + "\n".join(result["problems"])
    )


def test_a_rule_fails_the_module(capsys):
    failed, result, _ = run_module(module_args(jupyter_ip="0.0.0.0"), capsys)
    assert failed
    assert len(result["problems"]) == 1
    assert "ssh -N -L 8888:localhost:8888 user@host" in result["problems"][0]


def test_a_type_error_is_ansibles_message(capsys):
    failed, result, _ = run_module(module_args(jupyter_port="eighty"), capsys)
    assert failed
    assert len(result["problems"]) == 1
    assert result["problems"][0].startswith(
        "argument 'jupyter_port' is of type str and we were unable to convert to int"
    )


def test_a_bad_secret_is_named_but_never_shown(capsys):
    failed, result, out = run_module(module_args(secret=PLAIN), capsys)
    assert failed
    assert len(result["problems"]) == 1
    assert result["problems"][0].startswith("jupyter_password_hash is (a value hidden by no_log): ")
    assert "never a plain password" in result["problems"][0]
    assert PLAIN not in out
    assert "hunter2" not in out


def test_host_checks_alone_pass_on_a_safe_path(capsys):
    args = module_args(checks="host")
    args["values"] = {
        "jupyter_service_name": "kindling-unit-test-jupyter",
        "jupyter_token_file": "/etc/jupyter/token",
    }
    args["spec"] = {k: SPEC[k] for k in args["values"]}
    failed, result, _ = run_module(args, capsys)
    assert not failed, result
    assert result["problems"] == []


def test_host_checks_refuse_a_token_under_tmp(tmp_path, capsys):
    # The real host: /tmp (1777) is on the way to the file.
    token = str(tmp_path / "token")
    args = module_args(checks="host")
    args["values"] = {"jupyter_token_file": token}
    failed, result, _ = run_module(args, capsys)
    assert failed
    assert result["problems"] == [
        f"jupyter_token_file is {token!r}: /tmp is writable by users other than root (mode 1777); "
        "keep secrets in a root-owned directory that only root can write, such as the default"
    ]


def test_host_checks_do_not_look_at_the_shapes(capsys):
    # checks=host runs after the controller checked the rest: a bad port is not its business.
    args = module_args(checks="host", jupyter_port=0)
    failed, result, _ = run_module(args, capsys)
    assert not failed, result


def test_host_checks_refuse_a_unit_kindling_did_not_write(tmp_path, monkeypatch, capsys):
    unit_dir = tmp_path / "lib" / "systemd" / "system"
    unit_dir.mkdir(parents=True)
    (unit_dir / "jupyter.service").write_text("[Unit]\nDescription=from a package\n")
    monkeypatch.setattr(
        role_inputs_module, "host_findings", functools.partial(ri.host_findings, root=str(tmp_path))
    )
    args = module_args(checks="host", secret=PLAIN, jupyter_service_name="jupyter")
    failed, result, out = run_module(args, capsys)
    assert failed
    assert len(result["problems"]) == 1
    assert result["problems"][0].startswith(
        f"jupyter_service_name is 'jupyter': {unit_dir}/jupyter.service is already installed"
    )
    assert PLAIN not in out


def test_without_role_or_spec_it_says_it_needs_its_action_plugin(capsys):
    failed, result, _ = run_module({"values": {}}, capsys)
    assert failed
    assert result["msg"].startswith("role_inputs_plan runs through its action plugin")


# --- action_plugins/role_inputs_plan.py: stage 1's check of the same values stands ------------

JUPYTER_HOST_VALUES = {
    "jupyter_service_name": "kindling-unit-test-jupyter",
    "jupyter_user": "jupyter",
    "jupyter_home": "/var/lib/jupyter",
    "jupyter_notebook_dir": "/var/lib/jupyter/notebooks",
    "jupyter_token_file": "/etc/jupyter/token",
}
# SSH to port 9 on loopback is refused: a module run there makes the task unreachable.
UNREACHABLE = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9}


@pytest.mark.slow
def test_a_check_of_the_same_values_is_not_made_twice_in_a_run(tmp_path):
    # Stage 1 checks on this machine and registers its result; the later checks are given
    # it as reuse, on a host that refuses SSH: one that ran anything there is unreachable.
    host = dict(
        JUPYTER_HOST_VALUES,
        jupyter_ip="127.0.0.1",
        ansible_connection="local",
        ansible_python_interpreter=sys.executable,
    )
    args = {"role": "jupyter", "role_path": str(REPO_ROOT / "roles" / "jupyter")}
    again = dict(args, reuse="{{ stage1 }}")
    tasks = [
        {"role_inputs_plan": args, "register": "stage1"},
        {"role_inputs_plan": again, "vars": UNREACHABLE},
        {"role_inputs_plan": again, "vars": dict(UNREACHABLE, jupyter_user="alice")},
        {"role_inputs_plan": again, "vars": {"jupyter_port": 0}},
    ]
    for task in tasks[1:]:
        task.update(ignore_unreachable=True, ignore_errors=True)
    stage1, same, changed, bad = run_play(tasks, tmp_path, host)
    assert not stage1.get("failed") and stage1["reused"] is False, stage1
    assert not same.get("unreachable") and not same.get("failed"), same
    assert same["reused"] is True and "checked in stage 1" in same["msg"]
    assert same["effective"] == stage1["effective"]
    assert changed.get("unreachable") is True, changed  # checked again, the host too
    assert bad["failed"] is True
    assert bad["problems"] == ["jupyter_port is 0: it must be from 1 to 65535 (a TCP port)"]


def run_play(tasks, tmp_path, host_vars):
    """ansible-playbook with ``tasks`` against an inventory host of its own: each task's
    result."""
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"target": host_vars}}}))
    playbook = tmp_path / "play.yml"
    playbook.write_text(json.dumps([{"hosts": "target", "gather_facts": False, "tasks": tasks}]))
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_NOCOLOR="1")
    env["ANSIBLE_LOCAL_TEMP"] = str(tmp_path / "local")
    proc = subprocess.run(
        [ansible_bin("ansible-playbook"), "-i", str(inventory), str(playbook)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    text = proc.stdout
    assert "{" in text, proc.stderr[-2000:]
    data, _ = json.JSONDecoder().raw_decode(text[text.index("{") :])
    return [task["hosts"]["target"] for task in data["plays"][0]["tasks"]]
