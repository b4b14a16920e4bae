"""tests/registry/pypi_pins.py without the network: reading pip's output, building its command
lines, and enumerating the stacks, pins and catalogue claims that `make registry` resolves.

The pip log lines below have the exact form pip 26.3 prints at -vv (seen in its runs against
PyPI on 2026-12-01); the URLs are shortened.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from ansible.module_utils import gpu_compat, stack_plan

REPO_ROOT = Path(__file__).resolve().parents[2]


def _load():
    path = REPO_ROOT / "tests" / "registry" / "pypi_pins.py"
    spec = importlib.util.spec_from_file_location("kindling_pypi_pins", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


pp = _load()

F = "https://files.pythonhosted.org/packages/aa/bb"
IPYKERNEL_PY310 = f"""\
  Found link {F}/ipykernel-7.3.0-py3-none-any.whl (from https://pypi.org/simple/ipykernel/) (requires-python:>=3.10), version: 7.3.0
  Skipping link: No sources permitted for ipykernel: {F}/ipykernel-7.3.0.tar.gz (from https://pypi.org/simple/ipykernel/) (requires-python:>=3.10)
  Link requires a different Python (3.10.0 not in: '>=3.11'): {F}/ipykernel-7.4.0-py3-none-any.whl (from https://pypi.org/simple/ipykernel/) (requires-python:>=3.11)
  Skipping link: 7.4.0 Requires-Python >=3.11: {F}/ipykernel-7.4.0-py3-none-any.whl (from https://pypi.org/simple/ipykernel/) (requires-python:>=3.11)
  Skipping link: No sources permitted for ipykernel: {F}/ipykernel-7.4.0.tar.gz (from https://pypi.org/simple/ipykernel/) (requires-python:>=3.11)
  Skipping link: No sources permitted for ipykernel: {F}/ipykernel-0.9.tar.gz (from https://pypi.org/simple/ipykernel/)
"""  # noqa: E501
TORCH_PY38 = f"""\
1 location(s) to search for versions of torch:
* https://pypi.org/simple/torch/
Fetched page https://pypi.org/simple/torch/ as application/vnd.pypi.simple.v1+json
  Skipping link: none of the wheel's tags (cp310-cp310-manylinux_2_28_x86_64) are compatible (run pip debug --verbose to show compatible tags): {F}/torch-2.11.0-cp310-cp310-manylinux_2_28_x86_64.whl (from https://pypi.org/simple/torch/) (requires-python:>=3.10)
  Skipping link: none of the wheel's tags (cp311-cp311-manylinux_2_28_x86_64) are compatible (run pip debug --verbose to show compatible tags): {F}/torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl (from https://pypi.org/simple/torch/) (requires-python:>=3.10)
  Skipping link: none of the wheel's tags (cp311-none-macosx_11_0_arm64) are compatible (run pip debug --verbose to show compatible tags): {F}/torch-2.11.0-cp311-none-macosx_11_0_arm64.whl (from https://pypi.org/simple/torch/) (requires-python:>=3.10)
  Found link {F}/torch-1.12.1-cp38-cp38-manylinux1_x86_64.whl (from https://pypi.org/simple/torch/) (requires-python:>=3.7.0), version: 1.12.1
  Skipping link: none of the wheel's tags (cp38-cp38-manylinux_2_34_x86_64) are compatible (run pip debug --verbose to show compatible tags): {F}/torch-9.0.0-cp38-cp38-manylinux_2_34_x86_64.whl (from https://pypi.org/simple/torch/) (requires-python:>=3.8)
  Skipping link: none of the wheel's tags (cp39-cp39-manylinux_2_34_x86_64) are compatible (run pip debug --verbose to show compatible tags): {F}/torch-9.0.0-cp39-cp39-manylinux_2_34_x86_64.whl (from https://pypi.org/simple/torch/) (requires-python:>=3.8)
  Skipping link: yanked for reason: <none given>: {F}/torch-8.0.0-cp38-cp38-manylinux1_x86_64.whl (from https://pypi.org/simple/torch/)
"""  # noqa: E501
UBUNTU2004 = pp.BASE_SYSTEMS["ubuntu2004"]
UBUNTU2204 = pp.BASE_SYSTEMS["ubuntu2204"]


# ---------------------------------------------------------------------------
# Platform tags
# ---------------------------------------------------------------------------


def test_manylinux_platforms_cover_every_older_tag():
    """Defect guarded: pip does not expand --platform manylinux_2_28 to the older tags."""
    tags = pp.manylinux_platforms("2.31")
    assert tags[0] == "manylinux_2_31_x86_64" and tags[-1] == "manylinux1_x86_64"
    for tag in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"):
        assert tag in tags
    assert "manylinux2010_x86_64" in tags and "manylinux_2_5_x86_64" in tags
    assert "manylinux_2_32_x86_64" not in tags and "manylinux_2_34_x86_64" not in tags


@pytest.mark.parametrize(
    ("tag", "glibc"),
    [
        ("manylinux_2_28_x86_64", (2, 28)),
        ("manylinux2014_x86_64", (2, 17)),
        ("manylinux1_x86_64", (2, 5)),
        ("manylinux_2_28_aarch64", None),
        ("macosx_11_0_arm64", None),
        ("any", None),
    ],
)
def test_platform_glibc(tag, glibc):
    assert pp.platform_glibc(tag) == glibc


# ---------------------------------------------------------------------------
# pip's finder log -> one verdict per release
# ---------------------------------------------------------------------------


def test_a_release_pip_accepts_is_installable():
    links = pp.parse_finder_log(IPYKERNEL_PY310)
    found = pp.verdict(links, "ipykernel", "7.3.0", "3.10", UBUNTU2204)
    assert found.installable and found.wheel == "ipykernel-7.3.0-py3-none-any.whl"


def test_requires_python_is_pips_own_words():
    links = pp.parse_finder_log(IPYKERNEL_PY310)
    found = pp.verdict(links, "ipykernel", "7.4.0", "3.10", UBUNTU2204)
    assert found.status == pp.WRONG_PYTHON
    assert found.detail == "requires a different Python: 3.10.0 not in '>=3.11'"


def test_each_file_is_judged_once_by_its_strongest_line():
    """7.4.0's wheel appears twice (Link requires ... and Skipping link: ...): one Link."""
    links = [x for x in pp.parse_finder_log(IPYKERNEL_PY310) if x.version == "7.4.0"]
    wheels = [x for x in links if x.wheel]
    assert len(wheels) == 1 and wheels[0].outcome == pp.REQUIRES_PYTHON
    assert "not in '>=3.11'" in wheels[0].detail


def test_a_release_the_index_lacks_is_named():
    links = pp.parse_finder_log(IPYKERNEL_PY310)
    found = pp.verdict(links, "ipykernel", "9.9.9", "3.10", UBUNTU2204)
    assert found.status == pp.NOT_ON_INDEX and "https://pypi.org/simple" in found.detail


def test_a_source_only_release_has_no_wheel():
    links = pp.parse_finder_log(IPYKERNEL_PY310)
    found = pp.verdict(links, "ipykernel", "0.9", "3.10", UBUNTU2204)
    assert found.status == pp.NO_WHEEL and "ipykernel-0.9.tar.gz" in found.detail


def test_wheels_for_other_pythons_are_a_python_verdict():
    """torch's cp310+ wheels fail on their tags before Requires-Python: still the Python."""
    links = pp.parse_finder_log(TORCH_PY38)
    found = pp.verdict(links, "torch", "2.11.0", "3.8", UBUNTU2004)
    assert found.status == pp.WRONG_PYTHON
    assert "no wheel of torch 2.11.0 is for Python 3.8" in found.detail
    assert "cp310, cp311" in found.detail  # the Linux wheels' Pythons, not the macOS one's


def test_a_wheel_that_needs_a_newer_glibc_is_a_finding():
    links = pp.parse_finder_log(TORCH_PY38)
    found = pp.verdict(links, "torch", "9.0.0", "3.8", UBUNTU2004)
    assert found.status == pp.WRONG_PLATFORM and found.needs_glibc == (2, 34)
    assert "needs glibc 2.34" in found.detail and "Ubuntu 20.04 has glibc 2.31" in found.detail
    assert "torch-9.0.0-cp38-cp38-manylinux_2_34_x86_64.whl" in found.detail


def test_a_yanked_only_release_is_not_installable():
    found = pp.verdict(pp.parse_finder_log(TORCH_PY38), "torch", "8.0.0", "3.8", UBUNTU2004)
    assert found.status == pp.NO_WHEEL and "yanked" in found.detail


def test_manylinux1_wheel_is_accepted_and_parsed():
    found = pp.verdict(pp.parse_finder_log(TORCH_PY38), "torch", "1.12.1", "3.8", UBUNTU2004)
    assert found.installable and found.wheel.endswith("manylinux1_x86_64.whl")


# ---------------------------------------------------------------------------
# Other pip output
# ---------------------------------------------------------------------------


def test_wheel_transfers_tell_range_reads_from_downloads():
    log = """\
  https://pypi.org:443 "GET /simple/torch/ HTTP/1.1" 200 422843
  https://files.pythonhosted.org:443 "HEAD /p/torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl HTTP/1.1" 200 0
  https://files.pythonhosted.org:443 "GET /p/torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl HTTP/1.1" 206 8708
  https://files.pythonhosted.org:443 "GET /p/torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl HTTP/1.1" 206 1532
"""  # noqa: E501
    moved = pp.wheel_transfers(log)
    assert moved == {
        "partial_bytes": 10240,
        "full_bytes": 0,
        "full_files": [],
        "downloading": [],
        "hosts": ["https://files.pythonhosted.org:443"],
    }
    full = log + (
        '  https://files.pythonhosted.org:443 "GET /p/torchvision-0.26.0-cp311-cp311-'
        'manylinux_2_28_x86_64.whl HTTP/1.1" 200 7300000\n'
        "  Downloading torchvision-0.26.0-cp311-cp311-manylinux_2_28_x86_64.whl (7.3 MB)\n"
    )
    moved = pp.wheel_transfers(full)
    assert moved["full_bytes"] == 7300000
    assert moved["full_files"] == ["torchvision-0.26.0-cp311-cp311-manylinux_2_28_x86_64.whl"]
    assert moved["downloading"] == ["torchvision-0.26.0-cp311-cp311-manylinux_2_28_x86_64.whl"]


def test_search_locations_are_read_from_pips_log():
    assert pp.search_locations(TORCH_PY38) == ["https://pypi.org/simple/torch/"]
    two = "2 location(s) to search for versions of torch:\n* file:///opt/wheels\n* https://x/\n"
    assert pp.search_locations(two) == ["file:///opt/wheels", "https://x/"]


def test_pips_log_file_reads_like_its_console():
    logged = (
        "2026-12-01T15:50:39,764 1 location(s) to search for versions of torch:\n"
        "2026-12-01T15:50:39,764 * https://pypi.org/simple/torch/\n"
        "2026-12-01T15:50:40,229   Found link https://f/torch-1.12.1-cp38-cp38-manylinux1_x86_64.whl"
        " (from https://pypi.org/simple/torch/), version: 1.12.1\n"
    )
    text = pp.strip_log_times(logged)
    assert pp.search_locations(text) == ["https://pypi.org/simple/torch/"]
    assert [x.outcome for x in pp.parse_finder_log(text)] == [pp.CANDIDATE]


def test_pip_error_prefers_error_lines():
    log = "Collecting x\nERROR: Could not find a version\nERROR: No matching distribution\n"
    assert pp.pip_error(log) == "ERROR: Could not find a version / ERROR: No matching distribution"
    assert pp.pip_error(log + log) == pp.pip_error(log)  # the log file, then stderr
    assert pp.pip_error("a\nb\nc\nd\n") == "b / c / d"


# ---------------------------------------------------------------------------
# pip's command lines and environment
# ---------------------------------------------------------------------------


def test_pytorch_packages_are_resolved_without_download_and_the_rest_downloaded():
    assert pp.resolve_job("torch", "2.11.0", "3.12", "2.39").kind == pp.DRY_RUN
    assert pp.resolve_job("torchvision", "0.26.0", "3.12", "2.39").kind == pp.DRY_RUN
    assert pp.resolve_job("ipykernel", "7.4.0", "3.12", "2.39").kind == pp.DOWNLOAD


def test_pip_argv_is_isolated_pypi_only_and_for_the_target(tmp_path):
    job = pp.resolve_job("torch", "2.11.0", "3.10", "2.35")
    argv = pp.pip_argv(job, "/venv/bin/python", tmp_path, "/ca.pem")
    assert argv[:4] == ["/venv/bin/python", "-m", "pip", "--isolated"]
    assert argv[argv.index("--index-url") + 1] == "https://pypi.org/simple"
    assert argv[argv.index("--python-version") + 1] == "3.10"
    assert argv[argv.index("--cert") + 1] == "/ca.pem"
    platforms = [argv[i + 1] for i, a in enumerate(argv) if a == "--platform"]
    assert platforms == pp.manylinux_platforms("2.35")
    for flag in ("--dry-run", "--no-deps", "--use-feature=fast-deps", "--only-binary=:all:"):
        assert flag in argv
    assert argv[argv.index("--log") + 1] == str(tmp_path / "pip.log")  # pip's debug log
    assert "--report" in argv and argv[-1] == "torch==2.11.0"
    for forbidden in ("--find-links", "--extra-index-url", "--constraint", "-c"):
        assert forbidden not in argv
    download = pp.pip_argv(
        pp.resolve_job("ipykernel", "7.3.0", "3.10", "2.35"), "py", tmp_path, None
    )
    assert "download" in download and "--dest" in download and "--cert" not in download
    assert "--use-feature=fast-deps" not in download
    scan = pp.pip_argv(pp.scan_job("jupyterlab", "3.9", "2.39"), "py", tmp_path, None)
    assert scan[scan.index("index") : scan.index("index") + 2] == ["index", "versions"]
    assert scan[-1] == "jupyterlab"


def test_pip_runs_without_this_machines_pip_settings():
    env = pp.clean_env(
        {
            "PATH": "/bin",
            "PIP_FIND_LINKS": "/opt/wheels",
            "PIP_CERT": "/x",
            "PIP_DEFAULT_TIMEOUT": "1",
        }
    )
    assert env == {"PATH": "/bin", "PIP_CONFIG_FILE": "/dev/null"}


def test_each_pin_is_resolved_first_under_the_lowest_glibc_asked_for():
    a = pp.resolve_job("torch", "2.11.0", "3.12", "2.39")
    b = pp.resolve_job("torch", "2.11.0", "3.12", "2.35")
    c = pp.resolve_job("torch", "2.11.0", "3.10", "2.35")
    scan = pp.scan_job("torch", "3.9", "2.39")
    primary = pp.primary_jobs([a, b, c, scan])
    assert primary == {a: b, b: b, c: c, scan: scan}


def test_one_pip_run_answers_pins_of_one_target_one_version_per_project(tmp_path):
    t1 = pp.resolve_job("torch", "2.11.0", "3.11", "2.36")
    t2 = pp.resolve_job("torch", "2.13.0", "3.11", "2.36")
    tv = pp.resolve_job("torchvision", "0.26.0", "3.11", "2.36")
    other = pp.resolve_job("torch", "2.11.0", "3.12", "2.36")
    small = pp.resolve_job("ipykernel", "7.4.0", "3.11", "2.36")
    scan = pp.scan_job("torchvision", "3.9", "2.39")
    runs = sorted(pp.batches([t1, t2, tv, other, small, scan]), key=pp.batch_slug)
    assert runs == sorted([(t1, tv), (t2,), (other,), (small,), (scan,)], key=pp.batch_slug)
    argv = pp.pip_argv((t1, tv), "py", tmp_path, None)
    assert argv[-2:] == ["torch==2.11.0", "torchvision==0.26.0"]
    with pytest.raises(ValueError, match="one kind and one target"):
        pp.pip_argv((t1, other), "py", tmp_path, None)


def test_a_shared_run_answers_each_pin_with_its_own_file():
    jobs = (pp.resolve_job("ipykernel", "7.4.0", "3.11", "2.36"),)
    files = ["ipykernel-7.4.0-py3-none-any.whl", "jupyterlab-4.6.6-py3-none-any.whl"]
    result = pp.JobResult(jobs, [], 0, "", 0.0, files, None)
    assert result.resolved("jupyterlab") == [
        {"name": "jupyterlab", "version": "4.6.6", "url": "jupyterlab-4.6.6-py3-none-any.whl"}
    ]
    report = {
        "install": [
            {"metadata": {"name": "torch", "version": "2.11.0"}, "download_info": {"url": "u1"}},
            {
                "metadata": {"name": "torchvision", "version": "0.26.0"},
                "download_info": {"url": "u2"},
            },
        ]
    }
    result = pp.JobResult(jobs, [], 0, "", 0.0, [], report)
    assert [x["url"] for x in result.resolved("torchvision")] == ["u2"]
    assert len(result.resolved()) == 2


def test_no_pypi_fails_with_what_to_do():
    with pytest.raises(pp.PipUnavailable, match=r"GET http://127\.0\.0\.1:9/ failed"):
        pp.check_reachable("http://127.0.0.1:9/", timeout=5)
    text = pp.needs_pypi_message("GET https://pypi.org/simple/pip/ failed (URLError: ...)")
    assert "needs https://pypi.org" in text and "make lint unit" in text and "make registry" in text


# ---------------------------------------------------------------------------
# What is checked, from the project
# ---------------------------------------------------------------------------


def test_every_catalogue_os_has_a_base_system():
    """A new repository in the catalogue needs its python3 and glibc here (or, better, there)."""
    assert pp.missing_base_systems(stack_plan.supported_repositories()) == []
    systems = pp.base_systems()
    assert {k: (b.python3, b.glibc) for k, b in systems.items()} == {
        "debian11": ("3.9", "2.31"),
        "debian12": ("3.11", "2.36"),
        "ubuntu2004": ("3.8", "2.31"),
        "ubuntu2204": ("3.10", "2.35"),
        "ubuntu2404": ("3.12", "2.39"),
    }
    assert all(b.source for b in systems.values())


def test_the_conda_pytorch_template_says_what_the_role_installs():
    defaults = pp.role_defaults()
    wanted = pp.conda_pytorch_wanted(defaults)
    assert [(w.project, w.version, w.local, w.variable) for w in wanted] == [
        ("torch", "2.14.1", "cu130", "conda_pytorch_version"),
        ("torchvision", "0.29.1", "cu130", "conda_pytorch_torchvision_version"),
    ]
    audio = pp.conda_pytorch_wanted({**defaults, "conda_pytorch_install_torchaudio": True})
    assert ("torchaudio", "2.11.0", "conda_pytorch_torchaudio_version") in [
        (w.project, w.version, w.variable) for w in audio
    ]
    assert pp.conda_pytorch_wanted({**defaults, "conda_pytorch_install_method": "conda"}) == []


def test_the_jupyter_pins_come_from_its_python_package_pins_tasks():
    tasks = {(t.role, t.project, t.variable) for t in pp.python_package_pin_tasks()}
    assert ("jupyter", "jupyterlab", "jupyter_lab_version") in tasks
    assert ("jupyter", "ipykernel", "jupyter_ipykernel_version") in tasks


def test_scenarios_are_read_through_their_playbooks():
    assert {"conda_pytorch", "jupyter"} <= pp.playbook_roles(
        REPO_ROOT / "molecule/default/converge.yml"
    )
    assert not pp.playbook_roles(REPO_ROOT / "molecule/nouveau/converge.yml") & pp.PY_ROLES


def _stacks():
    return pp.project_cases().stacks


def test_the_venv_backend_on_ubuntu_2204_gets_ipykernel_for_python_310():
    """Defect guarded: ipykernel 7.4.0 (Requires-Python >=3.11) pinned into Python 3.10."""
    found = [
        s
        for s in _stacks()
        if s.system.key == "ubuntu2204" and s.backend == "venv" and "defaults" in s.var_set.short
    ]
    assert len(found) == 1 and found[0].env_python == "3.10"
    pins = {p.project: p for p in found[0].pins}
    assert pins["ipykernel"].version == "7.3.0" and pins["ipykernel"].derived
    assert pins["torch"].version == "2.14.1" and pins["torch"].local == "cu130"


def test_only_stacks_the_preflight_accepts_are_checked():
    cases = pp.project_cases()
    seed = [s for s in cases.stacks if "seed_stack" in s.var_set.short]
    assert seed and {s.system.key for s in seed} == {"ubuntu2004"}
    assert {s.env_python for s in seed} == {"3.8", "3.10"}
    assert any("seed_stack" in line and "Debian 12" in line for line in cases.skipped)
    assert all(not s.problems for s in cases.stacks)


def test_identical_settings_are_one_stack():
    shorts = {s.var_set.short for s in _stacks()}
    # The defaults are current_stack's (issue 35's default stack), and so is the catalogue's
    # newest torch with a torchvision while that is the default's torch.
    assert any(s.startswith("defaults+gpu/current_stack") for s in shorts), shorts


def test_scenario_hosts_run_on_their_images_os():
    for stack in _stacks():
        if stack.var_set.short.startswith("molecule/"):
            assert stack.var_set.systems == (stack.system.key,)
            assert stack.env_python == stack.system.python3  # venv backend or stand-in venv


def test_an_explicit_pin_is_checked_even_with_its_install_flag_off():
    explicit = {(c.var_set_name, c.variable): c for c in pp.project_cases().explicit}
    audio = explicit[("defaults", "conda_pytorch_torchaudio_version")]
    assert audio.version == "2.11.0" and audio.python == "3.12" and not audio.installed
    seed = explicit[("gpu/seed_stack", "conda_pytorch_version")]
    assert seed.version == "1.12.1" and seed.python == "3.10" and seed.system.key == "ubuntu2004"


def test_the_pythons_are_every_os_stack_and_setting():
    pythons = pp.project_cases().pythons
    assert {"3.8", "3.9", "3.10", "3.11", "3.12"} <= set(pythons)
    assert pythons == sorted(pythons, key=lambda v: tuple(int(x) for x in v.split(".")))


def test_claims_are_every_catalogued_release_on_every_python():
    cases = pp.project_cases()
    releases = sum(
        len(rows) for name, rows in stack_plan.PYTHON_PACKAGES.items() if name != "source"
    )
    torch = sum(len(row["releases"]) for row in gpu_compat.TORCH_RELEASES)
    vision = sum(
        1 for row in gpu_compat.TORCH_RELEASES for v in row["releases"].values() if v is not None
    )
    assert len(cases.claims) == (releases + torch + vision) * len(cases.pythons)
    claim = next(c for c in cases.claims if c.id == "ipykernel==7.4.0-py3.10")
    assert not claim.supported and "python_packages.ipykernel 7.4.0" in claim.entry


def test_catalogue_claims_from_given_tables():
    packages = {"pkg": [{"version": "2.0", "requires_python": ">=3.10"}], "source": "x"}
    torch = [
        {
            "series": "9.9",
            "releases": {"9.9.0": "0.99.0"},
            "python_min": "3.9",
            "python_max": "3.10",
            "python_experimental": [],
        }
    ]
    claims = pp.catalogue_claims(
        ["3.8", "3.10"],
        packages,
        torch,
        lambda name, version, py: py == "3.10",
        lambda version, py: py != "3.8",
    )
    assert [(c.project, c.version, c.python, c.supported) for c in claims] == [
        ("pkg", "2.0", "3.8", False),
        ("pkg", "2.0", "3.10", True),
        ("torch", "9.9.0", "3.8", False),
        ("torchvision", "0.99.0", "3.8", False),
        ("torch", "9.9.0", "3.10", True),
        ("torchvision", "0.99.0", "3.10", True),
    ]
    assert "torch_releases series '9.9'" in claims[-1].entry and "torch 9.9.0" in claims[-1].entry


def test_claims_no_pin_answers_get_a_scan_the_others_reuse_a_resolution():
    cases = pp.project_cases()
    for claim in cases.claims:
        job = cases.claim_job(claim)
        assert job.project == claim.project and job.python == claim.python
    jobs = cases.jobs()
    assert len({j for j in jobs if j.kind == pp.SCAN}) < len(
        {(c.project, c.python) for c in cases.claims}
    )
