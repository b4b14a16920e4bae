"""Where the CUDA role's toolkits stand, and what it installs: the cuda_toolkit_state module.

The cuda role checks each wanted toolkit with gpu_stack_check (module_utils/stack_plan.py),
which names its packages. This module then decides, from that plan and each toolkit's
``nvcc --version``:

- where each toolkit's nvcc is: NVIDIA's toolkits in ``<prefix>/cuda-X.Y/bin/nvcc``, the
  distribution's (install method ``distro``) where its package puts nvcc;
- which toolkits are present (their nvcc reports ``release X.Y,``: installed by Kindling
  earlier, or preinstalled) and which are missing, so that only those are installed;
- each toolkit's package, cuDNN's packages, the ld.so.conf.d file and the cuDNN header
  that verify reads.

Python 3.8, standard library only.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence


def nvcc_path(
    version: str, method: str, prefix: str, distro_toolkit: Optional[Mapping[str, Any]]
) -> str:
    """A toolkit's nvcc: the distribution's package's with method ``distro``, else NVIDIA's."""
    if method == "distro" and distro_toolkit and distro_toolkit.get("nvcc"):
        return str(distro_toolkit["nvcc"])
    return f"{prefix.rstrip('/')}/cuda-{version}/bin/nvcc"


def reports_version(rc: Optional[int], stdout: str, version: str) -> bool:
    """Whether ``nvcc --version`` ran and names this release (``release 12.4,``)."""
    if rc != 0:
        return False
    return re.search(r"release " + re.escape(version) + r",", stdout or "") is not None


def ld_conf(version: str) -> str:
    """The ld.so.conf.d file that puts the default toolkit's libraries on the path."""
    return f"/etc/ld.so.conf.d/cuda-{version.replace('.', '-')}.conf"


def cudnn_header(
    prefix: str, cuda_version: str, cudnn_version: str, cudnn_method: str, machine: str
) -> str:
    """Where cuDNN's version header lands: in the toolkit (tarball), else where the
    distribution's packages put it (cuDNN 8: /usr/include; 9 and later: per architecture)."""
    if cudnn_method == "tarball":
        return f"{prefix.rstrip('/')}/cuda-{cuda_version}/include/cudnn_version.h"
    major = str(cudnn_version).split(".")[0]
    if major == "8":
        return "/usr/include/cudnn_version.h"
    return f"/usr/include/{machine}-linux-gnu/cudnn_version_v{major}.h"


def plan(
    versions: Sequence[str],
    stack: Sequence[Mapping[str, Any]],
    nvcc: Mapping[str, Mapping[str, Any]],
    method: str,
    prefix: str,
    cudnn: Mapping[str, Any],
    machine: str,
) -> Dict[str, Any]:
    """The role's plan from gpu_stack_check's results (``stack``: ``{item, packages}`` per
    toolkit, the default toolkit first) and each toolkit's nvcc answer (``nvcc``: version ->
    ``{rc, stdout}``). ``cudnn``: ``{install, method, version}``."""
    if not versions:
        raise ValueError("no toolkit version given")
    by_version = {str(r.get("item")): r for r in stack}
    missing_plan = [v for v in versions if v not in by_version]
    if missing_plan:
        raise ValueError(f"gpu_stack_check gave no plan for CUDA {', '.join(missing_plan)}")
    paths: Dict[str, str] = {}
    packages: Dict[str, str] = {}
    present: List[str] = []
    missing: List[str] = []
    for version in versions:
        pkgs = by_version[version].get("packages") or {}
        paths[version] = nvcc_path(version, method, prefix, pkgs.get("distro_toolkit"))
        packages[version] = "".join(pkgs.get("toolkit") or [])
        answer = nvcc.get(version) or {}
        if reports_version(answer.get("rc"), str(answer.get("stdout") or ""), version):
            present.append(version)
        else:
            missing.append(version)
    default = versions[0]
    cudnn_packages = (by_version[default].get("packages") or {}).get("cudnn")
    install_cudnn = bool(cudnn.get("install"))
    cudnn_version = str(cudnn.get("version") or "")
    header = (
        cudnn_header(prefix, default, cudnn_version, str(cudnn.get("method")), machine)
        if cudnn_version
        else None
    )
    summary = "CUDA {}: install {}; adopted or already present: {}; {}".format(
        ", ".join(versions),
        ", ".join(packages[v] or f"CUDA {v}" for v in missing) or "nothing",
        ", ".join(present) or "none",
        f"cuDNN {cudnn.get('version')} by {cudnn.get('method')}" if install_cudnn else "no cuDNN",
    )
    return {
        "nvcc_paths": paths,
        "toolkit_packages": packages,
        "present": present,
        "missing": missing,
        "cudnn_packages": cudnn_packages,
        "ld_conf": ld_conf(default),
        "cudnn_header": header,
        "summary": summary,
    }
