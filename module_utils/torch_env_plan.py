"""The conda_pytorch role's environment plan: the torch_env_plan module.

From the role's settings this decides, without running anything:

- where the Miniforge installer is downloaded to (``installer_path``: the download directory
  and the file name of the URL's path) and its command line (``miniforge_install``);
- the command line that creates the environment (``env_create``): ``conda create --prefix
  <env> python=X.Y`` in conda mode, ``<venv_python> -m venv <env>`` otherwise;
- what must be installed, as ``pip list`` reports it (``wanted``): the pip method's
  versions carry the wheel variant's local tag (``2.11.0+cu130``, ``2.11.0+cpu``), the conda
  method's don't;
- the command line that installs torch (``torch_install``): ``pip install`` from the wheel
  index with ``name==version+variant`` specs, or ``conda install`` from the pytorch channel
  with the CUDA package of the release's scheme: ``cpuonly`` for the ``cpu`` variant,
  ``cudatoolkit=X.Y -c conda-forge`` before ``pytorch_cuda_since`` (1.13),
  ``pytorch-cuda=X.Y -c nvidia`` from it on;
- from the environment's installed packages (``pip list --format=json``), which wanted
  packages are missing or at another version, and so whether the install runs.

These were the Jinja template ``roles/conda_pytorch/templates/commands.yml.j2`` and a Jinja
comparison in the role's install tasks; the argv lists are the same, element for element.

Python 3.8, standard library only.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import urlsplit

METHODS = ("pip", "conda")
MODES = ("conda", "venv", "adopt")
VARIANT = re.compile(r"cu[0-9]{2,3}|cpu")
RELEASE = re.compile(r"[0-9]+(\.[0-9]+)*")
# The keys of the role's public fact conda_pytorch_commands, in the template's order.
COMMAND_KEYS = ("installer_path", "miniforge_install", "env_create", "wanted", "torch_install")


def release_tuple(version: str) -> Tuple[int, ...]:
    """The release numbers of a version, ``"1.12.1"`` -> ``(1, 12, 1)``.

    Only the leading ``N(.N)*`` counts; a version without one raises ValueError. Tuples
    compare as Ansible's ``version`` test did for these versions: number by number, and
    a shorter release before a longer one it starts (``1.13 < 1.13.0``).
    """
    m = RELEASE.match(str(version).strip())
    if not m:
        raise ValueError(f"{version!r} is not a version number (X.Y or X.Y.Z)")
    return tuple(int(part) for part in m.group(0).split("."))


def version_before(version: str, threshold: str) -> bool:
    """Whether ``version`` is an earlier release than ``threshold``."""
    return release_tuple(version) < release_tuple(threshold)


def variant_cuda(variant: str) -> str:
    """The CUDA release of a wheel variant: ``cu116`` -> ``11.6``, ``cu130`` -> ``13.0``."""
    return f"{variant[2:-1]}.{variant[-1]}"


def installer_path(download_dir: str, miniforge_url: str) -> str:
    """Where the installer is saved: the download directory and the URL path's file name."""
    return f"{download_dir}/{posixpath.basename(urlsplit(miniforge_url).path)}"


def wanted_versions(
    method: str,
    variant: str,
    versions: Mapping[str, str],
    install_torchvision: bool,
    install_torchaudio: bool,
) -> Dict[str, str]:
    """name -> version as ``pip list`` reports it: torch, then torchvision and torchaudio
    when their flags are on. The pip method's versions carry ``+<variant>``."""
    names = ["torch"]
    if install_torchvision:
        names.append("torchvision")
    if install_torchaudio:
        names.append("torchaudio")
    tag = f"+{variant}" if method == "pip" else ""
    return {name: f"{versions[name]}{tag}" for name in names}


def conda_cuda_package(version: str, variant: str, pytorch_cuda_since: str) -> List[str]:
    """The conda method's CUDA package and its channels (after ``-c pytorch``)."""
    legacy = version_before(version, pytorch_cuda_since)
    if variant == "cpu":
        package = "cpuonly"
    elif legacy:
        package = f"cudatoolkit={variant_cuda(variant)}"
    else:
        package = f"pytorch-cuda={variant_cuda(variant)}"
    return [package, "-c", "pytorch", "-c", "conda-forge" if legacy else "nvidia"]


