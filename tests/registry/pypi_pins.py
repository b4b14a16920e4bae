"""Every Python pin of the roles, and what pip says about it on PyPI's real index.

The logic behind tests/registry/test_python_pins.py, in three parts:

1. What to check, read from the project (never a list written here):
   - the pins: the packages the conda_pytorch role installs, as its preflight's
     ``torch_env_plan`` task decides them (module_utils/torch_env_plan.py's ``wanted``: torch,
     torchvision, torchaudio with their ``*_version`` variables and install flags), and every
     ``python_package_pins_plan`` task of a role (jupyter: jupyterlab, ipykernel), whose empty pin
     is derived from the vendor catalogue with ``stack_plan.python_package_pin``;
   - the settings: the roles' defaults, each inventory's group and host variables and each
     Molecule scenario's inventory, merged over the defaults;
   - the catalogue's claims: ``python_packages`` (``requires_python``) and ``torch_releases``
     (torch and torchvision per release, ``python_min``/``python_max``/``python_experimental``
     through ``gpu_compat.python_in_range``);
   - the operating systems: the catalogue's repositories, each with the python3 and glibc of
     its base system (BASE_SYSTEMS below: the catalogue has no such field yet), and Debian 11.
2. How pip is run: argv builders that isolate pip from this machine's configuration.
3. What pip's output means: pip's finder logs, at -vv, its verdict on every file of a project
   for the target interpreter; ``parse_finder_log`` and ``verdict`` turn that into one answer
   per release (installable, requires a different Python, needs a newer glibc, not there).

Everything here except ``PipRunner`` works without the network (tests/unit/test_registry_pins.py).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import importlib.util
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import ansible.module_utils
import jinja2
import yaml
from packaging.tags import compatible_tags, cpython_tags
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT / "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(REPO_ROOT / "module_utils"))

from ansible.module_utils import default_stack, gpu_compat, stack_plan, torch_env_plan  # noqa: E402

# ---------------------------------------------------------------------------
# PyPI and pip
# ---------------------------------------------------------------------------

INDEX_URL = "https://pypi.org/simple"
REACHABILITY_URL = "https://pypi.org/simple/pip/"
FILES_HOST = "https://files.pythonhosted.org/"
# This machine reaches PyPI through an intercepting TLS proxy that the system bundle trusts
# (shared/notes/TESTBED.md); pip --isolated ignores PIP_CERT, so the bundle is passed as --cert.
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
ARCH = "x86_64"
# The pip that resolves: the project venv's pip 23.2.1 downloads a wheel even under
# `install --dry-run`, fast-deps or not (torch 2.11.0: 530.7 MB, measured 2026-12-01), and
# the index as this machine receives it advertises no PEP 658 metadata (no core-metadata
# attribute on any of torch's files), so no pip can skip the download through PEP 658.
# pip 26.3 with --use-feature=fast-deps reads the wheel's metadata by HTTP range requests
# instead (1.75 MB of torch-2.11.0-cp311's 530.6 MB) and downloads nothing. It is
# installed into a throwaway venv, checked against this sha256 from PyPI's index.
PIP_VERSION = "26.3"
PIP_WHEEL_SHA256 = "f3b60b20ffaadd4415ed7957212a38ac63fa4c5fa375bd0f4a797777940fad13"
# The PyTorch family is resolved without downloading the wheel (torch is ~0.5-1 GB); the
# other pins are small and are really downloaded (pip download).
METADATA_ONLY = frozenset({"torch", "torchvision", "torchaudio"})
WORKERS = 8

# ---------------------------------------------------------------------------
# The base systems: python3 and glibc of each OS the catalogue knows
# ---------------------------------------------------------------------------

# manylinux policy per distribution: mayeut/pep600_compliance README.rst @00ac9114,
# "Distro compatibility" (manylinux_2_31: debian-11, ubuntu-20.04; manylinux_2_35:
# ubuntu-22.04; manylinux_2_36: debian-12; manylinux_2_39: ubuntu-24.04).
PEP600 = "mayeut/pep600_compliance README.rst @00ac9114 'Distro compatibility'"


@dataclasses.dataclass(frozen=True)
class BaseSystem:
    key: str  # the catalogue's repository id ("ubuntu2204"), or "debian11"
    name: str  # "Ubuntu 22.04"
    python3: str  # the distribution's python3, major.minor
    glibc: str  # its glibc, major.minor
    source: str

    def platforms(self) -> List[str]:
        return manylinux_platforms(self.glibc)


# The catalogue (data/vendor_catalogue.yml `repositories`) names the OSes but not their
# python3 or glibc; these rows belong there (one `base_system: {python3, glibc, source}` per
# repository) and are kept here until then. test_every_catalogue_os_has_a_base_system fails
# when the catalogue gains an OS without a row here.
BASE_SYSTEMS: Dict[str, BaseSystem] = {
    "ubuntu2004": BaseSystem(
        "ubuntu2004",
        "Ubuntu 20.04",
        "3.8",
        "2.31",
        "docs/SEED_CORRECTIONS.md row 16 ('Ubuntu 20.04 with Python 3.8'); glibc: " + PEP600,
    ),
    "ubuntu2204": BaseSystem(
        "ubuntu2204",
        "Ubuntu 22.04",
        "3.10",
        "2.35",
        "python3-defaults 3.10.6-1~22.04 and glibc 2.35-0ubuntu3.1, the sources of an Ubuntu 22.04 "
        "image (IntelLabs/IntelQuantumSDK-Docker-Dependencies src/ @b936891a); glibc: " + PEP600,
    ),
    "ubuntu2404": BaseSystem(
        "ubuntu2404",
        "Ubuntu 24.04",
        "3.12",
        "2.39",
        "tests/fixtures/captures/h200/torch-collect-env.txt (Ubuntu 24.04.3 LTS, Python 3.12.3, "
        "glibc-2.39); glibc: " + PEP600,
    ),
    "debian12": BaseSystem(
        "debian12",
        "Debian 12",
        "3.11",
        "2.36",
        "shared/notes/TESTBED.md ('Debian 12's python3 is 3.11'); glibc: " + PEP600,
    ),
}
# Debian 11 is not a catalogue OS; it is the test image for older Pythons
# (molecule/_shared/image/build-image.sh, kindling-debian11-systemd). Its python3 is 3.9:
# shared/notes/TESTBED.md records Debian bullseye's python3.9 3.9.2-1; glibc 2.31: PEP600.
DEBIAN11 = BaseSystem(
    "debian11",
    "Debian 11",
    "3.9",
    "2.31",
    "shared/notes/TESTBED.md (bullseye, python3.9 3.9.2-1); glibc: " + PEP600,
)


def base_systems() -> Dict[str, BaseSystem]:
    """Every OS a stack or test image may be: the catalogue's, then Debian 11."""
    out = {key: BASE_SYSTEMS[key] for key in stack_plan.supported_repositories()}
    out[DEBIAN11.key] = DEBIAN11
    return out


def missing_base_systems(repositories: Iterable[str]) -> List[str]:
    return sorted(set(repositories) - set(BASE_SYSTEMS))


# ---------------------------------------------------------------------------
# Platform tags
# ---------------------------------------------------------------------------

_LEGACY = {(2, 17): "manylinux2014", (2, 12): "manylinux2010", (2, 5): "manylinux1"}
_LEGACY_GLIBC = {name: glibc for glibc, name in _LEGACY.items()}
_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_(\w+)$")


def _mm(version: str) -> Tuple[int, int]:
    parts = [int(x) for x in str(version).split(".")[:2]]
    return parts[0], parts[1] if len(parts) > 1 else 0


