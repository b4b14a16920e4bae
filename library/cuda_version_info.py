#!/usr/bin/python
"""Ansible module: which release each nvcc reports, and which version a cuDNN header defines."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.command import runner
from ansible.module_utils.toolkit_state import read_cudnn_header, read_nvcc

DOCUMENTATION = r"""
---
module: cuda_version_info
short_description: Read the release each nvcc reports and the version a cuDNN header defines
description:
  - Runs C(<nvcc> --version) for each path given and reads the release it names
    (C(release 12.6,)) with module_utils/toolkit_state.py, the parser cuda_toolkit_plan
    uses too.
  - Reads the C(CUDNN_MAJOR), C(CUDNN_MINOR) and C(CUDNN_PATCHLEVEL) defines of a cuDNN
    version header (C(cudnn_version.h), C(cudnn_version_v9.h)).
  - A missing nvcc or header is not a failure; its entry has a null version and says why in
    C(error). The cuda role's asserts decide what a missing version means.
  - Never changes the host; runs the same way in check mode.
version_added: "0.6.0"
author:
  - Kindling maintainers
options:
  nvcc:
    description:
      - The nvcc executables to ask, in the order the result lists them.
    type: list
    elements: path
    default: []
  cudnn_header:
    description:
      - The cuDNN version header to read; without it C(cudnn) is null.
    type: path
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Ask nvcc and cuDNN's header for their versions
  cuda_version_info:
    nvcc:
      - /usr/local/cuda/bin/nvcc
      - /usr/local/cuda-12.4/bin/nvcc
    cudnn_header: /usr/include/x86_64-linux-gnu/cudnn_version_v9.h
  register: cuda__versions
"""

RETURN = r"""
nvcc:
  description: One entry per nvcc given, in the same order.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The nvcc asked.
      type: str
    rc:
      description:
        - The exit status of C(nvcc --version); null when nvcc is not there or not executable.
      type: int
    release:
      description: The release nvcc names (C(12.6)), or null.
      type: str
    line:
      description: The line of nvcc's output that names the release, or null.
      type: str
    error:
      description:
        - Why no release was read (not there, failed, no release line); null when one was.
      type: str
cudnn:
  description: The cuDNN header's version; null without C(cudnn_header).
  returned: always
  type: dict
  contains:
    path:
      description: The header read.
      type: str
    exists:
      description: Whether the header is there.
      type: bool
    version:
      description: C(MAJOR.MINOR.PATCHLEVEL) from its defines, or null.
      type: str
    error:
      description:
        - Why no version was read (not there, unreadable, a define missing); null when one was.
      type: str
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "nvcc": {"type": "list", "elements": "path", "default": []},
            "cudnn_header": {"type": "path"},
        },
        supports_check_mode=True,
    )

    # An nvcc that cannot be executed raises CommandError (an OSError), which read_nvcc
    # words, instead of failing the module.
    run = runner(60)

    header = module.params["cudnn_header"]
    module.exit_json(
        changed=False,
        nvcc=[read_nvcc(path, run) for path in module.params["nvcc"]],
        cudnn=read_cudnn_header(header) if header else None,
    )


if __name__ == "__main__":
    main()
