"""module_utils/torch_env_plan.py and the torch_env_plan module: the conda_pytorch role's
command lines (argv lists), what it installs, and whether the installed packages match.

The expected argv lists are the ones roles/conda_pytorch/templates/commands.yml.j2 rendered
(the Jinja template the module replaced), checked element for element when it was replaced.
The module runs in-process with a stand-in interpreter (a shell script printing a pip list)
and end to end through ``ansible localhost -m torch_env_plan``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import torch_env_plan
from ansible.module_utils.testing import patch_module_args
from ansible.module_utils.torch_env_plan import (
    COMMAND_KEYS,
    commands,
    compare,
    installer_path,
    pip_list_versions,
    plan,
    release_tuple,
    variant_cuda,
    version_before,
)
from conftest import REPO_ROOT

MINIFORGE = (
    "https://github.com/conda-forge/miniforge/releases/download/26.1.1-3/"
    "Miniforge3-26.1.1-3-Linux-x86_64.sh"
)
INSTALLER = "/var/cache/kindling/Miniforge3-26.1.1-3-Linux-x86_64.sh"
# The role's defaults (conda backend, pip method, torch 2.11.0 cu130) on x86_64.
DEFAULTS = {
    "install_method": "pip",
    "mode": "conda",
    "cuda_variant": "cu130",
    "torch_version": "2.11.0",
    "torchvision_version": "0.26.0",
    "torchaudio_version": "2.11.0",
    "install_torchvision": True,
    "install_torchaudio": False,
    "conda_prefix": "/opt/conda",
    "env_dir": "/opt/conda/envs/pytorch",
    "env_python": "/opt/conda/envs/pytorch/bin/python",
    "venv_python": "/usr/bin/python3",
    "python_version": "3.12",
    "index_url": "https://download.pytorch.org/whl/cu130",
    "extra_index_url": "",
    "pytorch_cuda_since": "1.13",
    "miniforge_url": MINIFORGE,
    "download_dir": "/var/cache/kindling",
}
# The seed articles' stack with the conda method (molecule/conda_pytorch/check_conda.yml).
SEED_CONDA = {
    **DEFAULTS,
    "install_method": "conda",
    "cuda_variant": "cu116",
    "torch_version": "1.12.1",
    "torchvision_version": "0.13.1",
    "torchaudio_version": "0.12.1",
    "install_torchaudio": True,
    "env_dir": "/opt/conda/envs/pytorch-conda",
    "env_python": "/opt/conda/envs/pytorch-conda/bin/python",
    "python_version": "3.10",
    "index_url": "https://download.pytorch.org/whl/cu116",
}
CONDA = "/opt/conda/bin/conda"
PIP = [
    "/opt/conda/envs/pytorch/bin/python", "-m", "pip", "install", "--no-input",
    "--disable-pip-version-check",
]  # fmt: skip


# ---------------------------------------------------------------------------
# The pieces
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("1.12.1", (1, 12, 1)), ("1.13", (1, 13)), ("2.11.0+cu130", (2, 11, 0)), (" 2.0 ", (2, 0))],
)
def test_release_tuple(text, parsed):
    assert release_tuple(text) == parsed


@pytest.mark.parametrize("text", ["", "v1.2", "latest", ".1"])
def test_release_tuple_refuses_what_is_no_version(text):
    with pytest.raises(ValueError, match="not a version number"):
        release_tuple(text)


@pytest.mark.parametrize(
    ("version", "threshold", "before"),
    [
        ("1.12.1", "1.13", True),
        ("1.9.0", "1.13", True),  # 9 < 13 as numbers, not as text
        ("1.13.0", "1.13", False),
        ("1.13", "1.13", False),
        ("1.13", "1.13.0", True),  # a shorter release first, as Ansible's version test did
        ("1.12.10", "1.13", True),
        ("2.5.1", "1.13", False),
        ("10.0.0", "9.9", False),
    ],
)
def test_version_before(version, threshold, before):
    assert version_before(version, threshold) is before


@pytest.mark.parametrize(
    ("variant", "cuda"), [("cu116", "11.6"), ("cu130", "13.0"), ("cu124", "12.4"), ("cu92", "9.2")]
)
def test_variant_cuda(variant, cuda):
    assert variant_cuda(variant) == cuda


def test_installer_path_is_the_urls_file_name_in_the_download_dir():
    assert installer_path("/var/cache/kindling", MINIFORGE) == INSTALLER
    # A mirror's query and fragment are not part of the name.
    assert (
        installer_path("/srv/dl", "https://mirror.example/a/Miniforge3-x.sh?token=1#top")
        == "/srv/dl/Miniforge3-x.sh"
    )


# ---------------------------------------------------------------------------
# The command lines
# ---------------------------------------------------------------------------


def test_role_defaults_pip_with_cu130_local_tags():
    c = commands(**DEFAULTS)
    assert c == {
        "installer_path": INSTALLER,
        "miniforge_install": ["/bin/bash", INSTALLER, "-b", "-p", "/opt/conda"],
        "env_create": [
            CONDA, "create", "--yes", "--quiet", "--prefix", "/opt/conda/envs/pytorch",
            "python=3.12",
        ],
        "wanted": {"torch": "2.11.0+cu130", "torchvision": "0.26.0+cu130"},
        "torch_install": [
            *PIP, "--index-url", "https://download.pytorch.org/whl/cu130",
            "torch==2.11.0+cu130", "torchvision==0.26.0+cu130",
        ],
    }  # fmt: skip
    assert tuple(c) == COMMAND_KEYS  # the fact conda_pytorch_commands' keys, in order


def test_pip_cpu_variant_carries_the_cpu_tag():
    c = commands(
        **{**DEFAULTS, "cuda_variant": "cpu", "index_url": "https://download.pytorch.org/whl/cpu"}
    )
    assert c["wanted"] == {"torch": "2.11.0+cpu", "torchvision": "0.26.0+cpu"}
    assert c["torch_install"][-4:] == [
        "--index-url", "https://download.pytorch.org/whl/cpu",
        "torch==2.11.0+cpu", "torchvision==0.26.0+cpu",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("vision", "audio", "names"),
    [
        (True, True, ["torch", "torchvision", "torchaudio"]),
        (True, False, ["torch", "torchvision"]),
        (False, True, ["torch", "torchaudio"]),
        (False, False, ["torch"]),
    ],
)
@pytest.mark.parametrize("method", ["pip", "conda"])
def test_torchvision_and_torchaudio_follow_their_flags(vision, audio, names, method):
    settings = {
        **SEED_CONDA,
        "install_method": method,
        "install_torchvision": vision,
        "install_torchaudio": audio,
    }
    c = commands(**settings)
    assert list(c["wanted"]) == names
    tag = "+cu116" if method == "pip" else ""
    versions = {"torch": "1.12.1", "torchvision": "0.13.1", "torchaudio": "0.12.1"}
    assert c["wanted"] == {n: versions[n] + tag for n in names}
    specs = [a for a in c["torch_install"] if "==" in a]
    first = "torch" if method == "pip" else "pytorch"
    assert specs == [f"{first if n == 'torch' else n}=={versions[n]}{tag}" for n in names]


def test_extra_index_url_only_when_set():
    without = commands(**DEFAULTS)["torch_install"]
    assert "--extra-index-url" not in without
    mirror = {
        **DEFAULTS,
        "index_url": "https://mirror.example/whl/cu130",
        "extra_index_url": "https://pypi.example/simple",
        "install_torchvision": False,
    }
    assert commands(**mirror)["torch_install"] == [
        *PIP, "--index-url", "https://mirror.example/whl/cu130",
        "--extra-index-url", "https://pypi.example/simple", "torch==2.11.0+cu130",
    ]  # fmt: skip


def test_conda_before_pytorch_cuda_since_takes_cudatoolkit_from_conda_forge():
    c = commands(**SEED_CONDA)
    assert c["torch_install"] == [
        CONDA, "install", "--yes", "--quiet", "--prefix", "/opt/conda/envs/pytorch-conda",
        "pytorch==1.12.1", "torchvision==0.13.1", "torchaudio==0.12.1", "cudatoolkit=11.6",
        "-c", "pytorch", "-c", "conda-forge",
    ]  # fmt: skip
    assert c["wanted"] == {"torch": "1.12.1", "torchvision": "0.13.1", "torchaudio": "0.12.1"}
    assert c["env_create"] == [
        CONDA, "create", "--yes", "--quiet", "--prefix", "/opt/conda/envs/pytorch-conda",
        "python=3.10",
    ]  # fmt: skip


@pytest.mark.parametrize("version", ["1.13.0", "1.13", "2.5.1"])
def test_conda_from_pytorch_cuda_since_takes_pytorch_cuda_from_nvidia(version):
    c = commands(
        **{
            **DEFAULTS,
            "install_method": "conda",
            "torch_version": version,
            "torchvision_version": "0.20.1",
            "cuda_variant": "cu124",
            "conda_prefix": "/srv/conda",
            "env_dir": "/srv/conda/envs/train",
        }
    )
    assert c["torch_install"] == [
        "/srv/conda/bin/conda", "install", "--yes", "--quiet", "--prefix", "/srv/conda/envs/train",
        f"pytorch=={version}", "torchvision==0.20.1", "pytorch-cuda=12.4",
        "-c", "pytorch", "-c", "nvidia",
    ]  # fmt: skip
    assert c["miniforge_install"][-2:] == ["-p", "/srv/conda"]


def test_the_threshold_is_an_input():
    later = {**SEED_CONDA, "pytorch_cuda_since": "1.12.1"}
    assert commands(**later)["torch_install"][-5:] == [
        "pytorch-cuda=11.6",
        "-c",
        "pytorch",
        "-c",
        "nvidia",
    ]


@pytest.mark.parametrize(("version", "channel"), [("2.5.1", "nvidia"), ("1.12.1", "conda-forge")])
def test_conda_cpu_takes_cpuonly_the_channel_still_by_release(version, channel):
    c = commands(
        **{
            **SEED_CONDA,
            "torch_version": version,
            "cuda_variant": "cpu",
            "install_torchvision": False,
        }
    )
    assert c["torch_install"][-7:] == [
        f"pytorch=={version}", "torchaudio==0.12.1", "cpuonly", "-c", "pytorch", "-c", channel,
    ]  # fmt: skip
    assert c["wanted"]["torch"] == version  # the conda method: no local tag


@pytest.mark.parametrize("mode", ["venv", "adopt"])
def test_venv_mode_creates_a_venv_with_the_venv_python(mode):
    c = commands(
        **{
            **DEFAULTS,
            "mode": mode,
            "env_dir": "/opt/venvs/pytorch",
            "env_python": "/opt/venvs/pytorch/bin/python",
            "python_version": "",
        }
    )
    assert c["env_create"] == ["/usr/bin/python3", "-m", "venv", "/opt/venvs/pytorch"]
    assert c["torch_install"][0] == "/opt/venvs/pytorch/bin/python"
    # The Miniforge lines are still built (and not run): the template did the same.
    assert c["miniforge_install"] == ["/bin/bash", INSTALLER, "-b", "-p", "/opt/conda"]


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("install_method", "uv", "install_method must be one of pip, conda"),
        ("mode", "mamba", "mode must be one of conda, venv, adopt"),
        ("cuda_variant", "cuda12", "cuda_variant must be cuXY, cuXYZ or cpu"),
        ("cuda_variant", "cu1300", "cuda_variant must be"),
        ("torch_version", "latest", "not a version number"),
        ("pytorch_cuda_since", "", "not a version number"),
    ],
)
def test_commands_refuse_bad_settings(key, value, match):
    with pytest.raises(ValueError, match=match):
        commands(**{**DEFAULTS, key: value})


# Where each setting may appear (what tests/unit/test_rendering.py's hostile-value check
# held the template to): the command lines it reaches, in the settings it reaches them with.
REACH = {
    "conda_prefix": {"miniforge_install", "env_create", "torch_install"},
    "download_dir": {"installer_path", "miniforge_install"},
    "miniforge_url": {"installer_path", "miniforge_install"},
    "env_dir": {"env_create", "torch_install"},
    "env_python": {"torch_install"},
    "venv_python": {"env_create"},
    "python_version": {"env_create"},
    "torch_version": {"wanted", "torch_install"},
    "torchvision_version": {"wanted", "torch_install"},
    "torchaudio_version": {"wanted", "torch_install"},
    "index_url": {"torch_install"},
    "extra_index_url": {"torch_install"},
    "pytorch_cuda_since": {"torch_install"},
    "cuda_variant": {"wanted", "torch_install"},
}
HOSTILE = ["a b", "x\ny=1", "$(id)", "`id`", "a;b", "'\"", "trailing\\", "%n", "--user", "\x00"]


def _with(settings: dict, key: str, text: str) -> dict:
    value = {
        "miniforge_url": f"https://mirror.example/{text}Miniforge3.sh",
        "torch_version": f"2.11.0{text}",
        "torchvision_version": f"0.26.0{text}",
        "torchaudio_version": f"2.11.0{text}",
        "pytorch_cuda_since": f"1.13{text}",
        "cuda_variant": f"cu130{text}",
    }.get(key, text)
    return {**settings, key: value}


@pytest.mark.parametrize("hostile", HOSTILE)
@pytest.mark.parametrize("key", sorted(REACH))
@pytest.mark.parametrize(
    "base",
    [
        {**DEFAULTS, "install_torchaudio": True, "extra_index_url": "https://pypi.example/s"},
        {**SEED_CONDA, "mode": "conda"},
        {**DEFAULTS, "mode": "venv"},
    ],
    ids=["pip", "conda", "venv"],
)
def test_a_hostile_value_is_refused_or_stays_in_its_argv_element(base, key, hostile):
    """Each value is one argv element (or part of one), never several, and reaches only the
    command lines it belongs to; a value that can't be there (a variant) is refused."""
    if key == "cuda_variant":
        with pytest.raises(ValueError, match="cuda_variant must be"):
            commands(**_with(base, key, hostile))
        return
    twin = commands(**_with(base, key, "HARMLESS"))
    got = commands(**_with(base, key, hostile))
    if key == "miniforge_url":  # urlsplit drops tabs and newlines, as the template's did
        hostile = hostile.replace("\n", "")
    changed = {name for name in got if got[name] != twin[name]}
    assert changed <= REACH[key], (key, hostile, changed)
    for name in ("miniforge_install", "env_create", "torch_install"):
        assert [a.replace(hostile, "HARMLESS") for a in got[name]] == twin[name], (name, got)
    assert {k: v.replace(hostile, "HARMLESS") for k, v in got["wanted"].items()} == twin["wanted"]


