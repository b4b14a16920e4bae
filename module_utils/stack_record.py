"""The stack each GPU stage left on a host, as a record (issue 35): module_utils for the
stack_record_info module, which reads it on the host, and for module_utils/default_stack.py,
which decides on the controller what a run keeps. Kept apart from the catalogue, so that the
module that reads the records does not ship and import it.

Each stage (roles/<stage>/tasks/stack_record.yml) writes ``record(stage, values)`` as JSON to
``RECORD_FILES[stage]`` in its state directory (the environment's own, for conda_pytorch).
Where a stage has no record (a host converged before the stages wrote them), ``read_stage``
reads what the files only Kindling writes say instead.
"""

from __future__ import annotations

import glob
import json
import os
import re
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional

# The stack variables each stage converges and records, in its state directory.
STAGE_VARIABLES: Dict[str, tuple] = {
    "nvidia_driver": ("nvidia_driver_branch",),
    "cuda": ("cuda_version", "cuda_cudnn_version"),
    "conda_pytorch": (
        "conda_pytorch_version",
        "conda_pytorch_torchvision_version",
        "conda_pytorch_cuda_variant",
        "conda_pytorch_python_version",
    ),
}
STACK_VARIABLES = tuple(name for names in STAGE_VARIABLES.values() for name in names)
# Where each stage records the stack it converged: a JSON file in its state directory
# (nvidia_driver_state_dir and cuda_state_dir share /var/lib/kindling by default), and in the
# PyTorch environment's own directory (the record goes with the environment).
RECORD_FILES = {stage: f"stack-{stage}.json" for stage in STAGE_VARIABLES}
RECORD_FORMAT = 1
# The role variables that say where each stage's record and Kindling's own files are.
PATH_VARIABLES = (
    "nvidia_driver_state_dir",
    "nvidia_driver_preferences_file",
    "cuda_state_dir",
    "cuda_profile_file",
    "cuda_cudnn_preferences_file",
    "cuda_adopt_existing",
)


def record_paths(
    values: Mapping[str, Any], environment: Mapping[str, Any]
) -> Dict[str, Dict[str, str]]:
    """stack_record_info's ``stages``: for each stage Kindling manages on this host, its record
    and the files that stand for one on a host converged before the records. ``values``: the
    PATH_VARIABLES; ``environment``: host_plan.environment (an adopted environment, like an
    adopted toolkit, is not Kindling's and has no record)."""
    out: Dict[str, Dict[str, str]] = {}
    state = _text(values.get("nvidia_driver_state_dir"))
    if state:
        out["nvidia_driver"] = {
            "record": os.path.join(state, record_file("nvidia_driver")),
            "pin": _text(values.get("nvidia_driver_preferences_file")),
        }
    state = _text(values.get("cuda_state_dir"))
    if state and not _bool(values.get("cuda_adopt_existing")):
        out["cuda"] = {
            "record": os.path.join(state, record_file("cuda")),
            "profile": _text(values.get("cuda_profile_file")),
            "cudnn_pin": _text(values.get("cuda_cudnn_preferences_file")),
        }
    env_dir = _text(environment.get("env_dir"))
    if env_dir and environment.get("mode") != "adopt":
        out["conda_pytorch"] = {
            "record": os.path.join(env_dir, record_file("conda_pytorch")),
            "env_dir": env_dir,
        }
    return out


def record_file(stage: str) -> str:
    """The file name of ``stage``'s stack record (see RECORD_FILES)."""
    return RECORD_FILES[stage]


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y", "t")
    return bool(value)


def record(stage: str, values: Mapping[str, Any]) -> Dict[str, Any]:
    """What ``stage`` writes to its RECORD_FILE: the stack variables it converged."""
    if stage not in STAGE_VARIABLES:
        raise ValueError(f"no stack record for stage {stage!r}: one of {sorted(STAGE_VARIABLES)}")
    return {
        "format": RECORD_FORMAT,
        "stage": stage,
        "stack": {name: _text(values.get(name)) for name in STAGE_VARIABLES[stage]},
    }


def recorded_values(records: Iterable[Optional[Mapping[str, Any]]]) -> Dict[str, str]:
    """The stack variables the stages' records hold (a record of another format, another
    stage's names or an empty value is ignored)."""
    out: Dict[str, str] = {}
    for item in records:
        if not isinstance(item, Mapping) or item.get("format") != RECORD_FORMAT:
            continue
        allowed = STAGE_VARIABLES.get(_text(item.get("stage")), ())
        for name, value in (item.get("stack") or {}).items():
            if name in allowed and _text(value):
                out[name] = _text(value)
    return out