def commands(
    *,
    install_method: str,
    mode: str,
    cuda_variant: str,
    torch_version: str,
    torchvision_version: str,
    torchaudio_version: str,
    install_torchvision: bool,
    install_torchaudio: bool,
    conda_prefix: str,
    env_dir: str,
    env_python: str,
    venv_python: str,
    python_version: str,
    index_url: str,
    extra_index_url: str,
    pytorch_cuda_since: str,
    miniforge_url: str,
    download_dir: str,
) -> Dict[str, Any]:
    """The role's command lines (argv lists) and ``wanted``: the fact conda_pytorch_commands.

    ``mode`` is the role's resolved mode (conda, venv or adopt); every mode but conda gets
    the venv command line (adopt mode runs none of them). ``conda_prefix`` and ``env_dir``
    are used as given: no trailing slash is stripped.
    """
    if install_method not in METHODS:
        raise ValueError(
            f"install_method must be one of {', '.join(METHODS)}, not {install_method!r}"
        )
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if not VARIANT.fullmatch(cuda_variant or ""):
        raise ValueError(f"cuda_variant must be cuXY, cuXYZ or cpu, not {cuda_variant!r}")
    release_tuple(torch_version)
    release_tuple(pytorch_cuda_since)
    conda = f"{conda_prefix}/bin/conda"
    installer = installer_path(download_dir, miniforge_url)
    versions = {
        "torch": torch_version,
        "torchvision": torchvision_version,
        "torchaudio": torchaudio_version,
    }
    wanted = wanted_versions(
        install_method, cuda_variant, versions, install_torchvision, install_torchaudio
    )
    if mode == "conda":
        env_create = [conda, "create", "--yes", "--quiet", "--prefix", env_dir]
        env_create.append(f"python={python_version}")
    else:
        env_create = [venv_python, "-m", "venv", env_dir]
    if install_method == "pip":
        torch_install = [
            env_python, "-m", "pip", "install", "--no-input", "--disable-pip-version-check",
            "--index-url", index_url,
        ]  # fmt: skip
        if extra_index_url:
            torch_install += ["--extra-index-url", extra_index_url]
        torch_install += [f"{name}=={version}" for name, version in wanted.items()]
    else:
        specs = [f"pytorch=={torch_version}"]
        specs += [f"{name}=={version}" for name, version in wanted.items() if name != "torch"]
        torch_install = [conda, "install", "--yes", "--quiet", "--prefix", env_dir, *specs]
        torch_install += conda_cuda_package(torch_version, cuda_variant, pytorch_cuda_since)
    return {
        "installer_path": installer,
        "miniforge_install": ["/bin/bash", installer, "-b", "-p", conda_prefix],
        "env_create": env_create,
        "wanted": wanted,
        "torch_install": torch_install,
    }


def pip_list_versions(stdout: str) -> Dict[str, str]:
    """name (lower case) -> version from ``pip list --format=json``; ValueError otherwise."""
    try:
        packages = json.loads(stdout)
    except ValueError as exc:
        raise ValueError(f"pip list --format=json did not print JSON: {exc}") from exc
    if not isinstance(packages, list) or not all(
        isinstance(p, dict) and "name" in p and "version" in p for p in packages
    ):
        raise ValueError("pip list --format=json did not print a list of {name, version}")
    return {str(p["name"]).lower(): str(p["version"]) for p in packages}


def compare(
    wanted: Mapping[str, str], installed: Optional[Mapping[str, str]], method: str
) -> Dict[str, Any]:
    """Which wanted packages are missing or at another version.

    ``installed``: name -> version of the environment's packages (None or empty: nothing, as
    when the environment's interpreter does not exist or pip list fails). The conda method
    compares without the local tag (``+cu116``), which conda builds don't carry.

    Returns ``installed`` (every installed package, plus each missing wanted one as ``''``),
    ``missing`` (names), ``other_version`` (name -> the installed version) and
    ``install_needed``.
    """
    seen: Dict[str, str] = {}
    for name, version in (installed or {}).items():
        version = str(version)
        seen[str(name).lower()] = version.split("+", 1)[0] if method == "conda" else version
    merged = {name: "" for name in wanted}
    merged.update(seen)
    missing = [name for name, version in wanted.items() if name not in seen and version != ""]
    other = {
        name: seen[name]
        for name, version in wanted.items()
        if name in seen and seen[name] != version
    }
    return {
        "installed": merged,
        "missing": missing,
        "other_version": other,
        "install_needed": bool(missing or other),
    }


