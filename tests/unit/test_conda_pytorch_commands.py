"""conda_pytorch: argument validation and the command lines the conda path builds.

The conda backend can't be converged here (GitHub and conda's channels are unreachable),
so one ansible-playbook run against localhost runs the role's input check and read-only
preflight (and, for the argument-spec case, the role's validation) for several settings
and records the rendered ``conda_pytorch_commands`` or the failure message of each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT

pytestmark = pytest.mark.slow  # one ansible-playbook run, about a minute on 2 cores

SHA = {"x86_64": "a" * 64, "aarch64": "b" * 64}
BASE = {"conda_pytorch_miniforge_sha256": SHA}
# The seed articles' stack (inventories/gpu/group_vars/seed_stack.yml); the role's defaults
# are the current stack (torch 2.14.1 cu130, Python 3.12).
SEED = {
    "conda_pytorch_version": "1.12.1",
    "conda_pytorch_cuda_variant": "cu116",
    "conda_pytorch_python_version": "3.10",
    "conda_pytorch_torchvision_version": "0.13.1",
    "conda_pytorch_torchaudio_version": "0.12.1",
}

CASES = {
    "conda_legacy": {
        **SEED,
        "conda_pytorch_install_method": "conda",
        "conda_pytorch_install_torchaudio": True,
    },
    "conda_25": {
        "conda_pytorch_install_method": "conda",
        "conda_pytorch_version": "2.5.1",
        "conda_pytorch_cuda_variant": "cu124",
        "conda_pytorch_python_version": "3.11",
        "conda_pytorch_torchvision_version": "0.20.1",
        "conda_pytorch_env_name": "train",
        "conda_pytorch_conda_prefix": "/srv/conda",
    },
    "pip_default": {},
    "pip_mirror": {
        "conda_pytorch_version": "2.11.0",
        "conda_pytorch_cuda_variant": "cu130",
        "conda_pytorch_python_version": "3.12",
        "conda_pytorch_install_torchvision": False,
        "conda_pytorch_index_url": "https://mirror.example/whl/cu130",
        "conda_pytorch_extra_index_url": "https://pypi.example/simple",
        "conda_pytorch_miniforge_url": "https://mirror.example/Miniforge3-26.1.1-3-Linux-x86_64.sh",
    },
    "conda_too_new": {"conda_pytorch_install_method": "conda", "conda_pytorch_version": "2.6.0"},
    "conda_method_venv": {"conda_pytorch_install_method": "conda", "conda_pytorch_backend": "venv"},
    "python_unsupported": {**SEED, "conda_pytorch_python_version": "3.11"},
    "python_yaml_float": {"conda_pytorch_python_version": "3.1"},
    "no_wheel_for_variant": {**SEED, "conda_pytorch_cuda_variant": "cu118"},
    "unknown_torch": {"conda_pytorch_version": "1.11.0"},
    "local_tag_in_version": {"conda_pytorch_version": "1.12.1+cu116"},
    "no_checksum": {"conda_pytorch_miniforge_sha256": {"aarch64": "c" * 64}},
}
# Checked by the role's argument spec (the main entry point), which fails before any task.
SPEC_CASES = {
    "bad_backend": {"conda_pytorch_backend": "mamba"},
    "bad_method": {"conda_pytorch_install_method": "uv"},
    "bad_type": {"conda_pytorch_install_torchaudio": "maybe"},
}


def _block(name: str, role_vars: dict, tasks_from: str | None) -> dict:
    include = {"name": "conda_pytorch"}
    if tasks_from:
        include["tasks_from"] = tasks_from
    ok = "{{ results | combine({case: {'ok': true, 'commands': conda_pytorch_commands}}) }}"
    failed = "{{ results | combine({case: {'ok': false, 'msg': ansible_failed_result.msg}}) }}"
    # The role's input check (tasks/inputs.yml) runs first, as the role's main does.
    checks = []
    if tasks_from == "preflight.yml":
        checks.append(
            {
                "name": f"Check the inputs of {name}",
                "ansible.builtin.include_role": {
                    "name": "conda_pytorch",
                    "tasks_from": "inputs.yml",
                },
                "vars": {**BASE, **role_vars},
            }
        )
    return {
        "name": f"Case {name}",
        "vars": {"case": name},
        "block": [
            *checks,
            {
                "name": f"Run {name}",
                "ansible.builtin.include_role": include,
                "vars": {**BASE, **role_vars},
            },
            {"name": f"Record {name}", "ansible.builtin.set_fact": {"results": ok}},
        ],
        "rescue": [
            {
                "name": f"Record the failure of {name}",
                "ansible.builtin.set_fact": {"results": failed},
            },
        ],
    }


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("conda_pytorch")
    out = tmp / "results.json"
    tasks = [_block(n, v, "preflight.yml") for n, v in CASES.items()]
    # A wrong value must stop the role at validation; adopt mode with a missing interpreter
    # is a second guard, so nothing past preflight could run on this machine.
    guard = {"conda_pytorch_python": str(tmp / "no-such-python")}
    tasks += [_block(n, {**v, **guard}, None) for n, v in SPEC_CASES.items()]
    tasks.append(
        {
            "name": "Write the results",
            "ansible.builtin.copy": {
                "content": "{{ results | to_json }}",
                "dest": str(out),
                "mode": "0644",
            },
        }
    )
    play = [
        {
            "name": "conda_pytorch preflight cases",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": True,
            "gather_subset": ["min"],
            "vars": {"results": {}, "ansible_python_interpreter": sys.executable},
            "tasks": tasks,
        }
    ]
    playbook = tmp / "play.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"),
        ANSIBLE_CACHE_PLUGIN="memory",
        ANSIBLE_STDOUT_CALLBACK="default",
    )
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", str(playbook)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0 and out.exists(), proc.stdout[-4000:] + proc.stderr[-2000:]
    return json.loads(out.read_text())


def test_conda_method_for_a_legacy_release(results):
    r = results["conda_legacy"]
    assert r["ok"], r
    c = r["commands"]
    arch = c["installer_path"].rsplit("-", 1)[1].removesuffix(".sh")
    assert c["installer_path"] == f"/var/cache/kindling/Miniforge3-26.1.1-3-Linux-{arch}.sh"
    assert c["miniforge_install"] == ["/bin/bash", c["installer_path"], "-b", "-p", "/opt/conda"]
    assert c["env_create"] == [
        "/opt/conda/bin/conda", "create", "--yes", "--quiet", "--prefix",
        "/opt/conda/envs/pytorch", "python=3.10",
    ]  # fmt: skip
    assert c["torch_install"] == [
        "/opt/conda/bin/conda", "install", "--yes", "--quiet", "--prefix",
        "/opt/conda/envs/pytorch", "pytorch==1.12.1", "torchvision==0.13.1", "torchaudio==0.12.1",
        "cudatoolkit=11.6",
        "-c", "pytorch", "-c", "conda-forge",
    ]  # fmt: skip
    assert c["wanted"] == {"torch": "1.12.1", "torchvision": "0.13.1", "torchaudio": "0.12.1"}


def test_conda_method_uses_pytorch_cuda_from_1_13(results):
    r = results["conda_25"]
    assert r["ok"], r
    c = r["commands"]
    assert c["miniforge_install"][-2:] == ["-p", "/srv/conda"]
    assert c["env_create"][-2:] == ["/srv/conda/envs/train", "python=3.11"]
    assert c["torch_install"] == [
        "/srv/conda/bin/conda", "install", "--yes", "--quiet", "--prefix", "/srv/conda/envs/train",
        "pytorch==2.5.1", "torchvision==0.20.1", "pytorch-cuda=12.4",
        "-c", "pytorch", "-c", "nvidia",
    ]  # fmt: skip


def test_pip_method_defaults(results):
    r = results["pip_default"]
    assert r["ok"], r
    c = r["commands"]
    assert c["torch_install"] == [
        "/opt/conda/envs/pytorch/bin/python", "-m", "pip", "install", "--no-input",
        "--disable-pip-version-check", "--index-url", "https://download.pytorch.org/whl/cu130",
        "torch==2.14.1+cu130", "torchvision==0.29.1+cu130",
    ]  # fmt: skip
    assert c["wanted"] == {"torch": "2.14.1+cu130", "torchvision": "0.29.1+cu130"}


def test_pip_method_with_mirrors(results):
    r = results["pip_mirror"]
    assert r["ok"], r
    c = r["commands"]
    assert c["installer_path"] == "/var/cache/kindling/Miniforge3-26.1.1-3-Linux-x86_64.sh"
    assert c["torch_install"][-5:] == [
        "--index-url", "https://mirror.example/whl/cu130",
        "--extra-index-url", "https://pypi.example/simple",
        "torch==2.11.0+cu130",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ("conda_too_new", "pytorch/pytorch#138506"),
        ("conda_method_venv", "needs conda_pytorch_backend"),
        ("python_unsupported", "python-unsupported-by-torch"),
        ("python_yaml_float", "quote it"),
        ("no_wheel_for_variant", "torch-no-wheel-for-variant"),
        ("unknown_torch", "unknown-torch-version"),
        ("local_tag_in_version", "without a local tag"),
        ("no_checksum", "has no sha256"),
        ("bad_backend", "conda_pytorch_backend"),
        ("bad_method", "conda_pytorch_install_method"),
        ("bad_type", "conda_pytorch_install_torchaudio"),
    ],
)
def test_bad_settings_fail_in_preflight(results, case, needle):
    r = results[case]
    assert not r["ok"], r
    assert needle in r["msg"], r["msg"]