# ---------------------------------------------------------------------------
# The comparison with what is installed
# ---------------------------------------------------------------------------

WANTED = {"torch": "2.11.0+cu130", "torchvision": "0.26.0+cu130"}


def test_all_present_nothing_to_install():
    installed = {"torch": "2.11.0+cu130", "torchvision": "0.26.0+cu130", "pip": "24.2"}
    result = compare(WANTED, installed, "pip")
    assert result == {
        "installed": installed,
        "missing": [],
        "other_version": {},
        "install_needed": False,
    }


def test_one_at_another_version_installs():
    # A variant change cu126 -> cu130 is another version for the pip method.
    result = compare(WANTED, {"torch": "2.11.0+cu126", "torchvision": "0.26.0+cu130"}, "pip")
    assert result["other_version"] == {"torch": "2.11.0+cu126"}
    assert result["missing"] == [] and result["install_needed"] is True


def test_a_missing_one_installs():
    result = compare(WANTED, {"torch": "2.11.0+cu130", "numpy": "2.1.0"}, "pip")
    assert result["missing"] == ["torchvision"] and result["other_version"] == {}
    assert result["install_needed"] is True
    # Every installed package, and each missing wanted one as ''.
    assert result["installed"] == {"torch": "2.11.0+cu130", "torchvision": "", "numpy": "2.1.0"}


