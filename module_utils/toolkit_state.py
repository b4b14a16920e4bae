"""Where the CUDA role's toolkits stand, and what it installs: the cuda_toolkit_plan module.

The cuda role checks each wanted toolkit with gpu_stack_plan (module_utils/stack_plan.py),
which names its packages. This module then decides, from that plan and each toolkit's
``nvcc --version``:

- where each toolkit's nvcc is: NVIDIA's toolkits in ``<prefix>/cuda-X.Y/bin/nvcc``, the
  distribution's (install method ``distro``) where its package puts nvcc;
- which toolkits are present (their nvcc reports ``release X.Y,``: installed by Kindling
  earlier, or preinstalled) and which are missing, so that only those are installed;
- each toolkit's package, cuDNN's packages, the ld.so.conf.d file and the cuDNN header
  that verify reads.

It also reads versions for the cuda_version_info module (verify) and adopt mode: which
release an nvcc reports (``nvcc_release``, the one parser of ``nvcc --version``) and which
version a cuDNN header defines (``cudnn_header_version``).

Python 3.8, standard library only.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible.module_utils.command import Runner

# nvcc --version: "Cuda compilation tools, release 12.6, V12.6.85".
NVCC_RELEASE = re.compile(r"release ([0-9]+\.[0-9]+),")
# cudnn_version.h (cudnn_version_v9.h, cudnn.h before 8): "#define CUDNN_MAJOR 9".
CUDNN_DEFINE = re.compile(
    r"^[ \t]*#[ \t]*define[ \t]+CUDNN_(MAJOR|MINOR|PATCHLEVEL)[ \t]+([0-9]+)\b", re.M
)
CUDNN_PARTS = ("MAJOR", "MINOR", "PATCHLEVEL")


def nvcc_path(
    version: str, method: str, prefix: str, distro_toolkit: Optional[Mapping[str, Any]]
) -> str:
    """A toolkit's nvcc: the distribution's package's with method ``distro``, else NVIDIA's."""
    if method == "distro" and distro_toolkit and distro_toolkit.get("nvcc"):
        return str(distro_toolkit["nvcc"])
    return f"{prefix.rstrip('/')}/cuda-{version}/bin/nvcc"


def nvcc_release(stdout: str) -> Optional[str]:
    """The release ``nvcc --version`` names ("12.6" from ``release 12.6, V12.6.85``), or None."""
    match = NVCC_RELEASE.search(stdout or "")
    return match.group(1) if match else None


def nvcc_release_line(stdout: str) -> Optional[str]:
    """The line of ``nvcc --version`` that names the release (else the first line that says
    "release", so that a message shows what nvcc said), stripped; None when none does."""
    lines = (stdout or "").splitlines()
    for line in lines:
        if NVCC_RELEASE.search(line):
            return line.strip()
    return next((line.strip() for line in lines if "release" in line), None)


def reports_version(rc: Optional[int], stdout: str, version: str) -> bool:
    """Whether ``nvcc --version`` ran and names this release (``release 12.4,``)."""
    return rc == 0 and nvcc_release(stdout) == version


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join((text or "").strip().splitlines()[-lines:])


def read_nvcc(path: str, run: Runner) -> Dict[str, Any]:
    """``{path, rc, release, line, error}`` from ``<path> --version``. A missing or
    non-executable nvcc is not run (rc null); error says why no release was read, and is
    null when one was."""
    result: Dict[str, Any] = {"path": path, "rc": None, "release": None, "line": None}
    if not os.path.exists(path):
        result["error"] = f"{path} is not there"
        return result
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        result["error"] = f"{path} is not an executable file"
        return result
    try:
        rc, stdout, stderr = run([path, "--version"])
    except OSError as exc:
        why = getattr(exc, "reason", "") or exc  # CommandError: the OS's words alone
        result["error"] = f"{path} could not be run: {why}"
        return result
    result["rc"] = rc
    result["release"] = nvcc_release(stdout)
    result["line"] = nvcc_release_line(stdout)
    if rc != 0:
        output = _tail(stderr) or _tail(stdout) or "no output"
        result["error"] = f"{path} --version failed (rc={rc}: {output})"
    elif result["release"] is None:
        result["error"] = (
            f"{path} --version names no release (printed {_tail(stdout) or 'nothing'!r})"
        )
    else:
        result["error"] = None
    return result


def cudnn_header_version(text: str) -> Tuple[Optional[str], Optional[str]]:
    """("M.m.p", None) from a cuDNN header's CUDNN_MAJOR, CUDNN_MINOR and CUDNN_PATCHLEVEL
    defines (the first of each), else (None, which defines are missing)."""
    found: Dict[str, str] = {}
    for match in CUDNN_DEFINE.finditer(text or ""):
        found.setdefault(match.group(1), match.group(2))
    missing = [f"CUDNN_{part}" for part in CUDNN_PARTS if part not in found]
    if missing:
        return None, f"no #define of {', '.join(missing)}"
    return ".".join(found[part] for part in CUDNN_PARTS), None


def read_cudnn_header(path: str) -> Dict[str, Any]:
    """``{path, exists, version, error}`` of a cuDNN version header; a missing or unreadable
    header is not an exception (check mode on a fresh host): version is null and error says
    why."""
    result: Dict[str, Any] = {"path": path, "exists": os.path.isfile(path), "version": None}
    if not result["exists"]:
        result["error"] = f"{path} is not there"
        return result
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError as exc:
        result["error"] = f"{path} could not be read: {exc}"
        return result
    version, why = cudnn_header_version(text)
    result["version"] = version
    result["error"] = f"{path} has {why}" if why else None
    return result


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
    """The role's plan from gpu_stack_plan's results (``stack``: ``{item, packages}`` per
    toolkit, the default toolkit first) and each toolkit's nvcc answer (``nvcc``: version ->
    ``{rc, stdout}``). ``cudnn``: ``{install, method, version}``."""
    if not versions:
        raise ValueError("no toolkit version given")
    by_version = {str(r.get("item")): r for r in stack}
    missing_plan = [v for v in versions if v not in by_version]
    if missing_plan:
        raise ValueError(f"gpu_stack_plan gave no plan for CUDA {', '.join(missing_plan)}")
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


# --- One read of the host, and the module's answer from it -------------------------------
# The module reads the host once (each nvcc's answer, how cuda_home is selected, the files
# the configure step writes) and answers from that read. In adopt mode the cuda stage's
# stack entry point reads it first, in the preflight (``adopt``: which release the toolkit
# at cuda_home is, and the same read for that release); the stage's own call then answers
# from that read on the controller (action_plugins/cuda_toolkit_plan.py) when it covers
# every argument. Only this role installs toolkits, writes those files and selects
# cuda_home, so the read stands until the role changes something.

ARGUMENT_SPEC: Dict[str, Any] = {
    "versions": {"type": "list", "elements": "str"},
    "stack": {"type": "list", "elements": "dict"},
    "adopt": {"type": "path"},
    "method": {"type": "str", "required": True},
    "prefix": {"type": "path", "default": "/usr/local"},
    "cudnn_install": {"type": "bool", "default": True},
    "cudnn_method": {"type": "str", "default": "apt"},
    "cudnn_version": {"type": "str", "default": ""},
    "machine": {"type": "str", "required": True},
    "link": {"type": "path"},
    "link_path": {"type": "path"},
    "files": {"type": "list", "elements": "path", "default": []},
    "read": {"type": "dict"},
}
# A plan needs the toolkits and gpu_stack_plan's results; an adopt read needs neither.
MUTUALLY_EXCLUSIVE = [("adopt", "versions"), ("adopt", "stack"), ("adopt", "read")]
REQUIRED_BY = {"versions": ("stack",), "stack": ("versions",)}
REQUIRED_ONE_OF = [("adopt", "versions")]


def ask_nvcc(path: str, run: Runner) -> Dict[str, Any]:
    """``{rc, stdout}`` of ``<path> --version``; rc null when nvcc is not an executable."""
    if not os.access(path, os.X_OK):
        return {"rc": None, "stdout": ""}
    rc, stdout, _stderr = run([path, "--version"])
    return {"rc": rc, "stdout": stdout}


def ld_conf_kept(method: str, default_version: str) -> Optional[str]:
    """The ld.so.conf.d file the role writes and keeps: NVIDIA's toolkits only (the
    distribution's libraries are in the multiarch directory, which ld.so searches)."""
    return ld_conf(default_version) if method == "cuda_repo" else None


