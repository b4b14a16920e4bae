"""Every Python package the roles pin, resolved by pip against PyPI's real index.

What is checked (enumerated by pypi_pins.project_cases() from the project's own files):

- stacks: each set of settings (the roles' defaults, each inventory group or host that sets
  a pin, each Molecule scenario host) on each OS where the preflight accepts it
  (stack_plan.check_plan, as the README's stack x OS table does), with the conda backend
  (conda_pytorch_python_version) and the venv backend (the OS's python3). Each package the
  roles would install there is a case: torch/torchvision/torchaudio as the torch_env_plan
  module (module_utils/torch_env_plan.py) decides them, jupyterlab and ipykernel as the
  jupyter role's python_package_pins_plan tasks pick them (stack_plan.python_package_pin for an
  empty pin), each for the interpreter it goes into;
- explicit pins: each pin variable a defaults file, inventory or scenario sets, on that
  file's Python, whether or not an install flag is on (conda_pytorch_torchaudio_version);
- the catalogue's claims, both ways: each python_packages release and each torch_releases
  torch and torchvision release, on each Python any OS, stack, inventory or scenario uses.
  pip's verdict (installable, or requires a different Python) must be the catalogue's.

How pip is run:

- ``pip --isolated`` with PIP_* removed from its environment and PIP_CONFIG_FILE=/dev/null:
  this machine's pip settings are all ignored: /etc/pip.conf (cert), ~/.config/pip/pip.conf
  (find-links /opt/wheels, two file:// extra indexes), PIP_FIND_LINKS=/opt/wheels and
  /etc/xdg/pip/pip.conf's constraint file (torch<=2.14.1, torchvision<=0.29.1);
  test_pip_asks_pypi_only checks in pip's own log that it searched https://pypi.org/simple
  only and that every file it chose is on files.pythonhosted.org.
- The pip is pip 26.3 in a throwaway venv made by the session fixture, not the project
  venv's 23.2.1: measured here on 2026-12-01, pip 23.2.1 downloads the 530.7 MB torch wheel
  even under ``install --dry-run`` (fast-deps or not), and no pip can use PEP 658 metadata
  because the index as this machine receives it lists no core-metadata for any file (0 of
  torch's 987 links; https://pypi.org/pypi/<name>/<version>/json answers 404 here, so the
  JSON API is no way out either). pip 26.3 with ``--use-feature=fast-deps`` reads a wheel's
  metadata through HTTP range requests (1.75 MB of torch-2.11.0-cp311's 530.6 MB) and
  downloads nothing; test_pytorch_wheels_are_read_not_downloaded proves it for every
  torch/torchvision/torchaudio resolution from urllib3's request log (only 206 responses
  for wheel files, no "Downloading ... .whl"). The small pins are really downloaded.
- PyTorch's own index (download.pytorch.org/whl/<variant>, which the roles install from,
  with +cu130/+cpu local versions) is not reachable from this machine. PyPI carries the same
  torch, torchvision and torchaudio versions with the same Python tags (its torch wheels are
  PyTorch's default CUDA build), so the base version is resolved on PyPI.
- Each target is CPython X.Y on x86_64 with every manylinux tag the OS's glibc accepts
  (pypi_pins.manylinux_platforms); a pin whose only wheels need a newer glibc than the OS
  has fails as such. A pin is resolved first under the lowest glibc it is asked for (what
  installs there installs on every newer glibc); only a failure is resolved again per OS.
- Each stack or explicit pin is resolved for real (``pip download`` or ``pip install
  --dry-run --report``). Pins for the same Python and glibc share one pip run (one version
  of a project per run); a shared run that fails is repeated one pin at a time, so each
  failure is pip's answer for that pin alone. pip's finder judges every file of the project
  whatever version is
  asked for, and logs each verdict at -vv ("Found link", "Link requires a different Python",
  "Skipping link: none of the wheel's tags ..."), so a claim reads its release's verdict from
  a resolution of the same project for the same Python; a project and Python no pin covers
  gets a scan of its own (``pip index versions -vv``). The claims are about Python: a release
  refused only for the glibc of that run counts as installable when the newest glibc of the
  catalogue's OSes would do.
- All pip runs go concurrently (8 workers) before the first case; the terminal summary
  prints how many and how long. Measured: see docs/DEVELOPMENT.md ("make registry").

Where https://pypi.org can't be reached every case FAILS, saying so; the rest of the
tests (make lint unit) need no network.
"""

from __future__ import annotations

import pypi_pins as pp
import pytest

CASES = pp.project_cases()
PYPI_FILES = "https://files.pythonhosted.org:443"  # as urllib3 logs the host


def test_pypi_is_reachable():
    """First: say plainly when this machine can't reach PyPI, instead of 400 pip errors."""
    try:
        pp.check_reachable()
    except pp.PipUnavailable as exc:
        pytest.fail(pp.needs_pypi_message(str(exc)), pytrace=False)


