"""A host's plan, worked out once and read by every stage (issue 33).

``build`` takes every role's effective inputs (what the roles' input checks of this run
checked, under the names a user sets them), the one read of the host's GPUs
(nvidia_smi_facts with pci_facts), the host's facts and the adopt-mode reads, and returns
the plan that gpu_preflight publishes as the fact ``gpu_preflight_host_plan`` and writes,
as JSON, to the controller's reports/<host>/plan.json:

- ``inputs``: each role's effective inputs, under their own names (``cuda_version``,
  ``nvidia_driver_branch``, ``conda_pytorch_version``, ...). A stage reads another
  stage's input here, never under a name of its own.
- ``gpus``: the host's GPUs, chosen once: nvidia-smi's when it lists any, else the PCI
  bus's (a host without a driver yet); ``gpus_from`` says which.
- ``gpu_present``: an NVIDIA GPU on the PCI bus or a working nvidia-smi.
- ``driver_version``: the driver nvidia-smi reported when the plan was made ("" without one).
- ``facts`` and ``reads``: the host's distribution and architecture, and what adopt mode
  read there (the torch the driver stage adopts by, the toolkit cuda_home holds,
  conda_pytorch's interpreter), each read once, by the action plugin.
- ``stack`` and ``catalogue``: the whole stack's arguments and the vendor catalogue's answer
  for them (NVIDIA's repository for this OS, the packages of each step, problems, notes).
  Everything that answer needs is in the inventory and the facts, so stage 1 judges it on
  every host, with or without a GPU.
- ``stages``: each GPU stage's part: whether it runs, what it will leave (the driver branch
  it checks, the toolkits, the environment and its interpreter) and the catalogue's answer
  for that, judged against the driver the stage will find: nvidia-smi's, or the planned
  branch where the driver stage will replace an older one.

A stage takes its part with ``take_part`` (the module's ``part``), which checks it again
only when the driver changed in this run, and fails on a blocking problem; stage 1 does the
same for every stage before any change.

``RENAMED`` is the table of variables a user could set that are gone, each with the
name to set instead; ``refusals`` turns the ones set into messages.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List, Mapping, Optional

# old name -> (the name to set instead, why it went). Data: tests/unit/test_host_plan.py
# holds it to the roles (no role declares or reads an old name).
RENAMED: Dict[str, tuple] = {
    "nvidia_driver_cuda_version": (
        "cuda_version",
        "the driver is checked against the CUDA the cuda stage installs; one name for it",
    ),
    "nvidia_driver_cuda_install_method": (
        "cuda_install_method",
        "the driver stage reads the cuda stage's install method from the plan",
    ),
    "cuda_driver_branch": (
        "nvidia_driver_branch",
        "the cuda stage checks its toolkits against the driver stage's branch, read from the plan",
    ),
    "cuda_repo_distro": (
        "nvidia_driver_repo_distro",
        "both stages add the one NVIDIA repository; the cuda stage reads its distro from the plan",
    ),
    "gpu_preflight_plan": (
        "cuda_version, nvidia_driver_branch, conda_pytorch_version and the other stage variables",
        "stage 1 builds the plan from every role's own variables (gpu_preflight_host_plan)",
    ),
}


# The stages, in site.yml's order, whose part of the plan is worked out here: what each
# will check and leave, with the catalogue's answer for it (module_utils/stack_check.py).
# A stage takes its part (``part``) and re-checks only where this run changed the driver.
STAGES = ("nvidia_driver", "cuda", "conda_pytorch")


def refusals(defined: Iterable[str]) -> List[str]:
    """A message for each retired variable among ``defined`` (names the user set)."""
    found = []
    for name in sorted(set(defined) & set(RENAMED)):
        new, why = RENAMED[name]
        found.append(f"{name} is no longer read: set {new} instead ({why})")
    return found


def choose_gpus(nvidia_pci: Mapping[str, Any], nvidia_smi: Mapping[str, Any]) -> Dict[str, Any]:
    """The one choice of a host's GPUs: nvidia-smi's when it lists any, else the PCI bus's."""
    smi = list((nvidia_smi or {}).get("gpus") or []) if (nvidia_smi or {}).get("present") else []
    pci = list((nvidia_pci or {}).get("gpus") or [])
    if smi:
        return {"gpus": smi, "gpus_from": "nvidia-smi"}
    if pci:
        return {"gpus": pci, "gpus_from": "pci"}
    return {"gpus": [], "gpus_from": "none"}


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def stack(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """The whole-stack check's arguments from the effective inputs.

    What a stage adopts instead of installing is left out: the toolkit with
    cuda_adopt_existing; torch, its variant and Python with conda_pytorch_python. Those are
    checked by the stage with what it finds.
    """
    adopt_cuda = bool(inputs.get("cuda_adopt_existing"))
    adopt_torch = bool(_text(inputs.get("conda_pytorch_python")))
    ipykernel = _text(inputs.get("jupyter_ipykernel_version"))
    return {
        "driver_branch": _text(inputs.get("nvidia_driver_branch")),
        "driver_version": _text(inputs.get("nvidia_driver_version")),
        "cuda_version": "" if adopt_cuda else _text(inputs.get("cuda_version")),
        "cuda_versions_extra": []
        if adopt_cuda
        else [_text(v) for v in inputs.get("cuda_versions_extra") or []],
        "cudnn_version": "" if adopt_cuda else _text(inputs.get("cuda_cudnn_version")),
        "torch_version": "" if adopt_torch else _text(inputs.get("conda_pytorch_version")),
        "torch_cuda_variant": ""
        if adopt_torch
        else _text(inputs.get("conda_pytorch_cuda_variant")),
        "python_version": "" if adopt_torch else _text(inputs.get("conda_pytorch_python_version")),
        "repo_distro": _text(inputs.get("nvidia_driver_repo_distro")),
        "install_method": _text(inputs.get("nvidia_driver_install_method")) or "cuda_repo",
        "toolkit_method": _text(inputs.get("cuda_install_method")) or "cuda_repo",
        "kernel_modules": _text(inputs.get("nvidia_driver_kernel_modules")) or "auto",
        "package_flavor": _text(inputs.get("nvidia_driver_package_flavor")) or "auto",
        "python_packages": [
            {"name": "ipykernel", "version": ipykernel, "variable": "jupyter_ipykernel_version"}
        ]
        if ipykernel
        else [],
    }


def catalogue(
    stack_args: Mapping[str, Any], facts: Mapping[str, Any], gpus: List[Any]
) -> Dict[str, Any]:
    """The catalogue's answer for the whole stack: NVIDIA's repository for this OS (from the
    inventory's repository settings, else the host's distribution), the packages of each
    step, and the problems and notes. Everything it needs is in the inventory and the
    host's facts, so stage 1 checks it on every host, with or without a GPU (issue 34)."""
    args = {k: (v if v != "" else None) for k, v in stack_args.items() if k != "repo_distro"}
    args.update(
        os=_text(stack_args.get("repo_distro")) or None,
        distribution=_text(facts.get("distribution")) or None,
        distribution_version=_text(facts.get("distribution_version")) or None,
        machine=_text(facts.get("architecture")) or None,
        gpus=list(gpus),
    )
    result = _check(args)
    answer = {
        key: result.get(key) for key in ("ok", "repository", "packages", "problems", "notes", "msg")
    }
    answer["default_stack"] = default_stack_for(stack_args, facts)
    return answer


def default_stack_for(stack_args: Mapping[str, Any], facts: Mapping[str, Any]) -> Optional[Dict]:
    """The nearest supported stack for the host's OS: the catalogue's default stack for its
    NVIDIA repository (``default_stacks``, module_utils/default_stack.py), with what the
    plan's own stack differs in (``differs``); None for an OS with no default."""
    from ansible.module_utils.default_stack import VARIABLES, for_host

    found = for_host(
        _text(stack_args.get("repo_distro")),
        facts.get("distribution"),
        facts.get("distribution_version"),
    )
    if not found:
        return None
    keys = {
        "nvidia_driver_branch": "driver_branch",
        "cuda_version": "cuda_version",
        "cuda_cudnn_version": "cudnn_version",
        "conda_pytorch_version": "torch_version",
        "conda_pytorch_cuda_variant": "torch_cuda_variant",
        "conda_pytorch_python_version": "python_version",
    }
    found["differs"] = sorted(
        name
        for name in VARIABLES.values()
        if name in keys
        and _text(stack_args.get(keys[name]))
        and _text(stack_args.get(keys[name])) != found["variables"][name]
    )
    return found


def build(
    inputs: Mapping[str, Any],
    nvidia_pci: Mapping[str, Any],
    nvidia_smi: Mapping[str, Any],
    host: str = "",
    facts: Optional[Mapping[str, Any]] = None,
    reads: Optional[Mapping[str, Any]] = None,
    stages: Iterable[str] = STAGES,
) -> Dict[str, Any]:
    """The host's plan (see the module's docstring for its keys)."""
    nvidia_pci = nvidia_pci or {}
    nvidia_smi = nvidia_smi or {}
    facts = dict(facts or {})
    reads = {k: v for k, v in (reads or {}).items() if v is not None}
    chosen = choose_gpus(nvidia_pci, nvidia_smi)
    driver_version = _text(nvidia_smi.get("driver_version")) if nvidia_smi.get("present") else ""
    gpu_count = int(nvidia_smi.get("gpu_count") or 0) if nvidia_smi.get("present") else 0
    whole = stack(inputs)
    return {
        "host": host,
        "inputs": dict(sorted(inputs.items())),
        "gpus": chosen["gpus"],
        "gpus_from": chosen["gpus_from"],
        "gpu_present": bool(nvidia_pci.get("present") or nvidia_smi.get("present")),
        "driver_version": driver_version,
        "facts": facts,
        "reads": reads,
        "stack": whole,
        "catalogue": catalogue(whole, facts, chosen["gpus"]),
        "stages": stage_parts(
            inputs, chosen["gpus"], facts, driver_version, gpu_count, reads, stages
        ),
    }


# ---------------------------------------------------------------- each GPU stage's part


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y", "t")
    return bool(value)


def stage_runs(stage: str, inputs: Mapping[str, Any], gpus: List[Any]) -> bool:
    """Whether a GPU stage runs: a GPU in the plan, or the stage told to run without one.
    conda_pytorch runs on every host (CPU wheels where there is no GPU)."""
    if stage == "conda_pytorch":
        return True
    return (
        bool(gpus)
        or not _bool(inputs.get(f"{stage}_skip_without_gpu", True))
        or _bool(inputs.get(f"{stage}_gpu_required", False))
    )


def torch_read_args(inputs: Mapping[str, Any], gpus: List[Any]) -> Optional[Dict[str, Any]]:
    """torch_cuda_facts' arguments for the driver stage's adopt-by-torch read, or None.

    torch's version.py only (depth build): importing torch would take seconds."""
    python = _text(inputs.get("nvidia_driver_adopt_torch_python"))
    if not python or not stage_runs("nvidia_driver", inputs, gpus):
        return None
    return {"python": python, "depth": "build", "require_torch": False}


def toolkit_read_args(
    inputs: Mapping[str, Any], gpus: List[Any], machine: str
) -> Optional[Dict[str, Any]]:
    """cuda_toolkit_plan's arguments for the cuda stage's adopt read, or None: which
    release the toolkit at cuda_home is, and what the stage's plan of it needs."""
    if not _bool(inputs.get("cuda_adopt_existing")) or not stage_runs("cuda", inputs, gpus):
        return None
    home = _text(inputs.get("cuda_home")) or "/usr/local/cuda"
    return {
        "adopt": home,
        "method": _text(inputs.get("cuda_install_method")) or "cuda_repo",
        "prefix": _text(inputs.get("cuda_toolkit_prefix")) or "/usr/local",
        "machine": machine,
        "link": home,
        "files": [_text(inputs.get("cuda_profile_file")) or "/etc/profile.d/cuda.sh"],
    }


def environment(inputs: Mapping[str, Any]) -> Dict[str, str]:
    """How conda_pytorch makes its environment and where: adopt (conda_pytorch_python set),
    else conda_pytorch_backend; its directory and interpreter; the tree shared with
    conda_pytorch_group (none in adopt mode); the interpreter that makes the venv or is the
    adopted environment (none for conda)."""
    python = _text(inputs.get("conda_pytorch_python"))
    backend = _text(inputs.get("conda_pytorch_backend")) or "conda"
    prefix = _text(inputs.get("conda_pytorch_conda_prefix")) or "/opt/conda"
    venv = _text(inputs.get("conda_pytorch_venv_path")) or "/opt/venvs/pytorch"
    if python:
        env_dir = posixpath.dirname(posixpath.dirname(python))
        return {
            "mode": "adopt",
            "env_dir": env_dir,
            "env_python": python,
            "shared_dir": "",
            "base_python": python,
        }
    if backend == "conda":
        env_dir = f"{prefix}/envs/{_text(inputs.get('conda_pytorch_env_name')) or 'pytorch'}"
        return {
            "mode": "conda",
            "env_dir": env_dir,
            "env_python": f"{env_dir}/bin/python",
            "shared_dir": prefix,
            "base_python": "",
        }
    return {
        "mode": backend,
        "env_dir": venv,
        "env_python": f"{venv}/bin/python",
        "shared_dir": venv,
        "base_python": _text(inputs.get("conda_pytorch_venv_python")) or "/usr/bin/python3",
    }


def interpreter_read_args(
    inputs: Mapping[str, Any], torch_read: Optional[Mapping[str, Any]]
) -> Optional[Dict[str, Any]]:
    """python_interpreter_info' arguments for conda_pytorch's interpreter, or None: none to
    read, or the driver stage's torch read ran the same interpreter in this run."""
    path = environment(inputs)["base_python"]
    if not path or _interpreter_from_torch_read(path, torch_read) is not None:
        return None
    return {"path": path}


def _interpreter_from_torch_read(
    path: str, torch_read: Optional[Mapping[str, Any]]
) -> Optional[Dict[str, Any]]:
    found = (torch_read or {}).get("interpreter")
    if isinstance(found, Mapping) and found.get("interpreter") == path:
        return dict(found)
    return None


def _check(args: Dict[str, Any]) -> Dict[str, Any]:
    """stack_check.check with ARGUMENT_SPEC's defaults under ``args`` (None: left out)."""
    from ansible.module_utils.stack_check import ARGUMENT_SPEC as CHECK_SPEC
    from ansible.module_utils.stack_check import check

    params = {key: spec.get("default") for key, spec in CHECK_SPEC.items()}
    params.update({k: v for k, v in args.items() if v is not None})
    return check(params)


def _overrides(inputs: Mapping[str, Any], prefix: str) -> Dict[str, str]:
    return {
        "base_url": _text(inputs.get(f"{prefix}_base_url")),
        "key_url": _text(inputs.get(f"{prefix}_key_url")),
        "fingerprint": _text(inputs.get(f"{prefix}_key_fingerprint")),
        "keyring": _text(inputs.get(f"{prefix}_keyring")),
    }


def driver_part(
    inputs: Mapping[str, Any],
    gpus: List[Any],
    facts: Mapping[str, Any],
    driver_version: str,
    torch_read: Optional[Mapping[str, Any]],
) -> Dict[str, Any]:
    """The driver stage's part: whether it runs, the branch it checks (the driver's own
    when adopting by torch), and the catalogue's answer for the driver it will leave."""
    runs = stage_runs("nvidia_driver", inputs, gpus)
    branch = _text(inputs.get("nvidia_driver_branch"))
    adopt_python = _text(inputs.get("nvidia_driver_adopt_torch_python"))
    build = (torch_read or {}).get("torch_build") or {}
    adopt_cuda = _text(build.get("built_cuda_version")) if adopt_python and torch_read else ""
    check_branch = driver_version.split(".")[0] if adopt_cuda and driver_version else branch
    part: Dict[str, Any] = {
        "runs": runs,
        "check_branch": check_branch,
        "adopt_cuda": adopt_cuda,
        "torch_read": dict(torch_read) if torch_read else None,
        "torch_interpreter": (torch_read or {}).get("interpreter"),
        "driver_version": driver_version,
        "check": None,
    }
    if not runs:
        return part
    part["check"] = _check(
        {
            "driver_branch": check_branch,
            "driver_version": driver_version
            if check_branch != branch
            else _text(inputs.get("nvidia_driver_version")) or None,
            "cuda_version": adopt_cuda or _text(inputs.get("cuda_version")),
            "os": _text(inputs.get("nvidia_driver_repo_distro")) or None,
            "arch": _text(inputs.get("nvidia_driver_repo_arch")) or None,
            "distribution": _text(facts.get("distribution")) or None,
            "distribution_version": _text(facts.get("distribution_version")) or None,
            "repository_overrides": _overrides(inputs, "nvidia_driver_repo"),
            "install_method": _text(inputs.get("nvidia_driver_install_method")) or "cuda_repo",
            "toolkit_method": _text(inputs.get("cuda_install_method")) or "cuda_repo",
            "kernel_modules": _text(inputs.get("nvidia_driver_kernel_modules")) or "auto",
            "package_flavor": _text(inputs.get("nvidia_driver_package_flavor")) or None,
            "gpus": list(gpus),
        }
    )
    return part


def cuda_part(
    inputs: Mapping[str, Any],
    gpus: List[Any],
    facts: Mapping[str, Any],
    driver_version: str,
    toolkit_read: Optional[Mapping[str, Any]],
) -> Dict[str, Any]:
    """The cuda stage's part: whether it runs, the toolkits (in adopt mode the one cuda_home
    holds, none when there is none), and the catalogue's answer for each against the driver
    (nvidia-smi's, else the planned branch), the GPUs and NVIDIA's repository."""
    runs = stage_runs("cuda", inputs, gpus)
    adopt = _bool(inputs.get("cuda_adopt_existing"))
    adopted = _text(((toolkit_read or {}).get("adopted") or {}).get("release")) if adopt else ""
    if adopt:
        versions = [adopted] if adopted else []
    else:
        versions = [_text(inputs.get("cuda_version"))] + [
            _text(v) for v in inputs.get("cuda_versions_extra") or []
        ]
    part: Dict[str, Any] = {
        "runs": runs,
        "adopt": adopt,
        "adopted_version": adopted,
        "toolkit_read": (toolkit_read or {}).get("read") if adopt else None,
        "versions": versions if runs else [],
        "driver_version": driver_version,
        "checks": [],
    }
    if not runs:
        return part
    branch = _text(inputs.get("nvidia_driver_branch"))
    cudnn = _text(inputs.get("cuda_cudnn_version"))
    for index, version in enumerate(versions):
        check = _check(
            {
                "driver_branch": None if driver_version or not branch else branch,
                "driver_version": driver_version or None,
                "cuda_version": version,
                "cudnn_version": cudnn
                if _bool(inputs.get("cuda_cudnn_install", True)) and index == 0 and cudnn
                else None,
                "os": None if adopt else _text(inputs.get("nvidia_driver_repo_distro")) or None,
                "distribution": None if adopt else _text(facts.get("distribution")) or None,
                "distribution_version": None
                if adopt
                else _text(facts.get("distribution_version")) or None,
                "machine": _text(facts.get("architecture")) or None,
                "gpus": list(gpus),
                "toolkit_method": _text(inputs.get("cuda_install_method")) or "cuda_repo",
                "repository_overrides": _overrides(inputs, "cuda_repo"),
            }
        )
        check["item"] = version
        part["checks"].append(check)
    return part


def torch_part(
    inputs: Mapping[str, Any],
    gpus: List[Any],
    driver_version: str,
    gpu_count: int,
    interpreter: Optional[Mapping[str, Any]],
) -> Dict[str, Any]:
    """conda_pytorch's part: the environment (mode, paths), the interpreter that makes or is
    it (read in this run), the Python version the environment has or will have, and the
    catalogue's answer for torch, its wheel variant, Python, the driver and the GPUs (none
    in adopt mode: the torch that is there is probed by verify)."""
    env = environment(inputs)
    base = env["base_python"]
    found = dict(interpreter, path=base) if base and interpreter else None
    usable = not base or bool(found and found.get("exists") and found.get("executable"))
    python_version = (
        _text((found or {}).get("version"))
        if base
        else _text(inputs.get("conda_pytorch_python_version"))
    )
    variant = _text(inputs.get("conda_pytorch_cuda_variant"))
    part: Dict[str, Any] = dict(
        env,
        base_python_read=found,
        base_python_usable=usable,
        python_version=python_version,
        gpu_count=gpu_count,
        driver_version=driver_version,
        check=None,
    )
    if env["mode"] != "adopt" and usable:
        part["check"] = _check(
            {
                "torch_version": _text(inputs.get("conda_pytorch_version")),
                # The table lists CUDA variants; every release also has CPU wheels.
                "torch_cuda_variant": None if variant == "cpu" else variant or None,
                "python_version": python_version or None,
                "driver_version": driver_version or None,
                "gpus": list(gpus) if variant != "cpu" else [],
            }
        )
    return part


def driver_after_stage(
    inputs: Mapping[str, Any], driver: Mapping[str, Any], driver_version: str
) -> str:
    """The driver version the later stages are judged against: nvidia-smi's, unless the
    driver stage will replace it with the planned branch (it runs, adopts nothing, and the
    driver there is of an older branch), when it is "" and the checks take the branch.
    A stage re-checks its part once the driver it finds differs (take_part)."""
    if not driver_version or not driver.get("runs") or driver.get("adopt_cuda"):
        return driver_version
    branch = _text(driver.get("check_branch")) or _text(inputs.get("nvidia_driver_branch"))
    major = driver_version.split(".")[0]
    if branch.isdigit() and major.isdigit() and int(major) < int(branch):
        return ""
    return driver_version


def stage_parts(
    inputs: Mapping[str, Any],
    gpus: List[Any],
    facts: Mapping[str, Any],
    driver_version: str,
    gpu_count: int,
    reads: Mapping[str, Any],
    stages: Iterable[str] = STAGES,
) -> Dict[str, Any]:
    """Each named stage's part, from the inputs, the GPUs, the host's facts, nvidia-smi's
    driver version and the adopt-mode reads (``reads``: torch, toolkit, interpreter)."""
    stages = set(stages)
    torch_read = reads.get("torch")
    interpreter = reads.get("interpreter") or _interpreter_from_torch_read(
        environment(inputs)["base_python"], torch_read
    )
    parts: Dict[str, Any] = {}
    driver = driver_part(inputs, gpus, facts, driver_version, torch_read)
    if "nvidia_driver" in stages:
        parts["nvidia_driver"] = driver
    later = driver_after_stage(inputs, driver, driver_version)
    if "cuda" in stages:
        parts["cuda"] = cuda_part(inputs, gpus, facts, later, reads.get("toolkit"))
    if "conda_pytorch" in stages:
        parts["conda_pytorch"] = torch_part(inputs, gpus, later, gpu_count, interpreter)
    return parts


def part_problems(stage: str, part: Optional[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The blocking problems (not an unknown GPU) the catalogue found in a stage's part."""
    if not part:
        return []
    checks = part.get("checks") if stage == "cuda" else [part.get("check")]
    return [
        problem
        for check in checks or []
        if check
        for problem in check.get("problems") or []
        if problem.get("code") != "unknown-gpu"
    ]


def take_part(plan: Mapping[str, Any], stage: str, driver_version: str) -> Dict[str, Any]:
    """A stage's part of ``plan``, checked again when nvidia-smi's driver now differs from
    the one the plan was checked with (the driver stage changed it in this run): the
    ``part`` module's answer. Fails, with the catalogue's message, on a blocking problem."""
    parts = plan.get("stages") or {}
    if stage not in parts:
        raise ValueError(
            f"the plan has no part for {stage}: its inputs were not checked in this run "
            "(run the stage's role, or site.yml, which checks them first)"
        )
    part = parts[stage]
    rechecked = bool(driver_version) and driver_version != _text(plan.get("driver_version"))
    if rechecked:
        part = stage_parts(
            plan.get("inputs") or {},
            list(plan.get("gpus") or []),
            plan.get("facts") or {},
            driver_version,
            int(part.get("gpu_count") or 0) if stage == "conda_pytorch" else 0,
            plan.get("reads") or {},
            [stage],
        )[stage]
    problems = part_problems(stage, part)
    checks = part.get("checks") if stage == "cuda" else [part.get("check")]
    messages = [c["msg"] for c in checks or [] if c and not c.get("ok")]
    # What stage 1 read of the stage's stack record (issue 35; roles/*/tasks/stack_record.yml
    # writes it through managed_files_write with this as its `current`).
    record = ((plan.get("stack_keep") or {}).get("files") or {}).get(stage)
    result: Dict[str, Any] = {
        "changed": False,
        "part": part,
        "rechecked": rechecked,
        "record_file": record or None,
    }
    if problems:
        result.update(failed=True, problems=problems, msg=f"{stage}: " + "\n".join(messages))
    else:
        result["msg"] = f"{stage}: the plan's part" + (
            f", checked again against driver {driver_version}" if rechecked else ""
        )
    return result


# The inputs the plan reads across roles. A stage run alone (no stage 1 before it) has its
# own role's effective inputs only; the others come from the user's variables, else from
# the owning role's argument_specs default (action_plugins/host_plan.py fills them).
PLAN_INPUTS = (
    "nvidia_driver_branch",
    "nvidia_driver_version",
    "nvidia_driver_repo_distro",
    "nvidia_driver_repo_arch",
    "nvidia_driver_repo_base_url",
    "nvidia_driver_repo_key_url",
    "nvidia_driver_repo_key_fingerprint",
    "nvidia_driver_repo_keyring",
    "nvidia_driver_install_method",
    "nvidia_driver_kernel_modules",
    "nvidia_driver_package_flavor",
    "nvidia_driver_adopt_torch_python",
    "nvidia_driver_skip_without_gpu",
    "nvidia_driver_gpu_required",
    "cuda_version",
    "cuda_versions_extra",
    "cuda_cudnn_version",
    "cuda_cudnn_install",
    "cuda_install_method",
    "cuda_adopt_existing",
    "cuda_home",
    "cuda_toolkit_prefix",
    "cuda_profile_file",
    "cuda_repo_base_url",
    "cuda_repo_key_url",
    "cuda_repo_key_fingerprint",
    "cuda_repo_keyring",
    "cuda_skip_without_gpu",
    "cuda_gpu_required",
    "conda_pytorch_version",
    "conda_pytorch_cuda_variant",
    "conda_pytorch_python_version",
    "conda_pytorch_python",
    "conda_pytorch_backend",
    "conda_pytorch_conda_prefix",
    "conda_pytorch_env_name",
    "conda_pytorch_venv_path",
    "conda_pytorch_venv_python",
    "jupyter_ipykernel_version",
)

ARGUMENT_SPEC = {
    "inputs": {"type": "dict", "default": {}},
    "nvidia_pci": {"type": "dict", "default": {}},
    "nvidia_smi": {"type": "dict", "default": {}},
    "facts": {"type": "dict", "default": {}},
    "reads": {"type": "dict", "default": {}},
    "stages": {"type": "list", "elements": "str", "default": list(STAGES)},
    "host": {"type": "str", "default": ""},
    "defined": {"type": "list", "elements": "str", "default": []},
    # A stage taking its part of the plan (take_part) instead of building one.
    "part": {"type": "str", "choices": list(STAGES)},
    "plan": {"type": "dict"},
    "driver_version": {"type": "str", "default": ""},
    # Where the controller writes the plan, readable (reports/<host>/plan.json); the action
    # plugin writes it, a module run on the host can't and leaves it.
    "report_path": {"type": "str"},
}
REQUIRED_TOGETHER = [("part", "plan")]


def answer(params: Mapping[str, Any]) -> Dict[str, Any]:
    """The module's result: a stage's part (``part``), else the plan, or a failure naming
    each retired variable set."""
    if params.get("part"):
        return take_part(params["plan"], params["part"], _text(params.get("driver_version")))
    refused = refusals(params.get("defined") or [])
    if refused:
        return {
            "changed": False,
            "failed": True,
            "problems": refused,
            "msg": f"{len(refused)} retired variable(s) set, refused before any change:\n"
            + "\n".join(refused),
        }
    plan = build(
        params["inputs"],
        params["nvidia_pci"],
        params["nvidia_smi"],
        params["host"],
        facts=params.get("facts"),
        reads=params.get("reads"),
        stages=params.get("stages") or STAGES,
    )
    return {"changed": False, "plan": plan}
