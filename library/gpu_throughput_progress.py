#!/usr/bin/python
"""Ansible module gpu_throughput_progress: what the running throughput check is doing."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_throughput_progress
short_description: Report the step a running gpu_throughput measurement is at
description:
  - Reads the progress files of C(gpu_throughput.py --progress FILE) (the module
    M(gpu_throughput) passes O(progress_file) through) and says in one line what runs now
    and what is done, per GPU where the host measures every GPU at once.
  - With O(results_file) (the C(results_file) of an async M(gpu_throughput) task) it also
    says whether the measurement has finished, so that a task can poll it with C(until).
    The gpu_check role prints the line at every poll (callback C(kindling_progress)).
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
  gpu_throughput_progress:
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
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.throughput_progress import finished, line, read  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            progress_file=dict(type="path", required=True),
            results_file=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    state = read(module.params["progress_file"])
    done = finished(module.params["results_file"])
    text = line(state)
    if done and state.get("main") is None:
        text = "finished"
    module.exit_json(
        changed=False,
        line=text,
        finished=done,
        progress={"main": state["main"], "gpus": {str(k): v for k, v in state["gpus"].items()}},
    )


if __name__ == "__main__":
    main()