@pytest.mark.parametrize("installed", [None, {}])
def test_nothing_installed_installs_everything(installed):
    result = compare(WANTED, installed, "pip")
    assert result["missing"] == ["torch", "torchvision"] and result["install_needed"] is True
    assert result["installed"] == {"torch": "", "torchvision": ""}


def test_conda_compares_without_the_local_tag():
    wanted = {"torch": "1.12.1", "torchvision": "0.13.1"}
    tagged = {"torch": "1.12.1+cu116", "torchvision": "0.13.1+cu116"}
    assert compare(wanted, tagged, "conda")["install_needed"] is False
    assert compare(wanted, tagged, "conda")["installed"] == {
        "torch": "1.12.1",
        "torchvision": "0.13.1",
    }
    # The pip method keeps the tag: an untagged torch is another build.
    assert compare(WANTED, {"torch": "2.11.0", "torchvision": "0.26.0+cu130"}, "pip")[
        "other_version"
    ] == {"torch": "2.11.0"}


def test_names_compare_in_lower_case():
    result = compare(WANTED, {"Torch": "2.11.0+cu130", "TorchVision": "0.26.0+cu130"}, "pip")
    assert result["install_needed"] is False


def test_pip_list_versions():
    out = json.dumps(
        [{"name": "Torch", "version": "2.11.0+cu130"}, {"name": "pip", "version": "24.2"}]
    )
    assert pip_list_versions(out) == {"torch": "2.11.0+cu130", "pip": "24.2"}
    with pytest.raises(ValueError, match="did not print JSON"):
        pip_list_versions("WARNING: something\n[]")
    with pytest.raises(ValueError, match="list of"):
        pip_list_versions('{"torch": "2.11.0"}')


