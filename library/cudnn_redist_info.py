#!/usr/bin/python
"""Ansible module: the URL and sha256 of NVIDIA's cuDNN archive, from its redist manifest."""

from __future__ import annotations

import json

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.cudnn_redist import (
    RedistError,
    archive_top_dir,
    from_manifest,
    has_manifest,
    legacy_archive,
    manifest_url,
)
from ansible.module_utils.urls import fetch_url

DOCUMENTATION = r"""
---
module: cudnn_redist_info
short_description: Find NVIDIA's cuDNN redistributable archive and its checksum
description:
  - From cuDNN 8.5.0, reads NVIDIA's C(redistrib_<X.Y.Z>.json) manifest (over HTTPS) and
    returns the archive's URL and sha256 for the host's platform and the CUDA major
    (archive names carry only the major, C(..._cuda13-archive.tar.xz)).
  - Older releases (8.4.0 for CUDA 11.6) come from the vendor catalogue, with their
    checksums.
  - A manifest checksum that disagrees with one the catalogue knows is refused.
  - Downloads nothing but the manifest and changes nothing; the role's get_url verifies the
    archive against the sha256 returned here.
version_added: "0.2.0"
author:
  - Kindling maintainers
options:
  version:
    description: cuDNN X.Y.Z or X.Y.Z.B (C(cuda_cudnn_version)).
    type: str
    required: true
  cuda_version:
    description: The CUDA toolkit the archive is for (C(cuda_version)).
    type: str
    required: true
  arch:
    description: V(x86_64) or V(sbsa).
    type: str
    default: x86_64
  base_url:
    description: Where the manifests and archives are (C(cuda_cudnn_redist_base_url)).
    type: str
  timeout:
    description: Seconds to wait for the manifest.
    type: int
    default: 30
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Find the cuDNN 9.14 archive for CUDA 13
  cudnn_redist_info:
    version: "9.14.0"
    cuda_version: "13.0"
  register: cudnn_archive
"""

RETURN = r"""
url:
  description: The archive's URL.
  returned: success
  type: str
sha256:
  description: The archive's sha256, from the manifest or the catalogue.
  returned: success
  type: str
name:
  description: The archive's file name.
  returned: success
  type: str
top_dir:
  description: The directory the archive unpacks into.
  returned: success
  type: str
version:
  description: The full 4-part cuDNN version.
  returned: success
  type: str
from:
  description: manifest or catalogue.
  returned: success
  type: str
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "version": {"type": "str", "required": True},
            "cuda_version": {"type": "str", "required": True},
            "arch": {"type": "str", "default": "x86_64"},
            "base_url": {"type": "str"},
            "timeout": {"type": "int", "default": 30},
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        if not has_manifest(p["version"]):
            found = legacy_archive(p["version"], p["cuda_version"], p["arch"])
        else:
            url = manifest_url(p["version"], p["base_url"])
            response, info = fetch_url(module, url, timeout=p["timeout"])
            if info.get("status") != 200 or response is None:
                module.fail_json(
                    msg=(
                        f"NVIDIA's cuDNN manifest {url} could not be read: {info.get('status')} "
                        f"{info.get('msg', '')}. Nothing was changed. Check the host's HTTPS "
                        "access, or cuda_cudnn_redist_base_url if you use a mirror."
                    ).strip()
                )
            try:
                manifest = json.loads(response.read())
            except ValueError as exc:
                module.fail_json(msg=f"{url} is not JSON: {exc}")
            found = from_manifest(
                manifest, p["version"], p["cuda_version"], p["arch"], p["base_url"]
            )
    except RedistError as exc:
        module.fail_json(msg=f"cuDNN {p['version']} for CUDA {p['cuda_version']}: {exc}.")
    found["top_dir"] = archive_top_dir(found["name"])
    module.exit_json(changed=False, **found)


if __name__ == "__main__":
    main()
