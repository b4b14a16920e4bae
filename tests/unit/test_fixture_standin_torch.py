"""The cp39 torch STAND-IN of the fixture wheel index (tests/fixture_sources/build_fixtures.py).

Fast checks without the network or the full fixture build: the real release's metadata is
read from a local stand-in of PyPI's simple index (file:// URLs), both ways the build takes it
(a PEP 658 metadata file with its sha256, or the whole wheel checked against the link's
sha256), and the stand-in wheel is reproducible, says what it is, keeps the real
requirements without the CUDA-only ones, and answers Kindling's torch probe as a CPU build.
The full build and pip against the served index are in test_fixture_sources.py (slow).
"""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from ansible.module_utils import torch_probe

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD = REPO_ROOT / "tests" / "fixture_sources" / "build_fixtures.py"
_spec = importlib.util.spec_from_file_location("kindling_build_fixtures_standin", BUILD)
build_fixtures = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = build_fixtures  # dataclasses look their module up while it executes
_spec.loader.exec_module(build_fixtures)

PYPI_NAME = build_fixtures.STANDIN_TORCH["pypi_wheel"]
# The shape of PyPI's torch 2.8.0 METADATA (header fields the stand-in takes, abridged).
REAL_METADATA = """Metadata-Version: 2.4
Name: torch
Version: 2.8.0
Summary: Tensors and Dynamic neural networks in Python with strong GPU acceleration
Requires-Python: >=3.9.0
Requires-Dist: filelock
Requires-Dist: typing-extensions>=4.10.0
Requires-Dist: setuptools; python_version >= "3.12"
Requires-Dist: sympy>=1.13.3
Requires-Dist: networkx
Requires-Dist: jinja2
Requires-Dist: fsspec
Requires-Dist: nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux"
Requires-Dist: nvidia-nccl-cu12==2.27.3; platform_system == "Linux"
Requires-Dist: triton==3.4.0; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: optree>=0.13.0; extra == "optree"
Provides-Extra: optree

PyTorch is a Python package ...
"""


def _fake_wheel(path: Path, metadata: str) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("torch/__init__.py", "")
        archive.writestr("torch-2.8.0.dist-info/METADATA", metadata)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _simple_page(tmp_path: Path, wheel_sha: str, metadata_attr: str = "") -> str:
    page = tmp_path / "simple" / "torch" / "index.html"
    page.parent.mkdir(parents=True)
    href = f"file://{tmp_path}/files/{PYPI_NAME}#sha256={wheel_sha}"
    page.write_text(
        "<!DOCTYPE html><html><body>\n"
        f'<a href="{href}" data-requires-python="&gt;=3.9.0"{metadata_attr}>{PYPI_NAME}</a><br/>\n'
        "</body></html>\n"
    )
    return page.as_uri()


