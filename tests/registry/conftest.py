"""tests/registry: the roles' Python pins resolved against PyPI's real index (needs the network).

One session fixture, ``registry``, does all the pip work before the first case runs: it
checks that https://pypi.org answers, installs pip PIP_VERSION into a throwaway venv, and
runs every pip job the cases need (pypi_pins.project_cases().jobs(): each pin once, pins of
one Python and glibc in one pip run) concurrently. The cases then only read the results.
Where PyPI can't be reached the fixture keeps the reason and every case FAILS with it (never
skips): this suite exists to ask PyPI.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, Optional

import pypi_pins as pp
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

_STATS: Dict[str, Any] = {}


class Registry:
    """The pip results of this session, or why there are none."""

    def __init__(self) -> None:
        self.error: Optional[str] = None
        self.reachable: Optional[str] = None
        self.results: Dict[pp.Job, pp.JobResult] = {}
        self.runner: Optional[pp.PipRunner] = None

    def result(self, job: pp.Job) -> pp.JobResult:
        if self.error:
            pytest.fail(pp.needs_pypi_message(self.error), pytrace=False)
        return self.results[job]


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Registry:
    reg = Registry()
    start = time.monotonic()
    jobs = pp.project_cases().jobs()
    try:
        reg.reachable = pp.check_reachable()
        reg.runner = pp.PipRunner(tmp_path_factory.mktemp("registry"))
        reg.runner.bootstrap()
        reg.results = reg.runner.run_all(jobs)
    except pp.PipUnavailable as exc:
        reg.error = str(exc)
    _STATS.update(
        jobs=reg.runner.runs if reg.runner else 0,
        seconds=time.monotonic() - start,
        bootstrap=reg.runner.bootstrap_seconds if reg.runner else 0.0,
        run=reg.runner.run_seconds if reg.runner else 0.0,
        workers=pp.WORKERS,
        error=reg.error,
        results=reg.results,
        done=reg.runner.done if reg.runner else [],
    )
    return reg


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _STATS:
        return
    write = terminalreporter.write_line
    for line in pp.project_cases().skipped:
        write(f"registry: not a stack the roles install: {line}")
    if _STATS["error"]:
        write(f"registry: no pip results: {_STATS['error']}")
        return
    results = _STATS["done"]
    kinds = {
        kind: sum(1 for r in results if r.kind == kind)
        for kind in (pp.SCAN, pp.DOWNLOAD, pp.DRY_RUN)
    }
    transfers = [pp.wheel_transfers(r.log) for r in results if r.kind == pp.DRY_RUN]
    partial = sum(t["partial_bytes"] for t in transfers)
    whole = sum(len(t["full_files"]) + len(t["downloading"]) for t in transfers)
    write(
        f"registry: {_STATS['jobs']} pip runs ({kinds[pp.SCAN]} index scans, "
        f"{kinds[pp.DOWNLOAD]} downloads, "
        f"{kinds[pp.DRY_RUN]} metadata-only resolutions) with {_STATS['workers']} workers in "
        f"{_STATS['run']:.1f} s, after {_STATS['bootstrap']:.1f} s installing pip "
        f"{pp.PIP_VERSION}; "
        f"PyTorch wheels: {partial / 1e6:.1f} MB read by range requests, {whole} downloaded whole"
    )
    for result in sorted(results, key=lambda r: -r.seconds)[:3]:
        write(f"registry: {result.seconds:5.1f} s  {pp.batch_slug(result.jobs)} (rc {result.rc})")
