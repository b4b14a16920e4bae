"""Kindling's one command runner: argv only, a timeout, decoded output, an error naming the command.

Every module and module_utils file that runs a program runs it through ``run`` (or the
``runner`` adapter, for the module_utils functions that take a ``Runner`` argument):

- ``argv`` is a list of strings (or path-likes); a string is refused, so no shell ever
  parses a command line and no argument needs quoting.
- ``timeout`` (seconds) is required. The program runs in its own session; on timeout its
  whole process group is killed, so a hung grandchild (a CUDA probe's driver call, say)
  cannot keep the pipes open.
- stdout and stderr are decoded as UTF-8 with invalid bytes replaced, never raising.
- ``CommandError`` names the argv and what went wrong: the program could not be executed,
  it ran past its timeout, or (``check=True``) it exited non-zero, with the rc and the
  last lines of its stderr. It is an ``OSError``, so the module_utils ``Runner`` contract
  ("raises OSError when the program cannot be executed") and callers catching OSError keep
  working.

Not expressed here, by design: streaming output while the program runs. The one such use,
library/gpu_throughput_measure.py (a benchmark run for minutes, read by a sampling thread through
its own ``subprocess.Popen``), keeps its Popen; tests/unit/test_one_way.py lists it.

Runs on target hosts: Python 3.8, standard library only.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Callable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

#: How many lines of stderr a CommandError quotes.
TAIL_LINES = 5
#: How many characters of stderr a CommandError quotes at most.
TAIL_CHARS = 800

# run(argv) -> (rc, stdout, stderr); raises OSError (CommandError) when the program cannot
# be executed or runs past its timeout. module_utils functions take one of these so that
# their tests can hand in a fake; modules hand in ``runner(timeout)``.
Runner = Callable[[List[str]], Tuple[int, str, str]]


class Result(NamedTuple):
    """What a finished program left: its exit status and its decoded output."""

    rc: int
    stdout: str
    stderr: str


def _tail(text: str) -> str:
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    tail = "\n".join(lines[-TAIL_LINES:])
    return tail[-TAIL_CHARS:]


class CommandError(OSError):
    """A program that could not be run, ran past its timeout, or (check=True) failed.

    Attributes: ``argv`` (list), ``rc`` (None unless it exited), ``timeout`` (the limit it
    ran past, else None), ``stdout``/``stderr`` (what it printed, decoded; empty when it
    never ran), ``reason`` (the OS error text when it could not be executed).
    """

    def __init__(
        self,
        argv: Sequence[str],
        rc: Optional[int] = None,
        timeout: Optional[float] = None,
        stdout: str = "",
        stderr: str = "",
        reason: str = "",
    ) -> None:
        self.argv = list(argv)
        self.rc = rc
        self.timeout = timeout
        self.stdout = stdout
        self.stderr = stderr
        self.reason = reason
        super().__init__(self._message())

    @property
    def timed_out(self) -> bool:
        return self.timeout is not None

    def _message(self) -> str:
        shown = " ".join(self.argv)
        if self.reason:
            what = f"could not be run: {self.reason}"
        elif self.timeout is not None:
            what = f"did not finish within {self.timeout:g} s and was killed"
        else:
            what = f"exited with rc {self.rc}"
        tail = _tail(self.stderr)
        return f"command [{shown}] {what}" + (f": {tail}" if tail else "")

    def __str__(self) -> str:
        return self._message()


def _argv(argv: Sequence[Union[str, os.PathLike[str]]]) -> List[str]:
    if isinstance(argv, (str, bytes)):
        raise TypeError(
            f"command.run takes an argv list, not a string ({argv!r}): split it into "
            "its words; no shell runs here"
        )
    words = [os.fspath(word) for word in argv]
    if not words:
        raise ValueError("command.run needs a non-empty argv")
    for word in words:
        if not isinstance(word, str):
            raise TypeError(f"argv words must be str, got {word!r} in {words!r}")
    return words


def _decode(data: Optional[bytes]) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def run(
    argv: Sequence[Union[str, os.PathLike[str]]],
    timeout: float,
    env: Optional[Mapping[str, str]] = None,
    input: Union[str, bytes, None] = None,
    *,
    env_update: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    check: bool = False,
) -> Result:
    """Run ``argv`` (no shell) for at most ``timeout`` seconds; its rc and decoded output.

    ``env`` replaces the environment; ``env_update`` adds to it (to this process's own
    when ``env`` is None), e.g. ``{"LC_ALL": "C"}`` for output the caller parses.
    ``input`` is written to its stdin (str as UTF-8); without it stdin is /dev/null.
    Raises CommandError when the program cannot be executed, when it runs past
    ``timeout`` (its process group is killed first), and, with ``check=True``, when it
    exits non-zero. TypeError for a string argv.
    """
    words = _argv(argv)
    if timeout is None or timeout <= 0:
        raise ValueError(f"command.run needs a timeout in seconds > 0, got {timeout!r}")
    environ = dict(os.environ if env is None else env)
    if env_update:
        environ.update(env_update)
    data = input.encode("utf-8") if isinstance(input, str) else input
    try:
        proc = subprocess.Popen(
            words,
            stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environ,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        raise CommandError(words, reason=str(exc)) from exc
    try:
        out, err = proc.communicate(input=data, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            out, err = b"", b""
        raise CommandError(
            words, timeout=timeout, stdout=_decode(out), stderr=_decode(err)
        ) from None
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    result = Result(proc.returncode, _decode(out), _decode(err))
    if check and result.rc != 0:
        raise CommandError(words, rc=result.rc, stdout=result.stdout, stderr=result.stderr)
    return result


def runner(
    timeout: float,
    env: Optional[Mapping[str, str]] = None,
    *,
    env_update: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
) -> Runner:
    """A ``Runner`` (argv -> (rc, stdout, stderr)) for the module_utils functions that take
    one: ``run`` with these settings and check=False."""

    def _run(argv: List[str]) -> Tuple[int, str, str]:
        return run(argv, timeout, env, env_update=env_update, cwd=cwd)

    return _run