def summary(wanted: Mapping[str, str], comparison: Mapping[str, Any], read: bool) -> str:
    """One line: what would be installed and why."""
    specs = ", ".join(f"{name} {version}" for name, version in wanted.items())
    if not read:
        return f"wanted {specs}; the environment was not read"
    if not comparison["install_needed"]:
        return f"wanted {specs}: all installed"
    parts = [f"{name} missing" for name in comparison["missing"]]
    parts += [f"{name} is {v}" for name, v in comparison["other_version"].items()]
    return f"wanted {specs}: install ({'; '.join(parts)})"


def plan(
    settings: Mapping[str, Any],
    installed: Optional[Mapping[str, str]] = None,
    read: bool = True,
) -> Dict[str, Any]:
    """The module's whole answer: ``commands`` (see ``commands``) and the comparison of
    ``wanted`` with ``installed`` (see ``compare``), plus ``installed_read`` and ``summary``."""
    cmds = commands(**settings)
    comparison = compare(cmds["wanted"], installed, settings["install_method"])
    return {
        "commands": cmds,
        **comparison,
        "installed_read": read,
        "summary": summary(cmds["wanted"], comparison, read),
    }


def pip_list_argv(python: str) -> Sequence[str]:
    """The read-only command that lists the environment's packages."""
    return [python, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"]


# The module's options: the settings ``commands`` takes, and what is installed (read on the
# host with ``read_installed``, or given as ``installed``).
SETTINGS = {
    "install_method": {"type": "str", "required": True, "choices": ["pip", "conda"]},
    "mode": {"type": "str", "required": True, "choices": ["conda", "venv", "adopt"]},
    "cuda_variant": {"type": "str", "required": True},
    "torch_version": {"type": "str", "required": True},
    "install_torchvision": {"type": "bool", "default": True},
    "torchvision_version": {"type": "str", "default": ""},
    "install_torchaudio": {"type": "bool", "default": False},
    "torchaudio_version": {"type": "str", "default": ""},
    "conda_prefix": {"type": "str", "required": True},
    "env_dir": {"type": "str", "required": True},
    "env_python": {"type": "str", "required": True},
    "venv_python": {"type": "str", "required": True},
    "python_version": {"type": "str", "default": ""},
    "index_url": {"type": "str", "required": True},
    "extra_index_url": {"type": "str", "default": ""},
    "pytorch_cuda_since": {"type": "str", "required": True},
    "miniforge_url": {"type": "str", "required": True},
    "download_dir": {"type": "str", "required": True},
}
ARGUMENT_SPEC: Dict[str, Any] = {
    **SETTINGS,
    "read_installed": {"type": "bool", "default": False},
    "installed": {"type": "dict"},
}


def needs_host(params: Mapping[str, Any]) -> bool:
    """Whether the answer needs the host: only to read what is installed (pip list)."""
    return bool(params.get("read_installed")) and params.get("installed") is None


def plan_for(params: Mapping[str, Any], installed: Optional[Mapping[str, str]]) -> Dict[str, Any]:
    """The module's result for validated ``params`` and what is ``installed`` (None: not
    read). Raises ValueError, with the message the module fails with, on empty settings."""
    required = ["torch_version", "conda_prefix", "env_dir", "env_python"]
    required += ["python_version"] if params["mode"] == "conda" else []
    required += [
        f"{name}_version" for name in ("torchvision", "torchaudio") if params[f"install_{name}"]
    ]
    empty = [name for name in required if not params[name]]
    if empty:
        raise ValueError(f"torch_env_plan: {', '.join(empty)} must not be empty")
    settings = {name: params[name] for name in SETTINGS}
    read = params["installed"] is not None or bool(params["read_installed"])
    try:
        return plan(settings, installed, read)
    except ValueError as exc:
        raise ValueError(f"torch_env_plan: {exc}") from exc