def manylinux_platforms(glibc: str, arch: str = ARCH) -> List[str]:
    """pip --platform values for a glibc: manylinux_2_<minor> down to 2_5, with the legacy names.

    pip does not expand ``--platform manylinux_2_28_x86_64`` to older tags (it does so only
    for manylinux2014/2010), so every tag a host with this glibc accepts is passed.
    """
    major, minor = _mm(glibc)
    out = []
    for m in range(minor, 4, -1):
        out.append(f"manylinux_{major}_{m}_{arch}")
        if (major, m) in _LEGACY:
            out.append(f"{_LEGACY[(major, m)]}_{arch}")
    return out


def platform_glibc(platform: str, arch: str = ARCH) -> Optional[Tuple[int, int]]:
    """The glibc a manylinux platform tag needs ((2, 28)); None for any other platform."""
    match = _MANYLINUX.match(platform)
    if match and match.group(3) == arch:
        return int(match.group(1)), int(match.group(2))
    name, _, rest = platform.partition("_")
    if rest == arch and name in _LEGACY_GLIBC:
        return _LEGACY_GLIBC[name]
    return None


def target_tags(python: str, platforms: Sequence[str]) -> frozenset:
    """The wheel tags CPython ``python`` accepts on ``platforms`` (what pip's --python-version,
    --implementation cp and --platform give)."""
    ver = _mm(python)
    nodot = f"{ver[0]}{ver[1]}"
    tags = set(cpython_tags(ver, abis=[f"cp{nodot}"], platforms=list(platforms)))
    tags |= set(compatible_tags(ver, interpreter=f"cp{nodot}", platforms=list(platforms)))
    return frozenset(tags)


# ---------------------------------------------------------------------------
# pip's finder log
# ---------------------------------------------------------------------------

CANDIDATE = "candidate"
REQUIRES_PYTHON = "requires-python"
TAGS = "tags"
SKIPPED = "skipped"
_RANK = {CANDIDATE: 0, REQUIRES_PYTHON: 1, TAGS: 2, SKIPPED: 3}

_FOUND = re.compile(r"^\s*Found link (?P<url>\S+).*, version: (?P<version>\S+)\s*$")
_REQ_PY = re.compile(
    r"^\s*Link requires a different Python \((?P<py>[0-9.]+) not in: '(?P<spec>[^']*)'\): "
    r"(?P<url>\S+)"
)
_SKIP = re.compile(r"^\s*Skipping link: (?P<reason>.+?): (?P<url>(?:https?|file)://\S+)")
_SKIP_REQ_PY = re.compile(r"^\S+ Requires-Python (?P<spec>.+)$")


@dataclasses.dataclass(frozen=True)
class Link:
    """One file of a project on the index and pip's verdict on it for the target."""

    filename: str
    project: str  # canonical name
    version: str  # normalized
    wheel: bool
    tags: frozenset
    outcome: str  # CANDIDATE, REQUIRES_PYTHON, TAGS or SKIPPED
    detail: str  # pip's words


def _filename(url: str) -> str:
    path = urllib.parse.urlsplit(url).path
    return urllib.parse.unquote(path.rsplit("/", 1)[-1])


def parse_filename(filename: str) -> Optional[Tuple[str, str, bool, frozenset]]:
    """(canonical project, version, is_wheel, tags) of a distribution file name, or None."""
    try:
        if filename.endswith(".whl"):
            name, version, _build, tags = parse_wheel_filename(filename)
            return str(name), str(version), True, frozenset(tags)
        name, version = parse_sdist_filename(filename)
        return str(name), str(version), False, frozenset()
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None


def parse_finder_log(text: str) -> List[Link]:
    """pip -vv's verdict on every file it saw: accepted, wrong Requires-Python, wrong tags, other.

    pip checks a wheel's tags before its Requires-Python, so a wheel built for other Pythons
    is reported as a tag mismatch; a py3-none-any wheel as a Requires-Python mismatch.
    """
    best: Dict[str, Link] = {}
    for line in text.splitlines():
        outcome = detail = url = None
        m = _FOUND.match(line)
        if m:
            outcome, detail, url = CANDIDATE, "accepted", m.group("url")
        elif _REQ_PY.match(line):
            m = _REQ_PY.match(line)
            outcome, url = REQUIRES_PYTHON, m.group("url")
            detail = f"requires a different Python: {m.group('py')} not in '{m.group('spec')}'"
        elif _SKIP.match(line):
            m = _SKIP.match(line)
            reason, url = m.group("reason"), m.group("url")
            if reason.startswith("none of the wheel's tags"):
                outcome, detail = TAGS, reason
            elif _SKIP_REQ_PY.match(reason):
                spec = _SKIP_REQ_PY.match(reason).group("spec")
                outcome, detail = (
                    REQUIRES_PYTHON,
                    f"requires a different Python: Requires-Python {spec}",
                )
            else:
                outcome, detail = SKIPPED, reason
        if outcome is None:
            continue
        filename = _filename(url)
        parsed = parse_filename(filename)
        if parsed is None:
            continue
        project, version, wheel, tags = parsed
        link = Link(filename, project, version, wheel, tags, outcome, detail)
        old = best.get(filename)
        if old is None or _RANK[outcome] < _RANK[old.outcome]:
            best[filename] = link
    return list(best.values())


# ---------------------------------------------------------------------------
# One verdict per release
# ---------------------------------------------------------------------------

INSTALLABLE = "installable"
WRONG_PYTHON = "requires a different Python"
WRONG_PLATFORM = "needs a newer glibc"
NO_WHEEL = "no usable wheel"
NOT_ON_INDEX = "not on the index"


@dataclasses.dataclass(frozen=True)
class Verdict:
    status: str
    detail: str
    wheel: Optional[str] = None
    needs_glibc: Optional[Tuple[int, int]] = None  # WRONG_PLATFORM: the glibc that would do

    @property
    def installable(self) -> bool:
        return self.status == INSTALLABLE

    def __str__(self) -> str:
        return self.detail


def norm_version(version: str) -> str:
    try:
        return str(Version(version))
    except InvalidVersion:
        return version


def verdict(
    links: Sequence[Link], project: str, version: str, python: str, system: BaseSystem
) -> Verdict:
    """pip's answer for ``project==version`` on CPython ``python`` under ``system``'s glibc."""
    name, ver = str(canonicalize_name(project)), norm_version(version)
    mine = [link for link in links if link.project == name and link.version == ver]
    wheels = [link for link in mine if link.wheel]
    accepted = sorted(link.filename for link in wheels if link.outcome == CANDIDATE)
    if accepted:
        return Verdict(INSTALLABLE, f"installable: pip accepts {accepted[0]}", accepted[0])
    if not mine:
        return Verdict(
            NOT_ON_INDEX, f"{project} {version} is not on {INDEX_URL} (no file of that version)"
        )
    if not wheels:
        files = ", ".join(sorted(link.filename for link in mine))
        return Verdict(NO_WHEEL, f"{project} {version} has no wheel on {INDEX_URL}, only {files}")
    # Wheels this Python could use on a newer glibc: the OS is too old for them.
    any_glibc = target_tags(python, manylinux_platforms("2.99"))
    newer = []
    for link in wheels:
        if link.outcome == TAGS and link.tags & any_glibc:
            needs = [g for g in (platform_glibc(t.platform) for t in link.tags & any_glibc) if g]
            if needs:
                newer.append((min(needs), link))
    if newer:
        (major, minor), link = min(newer, key=lambda item: item[0])
        return Verdict(
            WRONG_PLATFORM,
            f"needs glibc {major}.{minor} or newer: its only wheel for Python {python} is "
            f"{link.filename}, and {system.name} has glibc {system.glibc} (pip: {link.detail})",
            needs_glibc=(major, minor),
        )
    wrong_py = sorted(
        (link for link in wheels if link.outcome == REQUIRES_PYTHON), key=lambda x: x.filename
    )
    if wrong_py:
        return Verdict(WRONG_PYTHON, wrong_py[0].detail)
    tagged = sorted((link for link in wheels if link.outcome == TAGS), key=lambda x: x.filename)
    if tagged:
        linux = [link for link in tagged if any(platform_glibc(t.platform) for t in link.tags)]
        pythons = sorted({t.interpreter for link in (linux or tagged) for t in link.tags})
        example = (linux or tagged)[0]
        return Verdict(
            WRONG_PYTHON,
            f"requires a different Python: no wheel of {project} {version} is for Python {python} "
            f"(its Linux wheels are for {', '.join(pythons)}; pip: {example.detail})",
        )
    reasons = sorted({link.detail for link in wheels})
    return Verdict(
        NO_WHEEL, f"pip skipped every wheel of {project} {version}: {'; '.join(reasons)}"
    )


