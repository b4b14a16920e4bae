"""The planned GPU stack, checked: the body of the gpu_stack_plan module.

Pure: everything it reads is in its arguments and the vendor catalogue, nothing on a host.
So action_plugins/gpu_stack_plan.py runs it on the controller (no module run on the
host, whose cost is most of a no-op re-run), and library/gpu_stack_plan.py, the same
function behind AnsibleModule, keeps the documentation and runs it where the action
plugin is not loaded.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

from ansible.module_utils.gpu_compat import (
    PLAN_KEYS,
    cuda_for_driver,
    cudnn_packages,
    min_driver_for_cuda,
    torch_release,
)
from ansible.module_utils.stack_plan import (
    MODULE_FLAVOURS,
    PACKAGE_FLAVORS,
    check_plan,
    cuda_repository_location,
    distro_toolkit_plan,
    plan_packages,
    python_package_problem,
    repository_arch,
    repository_id,
    repository_notes,
)

ARGUMENT_SPEC: Dict[str, Any] = {key: {"type": "str"} for key in PLAN_KEYS}
ARGUMENT_SPEC.update(
    cuda_versions_extra={"type": "list", "elements": "str", "default": []},
    os={"type": "str"},
    arch={"type": "str"},
    os_release={"type": "str"},
    distribution={"type": "str"},
    distribution_version={"type": "str"},
    machine={"type": "str"},
    install_method={"type": "str", "choices": ["cuda_repo", "distro"], "default": "cuda_repo"},
    toolkit_method={"type": "str", "choices": ["cuda_repo", "distro"], "default": "cuda_repo"},
    kernel_modules={
        "type": "str",
        "choices": ["auto", *MODULE_FLAVOURS],
        "default": "auto",
    },
    package_flavor={"type": "str", "choices": ["auto", *PACKAGE_FLAVORS], "default": "auto"},
    python_packages={"type": "list", "elements": "dict", "default": []},
    gpus={"type": "list", "elements": "dict", "default": []},
    repository_overrides={"type": "dict", "default": {}},
    fail_on_problems={"type": "bool", "default": True},
)

# What a result records as the inputs it was checked with: every argument but
# ``fail_on_problems`` (which decides only whether problems fail the task).
CHECKED_KEYS = tuple(key for key in ARGUMENT_SPEC if key != "fail_on_problems")


def render(problems: List[Dict[str, Any]]) -> str:
    """The problems as the message: a count, then one line per problem with its fix."""
    lines = [f"{len(problems)} problem(s) with the planned GPU stack:"]
    for p in problems:
        fix = ", ".join(p["fix"]) if p["fix"] else "see the message"
        lines.append(f"- [{p['code']}] {p['message']} Fix: {fix}")
    return "\n".join(lines)


def check(params: Dict[str, Any]) -> Dict[str, Any]:
    """The module's result for validated ``params`` (ARGUMENT_SPEC's, defaults applied).

    ``failed`` is true when a problem other than an unknown GPU was found and
    ``fail_on_problems`` is set.
    """
    plan: Dict[str, Any] = {key: params[key] for key in PLAN_KEYS}
    plan["cuda_versions_extra"] = params["cuda_versions_extra"]
    repo = params["os"] or None
    arch = params["arch"] or None
    os_release = params["os_release"] or None
    if params["distribution"] and params["distribution_version"]:
        repo = repo or repository_id(params["distribution"], params["distribution_version"])
        if not os_release:
            version = str(params["distribution_version"])
            os_release = version.split(".")[0] if params["distribution"] == "Debian" else version
    if params["machine"] and not arch:
        arch = repository_arch(params["machine"])
    problems = check_plan(plan, params["gpus"], repo, arch)
    notes: List[str] = repository_notes(plan, repo, arch)
    derived: Dict[str, Any] = dict(plan)
    cuda = plan.get("cuda_version")
    driver = plan.get("driver_version") or plan.get("driver_branch")
    try:
        derived["min_driver_for_cuda"] = min_driver_for_cuda(cuda) if cuda else None
        derived["max_cuda_for_driver"] = cuda_for_driver(driver) if driver else None
    except ValueError:  # already reported as invalid-version
        derived["min_driver_for_cuda"] = derived["max_cuda_for_driver"] = None
    release = torch_release(plan["torch_version"]) if plan.get("torch_version") else None
    derived["torch_variants"] = sorted(release["variants"]) if release else None
    cudnn = None
    if plan.get("cudnn_version") and cuda:
        try:
            cudnn = cudnn_packages(plan["cudnn_version"], cuda)
        except ValueError:  # already reported as a problem
            cudnn = None
    derived["cudnn_packages"] = cudnn

    packages: Dict[str, Any] = {"driver": None, "toolkit": [], "cudnn": cudnn}
    invalid = any(p["code"] == "invalid-version" for p in problems)
    if repo and not invalid:
        cudas = [str(v) for v in [cuda, *plan["cuda_versions_extra"]] if v]
        planned, package_problems = plan_packages(
            repo,
            plan.get("driver_branch") or (driver.split(".")[0] if driver else None),
            plan.get("driver_version"),
            params["install_method"],
            params["kernel_modules"],
            params["package_flavor"],
            params["gpus"],
            cudas,
            os_release,
        )
        packages.update(planned)
        problems.extend(package_problems)
    if params["toolkit_method"] == "distro" and params["distribution"]:
        # The toolkit comes from the distribution: NVIDIA's repository's toolkit range says nothing.
        # Without a distribution (gpu_preflight on a host without a GPU) nothing is planned.
        problems = [p for p in problems if p["code"] != "cuda-not-in-repository"]
        toolkit, toolkit_problems = distro_toolkit_plan(
            params["distribution"] or "", os_release, cuda, plan["cuda_versions_extra"]
        )
        problems.extend(toolkit_problems)
        packages["toolkit"] = [toolkit["package"]] if toolkit else []
        packages["distro_toolkit"] = toolkit
    if params["install_method"] == "distro":
        # The branch comes from the distribution's archive, whatever NVIDIA's repository serves.
        problems = [p for p in problems if p["code"] != "driver-branch-not-in-repository"]
    python = plan.get("python_version")
    for item in params["python_packages"]:
        if python and item.get("version"):
            problem = python_package_problem(
                str(item["name"]), str(item["version"]), str(python), str(item.get("variable"))
            )
            if problem:
                problems.append(problem)

    # A GPU the table doesn't know is reported, never fatal: the checks that need its
    # compute capability are skipped.
    blocking = [p for p in problems if p["code"] != "unknown-gpu"]
    result = {
        "changed": False,
        "failed": bool(blocking and params["fail_on_problems"]),
        "ok": not blocking,
        "problems": problems,
        "plan": derived,
        "packages": packages,
        "repository": {
            "os": repo,
            "arch": arch,
            "release": os_release,
            "cuda": cuda_repository_location(
                repo,
                arch,
                **{
                    key: str(params["repository_overrides"].get(key) or "")
                    for key in ("base_url", "key_url", "fingerprint", "keyring")
                },
            ),
        },
        "notes": notes,
        "msg": render(problems) if problems else "the planned GPU stack is consistent",
        "params": checked_params(params),
    }
    return result


def checked_params(params: Dict[str, Any]) -> Dict[str, Any]:
    """The inputs a check is keyed by, as they come back from JSON (strings, lists, dicts)."""
    return json.loads(json.dumps({key: params.get(key) for key in CHECKED_KEYS}, sort_keys=True))