def described(files: Sequence[str], method: str, default_version: str) -> List[str]:
    """The files whose state the read describes for managed_files' ``current``: ``files``,
    then the kept ld.so.conf.d file."""
    kept = ld_conf_kept(method, default_version)
    return list(files) + ([kept] if kept else [])


def read_host(
    nvcc_paths: Sequence[str],
    link: Optional[Mapping[str, Any]],
    files: Sequence[str],
    run: Runner,
    read_link: Callable[[str, Optional[str], Optional[str]], Dict[str, Any]],
    describe: Callable[[str], Dict[str, Any]],
) -> Dict[str, Any]:
    """What the module reads on the host: each nvcc's answer (by path), with ``link``
    (``{link, path, keep}``) how that link is selected (``read_link(link, path, keep)``,
    module_utils/cuda_link.py), and each file's description."""
    nvcc: Dict[str, Any] = {}
    for path in nvcc_paths:
        if path not in nvcc:
            nvcc[path] = ask_nvcc(path, run)
    return {
        "nvcc": nvcc,
        "link": dict(link, state=read_link(link["link"], link["path"], link["keep"]))
        if link
        else None,
        "files": [describe(path) for path in files],
    }


def wanted_reads(params: Mapping[str, Any]) -> Dict[str, Any]:
    """What answering ``params`` needs read: ``{nvcc: version -> path, link, files}``."""
    by_version = {str(r.get("item")): r for r in params["stack"]}
    versions = [str(v) for v in params["versions"]]
    nvcc = {}
    for version in versions:
        pkgs = (by_version.get(version) or {}).get("packages") or {}
        nvcc[version] = nvcc_path(
            version, params["method"], params["prefix"], pkgs.get("distro_toolkit")
        )
    default = versions[0] if versions else ""
    link = (
        {
            "link": params["link"],
            "path": params.get("link_path"),
            "keep": ld_conf_kept(params["method"], default),
        }
        if params.get("link")
        else None
    )
    return {
        "nvcc": nvcc,
        "link": link,
        "files": described(params["files"], params["method"], default),
    }


