#!/usr/bin/python
"""Ansible module: the stack each GPU stage left on the host (read-only; issue 35)."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.managed_files import describe
from ansible.module_utils.stack_record import STAGE_VARIABLES, read_stage, stage_values

DOCUMENTATION = r"""
---
module: stack_record_info
short_description: Read the stack the driver, cuda and conda_pytorch stages left on the host
description:
  - For each stage in O(stages), the record the stage wrote when it converged (a JSON file,
    module_utils/stack_record.py's record format), read in one module run for all stages.
  - Where a stage has no record (a host converged by Kindling before the stages wrote them),
    what the files only Kindling writes say instead - the driver role's apt pin, the cuda
    role's login-shell profile and cuDNN pin, torch's and torchvision's C(version.py) in the
    environment conda_pytorch made.
  - A missing or unreadable file is no record; nothing here fails for it.
  - Never changes the host; runs the same way in check mode.
version_added: "0.10.0"
author:
  - Kindling maintainers
options:
  stages:
    description:
      - Stage name to the paths to read. C(nvidia_driver) takes C(record) and C(pin);
        C(cuda) takes C(record), C(profile) and C(cudnn_pin); C(conda_pytorch) takes
        C(record) and C(env_dir).
    type: dict
    required: true
attributes:
  check_mode:
    support: full
    description: Read-only; it runs the same way in check mode.
  diff_mode:
    support: none
    description: Nothing changes.
seealso:
  - module: host_plan
"""

EXAMPLES = r"""
- name: Read what the stages left
  stack_record_info:
    stages:
      nvidia_driver:
        record: /var/lib/kindling/stack-nvidia_driver.json
        pin: /etc/apt/preferences.d/kindling-nvidia-driver
      conda_pytorch:
        record: /opt/conda/envs/pytorch/stack-conda_pytorch.json
        env_dir: /opt/conda/envs/pytorch
  register: stack_records
"""

RETURN = r"""
stages:
  description:
    - Per stage asked for, C(record) (the record, or null), C(legacy) (the values read from
      Kindling's own files where there is no record), C(sources) (the files the values came
      from), C(values) (the stack variables either holds) and C(file) (the record file as
      managed_files_write compares it, so that the stage's own write of its record runs
      nothing on the host when the record is unchanged).
  returned: always
  type: dict
  sample:
    nvidia_driver:
      record: null
      legacy: {nvidia_driver_branch: "580"}
      sources: [/etc/apt/preferences.d/kindling-nvidia-driver]
      values: {nvidia_driver_branch: "580"}
"""


def main():
    module = AnsibleModule(
        argument_spec={"stages": {"type": "dict", "required": True}},
        supports_check_mode=True,
    )
    unknown = sorted(set(module.params["stages"]) - set(STAGE_VARIABLES))
    if unknown:
        module.fail_json(
            msg=f"stages: unknown stage(s) {unknown}; one of {sorted(STAGE_VARIABLES)}"
        )
    result = {}
    for stage, paths in module.params["stages"].items():
        found = read_stage(stage, paths if isinstance(paths, dict) else {})
        found["values"] = stage_values(stage, found)
        record = (paths or {}).get("record") if isinstance(paths, dict) else None
        found["file"] = describe(str(record)) if record else None
        result[stage] = found
    module.exit_json(changed=False, stages=result)


if __name__ == "__main__":
    main()
