"""Stdout callback kindling_progress: Ansible's default output, with progress lines that
read right while the throughput check is polled.

The gpu_check role polls its measurement with ``until``/``retries``, and the default
callback prints "FAILED - RETRYING: [host]: task (102 retries left)" at every poll of a
healthy run. This callback is the default one (it subclasses it: same options, same
output) except for retries:

- a poll of ``gpu_throughput_progress_info`` prints a progress line: the host, the mode
  running, the seconds elapsed and an estimate of those left
  (``module_utils/throughput_progress.py``'s ``host_line``);
- with more than ``fleet_threshold`` hosts measuring (default 4) it prints one fleet line
  per poll instead: how many run, how many are done, the slowest so far;
- any other task's retry says ``RETRYING`` without ``FAILED``: a retry is a wait, and
  a task that runs out of retries still ends in the default callback's ``fatal:``.

ansible.cfg sets it: ``stdout_callback = kindling_progress``. tools/fleet_report.py, under
ansible-runner (whose own stdout callback writes the job events), prints the same lines
from the events.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: kindling_progress
type: stdout
short_description: The default output, with the throughput check's progress at each poll
description:
  - Ansible's default stdout callback, except that a retry of C(gpu_throughput_progress_info)
    prints the check's progress (host, mode running, seconds elapsed and left), one fleet
    line per poll above O(fleet_threshold) hosts, and no retry prints C(FAILED).
extends_documentation_fragment:
  - default_callback
  - result_format_callback
options:
  fleet_threshold:
    description: Above this many hosts measuring at once, one fleet line per poll.
    type: int
    default: 4
    env:
      - name: KINDLING_PROGRESS_FLEET_THRESHOLD
    ini:
      - section: callback_kindling_progress
        key: fleet_threshold
requirements:
  - set as the stdout callback (ansible.cfg stdout_callback = kindling_progress)
"""

from pathlib import Path  # noqa: E402

import ansible.module_utils  # noqa: E402
from ansible import constants as C  # noqa: E402
from ansible.plugins.callback.default import CallbackModule as DefaultCallback  # noqa: E402

_UTILS = str(Path(__file__).resolve().parent.parent / "module_utils")
if _UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_UTILS)

from ansible.module_utils.throughput_progress import (  # noqa: E402
    FLEET_THRESHOLD,
    FleetProgress,
)

PROGRESS_MODULES = ("gpu_throughput_progress_info",)
START_MODULES = ("gpu_throughput_measure",)


def _action(task) -> str:
    return (getattr(task, "action", None) or "").rsplit(".", 1)[-1]


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "kindling_progress"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._progress = FleetProgress(FLEET_THRESHOLD)

    def _threshold(self) -> int:
        try:
            return int(self.get_option("fleet_threshold"))
        except (KeyError, TypeError, ValueError, AttributeError):
            return FLEET_THRESHOLD

    def v2_playbook_on_task_start(self, task, is_conditional):
        if _action(task) in START_MODULES:
            self._progress = FleetProgress(self._threshold())
        super().v2_playbook_on_task_start(task, is_conditional)

    def v2_runner_on_ok(self, result):
        action = _action(result.task)
        if action in START_MODULES:
            self._progress.started(result.host.get_name())
        super().v2_runner_on_ok(result)
        if action in PROGRESS_MODULES:
            text = self._progress.finished(result.host.get_name(), result.result)
            if text:
                self._display.display(text, color=C.COLOR_DEBUG)

    def v2_runner_retry(self, result):
        res = result.result or {}
        if _action(result.task) in PROGRESS_MODULES:
            text = self._progress.polled(result.host.get_name(), res)
            if text:
                self._display.display(text, color=C.COLOR_DEBUG)
            return
        task_name = result.task_name or result.task
        left = (res.get("retries") or 0) - (res.get("attempts") or 0)
        msg = f"RETRYING: [{self.host_label(result)}]: {task_name} ({left} retries left)."
        if self._run_is_verbose(result, verbosity=2):
            msg += f"Result was: {self._dump_results(res)}"
        self._display.display(msg, color=C.COLOR_DEBUG)