def answer(params: Mapping[str, Any], read: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The module's result for ``params`` from ``read`` (``read_host``'s), or None when the
    read does not cover them: an nvcc it did not ask, another link or another file list.
    Raises ValueError as ``plan`` does."""
    wanted = wanted_reads(params)
    asked = read.get("nvcc") or {}
    if any(path not in asked for path in wanted["nvcc"].values()):
        return None
    read_link = read.get("link")
    if wanted["link"] is not None and (
        not read_link or any(read_link.get(k) != v for k, v in wanted["link"].items())
    ):
        return None
    files = list(read.get("files") or [])
    if [f.get("path") for f in files] != wanted["files"]:
        return None
    result = plan(
        params["versions"],
        params["stack"],
        {version: asked[path] for version, path in wanted["nvcc"].items()},
        params["method"],
        params["prefix"],
        {
            "install": params["cudnn_install"],
            "method": params["cudnn_method"],
            "version": params["cudnn_version"],
        },
        params["machine"],
    )
    if wanted["link"] is not None:
        result["link"] = read_link["state"]
    result["files"] = files
    return result


def adopt_reads(home: str, params: Mapping[str, Any], release: Optional[str]) -> Dict[str, Any]:
    """In adopt mode, what the stage's plan will need read once the toolkit at ``home``
    named its ``release`` (None: nothing to adopt, nothing more to read): its nvcc where
    NVIDIA's toolkits are (the distribution's path comes from gpu_stack_plan, which runs
    after this read: that plan reads for itself), how cuda_home selects it and the files."""
    paths = [f"{home.rstrip('/')}/bin/nvcc"]
    if not release:
        return {"nvcc": paths, "link": None, "files": []}
    if params["method"] != "distro":
        paths.append(nvcc_path(release, params["method"], params["prefix"], None))
    link = (
        {
            "link": params["link"],
            "path": f"{params['prefix'].rstrip('/')}/cuda-{release}"
            if params["method"] == "cuda_repo"
            else None,
            "keep": ld_conf_kept(params["method"], release),
        }
        if params.get("link")
        else None
    )
    return {
        "nvcc": paths,
        "link": link,
        "files": described(params["files"], params["method"], release),
    }