@pytest.fixture()
def index(tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    wheel_sha = _fake_wheel(files / PYPI_NAME, REAL_METADATA)
    return tmp_path, wheel_sha


def test_metadata_from_the_whole_wheel_checked_against_the_index(index, tmp_path):
    root, wheel_sha = index
    page = _simple_page(root, wheel_sha)
    cache = tmp_path / "cache"
    text, provenance = build_fixtures.real_torch_metadata(cache, page)
    assert text == REAL_METADATA
    assert provenance["wheel_sha256"] == wheel_sha
    assert provenance["source"].startswith("METADATA of the wheel")
    assert not list(cache.glob("*.whl")), "the downloaded wheel is not kept"
    # Kept: a second call reads the cache (the index is gone).
    (root / "simple" / "torch" / "index.html").unlink()
    assert build_fixtures.real_torch_metadata(cache, page)[0] == REAL_METADATA


def test_a_wheel_that_does_not_match_the_index_is_refused(index, tmp_path):
    root, _ = index
    page = _simple_page(root, "0" * 64)
    with pytest.raises(build_fixtures.BuildError, match="does not match the index's sha256"):
        build_fixtures.real_torch_metadata(tmp_path / "cache", page)
    assert not list((tmp_path / "cache").glob("*"))


def test_pep658_metadata_checked_against_the_index(index, tmp_path):
    root, wheel_sha = index
    metadata = root / "files" / f"{PYPI_NAME}.metadata"
    metadata.write_text(REAL_METADATA)
    digest = hashlib.sha256(metadata.read_bytes()).hexdigest()
    (root / "files" / PYPI_NAME).unlink()  # only the metadata file is fetched
    page = _simple_page(root, wheel_sha, f' data-core-metadata="sha256={digest}"')
    text, provenance = build_fixtures.real_torch_metadata(tmp_path / "cache", page)
    assert text == REAL_METADATA
    assert provenance["source"].startswith("PEP 658")
    bad = _simple_page(
        tmp_path / "other", wheel_sha, f' data-dist-info-metadata="sha256={"1" * 64}"'
    )
    (tmp_path / "other" / "files").mkdir()
    (tmp_path / "other" / "files" / f"{PYPI_NAME}.metadata").write_text(REAL_METADATA)
    with pytest.raises(build_fixtures.BuildError, match="metadata does not match"):
        build_fixtures.real_torch_metadata(tmp_path / "cache2", bad)


def test_standin_wheel_is_reproducible_and_says_what_it_is(tmp_path):
    first, requirements = build_fixtures.build_standin_torch_wheel(REAL_METADATA, tmp_path / "a")
    second, _ = build_fixtures.build_standin_torch_wheel(REAL_METADATA, tmp_path / "b")
    assert first.name == "torch-2.8.0+cpu-cp39-cp39-manylinux_2_28_x86_64.whl"
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as archive:
        metadata = archive.read("torch-2.8.0+cpu.dist-info/METADATA").decode()
        wheel = archive.read("torch-2.8.0+cpu.dist-info/WHEEL").decode()
        init = archive.read("torch/__init__.py").decode()
        record = archive.read("torch-2.8.0+cpu.dist-info/RECORD").decode()
    assert "Summary: KINDLING TEST FIXTURE, not PyTorch: stand-in" in metadata
    assert "Version: 2.8.0+cpu\n" in metadata and "Requires-Python: >=3.9.0\n" in metadata
    assert "Tag: cp39-cp39-manylinux_2_28_x86_64" in wheel
    assert "KINDLING_FIXTURE_STANDIN = True" in init and "stand-in" in init
    assert "@" not in init.split('"""')[1].replace("@WHEEL@", "")  # placeholders substituted
    assert requirements["kept"] == [
        "filelock",
        "typing-extensions>=4.10.0",
        'setuptools; python_version >= "3.12"',
        "sympy>=1.13.3",
        "networkx",
        "jinja2",
        "fsspec",
        'optree>=0.13.0; extra == "optree"',
    ]
    assert [r.split("==")[0] for r in requirements["dropped"]] == [
        "nvidia-cuda-runtime-cu12",
        "nvidia-nccl-cu12",
        "triton",
    ]
    for req in requirements["kept"]:
        assert f"Requires-Dist: {req}\n" in metadata
    header = metadata.split("\n\n", 1)[0]
    assert "nvidia" not in header and "triton" not in header
    assert "torch-2.8.0+cpu.dist-info/RECORD,," in record


def test_standin_answers_the_torch_probe_as_a_cpu_build(tmp_path):
    wheel, _ = build_fixtures.build_standin_torch_wheel(REAL_METADATA, tmp_path / "w")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    proc = subprocess.run(
        torch_probe.probe_command(sys.executable),
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    raw = torch_probe.parse_probe_output(proc.stdout)
    # What the real CPU build of torch answers (measured with torch 2.13.0+cpu's wheel).
    assert {k: v for k, v in raw.items() if k not in ("python_version", "python_executable")} == {
        "importable": True,
        "import_error": None,
        "torch_version": "2.8.0+cpu",
        "built_cuda_version": None,
        "cudnn_version": None,
        "cuda_available": False,
        "driver_cuda_version": None,
        "device_count": 0,
        "devices": [],
        "tensor_ops": [],
        "arch_list": [],
        "nccl_version": None,
        "bf16_supported": None,
        "cuda_warnings": [],
    }
    facts = torch_probe.normalize(raw)
    assert facts["cpu_only_build"] is True
    marker = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.KINDLING_FIXTURE_STANDIN)"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(site)},
        check=True,
    )
    assert marker.stdout.strip() == "True"
