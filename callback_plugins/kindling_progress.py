"""Callback kindling_progress: print what a polled task reports at each retry.

Ansible's default output shows only "FAILED - RETRYING: [host]: task (N retries left)"
while a task polls with ``until``. For the tasks that return a ``line`` of progress
(gpu_throughput_progress: the mode the throughput check runs now, per GPU), this prints
that line under it, so a person watching the play sees which mode is running.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: kindling_progress
type: aggregate
short_description: Print the progress line of polled Kindling tasks
description:
  - On every retry of a task whose module is in O(modules), prints the result's C(line).
requirements:
  - enabled in ansible.cfg (callbacks_enabled = kindling_progress)
"""

from ansible.plugins.callback import CallbackBase  # noqa: E402

MODULES = ("gpu_throughput_progress",)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "kindling_progress"
    CALLBACK_NEEDS_ENABLED = True

    def v2_runner_retry(self, result):
        action = (result._task.action or "").rsplit(".", 1)[-1]
        text = (result._result or {}).get("line")
        if action in MODULES and text:
            self._display.display(f"  [{result._host.get_name()}] {text}")
