"""tools/catalogue_freshness.py: the catalogue against PyPI, on recorded answers.

tests/fixtures/pypi_freshness holds PyPI's JSON for each project, recorded 2026-12-05 and
trimmed (its README.md); nothing here reaches the network.
"""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "pypi_freshness"


def _load_tool():
    spec = importlib.util.spec_from_file_location(
        "kindling_catalogue_freshness", REPO_ROOT / "tools" / "catalogue_freshness.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


@pytest.fixture(scope="module")
def recorded():
    return tool.load_pypi(FIXTURES)


def _versions(found, project):
    return [f["version"] for f in found if f["project"] == project]


def test_every_project_is_recorded_with_its_date():
    for project in tool.PROJECTS:
        body = json.loads((FIXTURES / f"{project}.json").read_text())
        assert body["_recorded"].startswith("2026-12-05 from https://pypi.org/pypi/")
        assert body["releases"]


def test_the_catalogue_knows_every_torch_release_pypi_served_on_the_day(recorded):
    found = tool.findings(tool.CATALOGUE, recorded)
    assert _versions(found, "torch") == []
    # torchvision 0.29.2 came with torch 2.15.0, but no source pairs them yet
    assert _versions(found, "torchvision") == ["0.29.2"]


def test_newer_nvidia_wheels_and_cuda_minors_are_reported(recorded):
    found = tool.findings(tool.CATALOGUE, recorded)
    assert "9.28.1.4" in _versions(found, "nvidia-cudnn-cu13")
    assert "9.26.0.51" not in _versions(found, "nvidia-cudnn-cu13")  # torch 2.15.0's own
    assert "2.32.6" in _versions(found, "nvidia-nccl-cu13")
    assert "2.30.7" not in _versions(found, "nvidia-nccl-cu13")
    cuda = [f for f in found if f["kind"] == "cuda"]
    assert [f["version"] for f in cuda] == ["13.3.29", "13.4.49", "13.5.37"]  # one per minor
    assert "CUDA 13.4" in cuda[1]["title"] and "Table 3" in cuda[1]["source"]


def test_a_missing_patch_release_and_a_new_series_are_reported(recorded):
    catalogue = copy.deepcopy(tool.CATALOGUE)
    row = next(r for r in catalogue["torch_releases"] if r["series"] == "2.12")
    del row["releases"]["2.12.1"]
    pypi = copy.deepcopy(recorded)
    pypi["torch"]["releases"]["2.16.0"] = [{"upload_time": "2026-12-22", "yanked": False}]
    found = tool.findings(catalogue, pypi)
    assert _versions(found, "torch") == ["2.12.1", "2.16.0"]
    new = next(f for f in found if f["version"] == "2.16.0")
    assert new["title"] == ("Vendor catalogue: torch 2.16.0 is newer than the catalogue knows")
    assert "RELEASE.md" in new["source"] and "pypi.org/project/torch/2.16.0/" in new["source"]
    assert new["uploaded"] == "2026-12-22"


def test_pre_releases_yanked_and_empty_releases_are_not_findings(recorded):
    pypi = copy.deepcopy(recorded)
    pypi["torch"]["releases"]["2.16.0rc1"] = [{"upload_time": "2026-12-01", "yanked": False}]
    pypi["torch"]["releases"]["2.16.0"] = [{"upload_time": "2026-12-22", "yanked": True}]
    pypi["torch"]["releases"]["2.17.0"] = []
    assert _versions(tool.findings(tool.CATALOGUE, pypi), "torch") == []


def test_findings_never_fail_and_json_is_one_entry_per_release(capsys):
    assert tool.main(["--fixtures", str(FIXTURES), "--json", "--date", "2026-12-05"]) == 0
    found = json.loads(capsys.readouterr().out)
    titles = [f["title"] for f in found]
    assert len(titles) == len(set(titles)) and titles
    assert tool.main(["--fixtures", str(FIXTURES), "--date", "2026-12-05"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Catalogue freshness (2026-12-05): ")
    assert "never a failure" in text and "read: " in text


def test_no_network_is_the_tools_own_error(monkeypatch, capsys):
    def down(project, timeout=60.0):
        raise tool.FreshnessError(f"https://pypi.org/pypi/{project}/json: no route to host")

    monkeypatch.setattr(tool, "fetch", down)
    assert tool.main([]) == 2
    assert "could not read PyPI" in capsys.readouterr().err


def test_a_missing_fixture_is_an_error_not_a_pass(tmp_path, capsys):
    assert tool.main(["--fixtures", str(tmp_path)]) == 2
    assert "no recorded answer" in capsys.readouterr().err


def test_docs_hold_the_output_in_a_marked_block():
    text = (REPO_ROOT / "docs" / "CATALOGUE.md").read_text()
    assert tool.BEGIN in text and tool.END in text
    block = text.split(tool.BEGIN, 1)[1].split(tool.END, 1)[0]
    assert "Catalogue freshness (20" in block