# ---------------------------------------------------------------------------
# pip's other output
# ---------------------------------------------------------------------------

_HTTP = re.compile(
    r'(?P<host>https?://[^\s"]+) "(?P<method>GET|HEAD) (?P<path>\S+) HTTP/[0-9.]+" '
    r"(?P<status>\d{3}) (?P<length>\d+|None)"
)
_DOWNLOADING = re.compile(r"^\s*Downloading (?P<what>\S+\.whl)\b.*$", re.M)


def wheel_transfers(log: str) -> Dict[str, Any]:
    """What pip fetched of wheel files: bytes by partial (206) and full (200) GETs.

    urllib3 logs every request at -vv (``"GET /packages/.../x.whl HTTP/1.1" 206 8708``); a full
    download of a wheel is a 200 GET of it, a metadata read through fast-deps only 206s.
    """
    partial = full = 0
    full_files = []
    hosts = set()
    for m in _HTTP.finditer(log):
        if m.group("method") != "GET" or not m.group("path").split("?")[0].endswith(".whl"):
            continue
        hosts.add(m.group("host"))
        length = int(m.group("length")) if m.group("length").isdigit() else 0
        if m.group("status") == "206":
            partial += length
        elif m.group("status") == "200":
            full += length
            full_files.append(_filename(m.group("path")))
    downloading = [m.group("what") for m in _DOWNLOADING.finditer(log)]
    return {
        "partial_bytes": partial,
        "full_bytes": full,
        "full_files": full_files,
        "downloading": downloading,
        "hosts": sorted(hosts),
    }


_LOCATIONS = re.compile(r"^\s*\d+ location\(s\) to search for versions of \S+:\s*$")


def search_locations(log: str) -> List[str]:
    """The places pip looked for distributions ("* https://pypi.org/simple/torch/" lines)."""
    out = []
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if _LOCATIONS.match(line):
            for follow in lines[i + 1 :]:
                if not follow.startswith("* "):
                    break
                out.append(follow[2:].strip())
    return out


_LOG_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d+ ", re.M)


def strip_log_times(text: str) -> str:
    """pip's --log file as pip -vv would print it: without the timestamp of each line."""
    return _LOG_TIME.sub("", text)


def pip_error(log: str) -> str:
    """pip's ERROR lines, or its last lines when it printed none."""
    # dict.fromkeys: the log file and stderr both hold pip's errors; each is said once
    errors = list(dict.fromkeys(x.strip() for x in log.splitlines() if x.startswith("ERROR:")))
    if errors:
        return " / ".join(errors)
    tail = [line.strip() for line in log.splitlines() if line.strip()][-3:]
    return " / ".join(tail)


# ---------------------------------------------------------------------------
# pip command lines
# ---------------------------------------------------------------------------

SCAN, DOWNLOAD, DRY_RUN = "scan", "download", "dry-run"


@dataclasses.dataclass(frozen=True)
class Job:
    """One pip run: a scan of a project's files, or the resolution of one pin, for a target."""

    kind: str  # SCAN, DOWNLOAD or DRY_RUN
    project: str
    version: Optional[str]
    python: str
    glibc: str

    @property
    def slug(self) -> str:
        what = self.project + (f"-{self.version}" if self.version else "")
        return re.sub(
            r"[^A-Za-z0-9_.-]", "_", f"{self.kind}-{what}-py{self.python}-glibc{self.glibc}"
        )


def resolve_job(project: str, version: str, python: str, glibc: str) -> Job:
    kind = DRY_RUN if canonicalize_name(project) in METADATA_ONLY else DOWNLOAD
    return Job(kind, str(canonicalize_name(project)), version, python, glibc)


def scan_job(project: str, python: str, glibc: str) -> Job:
    return Job(SCAN, str(canonicalize_name(project)), None, python, glibc)


def batches(jobs: Iterable[Job]) -> List[Tuple[Job, ...]]:
    """Jobs that one pip run can answer together: same kind, Python and glibc, one version
    of a project each (pip refuses two versions of one project in a run). A scan runs alone."""
    groups: Dict[Tuple[str, str, str], List[List[Job]]] = {}
    out: List[Tuple[Job, ...]] = []
    for job in sorted(
        set(jobs), key=lambda j: (j.kind, j.python, j.glibc, j.project, j.version or "")
    ):
        if job.kind == SCAN:
            out.append((job,))
            continue
        runs = groups.setdefault((job.kind, job.python, job.glibc), [])
        for run in runs:
            if all(other.project != job.project for other in run):
                run.append(job)
                break
        else:
            runs.append([job])
    out.extend(tuple(run) for runs in groups.values() for run in runs)
    return out


def batch_slug(batch: Sequence[Job]) -> str:
    if len(batch) == 1:
        return batch[0].slug
    first = batch[0]
    what = "+".join(f"{j.project}-{j.version}" for j in batch)
    return re.sub(
        r"[^A-Za-z0-9_.+-]", "_", f"{first.kind}-{what}-py{first.python}-glibc{first.glibc}"
    )


def pip_argv(jobs: Any, python_exe: str, workdir: Path, cert: Optional[str]) -> List[str]:
    """The pip command line of a job, or of a batch of jobs of one kind and target: isolated,
    PyPI only, wheels only, for the target's Python and glibc."""
    batch: Tuple[Job, ...] = (jobs,) if isinstance(jobs, Job) else tuple(jobs)
    job = batch[0]
    if any((j.kind, j.python, j.glibc) != (job.kind, job.python, job.glibc) for j in batch):
        raise ValueError(f"one pip run has one kind and one target: {batch}")
    # pip's whole debug log (every file's verdict, every HTTP request) goes to a file: the
    # same lines as -vv, without rendering two thousand of them on a console.
    common = ["--isolated", "--disable-pip-version-check", "--no-cache-dir", "--no-input", "-q"]
    common += ["--log", str(workdir / "pip.log")]
    target = ["--only-binary=:all:", "--implementation", "cp", "--python-version", job.python]
    for platform in manylinux_platforms(job.glibc):
        target += ["--platform", platform]
    index = ["--index-url", INDEX_URL, "--retries", "3", "--timeout", "60"]
    if cert:
        index += ["--cert", cert]
    head = [python_exe, "-m", "pip", *common]
    if job.kind == SCAN:
        return [*head, "index", "versions", *target, *index, job.project]
    specs = [f"{j.project}=={j.version}" for j in batch]
    if job.kind == DOWNLOAD:
        dest = workdir / "dest"
        return [*head, "download", "--no-deps", "--dest", str(dest), *target, *index, *specs]
    return [
        *head,
        "install",
        "--dry-run",
        "--ignore-installed",
        "--no-deps",
        "--use-feature=fast-deps",
        "--target",
        str(workdir / "target"),
        "--report",
        str(workdir / "report.json"),
        *target,
        *index,
        *specs,
    ]


