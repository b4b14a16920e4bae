#!/usr/bin/python
"""Ansible module gpu_throughput_progress_info: what the running throughput check is doing."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_throughput_progress_info
short_description: Report the step a running gpu_throughput_measure measurement is at
description:
  - Reads the progress files of C(gpu_throughput_measure.py --progress FILE) (the module
    M(gpu_throughput_measure) passes O(progress_file) through) and says in one line what runs now
    and what is done, per GPU where the host measures every GPU at once.
  - With O(results_file) (the C(results_file) of an async M(gpu_throughput_measure) task) it also
    says whether the measurement has finished, so that a task can poll it with C(until).
    The gpu_check role prints a line at every poll (stdout callback C(kindling_progress),
    which also keeps Ansible's "FAILED - RETRYING" out of a healthy run).
  - With O(profile) or O(modes) it also estimates the seconds left, C(left_s), from the
    time per mode so far times the modes left, or before a mode has finished from the
    profile's budget less the time spent.
  - Read-only. C(changed) is always false, and it never fails for a missing file.
version_added: "0.1.0"
author:
  - Kindling maintainers
options:
  progress_file:
    description: The program's progress file on the host.
    type: path
    required: true
  results_file:
    description: The async job's results file, from the registered async task.
    type: path
  profile:
    description: The measurement's profile (C(quick), C(full)), for the estimate.
    type: str
  modes:
    description: The modes the measurement runs, where not the profile's.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    description: Reads files only; runs the same in check mode.
    support: full
  diff_mode:
    description: Nothing to diff.
    support: none
"""

EXAMPLES = r"""
- name: Follow the measurement
  gpu_throughput_progress_info:
    progress_file: /var/lib/kindling/gpu-check/progress.json
    results_file: "{{ job.results_file }}"
  register: progress
  until: progress.finished
  retries: 100
  delay: 10
"""

RETURN = r"""
line:
  description: One line, e.g. C([42 s] every GPU at once (8) amp_fp16 on GPU 0, 1, ...).
  returned: always
  type: str
finished:
  description: Whether the async job has written its result (false without O(results_file)).
  returned: always
  type: bool
progress:
  description: The parsed progress files, C(main) and C(gpus) (per GPU index).
  returned: always
  type: dict
running:
  description: What runs now, e.g. C(amp_fp16) or C(amp_fp16 on 8 GPUs), C(starting), C(done).
  returned: always
  type: str
elapsed_s:
  description: Seconds since the program started (null before it wrote its progress).
  returned: always
  type: float
left_s:
  description: Estimated seconds left, or null where nothing tells (see O(profile)).
  returned: always
  type: int
left_basis:
  description: How C(left_s) was estimated, C(rate), C(budget), C(done) or C(unknown).
  returned: always
  type: str
done:
  description: Modes finished (on several GPUs at once, the mean over the GPUs).
  returned: always
  type: float
planned:
  description: Modes the measurement runs (0 where unknown).
  returned: always
  type: int
lowest:
  description: The lowest img/s so far, C({gpu, mode, img_s}), or null.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.throughput_progress import (  # noqa: E402
    finished,
    line,
    plan_for,
    read,
    snapshot,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            progress_file=dict(type="path", required=True),
            results_file=dict(type="path"),
            profile=dict(type="str"),
            modes=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    state = read(module.params["progress_file"])
    done = finished(module.params["results_file"])
    text = line(state)
    if done and state.get("main") is None:
        text = "finished"
    numbers = snapshot(state, plan=plan_for(module.params["profile"], module.params["modes"]))
    numbers.pop("phase", None)
    if done:
        numbers.update(running="done", left_s=0, left_basis="done")
    module.exit_json(
        changed=False,
        line=text,
        finished=done,
        **numbers,
        progress={"main": state["main"], "gpus": {str(k): v for k, v in state["gpus"].items()}},
    )


if __name__ == "__main__":
    main()
