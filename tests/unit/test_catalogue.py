"""tools/catalogue.py and the generated vendor catalogue: the rules, and what the rows promise.

The rule tests copy data/vendor_catalogue.yml into tmp_path, break it one way and point
``load(path)`` at the copy; the repository's own files are never written.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.module_utils.vendor_catalogue import CATALOGUE

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA = REPO_ROOT / "data" / "vendor_catalogue.yml"
GENERATED = REPO_ROOT / "module_utils" / "vendor_catalogue.py"


def _load_tool():
    spec = importlib.util.spec_from_file_location(
        "kindling_catalogue_tool", REPO_ROOT / "tools" / "catalogue.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


@pytest.fixture
def yaml_copy(tmp_path):
    """A writable copy of the catalogue YAML and a helper that edits it exactly once."""
    path = tmp_path / "vendor_catalogue.yml"
    text = DATA.read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")

    def edit(old: str, new: str) -> Path:
        current = path.read_text(encoding="utf-8")
        assert current.count(old) >= 1, f"{old!r} is not in the catalogue any more"
        path.write_text(current.replace(old, new, 1), encoding="utf-8")
        return path

    return path, edit


# ---------------------------------------------------------------------------
# tools/catalogue.py --check
# ---------------------------------------------------------------------------


def test_check_passes_on_the_repository():
    assert tool.main(["--check"]) == 0


def test_check_passes_as_a_command():
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "catalogue.py"), "--check"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def test_check_fails_when_the_generated_copy_is_stale(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "vendor_catalogue.py"
    stale.write_text(GENERATED.read_text(encoding="utf-8").replace('"580"', '"581"', 1))
    monkeypatch.setattr(tool, "OUTPUT", stale)
    assert tool.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "module_utils/vendor_catalogue.py is out of date" in err
    assert '"581"' in err  # the diff shows the stale line


def test_rendering_reproduces_the_committed_copy():
    assert tool.render(tool.load(DATA)) == GENERATED.read_text(encoding="utf-8")


def test_an_unchanged_copy_loads(yaml_copy):
    path, _ = yaml_copy
    loaded = tool.load(path)
    assert loaded["repositories"] == CATALOGUE["repositories"]
    assert loaded["driver_packages"] == CATALOGUE["driver_packages"]


def test_an_unknown_source_id_is_refused(yaml_copy):
    path, edit = yaml_copy
    edit("  source: pypi_json", "  source: pypi_jsn")
    with pytest.raises(tool.CatalogueError, match=r"'pypi_jsn' is not an id in sources:"):
        tool.load(path)


def test_an_unknown_id_inside_a_list_is_refused(yaml_copy):
    path, edit = yaml_copy
    edit("source: [nv_590_rename, nv_forum_353805]", "source: [nv_590_rename, nv_forum_353806]")
    with pytest.raises(tool.CatalogueError, match="nv_forum_353806"):
        tool.load(path)


def test_an_unused_source_id_is_refused(yaml_copy):
    path, edit = yaml_copy
    edit(
        "sources:\n",
        'sources:\n  spare_citation: "An unused citation, long enough to pass the length rule"\n',
    )
    with pytest.raises(tool.CatalogueError, match="sources never cited by a row: spare_citation"):
        tool.load(path)


def test_a_plain_scalar_cut_at_a_hash_is_refused(yaml_copy):
    """`x: foo PR #65 ...` unquoted: YAML keeps "foo PR", the rest is a comment."""
    path, edit = yaml_copy
    edit("sources:\n", "sources:\n  cut_short: foo PR #65 (ubuntu2204 has no cuda-drivers-510)\n")
    with pytest.raises(tool.CatalogueError, match=r"cut there by YAML \(quote it\): cut_short"):
        tool.load(path)


def test_the_real_pr65_source_unquoted_is_refused(yaml_copy):
    """A long citation cut at " #" is refused too, not only a short one.

    Unquoted, the repository's own nv_ansible_pr65 line would make YAML read only
    "NVIDIA/ansible-role-nvidia-driver PR" (36 characters), losing the number and the
    fact cited; the generator looks at the raw line, not the parsed length.
    """
    path, edit = yaml_copy
    edit(
        'nv_ansible_pr65: "NVIDIA/ansible-role-nvidia-driver PR #65 '
        '(ubuntu2204 has no cuda-drivers-510; earliest R515)"',
        "nv_ansible_pr65: NVIDIA/ansible-role-nvidia-driver PR #65 "
        "(ubuntu2204 has no cuda-drivers-510; earliest R515)",
    )
    with pytest.raises(tool.CatalogueError, match="nv_ansible_pr65"):
        tool.load(path)


@pytest.mark.parametrize("reason", ['""', '"   "'])
def test_an_unknown_source_without_a_reason_is_refused(yaml_copy, reason):
    path, edit = yaml_copy
    edit("source: cuda_gpus", "source: {unknown: " + reason + "}")
    with pytest.raises(tool.CatalogueError, match="an unknown source must say what was looked for"):
        tool.load(path)


def test_an_unknown_source_left_null_is_refused(yaml_copy):
    """`{unknown: }` (YAML null) is no reason: it must not be published as "None"."""
    path, edit = yaml_copy
    # ctk_table3 stays cited by the other toolkit rows, so only the reason is at fault.
    edit("source: ctk_table3}", "source: {unknown: null}}")
    with pytest.raises(tool.CatalogueError, match="an unknown source must say what was looked for"):
        tool.load(path)


def test_an_unknown_source_with_a_reason_resolves_to_that_reason(yaml_copy):
    path, edit = yaml_copy
    # ctk_table3 stays cited by the other toolkit rows.
    edit("source: ctk_table3}", 'source: {unknown: "not in Table 3 yet"}}')
    loaded = tool.load(path)
    assert loaded["cuda_toolkits"][0]["source"] == "[no source found] not in Table 3 yet"
    assert loaded["cuda_toolkits"][1]["source"].startswith("NVIDIA CUDA Toolkit Release Notes")


def test_an_ids_source_with_a_stray_key_is_refused(yaml_copy):
    path, edit = yaml_copy
    edit(
        'source: {ids: [cudnn_images], note: "(11.6.x)"}',
        'source: {ids: [cudnn_images], note: "(11.6.x)", url: "x"}',
    )
    with pytest.raises(tool.CatalogueError, match=r"unexpected keys \['url'\]"):
        tool.load(path)


def test_an_empty_source_list_is_refused(yaml_copy):
    path, edit = yaml_copy
    edit("source: cuda_gpus", "source: []")
    with pytest.raises(tool.CatalogueError, match="a source must be an id"):
        tool.load(path)


def test_a_catalogue_without_sources_is_refused(tmp_path):
    path = tmp_path / "bare.yml"
    path.write_text("repositories: {}\n", encoding="utf-8")
    with pytest.raises(tool.CatalogueError, match="needs a top-level sources: mapping"):
        tool.load(path)


# ---------------------------------------------------------------------------
# The generated CATALOGUE
# ---------------------------------------------------------------------------


def _rows_with_sources(node, where="catalogue"):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in tool.SOURCE_KEYS:
                yield f"{where}.{key}", key, value
            elif key != "sources":
                yield from _rows_with_sources(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _rows_with_sources(item, f"{where}[{i}]")


def test_every_source_is_resolved_text():
    found = list(_rows_with_sources(CATALOGUE))
    assert len(found) > 100
    ids = set(CATALOGUE["sources"])
    for where, key, value in found:
        if key != "source" and value is None:
            continue  # arch_list_source: null where a row has no arch list
        assert isinstance(value, str), where
        assert value.strip(), where
        assert value not in ids, f"{where} is an unresolved id {value!r}"


def test_every_source_text_is_long_enough_to_cite_something():
    for sid, text in CATALOGUE["sources"].items():
        assert len(text) >= 12, sid
        assert not re.search(r"\b(PR|MR|issue)\s*$", text), f"{sid} ends mid-citation: {text!r}"


def test_every_repository_layout_has_driver_and_toolkit_packages():
    layouts = {row["layout"] for row in CATALOGUE["driver_packages"]}
    assert layouts == {"ubuntu", "debian"}
    for repo, row in CATALOGUE["repositories"].items():
        assert row["layout"] in layouts, repo
        assert row["layout"] in CATALOGUE["driver_selection_packages"], repo
        assert row["layout"] in CATALOGUE["toolkit_packages"], repo
        assert row["layout"] in CATALOGUE["distro_driver_packages"], repo


def _to(row):
    high = row["branches"]["to"]
    return None if high is None else int(high)


def _from(row):
    low = row["branches"]["from"]
    return None if low is None else int(low)


def test_branch_in_package_names_only_while_nvidia_suffixes_them():
    """{branch} in a package name only for rows that end at 580 (the suffixed naming)."""
    for i, row in enumerate(CATALOGUE["driver_packages"]):
        suffixed = [p for p in row["packages"] if "{branch}" in p]
        if suffixed:
            assert _to(row) is not None and _to(row) <= 580, (i, row["packages"])


def test_ubuntu_rows_up_to_580_are_all_branch_suffixed():
    rows = [
        r
        for r in CATALOGUE["driver_packages"]
        if r["layout"] == "ubuntu" and _to(r) is not None and _to(r) <= 580
    ]
    assert len(rows) == 3
    for row in rows:
        assert all("{branch}" in p for p in row["packages"]), row["packages"]
        assert row["pinning"] is None


def test_ubuntu_rows_from_590_are_unsuffixed_with_a_pinning_package():
    rows = [
        r
        for r in CATALOGUE["driver_packages"]
        if r["layout"] == "ubuntu" and _from(r) is not None and _from(r) >= 590
    ]
    assert len(rows) == 2
    for row in rows:
        assert not any("{branch}" in p for p in row["packages"]), row["packages"]
        assert row["pinning"] == "nvidia-driver-pinning-{branch}"


def test_debian_never_spells_a_branch_suffixed_nvidia_driver():
    for row in CATALOGUE["driver_packages"]:
        if row["layout"] == "debian":
            assert "nvidia-driver" in row["packages"]
            assert not any(p.startswith("nvidia-driver-{") for p in row["packages"])


def test_driver_package_rows_do_not_overlap():
    """Two rows for one layout/modules/flavour must not both match a branch."""
    seen = {}
    for row in CATALOGUE["driver_packages"]:
        key = (row["layout"], row["modules"], row["package_flavor"])
        for branch in range(400, 700):
            low, high = _from(row), _to(row)
            if (low is None or branch >= low) and (high is None or branch <= high):
                assert (key, branch) not in seen, (key, branch)
                seen[(key, branch)] = row


def test_driver_lifecycle_has_each_branch_once_newest_first():
    branches = [row["branch"] for row in CATALOGUE["driver_lifecycle"]]
    assert len(branches) == len(set(branches))
    assert [int(b) for b in branches] == sorted((int(b) for b in branches), reverse=True)


def test_driver_lifecycle_eol_values():
    for row in CATALOGUE["driver_lifecycle"]:
        eol = row["eol"]
        assert eol is None or eol == "past" or re.fullmatch(r"20\d\d-(0[1-9]|1[0-2])", eol), row
        assert row["kind"] in (None, "LTSB", "PB", "NFB"), row


def test_branch_lifecycle_is_written_once():
    """One lifecycle table; gpu_compat's DRIVER_BRANCHES is derived from it, not a copy."""
    assert "driver_branches" not in CATALOGUE
    from ansible.module_utils import gpu_compat

    kinds = {row["branch"]: row["kind"] for row in CATALOGUE["driver_lifecycle"]}
    assert gpu_compat.DRIVER_BRANCHES
    for row in gpu_compat.DRIVER_BRANCHES:
        assert kinds[row["branch"]] == row["kind"] is not None


