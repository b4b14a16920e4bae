#!/usr/bin/python
"""Ansible module: unpack NVIDIA's cuDNN archive and copy it into a CUDA tree, in one run."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.cudnn_tarball import (
    ARGUMENT_SPEC,
    TarballError,
    describe_error,
    sync,
)

DOCUMENTATION = r"""
---
module: cudnn_tarball_install
short_description: Unpack NVIDIA's cuDNN archive and copy its headers and libraries into a CUDA tree
description:
  - The cuda role's tarball method (module_utils/cudnn_tarball.py). Unpacks O(archive), its
    top directory stripped, into O(unpack_dir) when O(unpack_dir)/include is not there, then
    copies the archive's C(include/) into O(toolkit_dir)/include and its C(lib/) into
    O(toolkit_dir)/lib64. The mapping is fixed (every cuDNN redist archive has this layout).
  - Before anything is written the archive is refused, naming the member, for an absolute
    name, a C(..) component, a device, a fifo, a hard link, a member below a symlink, or a
    symlink whose target is absolute or resolves outside the archive's directory. tarfile's
    C(filter='data') is used as well where the Python has it.
  - It unpacks into a temporary directory next to O(unpack_dir) and renames it into place,
    so an interrupted run leaves no half-unpacked tree. The next run removes such temporary
    directories.
  - Copies recursively, entry by entry. A symlink is re-created when missing or pointing
    elsewhere. A regular file is replaced atomically (a temporary file in its directory,
    then a rename) with mode 0644 and owner root when its bytes differ; when only its mode
    or owner differs, they are set. Missing directories are created 0755. A directory where
    the archive has a file, or a file where it has a directory, fails the task.
  - Check mode unpacks and writes nothing and reports what would change. It reads the
    unpacked tree, or the archive itself when it is not unpacked yet. When the archive is
    not there (a fresh host, whose download happens in a real run only) it reports a change
    and says so in RV(msg). Outside check mode a missing archive fails the task when it is
    to be unpacked.
version_added: "0.9.0"
author:
  - Kindling maintainers
options:
  archive:
    description: The downloaded archive, its sha256 already checked (by get_url).
    type: path
    required: true
  unpack_dir:
    description:
      - Where the archive is unpacked, its top directory stripped. Must not hold O(archive).
      - Already there with an C(include) directory, it is not unpacked again; there without
        one, it is replaced.
    type: path
    required: true
  toolkit_dir:
    description: The CUDA tree (C(cuda_toolkit_prefix)/cuda-C(cuda_version)).
    type: path
    required: true
attributes:
  check_mode:
    support: full
    description: Reports what would change, writes nothing.
  diff_mode:
    support: none
    description: The files are binary libraries; RV(copied) lists them.
"""

EXAMPLES = r"""
- name: Unpack cuDNN and copy it into the tree of CUDA 13.0
  cudnn_tarball_install:
    archive: /var/lib/kindling/cuda/cudnn-linux-x86_64-9.13.0.50_cuda13-archive.tar.xz
    unpack_dir: /var/lib/kindling/cuda/cudnn-linux-x86_64-9.13.0.50_cuda13-archive
    toolkit_dir: /usr/local/cuda-13.0
  notify: Refresh the dynamic linker cache
"""

RETURN = r"""
unpacked:
  description: Whether the archive was unpacked (in check mode, whether it would be).
  returned: success
  type: bool
copied:
  description:
    - The paths of the CUDA tree written (files, symlinks, created directories, and files
      whose mode or owner was set), sorted; in check mode those that would be.
    - Empty when the tree already has the archive's content.
  returned: success
  type: list
  elements: str
msg:
  description: In check mode, why the archive was not read (not there yet, or unreadable).
  returned: when the archive was not read in check mode
  type: str
"""


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    try:
        result = sync(p["archive"], p["unpack_dir"], p["toolkit_dir"], module.check_mode)
    except TarballError as exc:
        module.fail_json(msg=f"cudnn_tarball_install: {exc}")
    except OSError as exc:
        module.fail_json(msg=f"cudnn_tarball_install: {describe_error(exc)}")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