# A host converged before the stages wrote records (Kindling before issue 35) still carries
# what each stage left, in files only Kindling writes: the driver role's apt pin, the cuda
# role's login-shell profile and cuDNN pin, and the environment conda_pytorch made (torch's
# own version.py). read_stage reads those where a stage has no record, so such a host keeps
# its stack too instead of following a newer default.
_MANAGED_DRIVER = "Explanation: Kindling nvidia_driver"
_DRIVER_PIN = re.compile(r"^Pin:\s*version\s+(\d+)[.-]", re.M)
_CUDA_PROFILE = re.compile(r"^# CUDA (\d+\.\d+) (?:for login shells|from the distribution)", re.M)
_CUDNN_PIN = re.compile(r"^Explanation: Kindling cuda: cuDNN (\S+)", re.M)
_CUDNN_PIN_CUDA = re.compile(r"^# Keeps cuDNN at \S+ for CUDA (\d+\.\d+)\.", re.M)
_PY_VERSION = re.compile(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", re.M)
_PY_CUDA = re.compile(r"^cuda\s*(?::[^=\n]*)?=\s*(?:['\"]([^'\"]*)['\"]|None)", re.M)
_LIB_PYTHON = re.compile(r"/lib/python(\d+\.\d+)/site-packages/")


def legacy_driver(pin_text: Optional[str]) -> Dict[str, str]:
    """The branch the driver role's apt pin holds ("Pin: version 580.*"), {} for a file that is
    not the role's."""
    if not pin_text or _MANAGED_DRIVER not in pin_text:
        return {}
    found = _DRIVER_PIN.search(pin_text)
    return {"nvidia_driver_branch": found.group(1)} if found else {}


def legacy_cuda(profile_text: Optional[str], cudnn_pin_text: Optional[str]) -> Dict[str, str]:
    """The CUDA version of the cuda role's login-shell profile ("# CUDA 13.0 for login
    shells") and the cuDNN its pin holds ("Explanation: Kindling cuda: cuDNN 9.14.0")."""
    out: Dict[str, str] = {}
    if profile_text and "(role cuda)" in profile_text:
        found = _CUDA_PROFILE.search(profile_text)
        if found:
            out["cuda_version"] = found.group(1)
    if cudnn_pin_text:
        found = _CUDNN_PIN.search(cudnn_pin_text)
        if found:
            out["cuda_cudnn_version"] = found.group(1)
            cuda = _CUDNN_PIN_CUDA.search(cudnn_pin_text)
            if cuda and "cuda_version" not in out:
                out["cuda_version"] = cuda.group(1)
    return out


def _release(version: str) -> str:
    return version.split("+", 1)[0]


def legacy_torch(
    torch_version_py: Optional[str],
    torchvision_version_py: Optional[str] = None,
    python: Optional[str] = None,
) -> Dict[str, str]:
    """torch's release and wheel variant from its version.py (``__version__ = '2.11.0+cu130'``,
    ``cuda = '13.0'``), torchvision's release, and the environment's Python."""
    if not torch_version_py:
        return {}
    found = _PY_VERSION.search(torch_version_py)
    if not found:
        return {}
    version = found.group(1)
    out = {"conda_pytorch_version": _release(version)}
    local = version.split("+", 1)[1] if "+" in version else ""
    if re.fullmatch(r"cu\d+|cpu", local):
        out["conda_pytorch_cuda_variant"] = local
    else:
        cuda = _PY_CUDA.search(torch_version_py)
        if cuda:
            value = cuda.group(1)
            out["conda_pytorch_cuda_variant"] = "cu" + value.replace(".", "") if value else "cpu"
    if torchvision_version_py:
        vision = _PY_VERSION.search(torchvision_version_py)
        if vision:
            out["conda_pytorch_torchvision_version"] = _release(vision.group(1))
    if python:
        out["conda_pytorch_python_version"] = python
    return out


def _read_text(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(65536)
    except OSError:
        return None


def _read_record(path: str, read: Callable[[str], Optional[str]]) -> Optional[Dict[str, Any]]:
    text = read(path) if path else None
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _package_file(env_dir: str, package: str, find: Callable[[str], List[str]]) -> str:
    found = sorted(
        find(os.path.join(env_dir, "lib", "python*", "site-packages", package, "version.py"))
    )
    return found[-1] if found else ""


def read_stage(
    stage: str,
    paths: Mapping[str, Any],
    read: Callable[[str], Optional[str]] = _read_text,
    find: Callable[[str], List[str]] = glob.glob,
) -> Dict[str, Any]:
    """What ``stage`` left on the host: its record (``paths["record"]``), else what the files
    only Kindling writes say (``legacy``, with the files read in ``sources``).

    ``paths``: nvidia_driver {record, pin}; cuda {record, profile, cudnn_pin}; conda_pytorch
    {record, env_dir}. A missing file is none; nothing here fails."""
    if stage not in STAGE_VARIABLES:
        raise ValueError(f"no stack record for stage {stage!r}: one of {sorted(STAGE_VARIABLES)}")
    record = _read_record(_text(paths.get("record")), read)
    if (
        record is not None
        and record.get("format") == RECORD_FORMAT
        and record.get("stage") == stage
    ):
        return {"record": record, "legacy": {}, "sources": [_text(paths.get("record"))]}
    values: Dict[str, str] = {}
    sources: List[str] = []
    if stage == "nvidia_driver":
        pin = _text(paths.get("pin"))
        values = legacy_driver(read(pin) if pin else None)
        sources = [pin] if values else []
    elif stage == "cuda":
        profile, cudnn_pin = _text(paths.get("profile")), _text(paths.get("cudnn_pin"))
        profile_text = read(profile) if profile else None
        pin_text = read(cudnn_pin) if cudnn_pin else None
        values = legacy_cuda(profile_text, pin_text)
        sources = [profile] if legacy_cuda(profile_text, None) else []
        if legacy_cuda(None, pin_text):
            sources.append(cudnn_pin)
    else:
        env_dir = _text(paths.get("env_dir"))
        if env_dir:
            torch_file = _package_file(env_dir, "torch", find)
            vision_file = _package_file(env_dir, "torchvision", find)
            python = _LIB_PYTHON.search(torch_file)
            values = legacy_torch(
                read(torch_file) if torch_file else None,
                read(vision_file) if vision_file else None,
                python.group(1) if python else None,
            )
            sources = [f for f in (torch_file, vision_file) if f] if values else []
    return {"record": None, "legacy": values, "sources": sources}


def stage_values(stage: str, read_result: Mapping[str, Any]) -> Dict[str, str]:
    """The stack variables of one read_stage result: the record's, else the legacy ones."""
    record = read_result.get("record")
    if record:
        return recorded_values([record])
    allowed = STAGE_VARIABLES.get(stage, ())
    return {
        k: _text(v)
        for k, v in (read_result.get("legacy") or {}).items()
        if k in allowed and _text(v)
    }