def clean_env(environ: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment for pip: none of this machine's PIP_* settings (find-links, certs)."""
    env = {
        k: v
        for k, v in (environ if environ is not None else os.environ).items()
        if not k.startswith("PIP_")
    }
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


# ---------------------------------------------------------------------------
# Running pip
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class JobResult:
    """One pip run and what it left: its log, the report or the saved files."""

    jobs: Tuple[Job, ...]
    argv: List[str]
    rc: int
    log: str
    seconds: float
    files: List[str]
    report: Optional[Dict[str, Any]]

    @property
    def job(self) -> Job:
        return self.jobs[0]

    @property
    def kind(self) -> str:
        return self.jobs[0].kind

    @functools.cached_property
    def links(self) -> List[Link]:
        return parse_finder_log(self.log)

    def resolved(self, project: Optional[str] = None) -> List[Dict[str, str]]:
        """What pip chose (of ``project``): name, version, file (the report or the saved file)."""
        if self.report is not None:
            out = [
                {
                    "name": item["metadata"]["name"],
                    "version": item["metadata"]["version"],
                    "url": item["download_info"]["url"],
                }
                for item in self.report.get("install", [])
            ]
        else:
            out = []
            for name in self.files:  # a download: what the saved file's name says
                parsed = parse_filename(name)
                found, version = (parsed[0], parsed[1]) if parsed else (name, "")
                out.append({"name": found, "version": version, "url": name})
        if project is None:
            return out
        return [x for x in out if canonicalize_name(x["name"]) == canonicalize_name(project)]


class PipUnavailable(RuntimeError):
    pass


def needs_pypi_message(error: str) -> str:
    return (
        f"This test needs https://pypi.org (PyPI's real index) and could not use it: {error}. "
        "Run `make registry` where PyPI is reachable. Everything else runs without the network: "
        "`make lint unit` (or .venv/bin/pytest tests/unit)."
    )


def ca_bundle() -> Optional[str]:
    return CA_BUNDLE if os.path.exists(CA_BUNDLE) else None


def check_reachable(url: str = REACHABILITY_URL, timeout: float = 30) -> str:
    """GET ``url``; returns a short description, raises PipUnavailable with the reason."""
    context = ssl.create_default_context(cafile=ca_bundle())
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as response:
            body = response.read()
            return f"{url}: HTTP {response.status}, {len(body)} bytes"
    except Exception as exc:  # any failure means the same: no PyPI here
        raise PipUnavailable(f"GET {url} failed ({type(exc).__name__}: {exc})") from exc


class PipRunner:
    """pip PIP_VERSION in a throwaway venv, and the jobs run concurrently with it."""

    def __init__(self, workdir: Path, base_python: str = sys.executable, workers: int = WORKERS):
        self.workdir = workdir
        self.base_python = base_python
        self.workers = workers
        self.cert = ca_bundle()
        self.python: Optional[str] = None
        self.bootstrap_seconds = 0.0
        self.run_seconds = 0.0
        self.runs = 0
        self.done: List[JobResult] = []

    def _run(self, argv: List[str], timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(
            argv, capture_output=True, text=True, env=clean_env(), timeout=timeout, check=False
        )

    def bootstrap(self) -> str:
        """A new venv with pip PIP_VERSION from PyPI (hash-checked); returns its python.

        The project venv's pip installs the wheel into the new venv's site-packages: it reads
        its own compiled modules and byte-compiles the new pip once, which costs half of what
        running pip 26.3 from its wheel to install itself does (2.4 against 4.5 s of CPU here).
        """
        start = time.monotonic()
        venv = self.workdir / "pip-venv"
        proc = self._run([self.base_python, "-m", "venv", "--without-pip", str(venv)])
        if proc.returncode != 0:
            raise RuntimeError(f"python -m venv failed: {proc.stderr}")
        python = str(venv / "bin" / "python")
        where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        site = self._run([python, "-c", where]).stdout.strip()
        req = self.workdir / "pip-requirement.txt"
        req.write_text(f"pip=={PIP_VERSION} --hash=sha256:{PIP_WHEEL_SHA256}\n", encoding="utf-8")
        argv = [self.base_python, "-m", "pip", "--isolated", "--disable-pip-version-check"]
        argv += ["install", "-q", "--no-deps", "--only-binary=:all:", "--require-hashes"]
        argv += ["-r", str(req), "--target", site, "--index-url", INDEX_URL]
        argv += ["--cert", self.cert] if self.cert else []
        proc = self._run(argv)
        if proc.returncode != 0:
            raise PipUnavailable(
                f"pip {PIP_VERSION} could not be installed from {INDEX_URL}: "
                f"{pip_error(proc.stdout + proc.stderr)}"
            )
        version = self._run([python, "-m", "pip", "--version"]).stdout
        if not version.startswith(f"pip {PIP_VERSION} "):
            raise RuntimeError(f"{python} -m pip is {version!r}, not pip {PIP_VERSION}")
        self.python = python
        self.bootstrap_seconds = time.monotonic() - start
        return python

    def run_batch(self, batch: Tuple[Job, ...]) -> JobResult:
        assert self.python, "bootstrap() first"
        workdir = self.workdir / "jobs" / batch_slug(batch)
        if workdir.exists():
            shutil.rmtree(workdir)
        workdir.mkdir(parents=True)
        argv = pip_argv(batch, self.python, workdir, self.cert)
        start = time.monotonic()
        try:
            proc = self._run(argv, timeout=300)
            rc, out = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc, out = 124, f"{exc.stdout or ''}{exc.stderr or ''}\nERROR: pip ran past 300 s"
        log_path = workdir / "pip.log"
        log = log_path.read_text(encoding="utf-8", errors="replace") if log_path.exists() else ""
        log = strip_log_times(log) + out
        seconds = time.monotonic() - start
        dest = workdir / "dest"
        files = sorted(p.name for p in dest.iterdir()) if dest.is_dir() else []
        report_path = workdir / "report.json"
        report = (
            json.loads(report_path.read_text(encoding="utf-8")) if report_path.exists() else None
        )
        if dest.is_dir():  # the wheels were only needed to prove the download; keep the names
            shutil.rmtree(dest)
        return JobResult(batch, argv, rc, log, seconds, files, report)

    def _run_many(self, runs: Sequence[Tuple[Job, ...]]) -> List[JobResult]:
        # The PyTorch family first: its index pages are the largest, its runs the longest.
        order = sorted(
            runs, key=lambda b: (all(j.project not in METADATA_ONLY for j in b), -len(b))
        )
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.workers) as pool:
            done = list(pool.map(self.run_batch, order))
        self.runs += len(done)
        self.done.extend(done)
        return done

    def _run_batched(self, jobs: Iterable[Job]) -> Dict[Job, JobResult]:
        """Each job's result, from batches; a failed batch is run again one job at a time."""
        results: Dict[Job, JobResult] = {}
        retry: List[Tuple[Job, ...]] = []
        for result in self._run_many(batches(jobs)):
            if result.rc != 0 and len(result.jobs) > 1:
                retry.extend((job,) for job in result.jobs)
            else:
                results.update({job: result for job in result.jobs})
        for result in self._run_many(retry) if retry else []:
            results[result.job] = result
        return results

    def run_all(self, jobs: Iterable[Job]) -> Dict[Job, JobResult]:
        """Every job's result: the primary jobs first, then what their failures leave open."""
        start = time.monotonic()
        primary = primary_jobs(jobs)
        results = self._run_batched(set(primary.values()))
        second = [j for j, p in primary.items() if j != p and results[p].rc != 0]
        if second:
            results.update(self._run_batched(second))
        for job, first in primary.items():
            results.setdefault(job, results[first])
        self.run_seconds = time.monotonic() - start
        return results


# ---------------------------------------------------------------------------
# The project's settings: roles' defaults, inventories, Molecule scenarios
# ---------------------------------------------------------------------------

ENV_PYTHON = "<the PyTorch environment's python>"
SYSTEM_PYTHONS = ("/usr/bin/python3", "python3")


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.lru_cache(maxsize=None)
def _yaml_text(path: Path) -> Any:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER) or {}


