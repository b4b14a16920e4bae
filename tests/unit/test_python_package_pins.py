"""library/python_package_pins_plan.py: the release of a pinned package that suits an interpreter.

The interpreter is the test's own (``sys.executable``, whatever its version), a fake one
in tmp_path that prints "3.10", or a path that does not exist with ``python_version``.
"""

from __future__ import annotations

import json
import stat
import sys

import pytest
import python_package_pins_plan
from ansible.module_utils.stack_plan import python_package_pin
from ansible.module_utils.testing import patch_module_args

IPYKERNEL = {"name": "ipykernel", "version": "", "variable": "jupyter_ipykernel_version"}


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        python_package_pins_plan.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def make_python(tmp_path, output="3.10", rc=0):
    script = tmp_path / "python3"
    script.write_text(
        f'#!/bin/sh\nprintf \'%s\\n\' "$@" > "{tmp_path / "argv.txt"}"\necho {output}\nexit {rc}\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(script)


def test_own_interpreter_gets_the_pin_for_its_version(capsys):
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    failed, result = run_module(
        {
            "python": sys.executable,
            "packages": [IPYKERNEL, {"name": "jupyterlab", "version": "", "variable": "x"}],
        },
        capsys,
    )
    assert not failed, result
    assert result["python_version"] == here
    assert result["pins"] == {
        "ipykernel": python_package_pin("ipykernel", here),
        "jupyterlab": python_package_pin("jupyterlab", here),
    }
    assert result["pins"]["ipykernel"]  # the catalogue has a release for this Python
    assert result["derived"] == ["ipykernel", "jupyterlab"]
    assert result["changed"] is False


def test_fake_python_310_derives_ipykernel_730(tmp_path, capsys):
    python = make_python(tmp_path, "3.10")
    failed, result = run_module({"python": python, "packages": [IPYKERNEL]}, capsys)
    assert not failed, result
    assert result["python_version"] == "3.10"
    assert result["pins"] == {"ipykernel": "7.3.0"}
    assert result["derived"] == ["ipykernel"]
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    assert argv[0] == "-c" and "sys.version_info" in argv[1]


def test_explicit_740_on_python_310_fails_naming_the_variable_and_the_fit(tmp_path, capsys):
    python = make_python(tmp_path, "3.10")
    failed, result = run_module(
        {"python": python, "packages": [dict(IPYKERNEL, version="7.4.0")]}, capsys
    )
    assert failed
    assert "jupyter_ipykernel_version" in result["msg"]
    assert "7.3.0" in result["msg"]
    assert "requires Python >=3.11" in result["msg"]
    assert [p["code"] for p in result["problems"]] == ["python-package-needs-newer-python"]
    assert result["pins"] == {"ipykernel": "7.4.0"}


def test_explicit_release_that_fits_is_kept(tmp_path, capsys):
    python = make_python(tmp_path, "3.10")
    failed, result = run_module(
        {"python": python, "packages": [dict(IPYKERNEL, version="6.31.0")]}, capsys
    )
    assert not failed
    assert result["pins"] == {"ipykernel": "6.31.0"}
    assert result["derived"] == []


def test_missing_interpreter_uses_python_version(tmp_path, capsys):
    failed, result = run_module(
        {
            "python": str(tmp_path / "envs" / "pytorch" / "bin" / "python"),
            "python_version": "3.10",
            "packages": [IPYKERNEL],
        },
        capsys,
    )
    assert not failed, result
    assert result["python_version"] == "3.10"
    assert result["pins"] == {"ipykernel": "7.3.0"}


def test_missing_interpreter_and_no_version_takes_the_newest(tmp_path, capsys):
    failed, result = run_module(
        {"python": str(tmp_path / "absent"), "packages": [IPYKERNEL]}, capsys
    )
    assert not failed
    assert result["python_version"] is None
    assert result["pins"] == {"ipykernel": "7.4.0"}


def test_an_interpreter_too_old_for_every_release_fails(tmp_path, capsys):
    python = make_python(tmp_path, "3.7")
    failed, result = run_module({"python": python, "packages": [IPYKERNEL]}, capsys)
    assert failed
    assert "No catalogued ipykernel release suits Python 3.7" in result["msg"]
    assert "jupyter_ipykernel_version" in result["msg"]


def test_an_interpreter_that_does_not_run_fails(tmp_path, capsys):
    python = make_python(tmp_path, "", rc=3)
    failed, result = run_module({"python": python, "packages": [IPYKERNEL]}, capsys)
    assert failed
    assert "does not run" in result["msg"]


def test_a_file_that_is_not_executable_fails_without_being_run(tmp_path, capsys):
    python = make_python(tmp_path)
    (tmp_path / "python3").chmod(0o644)
    failed, result = run_module({"python": python, "packages": [IPYKERNEL]}, capsys)
    assert failed
    assert result["msg"] == f"{python} is not an executable file"
    assert not (tmp_path / "argv.txt").exists()


def test_an_uncatalogued_package_left_empty_fails(tmp_path, capsys):
    python = make_python(tmp_path, "3.10")
    failed, result = run_module(
        {"python": python, "packages": [{"name": "notebook", "version": "", "variable": "nb"}]},
        capsys,
    )
    assert failed
    assert "nb is empty and the vendor catalogue lists no notebook release" in result["msg"]