def test_plan_joins_the_commands_and_the_comparison():
    result = plan(DEFAULTS, {"torch": "2.11.0+cu130"})
    assert result["commands"] == commands(**DEFAULTS)
    assert result["missing"] == ["torchvision"] and result["installed_read"] is True
    assert result["summary"] == (
        "wanted torch 2.11.0+cu130, torchvision 0.26.0+cu130: install (torchvision missing)"
    )
    assert plan(DEFAULTS, None, read=False)["summary"].endswith("the environment was not read")
    done = plan(DEFAULTS, {"torch": "2.11.0+cu130", "torchvision": "0.26.0+cu130"})
    assert done["summary"].endswith(": all installed") and not done["install_needed"]


# ---------------------------------------------------------------------------
# The module, in-process
# ---------------------------------------------------------------------------


def _stand_in_python(path: Path, packages: list, rc: int = 0) -> Path:
    """A script standing in for the environment's interpreter: prints a pip list."""
    log = path.parent / "calls.log"
    path.write_text(
        f"#!/bin/sh\necho \"$@\" >> {log}\ncat <<'EOF'\n{json.dumps(packages)}\nEOF\nexit {rc}\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return log


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        torch_env_plan.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def test_the_module_reads_pip_list_in_check_mode(tmp_path, capsys):
    python = tmp_path / "python"
    log = _stand_in_python(python, [{"name": "torch", "version": "2.11.0+cu126"}])
    args = {**DEFAULTS, "env_python": str(python), "read_installed": True}
    failed, result = run_module({**args, "_ansible_check_mode": True}, capsys)
    assert not failed, result
    assert result["changed"] is False
    assert log.read_text().split() == [
        "-m",
        "pip",
        "list",
        "--format=json",
        "--disable-pip-version-check",
    ]
    assert result["other_version"] == {"torch": "2.11.0+cu126"}
    assert result["missing"] == ["torchvision"] and result["install_needed"] is True
    assert result["commands"]["torch_install"][0] == str(python)


def test_the_module_without_an_interpreter_finds_nothing_installed(tmp_path, capsys):
    args = {**DEFAULTS, "env_python": str(tmp_path / "no-such-python"), "read_installed": True}
    failed, result = run_module(args, capsys)
    assert not failed, result
    assert result["installed_read"] is True and result["missing"] == ["torch", "torchvision"]


def test_the_module_takes_a_failing_pip_list_as_nothing_installed(tmp_path, capsys):
    python = tmp_path / "python"
    _stand_in_python(python, [{"name": "torch", "version": "2.11.0+cu130"}], rc=1)
    failed, result = run_module(
        {**DEFAULTS, "env_python": str(python), "read_installed": True}, capsys
    )
    assert not failed, result
    assert result["install_needed"] is True and result["installed"] == {
        "torch": "",
        "torchvision": "",
    }


def test_the_module_reads_nothing_unless_asked(tmp_path, capsys):
    python = tmp_path / "python"
    log = _stand_in_python(python, [])
    failed, result = run_module({**DEFAULTS, "env_python": str(python)}, capsys)
    assert not failed and not log.exists()
    assert result["installed_read"] is False


def test_the_module_takes_given_packages(capsys):
    installed = {"torch": "1.12.1+cu116", "torchvision": "0.13.0", "torchaudio": "0.12.1"}
    failed, result = run_module({**SEED_CONDA, "installed": installed}, capsys)
    assert not failed, result
    assert result["other_version"] == {"torchvision": "0.13.0"}
    assert result["commands"]["torch_install"][-5:] == [
        "cudatoolkit=11.6", "-c", "pytorch", "-c", "conda-forge",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"cuda_variant": "cuda"}, "cuda_variant must be cuXY, cuXYZ or cpu"),
        ({"install_method": "uv"}, "install_method"),
        ({"torch_version": ""}, "torch_version must not be empty"),
        (
            {"install_torchaudio": True, "torchaudio_version": ""},
            "torchaudio_version must not be empty",
        ),
        ({"python_version": ""}, "python_version must not be empty"),  # conda mode needs it
    ],
)
def test_the_module_refuses_bad_input(capsys, change, needle):
    failed, result = run_module({**DEFAULTS, **change}, capsys)
    assert failed and needle in result["msg"], result


