"""module_utils/command.py: the one command runner (argv only, timeout, decoded output)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from ansible.module_utils.command import CommandError, Result, run, runner

PY = sys.executable


def test_a_finished_program_gives_its_rc_and_decoded_output():
    got = run(
        [PY, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"], 30
    )
    assert got == Result(3, "out\n", "err\n")
    rc, out, err = got  # a plain (rc, stdout, stderr) tuple for the Runner contract
    assert (rc, out, err) == (3, "out\n", "err\n")


def test_non_zero_rc_is_an_answer_unless_check_is_asked():
    script = (
        "import sys; print('line one', file=sys.stderr); "
        "print('bad thing', file=sys.stderr); sys.exit(2)"
    )
    assert run([PY, "-c", script], 30).rc == 2
    with pytest.raises(CommandError) as caught:
        run([PY, "-c", script], 30, check=True)
    error = caught.value
    assert error.rc == 2 and error.timeout is None and not error.timed_out
    message = str(error)
    assert PY in message and "-c" in message  # the argv is named
    assert "exited with rc 2" in message
    assert message.endswith("line one\nbad thing")  # the stderr tail


def test_stderr_tail_is_the_last_lines_only():
    script = "import sys\nfor i in range(50): print('line', i, file=sys.stderr)\nsys.exit(1)"
    with pytest.raises(CommandError) as caught:
        run([PY, "-c", script], 30, check=True)
    message = str(caught.value)
    assert "line 49" in message and "line 45" in message and "line 44" not in message


def test_a_timeout_kills_the_program_and_its_children_and_names_the_command(tmp_path):
    marker = tmp_path / "child.pid"
    script = (
        "import subprocess, sys, time\n"
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(marker)!r}, 'w').write(str(child.pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    with pytest.raises(CommandError) as caught:
        run([PY, "-c", script], 2)
    assert time.monotonic() - started < 20
    error = caught.value
    assert error.timed_out and error.timeout == 2 and error.rc is None
    assert "did not finish within 2 s" in str(error) and PY in str(error)
    assert error.stdout == "started\n"
    child = int(marker.read_text())
    for _ in range(50):  # the grandchild went with the process group
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"grandchild {child} outlived the timeout")


def test_a_missing_binary_is_a_command_error_that_is_an_oserror(tmp_path):
    missing = str(tmp_path / "no-such-program")
    with pytest.raises(CommandError) as caught:
        run([missing, "--version"], 10)
    error = caught.value
    assert isinstance(error, OSError)
    assert error.rc is None and not error.timed_out
    assert "No such file" in error.reason
    assert str(error).startswith(f"command [{missing} --version] could not be run: ")


def test_a_file_that_cannot_be_executed_says_why(tmp_path):
    script = tmp_path / "noexec"
    script.write_text("not a program\n")
    script.chmod(0o755)
    with pytest.raises(OSError, match="Exec format error"):
        runner(10)([str(script)])


def test_bad_bytes_are_decoded_with_replacement_characters():
    script = (
        "import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe end'); "
        "sys.stderr.buffer.write(b'\\x80')"
    )
    got = run([PY, "-c", script], 30)
    assert got.stdout == "ok \ufffd\ufffd end" and got.stderr == "\ufffd"


@pytest.mark.parametrize("argv", ["ls -l", b"ls -l"])
def test_a_string_is_refused(argv):
    with pytest.raises(TypeError, match="argv list"):
        run(argv, 10)


def test_argv_words_must_be_strings_and_a_timeout_is_needed(tmp_path):
    with pytest.raises(TypeError):
        run([PY, 3], 10)
    with pytest.raises(ValueError):
        run([], 10)
    with pytest.raises(ValueError):
        run([PY, "-V"], 0)
    assert run([Path(PY), "-c", "print(1)"], 10).stdout == "1\n"  # path-likes are fine


def test_no_shell_parses_the_words():
    got = run([PY, "-c", "import sys; print(sys.argv[1:])", "$HOME; echo hi", "*"], 10)
    assert got.stdout == "['$HOME; echo hi', '*']\n"


def test_env_input_and_cwd(tmp_path):
    script = (
        "import os, sys; print(os.environ.get('A'), os.environ.get('B'), os.getcwd()); "
        "print(sys.stdin.read())"
    )
    got = run([PY, "-c", script], 10, env={"A": "1", "PATH": "/usr/bin:/bin"}, input="fed")
    assert got.stdout.splitlines()[0].startswith("1 None")
    assert got.stdout.splitlines()[1] == "fed"
    os.environ["KINDLING_TEST_KEEP"] = "kept"
    try:
        script = "import os; print(os.environ['KINDLING_TEST_KEEP'], os.environ['B'], os.getcwd())"
        got = run([PY, "-c", script], 10, env_update={"B": "2"}, cwd=str(tmp_path))
    finally:
        del os.environ["KINDLING_TEST_KEEP"]
    assert got.stdout == f"kept 2 {tmp_path}\n"


def test_stdin_is_closed_without_input():
    assert run([PY, "-c", "import sys; print(repr(sys.stdin.read()))"], 10).stdout == "''\n"