def _yaml(path: Path) -> Any:
    """A YAML file of the repository, parsed once per session (callers must not change it)."""
    return _yaml_text(Path(path))


def role_defaults(repo_root: Path = REPO_ROOT) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for path in sorted((repo_root / "roles").glob("*/defaults/main.yml")):
        out.update(_yaml(path))
    return out


def role_vars(repo_root: Path, role: str) -> Dict[str, Any]:
    path = repo_root / "roles" / role / "vars" / "main.yml"
    return _yaml(path) if path.exists() else {}


def _version_test(value: Any, other: Any, op: str = "==") -> bool:
    a, b = Version(str(value)), Version(str(other))
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[op]


def _jinja() -> jinja2.Environment:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["to_json"] = json.dumps
    env.filters["basename"] = os.path.basename
    env.filters["dirname"] = os.path.dirname
    env.filters["urlsplit"] = lambda url, part: getattr(urllib.parse.urlsplit(url), part)
    env.tests["version"] = _version_test
    return env


@dataclasses.dataclass(frozen=True)
class WantedPackage:
    """A package the conda_pytorch role installs, as its commands template says."""

    project: str
    version: str  # without the local tag
    local: Optional[str]  # "cu130", "cpu": the PyTorch index's local version
    variable: str  # the variable that sets the version


def conda_pytorch_plan_args(repo_root: Path = REPO_ROOT) -> Dict[str, str]:
    """The options of the conda_pytorch preflight's ``torch_env_plan`` task (option -> Jinja)."""
    tasks = _yaml(repo_root / "roles/conda_pytorch/tasks/preflight.yml") or []
    for task in tasks:
        if "torch_env_plan" in task:
            return {key: str(value) for key, value in task["torch_env_plan"].items()}
    raise AssertionError("roles/conda_pytorch/tasks/preflight.yml has no torch_env_plan task")


_PLAIN_VAR = re.compile(r"\{\{\s*(?P<var>conda_pytorch_\w+)\s*\}\}")


def _plan_variable(args: Dict[str, str], option: str) -> str:
    """The role variable that the task passes, as is, to one option of torch_env_plan."""
    m = _PLAIN_VAR.fullmatch(args[option].strip())
    assert m, f"torch_env_plan's {option} is not one role variable: {args[option]}"
    return m.group("var")


def conda_pytorch_wanted(
    values: Dict[str, Any], repo_root: Path = REPO_ROOT
) -> List[WantedPackage]:
    """What the conda_pytorch role installs for these settings: torch_env_plan's ``wanted``.

    The role's preflight passes its variables to the torch_env_plan module, whose
    module_utils/torch_env_plan.py decides ``wanted`` (torch, and torchvision / torchaudio
    when their install flags are on); the variables are read from that task. Only the pip
    method installs from a pip index; the conda method's packages come from the conda channel
    and give nothing here.
    """
    if values.get("conda_pytorch_install_method", "pip") != "pip":
        return []
    context = {**role_vars(repo_root, "conda_pytorch"), **values}
    args = conda_pytorch_plan_args(repo_root)
    variables = _version_variables(repo_root)
    wanted = torch_env_plan.wanted_versions(
        "pip",
        str(context[_plan_variable(args, "cuda_variant")]),
        {project: str(context[var]) for project, var in variables.items()},
        bool(context[_plan_variable(args, "install_torchvision")]),
        bool(context[_plan_variable(args, "install_torchaudio")]),
    )
    out = []
    for project, full in wanted.items():
        version, _, local = full.partition("+")
        out.append(WantedPackage(project, version, local or None, variables[project]))
    return out


def _version_variables(repo_root: Path = REPO_ROOT) -> Dict[str, str]:
    """project -> the variable the role passes to torch_env_plan as its version."""
    args = conda_pytorch_plan_args(repo_root)
    return {
        project: _plan_variable(args, f"{project}_version")
        for project in ("torch", "torchvision", "torchaudio")
    }


@dataclasses.dataclass(frozen=True)
class PinTask:
    """A ``python_package_pins_plan`` task of a role: a package, its variable, its interpreter."""

    role: str
    project: str
    variable: str
    python_expr: str  # the task's `python:` (Jinja)
    when: Optional[str]
    file: str


@functools.lru_cache(maxsize=None)
def python_package_pin_tasks(repo_root: Path = REPO_ROOT) -> Tuple[PinTask, ...]:
    out = []
    for path in sorted((repo_root / "roles").glob("*/tasks/*.yml")):
        for task in _yaml(path) or []:
            if not isinstance(task, dict) or "python_package_pins_plan" not in task:
                continue
            args = task["python_package_pins_plan"]
            when = task.get("when")
            if isinstance(when, list):
                when = " and ".join(f"({w})" for w in when)
            for item in args.get("packages", []):
                out.append(
                    PinTask(
                        role=path.parts[-3],
                        project=str(item["name"]),
                        variable=str(item.get("variable") or item["name"]),
                        python_expr=str(args["python"]),
                        when=str(when) if when is not None else None,
                        file=str(path.relative_to(repo_root)),
                    )
                )
    return tuple(out)


def _render(expr: str, values: Dict[str, Any]) -> str:
    return _jinja().from_string(expr).render(values).strip()


def _truth(expr: Optional[str], values: Dict[str, Any]) -> bool:
    if expr is None:
        return True
    return bool(_jinja().compile_expression(expr)(**values))


@dataclasses.dataclass(frozen=True)
class VarSet:
    """Settings the roles run with: the defaults, or an inventory's or scenario's, merged."""

    name: str  # where they come from, for messages
    short: str  # for test ids
    values: Dict[str, Any]  # effective: the defaults with these settings over them
    own: Dict[str, Any]  # what this set itself writes (its explicit pins)
    systems: Optional[Tuple[str, ...]]  # the OS keys it runs on; None: wherever the plan installs
    roles: frozenset
    prepare_venv: bool = False  # its PyTorch environment is a stand-in venv from python3

    def __hash__(self) -> int:
        return hash((self.name, self.short))


PY_ROLES = frozenset({"conda_pytorch", "jupyter"})
_PY_PREFIXES = ("conda_pytorch_", "jupyter_")


def _relevant(values: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in values.items() if k.startswith(_PY_PREFIXES)}


def playbook_roles(path: Path, seen: Optional[set] = None) -> set:
    """Roles a playbook runs, through import_playbook, roles: and include/import_role."""
    seen = seen if seen is not None else set()
    if path in seen or not path.exists():
        return set()
    seen.add(path)
    roles: set = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("import_playbook", "ansible.builtin.import_playbook"):
                    roles.update(playbook_roles((path.parent / str(value)).resolve(), seen))
                elif key == "roles" and isinstance(value, list):
                    for role in value:
                        roles.add(role["role"] if isinstance(role, dict) else str(role))
                elif key in (
                    "include_role",
                    "import_role",
                    "ansible.builtin.include_role",
                    "ansible.builtin.import_role",
                ):
                    roles.add(str(value["name"]))
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(_yaml(path))
    return roles