def test_the_module_fails_on_a_pip_list_that_is_not_json(tmp_path, capsys):
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'not json'\n")
    python.chmod(0o755)
    failed, result = run_module(
        {**DEFAULTS, "env_python": str(python), "read_installed": True}, capsys
    )
    assert failed and "did not print JSON" in result["msg"], result


# ---------------------------------------------------------------------------
# End to end: ansible localhost -m torch_env_plan, and ansible-doc
# ---------------------------------------------------------------------------


def ansible_bin(name: str) -> str:
    local = Path(sys.executable).parent / name
    return str(local if local.exists() else REPO_ROOT / ".venv" / "bin" / name)


def run_adhoc(args: dict, tmp_path: Path, check: bool = False) -> dict:
    """`ansible localhost -m torch_env_plan -a JSON` from the repo root; the host's result."""
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"),
        ANSIBLE_STDOUT_CALLBACK="json",
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_CACHE_PLUGIN="memory",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "local"),
        ANSIBLE_REMOTE_TEMP=str(tmp_path / "remote"),
        ANSIBLE_NOCOLOR="1",
    )
    cmd = [
        ansible_bin("ansible"), "localhost", "-i", "localhost,", "-c", "local",
        "-e", json.dumps({"ansible_python_interpreter": sys.executable}),
        "-m", "torch_env_plan", "-a", json.dumps(args), *(["--check"] if check else []),
    ]  # fmt: skip
    proc = subprocess.run(
        cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    text = proc.stdout
    start = text.find("\n{") + 1 if not text.startswith("{") else 0
    data, _ = json.JSONDecoder().raw_decode(text[start:])
    return data["plays"][0]["tasks"][0]["hosts"]["localhost"]


@pytest.mark.slow
def test_e2e_seed_conda_in_check_mode(tmp_path):
    python = tmp_path / "python"
    _stand_in_python(python, [{"name": "torch", "version": "1.12.1+cu116"}])
    result = run_adhoc(
        {**SEED_CONDA, "env_python": str(python), "read_installed": True}, tmp_path, True
    )
    assert not result.get("failed"), result
    assert result["changed"] is False
    assert result["commands"] == {
        "installer_path": INSTALLER,
        "miniforge_install": ["/bin/bash", INSTALLER, "-b", "-p", "/opt/conda"],
        "env_create": [
            CONDA, "create", "--yes", "--quiet", "--prefix", "/opt/conda/envs/pytorch-conda",
            "python=3.10",
        ],
        "wanted": {"torch": "1.12.1", "torchvision": "0.13.1", "torchaudio": "0.12.1"},
        "torch_install": [
            CONDA, "install", "--yes", "--quiet", "--prefix", "/opt/conda/envs/pytorch-conda",
            "pytorch==1.12.1", "torchvision==0.13.1", "torchaudio==0.12.1", "cudatoolkit=11.6",
            "-c", "pytorch", "-c", "conda-forge",
        ],
    }  # fmt: skip
    assert result["missing"] == ["torchvision", "torchaudio"] and result["install_needed"] is True


@pytest.mark.slow
def test_e2e_bad_input_fails_plainly(tmp_path):
    result = run_adhoc({**DEFAULTS, "cuda_variant": "cu13.0"}, tmp_path)
    assert result.get("failed") is True
    assert "cuda_variant must be cuXY, cuXYZ or cpu, not 'cu13.0'" in result["msg"]
    missing = {k: v for k, v in DEFAULTS.items() if k != "torch_version"}
    result = run_adhoc(missing, tmp_path)
    assert result.get("failed") is True
    assert "missing required arguments: torch_version" in result["msg"]


@pytest.mark.slow
def test_ansible_doc_renders():
    proc = subprocess.run(
        [ansible_bin("ansible-doc"), "-M", "library", "--json", "torch_env_plan"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "WARNING" not in proc.stderr.upper(), proc.stderr
    doc = json.loads(proc.stdout)["torch_env_plan"]
    assert doc["doc"]["module"] == "torch_env_plan"
    assert set(doc["return"]) >= {
        "commands",
        "installed",
        "missing",
        "other_version",
        "install_needed",
    }


# ---------------------------------------------------------------------------
# action_plugins/torch_env_plan.py: on the controller unless the host must be read
# ---------------------------------------------------------------------------

# SSH to port 9 on loopback is refused: a module run there would make the task unreachable.
UNREACHABLE = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9}


def run_play(args: dict, tmp_path: Path, host_vars: dict) -> dict:
    """ansible-playbook with one torch_env_plan task against an inventory host of its own."""
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"target": host_vars}}}))
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        "- hosts: target\n  gather_facts: false\n  tasks:\n"
        "    - torch_env_plan: " + json.dumps(args) + "\n"
    )
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"),
        ANSIBLE_STDOUT_CALLBACK="json",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "local"),
    )
    proc = subprocess.run(
        [ansible_bin("ansible-playbook"), "-i", str(inventory), str(playbook)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    data, _ = json.JSONDecoder().raw_decode(proc.stdout[proc.stdout.index("{") :])
    return data["plays"][0]["tasks"][0]["hosts"]["target"]


@pytest.mark.slow
def test_without_reading_the_host_it_answers_on_the_controller(tmp_path, capsys):
    adopt = {**DEFAULTS, "mode": "adopt"}
    result = run_play(adopt, tmp_path, UNREACHABLE)
    assert not result.get("unreachable") and not result.get("failed"), result
    failed, expected = run_module(adopt, capsys)
    assert not failed
    for key in ("commands", "installed", "missing", "other_version", "install_needed", "summary"):
        assert result[key] == expected[key], key
    assert result["installed_read"] is False and result["changed"] is False
    assert "invocation" not in result  # no module ran


@pytest.mark.slow
def test_reading_the_installed_packages_runs_the_module_on_the_host(tmp_path):
    result = run_play({**DEFAULTS, "read_installed": True}, tmp_path, UNREACHABLE)
    assert result.get("unreachable") is True, result
    python = tmp_path / "python"
    _stand_in_python(python, [{"name": "torch", "version": "2.11.0+cu130"}])
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    args = {**DEFAULTS, "env_python": str(python), "read_installed": True}
    result = run_play(args, tmp_path, local)
    assert not result.get("failed"), result
    assert result["installed"]["torch"] == "2.11.0+cu130" and result["installed_read"] is True
    assert "invocation" in result  # the module ran on the host


@pytest.mark.slow
def test_the_controller_refuses_what_the_module_refuses(tmp_path):
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    result = run_play({**DEFAULTS, "mode": "snap", "torch_version": ""}, tmp_path, local)
    assert result["failed"] is True and "mode" in result["msg"] and "snap" in result["msg"]
    result = run_play({**DEFAULTS, "torch_version": ""}, tmp_path, local)
    assert result["failed"] is True
    assert result["msg"] == "torch_env_plan: torch_version must not be empty"
