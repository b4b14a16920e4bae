"""Issue 35: the catalogue's default stack of each OS, and inventories/gpu's stack files that
follow it, resolved against PyPI's real index (needs the network, like the rest of this lane).

The catalogue's ``default_stacks`` (module_utils/default_stack.py) names per NVIDIA repository
the newest stack that runs on every GPU from Turing on and whose torch has a torchvision on
PyPI. Each is a stack of the registry lane (pypi_pins.default_stack_var_sets), so its torch,
torchvision and Python are resolved by pip like every other stack; these cases fail when a
default is not checked on its own OS (the preflight refuses it there), when pip can't install
one of its pins there, when it is not the catalogue's own torch/torchvision pair, or when
inventories/gpu/group_vars/current_stack.yml or ubuntu2004_stack.yml drift from it.
"""

from __future__ import annotations

import pypi_pins as pp
import pytest
import yaml
from ansible.module_utils import default_stack, gpu_compat
from test_python_pins import CASES, _explain, _resolved_ok

GROUP_VARS = pp.REPO_ROOT / "inventories" / "gpu" / "group_vars"
# The stack file of inventories/gpu that follows each repository's default.
STACK_FILES = {
    "ubuntu2004": "ubuntu2004_stack.yml",
    "ubuntu2204": "current_stack.yml",
    "ubuntu2404": "current_stack.yml",
    "debian12": "current_stack.yml",
}
REPOS = default_stack.repositories()


def _default_cases(repo):
    short = f"default-stack-{repo}"
    return [
        case
        for case in CASES.stack_cases
        if short in case.stack.var_set.short.split("+") and case.stack.system.key == repo
    ]


def test_every_supported_os_has_a_stack_file():
    assert sorted(STACK_FILES) == REPOS


@pytest.mark.parametrize("repo", REPOS)
def test_the_default_is_checked_on_its_own_os(repo):
    """The preflight accepts it there (else pypi_pins would skip it), with the conda backend's
    Python, and it installs torch and torchvision at the catalogue's pair."""
    variables = default_stack.for_repository(repo)["variables"]
    cases = [c for c in _default_cases(repo) if c.stack.backend == "conda"]
    assert cases, f"{repo}'s default stack is not checked on {repo}: {CASES.skipped}"
    pins = {c.pin.project: c.pin for c in cases}
    assert pins["torch"].version == variables["conda_pytorch_version"]
    assert pins["torch"].python == variables["conda_pytorch_python_version"]
    assert pins["torchvision"].version == variables["conda_pytorch_torchvision_version"]
    release = gpu_compat.torch_release(variables["conda_pytorch_version"])
    assert release["releases"][variables["conda_pytorch_version"]] == pins["torchvision"].version
    assert variables["conda_pytorch_cuda_variant"] in release["variants"]


@pytest.mark.parametrize("repo", REPOS)
def test_the_default_s_pins_resolve_on_pypi(registry, repo):
    wrong = []
    for case in _default_cases(repo):
        result = registry.result(case.job)
        if not _resolved_ok(result, case.pin.project, case.pin.version):
            why = _explain(
                result, case.pin.project, case.pin.version, case.pin.python, case.stack.system
            )
            wrong.append(
                f"{case.pin.spec} on Python {case.pin.python} ({case.stack.backend}): {why}"
            )
    assert not wrong, f"{repo}'s default stack:\n" + "\n".join(wrong)


@pytest.mark.parametrize("repo", REPOS)
def test_the_inventory_s_stack_file_follows_the_default(repo):
    path = GROUP_VARS / STACK_FILES[repo]
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    variables = default_stack.for_repository(repo)["variables"]
    drift = {
        name: (data.get(name), value)
        for name, value in variables.items()
        if str(data.get(name)) != value
    }
    assert not drift, f"{path.name} differs from {repo}'s default stack (file, catalogue): {drift}"
