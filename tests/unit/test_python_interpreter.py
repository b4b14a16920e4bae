"""module_utils/python_interpreter.py and library/python_interpreter_info.py, with real
interpreters and real files: this test's own Python, a missing path, a file without the
execute bit, scripts that fail or print something else; and the conda_pytorch preflight's
use of the module (its refusal message and the version gpu_stack_plan gets).
"""

from __future__ import annotations

import json
import subprocess
import sys

import jinja2
import pytest
import python_interpreter_info
import yaml
from ansible.module_utils.python_interpreter import (
    inspect_path,
    parse_version,
    ran,
    read_interpreter,
    summary,
    version_argv,
)
from ansible.module_utils.testing import patch_module_args
from conftest import REPO_ROOT

THIS_PYTHON = "{}.{}".format(*sys.version_info[:2])


def run(argv):
    """What the module's run_command does for read_interpreter: argv, no shell."""
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def never_run(argv):
    raise AssertionError(f"must not run {argv}")


def script(tmp_path, name, text, mode=0o755):
    path = tmp_path / name
    path.write_text(text)
    path.chmod(mode)
    return str(path)


# --- module_utils/python_interpreter.py


def test_version_argv_runs_the_interpreter_itself_without_a_shell():
    argv = version_argv("/usr/bin/python3")
    assert argv[:2] == ["/usr/bin/python3", "-c"]
    assert len(argv) == 3
    out = subprocess.run(
        [sys.executable, *argv[1:]], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == THIS_PYTHON


def test_this_python_is_read_with_its_version():
    found = read_interpreter(sys.executable, run)
    assert found == {
        "interpreter": sys.executable,
        "exists": True,
        "executable": True,
        "version": THIS_PYTHON,
        "error": "",
    }
    assert summary(found) == f"{sys.executable} is Python {THIS_PYTHON}"


def test_a_link_to_an_interpreter_is_read_like_a_venv_bin_python(tmp_path):
    link = tmp_path / "python"
    link.symlink_to(sys.executable)
    found = read_interpreter(str(link), run)
    assert (found["exists"], found["executable"], found["version"]) == (True, True, THIS_PYTHON)


def test_a_missing_path_is_reported_and_not_run(tmp_path):
    missing = str(tmp_path / "nope" / "bin" / "python")
    found = read_interpreter(missing, never_run)
    assert found == {
        "interpreter": missing,
        "exists": False,
        "executable": False,
        "version": None,
        "error": "",
    }
    assert summary(found) == f"{missing} does not exist"


def test_a_dangling_link_counts_as_missing(tmp_path):
    link = tmp_path / "python"
    link.symlink_to(tmp_path / "removed-env" / "bin" / "python3")
    assert inspect_path(str(link)) == {"exists": False, "executable": False}
    assert read_interpreter(str(link), never_run)["version"] is None


def test_a_file_without_the_execute_bit_is_not_executable_and_not_run(tmp_path):
    path = script(tmp_path, "python", "#!/bin/sh\necho 3.12\n", mode=0o644)
    found = read_interpreter(path, never_run)
    assert (found["exists"], found["executable"], found["version"]) == (True, False, None)
    assert summary(found) == f"{path} is not an executable file"


def test_a_directory_is_not_an_interpreter(tmp_path):
    found = read_interpreter(str(tmp_path), never_run)
    assert (found["exists"], found["executable"], found["version"]) == (True, False, None)


def test_a_script_that_exits_non_zero_says_so_with_its_output(tmp_path):
    path = script(tmp_path, "python", "#!/bin/sh\necho 'libpython3.12.so: not found' >&2\nexit 3\n")
    found = read_interpreter(path, run)
    assert (found["exists"], found["executable"], found["version"]) == (True, True, None)
    assert "exists and is executable but does not run as a Python interpreter" in found["error"]
    assert "rc=3" in found["error"]
    assert "libpython3.12.so: not found" in found["error"]
    assert summary(found) == found["error"]


def test_a_program_that_prints_no_version_is_not_taken_for_python(tmp_path):
    path = script(tmp_path, "python", "#!/bin/sh\necho hello\n")
    found = read_interpreter(path, run)
    assert found["version"] is None
    assert "did not print its Python version" in found["error"]
    assert "'hello'" in found["error"]


def test_an_executable_file_without_a_shebang_cannot_be_run(tmp_path):
    path = script(tmp_path, "python", "this is not a program\n")
    found = read_interpreter(path, run)
    assert found["version"] is None
    assert found["error"].startswith(f"{path} exists and is executable but could not be run: ")
    assert "Exec format error" in found["error"]


@pytest.mark.parametrize(
    "rc, stdout, stderr, version, says",
    [
        (0, "3.12\n", "", "3.12", ""),
        (0, "3.6", "", "3.6", ""),
        (0, "2.7\n", "", "2.7", ""),
        (0, "", "", None, "printed 'nothing'"),
        (0, "Python 3.12.3\n", "", None, "did not print its Python version"),
        (0, "3\n", "", None, "did not print its Python version"),
        (1, "", "", None, "rc=1: no output"),
        (127, "3.12\n", "", None, "rc=127: 3.12"),
        (2, "", "a\nb\nc\nd\ne\nf\n", None, "rc=2: b | c | d | e | f"),
    ],
)
def test_parse_version(rc, stdout, stderr, version, says):
    got, error = parse_version("/p/python", rc, stdout, stderr)
    assert got == version
    assert (error == "") if not says else (says in error and error.startswith("/p/python "))


# --- library/python_interpreter_info.py, in-process with the real run_command


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        python_interpreter_info.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("check_mode", [False, True])
def test_module_reads_this_python_also_in_check_mode(capsys, check_mode):
    args = {"path": sys.executable, **({"_ansible_check_mode": True} if check_mode else {})}
    failed, result = run_module(args, capsys)
    assert not failed
    assert result["changed"] is False
    assert result["version"] == THIS_PYTHON
    assert (result["exists"], result["executable"], result["interpreter"]) == (
        True,
        True,
        sys.executable,
    )
    assert "error" not in result
    assert "ansible_facts" not in result
    # no "path" key: Ansible would add the file's owner, mode, size and state to the result
    assert not {"path", "mode", "owner", "state"} & set(result)


def test_module_reports_a_missing_interpreter_without_failing(tmp_path, capsys):
    missing = str(tmp_path / "bin" / "python")
    failed, result = run_module({"path": missing, "_ansible_check_mode": True}, capsys)
    assert not failed, "the role refuses it, with its own message"
    assert (result["exists"], result["executable"], result["version"]) == (False, False, None)
    assert result["msg"] == f"{missing} does not exist"


def test_module_fails_with_the_reason_when_the_interpreter_does_not_run(tmp_path, capsys):
    path = script(tmp_path, "python", "#!/bin/sh\necho broken venv >&2\nexit 1\n")
    failed, result = run_module({"path": path}, capsys)
    assert failed
    assert "does not run as a Python interpreter (rc=1: broken venv)" in result["msg"]
    assert result["version"] is None and result["executable"] is True


def test_module_words_an_exec_format_error_instead_of_run_commands_bare_text(tmp_path, capsys):
    path = script(tmp_path, "python", "not a program\n")
    failed, result = run_module({"path": path}, capsys)
    assert failed
    assert result["msg"].startswith(f"{path} exists and is executable but could not be run: ")
    assert result["msg"] != "Error executing command."


# --- the conda_pytorch preflight's use of it (the interpreter is read in the host's plan,
# module_utils/host_plan.py; tests/unit/test_host_plan.py holds the read and the version)


def render(text, **variables):
    return jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(text).render(variables)


@pytest.mark.parametrize(
    "mode, python, venv_python, advice",
    [
        (
            "adopt",
            "/opt/envs/gone/bin/python",
            "/usr/bin/python3",
            "point conda_pytorch_python at the existing environment's bin/python",
        ),
        ("venv", "", "/opt/none/python3", "set conda_pytorch_venv_python to the system python3"),
    ],
)
def test_a_missing_interpreter_is_refused_with_the_roles_message(mode, python, venv_python, advice):
    from ansible.module_utils import host_plan

    inputs = {
        "conda_pytorch_python": python,
        "conda_pytorch_backend": "venv",
        "conda_pytorch_venv_python": venv_python,
    }
    args = host_plan.interpreter_read_args(inputs, None)
    path = python if mode == "adopt" else venv_python
    assert args == {"path": path}
    found = read_interpreter(path, never_run)
    part = host_plan.torch_part(inputs, [], "", 0, found)
    assert part["mode"] == mode and part["base_python_usable"] is False and part["check"] is None
    tasks = yaml.safe_load(
        (REPO_ROOT / "roles" / "conda_pytorch" / "tasks" / "preflight.yml").read_text()
    )
    refuse = next(t for t in tasks if t.get("name") == "Refuse a missing interpreter")
    variables = {"conda_pytorch__part": {"part": part}, "conda_pytorch_mode": mode}
    passed = render("{{ " + refuse["ansible.builtin.assert"]["that"] + " }}", **variables)
    assert passed == "False"
    message = " ".join(render(refuse["ansible.builtin.assert"]["fail_msg"], **variables).split())
    assert message == f"{path} is not an executable interpreter: {advice}."


@pytest.mark.parametrize(
    "printed, version", [("3.12.3", "3.12"), ("3.8.10", "3.8"), ("3.13", "3.13")]
)
def test_ran_is_what_read_interpreter_says_of_an_interpreter_that_ran(printed, version):
    assert ran("/opt/conda/bin/python", printed) == {
        "interpreter": "/opt/conda/bin/python",
        "exists": True,
        "executable": True,
        "version": version,
        "error": "",
    }


@pytest.mark.parametrize("printed", [None, "", "3", "three.twelve", "3.x.1"])
def test_ran_without_a_version_gives_no_answer(printed):
    assert ran("/opt/conda/bin/python", printed) is None


def test_ran_agrees_with_read_interpreter_on_this_python():
    found = read_interpreter(sys.executable, run)
    printed = ".".join(str(v) for v in sys.version_info[:3])
    assert ran(sys.executable, printed) == found