_IMAGE_OS = re.compile(r"kindling-(?P<os>(?:debian\d+|ubuntu\d{4}))-")


def newest_torch_var_sets(defaults: Dict[str, Any]) -> List[VarSet]:
    """The newest catalogued torch release that has a torchvision, over the defaults.

    Read from the catalogue, not written here: its newest patch release and torchvision,
    with PyPI's default wheel (``pypi_default``) and that wheel's CUDA as the toolkit, so a
    new torch row is resolved against PyPI as a whole plan as soon as it is added (torch
    2.14.1 with torchvision 0.29.1, cu130, in December 2026). Not a default: the roles'
    defaults and inventories/gpu's stacks are checked as they are, beside it.
    """
    for row in reversed(gpu_compat.TORCH_RELEASES):
        paired = {t: v for t, v in row["releases"].items() if v}
        variant = row.get("pypi_default")
        if not paired or not variant:
            continue
        torch = max(paired, key=lambda v: Version(v))
        own = {
            "conda_pytorch_version": torch,
            "conda_pytorch_torchvision_version": paired[torch],
            "conda_pytorch_cuda_variant": variant,
            "cuda_version": row["variants"][variant]["cuda"],
        }
        name = f"the catalogue's newest torch with a torchvision ({torch}, {variant})"
        return [VarSet(name, f"newest-torch-{torch}", {**defaults, **own}, own, None, PY_ROLES)]
    return []


def default_stack_var_sets(defaults: Dict[str, Any]) -> List[VarSet]:
    """The catalogue's default stack of each repository (issue 35, ``default_stacks``), over
    the defaults: checked wherever the preflight accepts it, like an inventory group, so each
    is resolved against PyPI on its own OS (tests/registry/test_default_stacks.py holds it to
    that)."""
    out = []
    for repo in default_stack.repositories():
        own = dict(default_stack.for_repository(repo)["variables"])
        out.append(
            VarSet(
                f"the catalogue's default stack for {repo}",
                f"default-stack-{repo}",
                {**defaults, **own},
                own,
                None,
                PY_ROLES,
            )
        )
    return out


def var_sets(repo_root: Path = REPO_ROOT) -> List[VarSet]:
    """The defaults, every inventory group or host that sets a Python pin, every scenario."""
    defaults = role_defaults(repo_root)
    out = [VarSet("the roles' defaults", "defaults", defaults, _relevant(defaults), None, PY_ROLES)]
    for inv in sorted(p for p in (repo_root / "inventories").iterdir() if p.is_dir()):
        gv = inv / "group_vars"
        everywhere = _yaml(gv / "all.yml") if (gv / "all.yml").exists() else {}
        groups = (
            {p.stem: _yaml(p) for p in sorted(gv.glob("*.yml")) if p.stem != "all"}
            if gv.is_dir()
            else {}
        )
        hosts = inv / "hosts.yml"
        if hosts.exists():
            for where, values in _inventory_vars(_yaml(hosts)):
                groups[where] = values
        for where, values in groups.items():
            own = _relevant({**everywhere, **values})
            if not own:
                continue
            rel = f"{inv.relative_to(repo_root)} {where}"
            out.append(
                VarSet(
                    rel,
                    f"{inv.name}/{where}",
                    {**defaults, **everywhere, **values},
                    own,
                    None,
                    PY_ROLES,
                )
            )
    out.extend(newest_torch_var_sets(defaults))
    out.extend(default_stack_var_sets(defaults))
    base_path = repo_root / ".config" / "molecule" / "config.yml"
    base = _yaml(base_path) if base_path.exists() else {}
    base_inventory = (base.get("provisioner") or {}).get("inventory") or {}
    for molecule in sorted((repo_root / "molecule").glob("*/molecule.yml")):
        scenario = molecule.parent
        roles = playbook_roles(scenario / "converge.yml") & PY_ROLES
        if not roles:
            continue
        data = _yaml(molecule)
        inventory = (data.get("provisioner") or {}).get("inventory") or {}
        # Molecule merges the base config (.config/molecule/config.yml) under each scenario's.
        group_vars = _merge_vars(base_inventory.get("group_vars"), inventory.get("group_vars"))
        host_vars = _merge_vars(base_inventory.get("host_vars"), inventory.get("host_vars"))
        # A platform without an image gets the base config's (kindling_platform_defaults).
        default_image = ((group_vars.get("all") or {}).get("kindling_platform_defaults") or {}).get(
            "image"
        )
        prepare = scenario / "prepare.yml"
        stand_in = prepare.exists() and "python3 -m venv" in prepare.read_text(encoding="utf-8")
        for platform in data.get("platforms") or []:
            image = str(platform.get("image") or default_image or "")
            match = _IMAGE_OS.search(image)
            if not match:
                raise ValueError(
                    f"{molecule}: can't tell the OS of {platform.get('name')!r} ({image!r})"
                )
            values = dict(defaults)
            for group in ["all", *(platform.get("groups") or [])]:
                values.update(group_vars.get(group) or {})
            values.update(host_vars.get(platform["name"]) or {})
            own = {
                k: v
                for k, v in values.items()
                if k.startswith(_PY_PREFIXES) and defaults.get(k) != v
            }
            out.append(
                VarSet(
                    f"molecule/{scenario.name} ({platform['name']})",
                    f"molecule/{scenario.name}/{platform['name']}",
                    values,
                    own,
                    (match.group("os"),),
                    frozenset(roles),
                    stand_in and "conda_pytorch" not in roles,
                )
            )
    return out