def test_repository_cuda_bounds_are_known_toolkits():
    series = {".".join(r["cuda"].split(".")[:2]) for r in CATALOGUE["cuda_toolkits"]}
    for repo, row in CATALOGUE["repositories"].items():
        for bound in (row["cuda"]["first"], row["cuda"]["last"]):
            assert bound is None or bound in series, (repo, bound)


# ---------------------------------------------------------------------------
# torch releases and cuDNN's CUDA majors (issue 35)
# ---------------------------------------------------------------------------


def _vkey(version):
    return tuple(int(p) for p in version.split("."))


def test_torch_series_are_ordered_and_each_release_is_in_its_series():
    series = [row["series"] for row in CATALOGUE["torch_releases"]]
    assert series == sorted(series, key=_vkey)
    for row in CATALOGUE["torch_releases"]:
        for torch, vision in row["releases"].items():
            assert _vkey(torch)[:2] == _vkey(row["series"])
            assert vision is None or re.match(r"^0\.\d+\.\d+$", vision)


def test_torch_variants_name_a_known_cuda_and_a_sourced_arch_list():
    cudas = {row["cuda"][: row["cuda"].rfind(".")] for row in CATALOGUE["cuda_toolkits"]}
    for row in CATALOGUE["torch_releases"]:
        for name, wheel in row["variants"].items():
            where = f"torch {row['series']} {name}"
            assert wheel["cuda"] in cudas or _vkey(wheel["cuda"]) < (11, 0), where
            assert (wheel["arch_list"] is None) == (wheel["arch_list_source"] is None), where
            if wheel.get("nccl") is not None:
                assert re.match(r"^2\.\d+\.\d+$", wheel["nccl"]), where
        if "pypi_default" in row:
            assert not row["variants"][row["pypi_default"]]["experimental"]


def test_a_release_without_torchvision_yet_is_the_newest_series_only():
    without = [
        torch
        for row in CATALOGUE["torch_releases"]
        for torch, vision in row["releases"].items()
        if vision is None
    ]
    newest = CATALOGUE["torch_releases"][-1]["releases"]
    assert set(without) <= set(newest)


def test_cudnn_cuda_majors_rows_are_ordered_and_do_not_overlap():
    rows = CATALOGUE["cudnn_cuda_majors"]
    assert rows and rows[-1]["last"] is None
    for before, after in zip(rows, rows[1:]):
        assert before["last"] is not None
        assert _vkey(before["last"]) < _vkey(after["first"])
    for row in rows:
        assert row["cuda_majors"] == sorted(row["cuda_majors"])
        assert row["source"]
    cuda11 = [r for r in rows if 11 in r["cuda_majors"]]
    assert [r["last"] for r in cuda11] == ["9.10.2.21"]


def test_an_unknown_cudnn_of_a_variant_says_what_was_looked_for():
    for row in CATALOGUE["torch_releases"]:
        for wheel in row["variants"].values():
            if "cudnn_source" in wheel:
                assert wheel["cudnn"] is None
                assert wheel["cudnn_source"].startswith("[no source found] ")