def test_pip_asks_pypi_only(registry):
    """Isolated from this machine's pip configuration: PyPI's simple index, PyPI's files."""
    if registry.error:
        pytest.fail(pp.needs_pypi_message(registry.error), pytrace=False)
    wrong = []
    for result in registry.runner.done:
        slug = pp.batch_slug(result.jobs)
        if "--isolated" not in result.argv:
            wrong.append(f"{slug}: pip ran without --isolated")
        wanted = sorted(f"{pp.INDEX_URL}/{job.project}/" for job in result.jobs)
        where = sorted(pp.search_locations(result.log))
        if where != wanted:
            wrong.append(f"{slug}: pip searched {where}, not {wanted}")
        if result.kind == pp.DRY_RUN:
            for item in result.resolved():
                if not item["url"].startswith(pp.FILES_HOST):
                    wrong.append(f"{slug}: pip chose {item['url']}")
        if result.kind == pp.DOWNLOAD and result.rc == 0:
            moved = pp.wheel_transfers(result.log)
            if sorted(moved["full_files"]) != result.files or moved["hosts"] != [PYPI_FILES]:
                wrong.append(f"{slug}: saved {result.files}, fetched {moved}")
    assert not wrong, "\n".join(wrong)


def test_pytorch_wheels_are_read_not_downloaded(registry):
    """torch, torchvision, torchaudio: metadata by range requests (206), never a whole wheel."""
    if registry.error:
        pytest.fail(pp.needs_pypi_message(registry.error), pytrace=False)
    runs = [r for r in registry.runner.done if r.kind == pp.DRY_RUN and r.rc == 0]
    assert runs, "no PyTorch package was resolved"
    wrong = []
    for result in runs:
        moved = pp.wheel_transfers(result.log)
        if moved["full_files"] or moved["downloading"] or not moved["partial_bytes"]:
            wrong.append(f"{pp.batch_slug(result.jobs)}: {moved}")
    assert not wrong, "pip downloaded wheels it should only have read:\n" + "\n".join(wrong)


def _explain(
    result: pp.JobResult, project: str, version: str, python: str, system: pp.BaseSystem
) -> str:
    found = pp.verdict(result.links, project, version, python, system)
    if found.installable:  # pip found the file but failed later (network, metadata)
        return f"pip failed (rc {result.rc}): {pp.pip_error(result.log)}"
    return found.detail


def _resolved_ok(result: pp.JobResult, project: str, version: str) -> bool:
    if result.rc != 0:
        return False
    chosen = result.resolved(project)
    return (
        len(chosen) == 1
        and pp.canonicalize_name(chosen[0]["name"]) == pp.canonicalize_name(project)
        and pp.norm_version(chosen[0]["version"]) == pp.norm_version(version)
    )


@pytest.mark.parametrize("case", CASES.stack_cases, ids=[c.id for c in CASES.stack_cases])
def test_stack_pin(registry, case):
    """Each package a supported stack installs is installable into the interpreter it goes into."""
    stack, pin = case.stack, case.pin
    head = f'stack "{stack.label}" ({stack.origin})'
    if pin.version == "<none>":
        pytest.fail(
            f"{head}: no catalogued {pin.project} release suits Python {pin.python} "
            f"({pin.fix(stack.var_set.name)})",
            pytrace=False,
        )
    result = registry.result(case.job)
    if not _resolved_ok(result, pin.project, pin.version):
        why = _explain(result, pin.project, pin.version, pin.python, stack.system)
        into = f"{pin.where}, Python {pin.python}"
        fix = pin.fix(stack.var_set.name)
        pytest.fail(
            f"{head}: {pin.spec} cannot be installed into {into}: {why} ({fix})",
            pytrace=False,
        )


@pytest.mark.parametrize("case", CASES.explicit, ids=[c.id for c in CASES.explicit])
def test_explicit_pin(registry, case):
    """Each pin a defaults file, inventory or scenario writes installs on that file's Python."""
    result = registry.result(case.job)
    if not _resolved_ok(result, case.project, case.version):
        why = _explain(result, case.project, case.version, case.python, case.system)
        note = (
            ""
            if case.installed
            else " (not installed with these settings: its install flag is off)"
        )
        pytest.fail(
            f'{case.var_set_name}: {case.variable}: "{case.version}"{note}: '
            f"{case.project}=={case.version} cannot be installed on Python {case.python} "
            f"({case.system.name}): {why} "
            f"(set {case.variable} to a release that has wheels for Python {case.python})",
            pytrace=False,
        )


@pytest.mark.parametrize("claim", CASES.claims, ids=[c.id for c in CASES.claims])
def test_catalogue_claim(registry, claim):
    """The catalogue's Python claims are pip's: installable where it says, and only there."""
    job = CASES.claim_job(claim)
    result = registry.result(job)
    if not any(link.project == pp.canonicalize_name(claim.project) for link in result.links):
        pytest.fail(
            f"pip listed no file of {claim.project}: {pp.pip_error(result.log)}", pytrace=False
        )
    found, agrees = CASES.claim_verdict(claim, result.links)
    if not agrees:
        said = "installs" if claim.supported else "does not install"
        pytest.fail(
            f"{claim.entry} says {claim.project} {claim.version} {said} on Python {claim.python}; "
            f"pip on {pp.INDEX_URL} (CPython {claim.python}, x86_64, glibc {job.glibc}) says: "
            f"{found.detail}. Fix that catalogue entry.",
            pytrace=False,
        )