def _merge_vars(base: Optional[Dict[str, Any]], over: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    out = {k: dict(v or {}) for k, v in (base or {}).items()}
    for key, values in (over or {}).items():
        out.setdefault(key, {}).update(values or {})
    return out


def _inventory_vars(node: Dict[str, Any]) -> List[Tuple[str, Dict[str, Any]]]:
    """(group or host, vars) of a YAML inventory, where they set anything."""
    out = []
    for group, body in (node or {}).items():
        body = body or {}
        if body.get("vars"):
            out.append((f"{group} (hosts.yml)", body["vars"]))
        for host, hvars in (body.get("hosts") or {}).items():
            if hvars:
                out.append((f"{host} (hosts.yml)", hvars))
        out.extend(_inventory_vars(body.get("children") or {}))
    return out


# ---------------------------------------------------------------------------
# Stacks and their pins
# ---------------------------------------------------------------------------


def _load_stack_matrix(repo_root: Path):
    spec = importlib.util.spec_from_file_location(
        "kindling_stack_matrix", repo_root / "tools" / "stack_matrix.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=None)
def plan_vars(repo_root: Path = REPO_ROOT) -> Dict[str, str]:
    """The plan keys the README's stack x OS table checks (tools/stack_matrix.py's PLAN_VARS)."""
    return dict(_load_stack_matrix(repo_root).PLAN_VARS)


@dataclasses.dataclass(frozen=True)
class Pin:
    """One release the roles would install, into one interpreter."""

    project: str
    version: str
    variable: str
    derived: bool  # chosen from the catalogue because the variable is empty
    python: str
    where: str  # "the PyTorch environment", "JupyterLab's venv"
    local: Optional[str] = None

    @property
    def spec(self) -> str:
        return f"{self.project}=={self.version}"

    def fix(self, var_set_name: str) -> str:
        if self.derived:
            catalogue = f"data/vendor_catalogue.yml python_packages.{self.project}"
            return f"set {self.variable} or fix {catalogue}"
        return f"set {self.variable} ({var_set_name})"


@dataclasses.dataclass(frozen=True)
class Stack:
    var_set: VarSet
    backend: str  # "conda" or "venv"
    system: BaseSystem
    env_python: str
    torch: Optional[str]
    variant: Optional[str]
    pins: Tuple[Pin, ...]
    problems: Tuple[str, ...]  # why the preflight refuses it (then it is not installed)

    @property
    def label(self) -> str:
        torch = f"torch {self.torch} {self.variant}" if self.torch else "no torch"
        return f"{torch} on {self.system.name} (Python {self.env_python})"

    @property
    def origin(self) -> str:
        return f"{self.var_set.name}, {self.backend} backend"


class Unknowable(ValueError):
    pass


def _python_of(path: str, system: BaseSystem, env_python: str, what: str) -> str:
    if path == ENV_PYTHON:
        return env_python
    if path in SYSTEM_PYTHONS:
        return system.python3
    raise Unknowable(f"{what} is {path!r}: its Python version is only known on the host")


def stack_for(
    var_set: VarSet, backend: str, system: BaseSystem, repo_root: Path = REPO_ROOT
) -> Stack:
    """The stack these settings give on ``system`` with ``backend``, and the pins it installs."""
    values = {**var_set.values, "conda_pytorch_backend": backend}
    if values.get("conda_pytorch_python"):
        raise Unknowable(
            "adopt mode (conda_pytorch_python set): "
            "nothing is installed into an interpreter known here"
        )
    runs_torch = "conda_pytorch" in var_set.roles
    if not runs_torch and not var_set.prepare_venv:
        raise Unknowable(f"{var_set.name} registers a PyTorch environment it does not make")
    if backend == "conda" and runs_torch:
        env_python = str(values["conda_pytorch_python_version"])
    else:
        venv_python = str(values.get("conda_pytorch_venv_python", "/usr/bin/python3"))
        env_python = _python_of(venv_python, system, "", "conda_pytorch_venv_python")
    pins: List[Pin] = []
    torch = variant = None
    if runs_torch:
        for wanted in conda_pytorch_wanted(values, repo_root):
            pins.append(
                Pin(
                    wanted.project,
                    wanted.version,
                    wanted.variable,
                    False,
                    env_python,
                    "the PyTorch environment",
                    wanted.local,
                )
            )
            if wanted.project == "torch":
                torch, variant = wanted.version, wanted.local
    if "jupyter" in var_set.roles:
        context = {**values, "jupyter_kernel_python": ENV_PYTHON}
        for task in python_package_pin_tasks(repo_root):
            if task.role != "jupyter" or not _truth(task.when, context):
                continue
            interpreter = _render(task.python_expr, context)
            python = _python_of(
                interpreter, system, env_python, f"the interpreter of {task.project}"
            )
            where = "the PyTorch environment" if interpreter == ENV_PYTHON else "JupyterLab's venv"
            pinned = str(values.get(task.variable) or "")
            if pinned:
                pins.append(Pin(task.project, pinned, task.variable, False, python, where))
            else:
                pick = stack_plan.python_package_pin(task.project, python)
                pins.append(Pin(task.project, pick or "<none>", task.variable, True, python, where))
    problems: Tuple[str, ...] = ()
    if var_set.systems is None and runs_torch:
        plan = {key: str(values[var]) for key, var in plan_vars(repo_root).items() if var in values}
        plan["python_version"] = env_python
        found = stack_plan.check_plan(
            plan, [], system.key if system.key in BASE_SYSTEMS else None, ARCH
        )
        problems = tuple(sorted({p["code"] for p in found if p["code"] != "unknown-gpu"}))
    label = backend if runs_torch else "stand-in venv"  # made by the scenario's prepare.yml
    return Stack(var_set, label, system, env_python, torch, variant, tuple(pins), problems)


def stacks(repo_root: Path = REPO_ROOT) -> Tuple[List[Stack], List[str]]:
    """Every stack the roles would install (per settings), and a line for each they would not."""
    systems = base_systems()
    out: List[Stack] = []
    skipped: List[str] = []
    for var_set in var_sets(repo_root):
        keys = var_set.systems or tuple(
            BASE_SYSTEMS[k].key for k in stack_plan.supported_repositories()
        )
        own_backend = str(var_set.values.get("conda_pytorch_backend", "conda"))
        # Molecule scenarios are one host each; the defaults and inventories may run on
        # either backend (the venv backend uses the OS's python3).
        backends = (
            (own_backend,)
            if var_set.systems
            else tuple(dict.fromkeys((own_backend, "venv", "conda")))
        )
        for key in keys:
            for backend in backends:
                try:
                    stack = stack_for(var_set, backend, systems[key], repo_root)
                except Unknowable as exc:
                    line = f"{var_set.name}: not checked, {exc}"
                    if line not in skipped:
                        skipped.append(line)
                    break
                if stack.problems:
                    skipped.append(
                        f"{var_set.name}: {stack.label} ({backend}) is refused by the preflight: "
                        + ", ".join(stack.problems)
                    )
                    continue
                out.append(stack)
    return out, skipped


def merge_identical(found: List[Stack]) -> List[Stack]:
    """One stack for settings that install the same (the defaults and current_stack, say)."""
    merged: Dict[Any, Stack] = {}
    for stack in found:
        key = (stack.backend, stack.system.key, stack.env_python, stack.pins)
        if key in merged:
            first = merged[key]
            names = f"{first.var_set.name}; {stack.var_set.name}"
            shorts = f"{first.var_set.short}+{stack.var_set.short}"
            var_set = dataclasses.replace(first.var_set, name=names, short=shorts)
            merged[key] = dataclasses.replace(first, var_set=var_set)
        else:
            merged[key] = stack
    return list(merged.values())


@dataclasses.dataclass(frozen=True)
class StackCase:
    stack: Stack
    pin: Pin

    @property
    def id(self) -> str:
        s = self.stack
        return f"{s.var_set.short}-{s.system.key}-{s.backend}-py{self.pin.python}-{self.pin.spec}"

    @property
    def job(self) -> Job:
        return resolve_job(
            self.pin.project, self.pin.version, self.pin.python, self.stack.system.glibc
        )


@dataclasses.dataclass(frozen=True)
class ExplicitPinCase:
    """A pin written in the defaults, an inventory or a scenario, on that set's own Python."""

    var_set_name: str
    variable: str
    project: str
    version: str
    python: str
    system: BaseSystem  # the lowest-glibc OS the set installs on
    installed: bool  # whether these settings install it (an install flag may be off)

    @property
    def id(self) -> str:
        return f"{self.var_set_name}-{self.variable}={self.version}-py{self.python}"

    @property
    def job(self) -> Job:
        return resolve_job(self.project, self.version, self.python, self.system.glibc)


def explicit_pins(found: List[Stack], repo_root: Path = REPO_ROOT) -> List[ExplicitPinCase]:
    """Each non-empty pin variable of each settings file, on the Python those settings use."""
    pin_vars = {var: project for project, var in _version_variables(repo_root).items()}
    pin_vars.update({t.variable: t.project for t in python_package_pin_tasks(repo_root)})
    out: Dict[Tuple[str, str, str], ExplicitPinCase] = {}
    for stack in found:
        own_backend = str(stack.var_set.values.get("conda_pytorch_backend", "conda"))
        if stack.backend in ("conda", "venv") and stack.backend != own_backend:
            continue  # the alternative backend: its pins are the stack cases' business
        installed = {p.variable: p for p in stack.pins}
        for var, project in pin_vars.items():
            value = str(stack.var_set.own.get(var) or "")
            if not value:
                continue
            pin = installed.get(var)
            python = pin.python if pin else stack.env_python
            case = ExplicitPinCase(
                stack.var_set.short, var, project, value, python, stack.system, pin is not None
            )
            key = (stack.var_set.short, var, python)
            if key not in out or _mm(stack.system.glibc) < _mm(out[key].system.glibc):
                out[key] = case
    return sorted(out.values(), key=lambda c: c.id)


# ---------------------------------------------------------------------------
# The catalogue's claims
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Claim:
    """What the catalogue says about one release on one Python, and where it says it."""

    project: str
    version: str
    python: str
    supported: bool
    entry: str  # the catalogue entry to fix

    @property
    def id(self) -> str:
        return f"{self.project}=={self.version}-py{self.python}"


def catalogue_claims(
    pythons: Sequence[str],
    python_packages: Dict[str, Any],
    torch_releases: List[Dict[str, Any]],
    supports: Callable[[str, str, str], Optional[bool]],
    torch_python: Callable[[str, str], Optional[bool]],
) -> List[Claim]:
    out = []
    for name, releases in python_packages.items():
        if not isinstance(releases, list):
            continue  # `source`
        for row in releases:
            for py in pythons:
                out.append(
                    Claim(
                        name,
                        row["version"],
                        py,
                        bool(supports(name, row["version"], py)),
                        f"data/vendor_catalogue.yml python_packages.{name} {row['version']} "
                        f"(requires_python {row['requires_python']!r})",
                    )
                )
    for row in torch_releases:
        where = (
            f"data/vendor_catalogue.yml torch_releases series {row['series']!r} (python_min "
            f"{row['python_min']!r}, python_max {row['python_max']!r}, python_experimental "
            f"{row['python_experimental']})"
        )
        torch_only = list(row.get("torch_only_python") or [])
        for torch, vision in row["releases"].items():
            for py in pythons:
                ok = bool(torch_python(torch, py))
                out.append(
                    Claim(
                        "torch",
                        torch,
                        py,
                        ok or ".".join(str(py).split(".")[:2]) in torch_only,
                        f"{where}, torch_only_python {torch_only}" if torch_only else where,
                    )
                )
                if vision is None:
                    continue  # the catalogue says PyPI has no torchvision for it yet
                out.append(
                    Claim("torchvision", vision, py, ok, f"{where}, torchvision of torch {torch}")
                )
    return out


def project_pythons(found: List[Stack], var_sets_: List[VarSet]) -> List[str]:
    """Every Python a stack, an OS, the defaults, an inventory or a scenario uses."""
    found_pythons = {s.env_python for s in found} | {p.python for s in found for p in s.pins}
    found_pythons |= {b.python3 for b in base_systems().values()}
    for var_set in var_sets_:
        if "conda_pytorch_python_version" in var_set.values:
            found_pythons.add(str(var_set.values["conda_pytorch_python_version"]))
    return sorted(found_pythons, key=_mm)


def claims_system() -> BaseSystem:
    """The target of claims no pin answers: the newest glibc of the catalogue's OSes.

    Claims are about Python, not glibc.
    """
    newest = max(
        (BASE_SYSTEMS[k] for k in stack_plan.supported_repositories()), key=lambda b: _mm(b.glibc)
    )
    return BaseSystem(
        "claims",
        f"x86_64 with glibc {newest.glibc} ({newest.name})",
        "",
        newest.glibc,
        newest.source,
    )


@dataclasses.dataclass(frozen=True)
class ProjectCases:
    stacks: List[Stack]
    skipped: List[str]
    stack_cases: List[StackCase]
    explicit: List[ExplicitPinCase]
    claims: List[Claim]
    pythons: List[str]
    claims_system: BaseSystem

    def resolve_jobs(self) -> List[Job]:
        return sorted(
            {c.job for c in self.stack_cases} | {c.job for c in self.explicit},
            key=lambda j: (j.kind, j.project, j.python, j.version or "", j.glibc),
        )

    def claim_job(self, claim: Claim) -> Job:
        """The pip run whose log answers a claim.

        pip's finder judges every file of a project, whatever version was asked for, and logs
        each verdict at -vv. So a resolution of any pin of the same project for the same Python
        answers every claim about it; only a (project, Python) that no pin covers gets a scan
        of its own (pip index versions), under the newest glibc of the catalogue's OSes.
        """
        found = self._answering_jobs.get((claim.project, claim.python))
        return found or scan_job(claim.project, claim.python, self.claims_system.glibc)

    @functools.cached_property
    def _answering_jobs(self) -> Dict[Tuple[str, str], Job]:
        out: Dict[Tuple[str, str], Job] = {}
        order = sorted(
            set(primary_jobs(self.resolve_jobs()).values()),
            key=lambda j: (_mm(j.glibc), j.kind, j.version),
        )
        for job in order:
            out.setdefault((job.project, job.python), job)
        return out

    def claim_verdict(self, claim: Claim, links: Sequence[Link]) -> Tuple[Verdict, bool]:
        """pip's verdict on a claim's release, and whether it agrees with the claim.

        A release that pip refuses only for the glibc of the run that answers the claim
        installs on Python X all the same when the newest glibc of the catalogue's OSes would
        do: the claim is about Python.
        """
        job = self.claim_job(claim)
        system = BaseSystem("claim", f"x86_64 with glibc {job.glibc}", claim.python, job.glibc, "")
        found = verdict(links, claim.project, claim.version, claim.python, system)
        installs = found.installable or (
            found.status == WRONG_PLATFORM
            and found.needs_glibc is not None
            and found.needs_glibc <= _mm(self.claims_system.glibc)
        )
        agrees = installs if claim.supported else found.status == WRONG_PYTHON
        return found, agrees

    def jobs(self) -> List[Job]:
        jobs = set(self.resolve_jobs()) | {self.claim_job(c) for c in self.claims}
        return sorted(jobs, key=lambda j: (j.kind, j.project, j.python, j.version or "", j.glibc))


def primary_jobs(jobs: Iterable[Job]) -> Dict[Job, Job]:
    """Each job -> the job run first for it: the same resolution at the lowest glibc asked for.

    A host with a newer glibc accepts every manylinux tag an older one does, so a pin that
    resolves under the lowest glibc resolves under all of them. Only where it fails are the
    other glibc targets resolved themselves (PipRunner.run_all with these, twice).
    """
    jobs = list(jobs)
    lowest: Dict[Tuple[str, str, Optional[str], str], Job] = {}
    for job in jobs:
        key = (job.kind, job.project, job.version, job.python)
        if job.kind != SCAN and (key not in lowest or _mm(job.glibc) < _mm(lowest[key].glibc)):
            lowest[key] = job
    return {
        j: j if j.kind == SCAN else lowest[(j.kind, j.project, j.version, j.python)] for j in jobs
    }


@functools.lru_cache(maxsize=None)
def project_cases(repo_root: Path = REPO_ROOT) -> ProjectCases:
    found, skipped = stacks(repo_root)
    merged = merge_identical(found)
    cases = [StackCase(s, p) for s in merged for p in s.pins]
    sets = var_sets(repo_root)
    pythons = project_pythons(found, sets)
    claims = catalogue_claims(
        pythons,
        stack_plan.PYTHON_PACKAGES,
        gpu_compat.TORCH_RELEASES,
        stack_plan.python_package_supports,
        gpu_compat.python_in_range,
    )
    return ProjectCases(
        merged, skipped, cases, explicit_pins(found, repo_root), claims, pythons, claims_system()
    )
