"""What a plan installs on a given host, decided from the vendor catalogue.

gpu_compat.py answers "do these versions work together on these GPUs?". This file
answers the questions that depend on where they are installed:

- does NVIDIA's repository for this OS and architecture serve the toolkit and the
  driver branch at all (repository_problems), and what is the nearest plan that exists
  (RepositoryAdvisor, which check_stack uses for its fixes);
- which kernel modules the GPUs need: open, proprietary, or either (kernel_modules);
- the exact package names and version globs of the driver, toolkit, fabric manager
  (driver_packages, toolkit_packages, fabric_manager_packages), and which package flavour
  serves the kernel modules when the user leaves it to ``auto`` (plan_packages);
- the kernel-module options a platform needs (module_options: Grace's coherent memory);
- which release of a pinned Python package suits an interpreter (python_package_pin).

All facts come from module_utils/vendor_catalogue.py (generated from
data/vendor_catalogue.yml). Runs on target hosts: Python 3.8, standard library only.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, List, Optional, Tuple

from ansible.module_utils.gpu_compat import (
    Advisor,
    _mm,
    architecture_for,
    check_stack,
    compute_capability_for,
    driver_branch,
    known_cuda_versions,
    min_driver_for_cuda,
    normalize_cc,
    parse_version,
    version_cmp,
)
from ansible.module_utils.vendor_catalogue import CATALOGUE

REPOSITORIES: Dict[str, Dict[str, Any]] = CATALOGUE["repositories"]
DRIVER_PACKAGES: List[Dict[str, Any]] = CATALOGUE["driver_packages"]
DRIVER_LIFECYCLE: List[Dict[str, Any]] = CATALOGUE["driver_lifecycle"]
KERNEL_MODULES: Dict[str, Any] = CATALOGUE["kernel_modules"]
PYTHON_PACKAGES: Dict[str, Any] = CATALOGUE["python_packages"]
CUDA_REPOSITORY: Dict[str, Any] = CATALOGUE["cuda_repository"]
KERNEL_MODULE_OPTIONS: List[Dict[str, Any]] = CATALOGUE["kernel_module_options"]

MODULE_FLAVOURS = ("open", "proprietary")
# The package flavours, in the order ``auto`` tries them: the CUDA driver metapackage where
# the repository serves it with the kernel modules the plan needs, else the driver alone.
PACKAGE_FLAVORS = ("cuda-drivers", "nvidia-driver")
# nvidia_driver_package_flavor's values: ``auto`` or one of the flavours.
PACKAGE_FLAVOR_CHOICES = ("auto", *PACKAGE_FLAVORS)

# ---------------------------------------------------------------------------
# Repositories
# ---------------------------------------------------------------------------


def repository_id(distribution: Any, version: Any) -> str:
    """NVIDIA's repository path for an OS: ("Ubuntu", "22.04") -> "ubuntu2204", ("Debian", "12")."""
    name = str(distribution or "").strip().lower()
    text = str(version or "").strip()
    if name == "debian":
        return "debian" + text.split(".")[0]
    return name + text.replace(".", "")


def repository_arch(machine: Any) -> str:
    """The repository's architecture path for a machine: x86_64, or sbsa for aarch64."""
    text = str(machine or "").strip()
    return "sbsa" if text in ("aarch64", "arm64", "sbsa") else text


def repository(repo: Any) -> Optional[Dict[str, Any]]:
    return REPOSITORIES.get(str(repo or ""))


def supported_repositories() -> List[str]:
    return sorted(REPOSITORIES)


def cuda_repository_location(
    repo: Optional[str],
    arch: Optional[str],
    base_url: str = "",
    key_url: str = "",
    fingerprint: str = "",
    keyring: str = "",
) -> Optional[Dict[str, Any]]:
    """Where NVIDIA's CUDA repository for ``repo``/``arch`` is, and how apt trusts it.

    The catalogue's ``cuda_repository`` facts, each replaced by its override when one is
    given (a mirror's ``base_url``, a rotated key's ``key_url`` and ``fingerprint``). The key
    is the one the catalogue's repository row names; a repository the catalogue does not
    know gets none, unless both key overrides are given. None without a repository path.
    """
    if not repo or not arch:
        return None
    base = (base_url or CUDA_REPOSITORY["base_url"]).rstrip("/")
    url = f"{base}/{repo}/{arch}/"
    key = CUDA_REPOSITORY["keys"].get(str((repository(repo) or {}).get("key", "")))
    known_key_url = f"{url}{key['file']}" if key else ""
    fingerprint = re.sub(r"\s", "", fingerprint or (key["fingerprint"] if key else "")).upper()
    return {
        "id": repo,
        "arch": arch,
        "url": url,
        "key_url": key_url or known_key_url,
        "fingerprint": fingerprint,
        "keyring": keyring or CUDA_REPOSITORY["keyring"],
        "sources_file": f"/etc/apt/sources.list.d/cuda-{repo}-{arch}.sources",
        # The one-line file earlier Kindling releases, and NVIDIA's cuda-keyring package, write.
        "list_file": f"/etc/apt/sources.list.d/cuda-{repo}-{arch}.list",
        # Keys the repository was signed with before, which apt-key kept in /etc/apt/trusted.gpg.
        "retired_key_fingerprints": [
            row["fingerprint"] for row in CUDA_REPOSITORY.get("retired_keys", {}).values()
        ],
    }


def _in_bounds(value: str, first: Optional[str], last: Optional[str]) -> bool:
    if first and version_cmp(value, first) < 0:
        return False
    return not (last and version_cmp(value, last) > 0)


def cuda_in_repository(repo: Any, cuda: Any) -> Optional[bool]:
    """False when the catalogue says the repository does not serve this toolkit series."""
    row = repository(repo)
    if row is None:
        return None
    return _in_bounds(_mm(cuda), row["cuda"]["first"], row["cuda"]["last"])


def repository_cuda_versions(repo: Any) -> List[str]:
    """The known CUDA series (oldest first) that the repository serves."""
    row = repository(repo)
    if row is None:
        return []
    return [
        v for v in known_cuda_versions() if _in_bounds(v, row["cuda"]["first"], row["cuda"]["last"])
    ]


def branch_in_repository(repo: Any, branch: Any) -> Optional[bool]:
    """False when the catalogue says the repository has no packages of this branch."""
    row = repository(repo)
    if row is None:
        return None
    bounds = row["driver_branches"]
    b = driver_branch(branch)
    if b in bounds["absent"]:
        return False
    return not (bounds["first"] and int(b) < int(bounds["first"]))


def lifecycle(branch: Any) -> Optional[Dict[str, Any]]:
    b = driver_branch(branch)
    return next((row for row in DRIVER_LIFECYCLE if row["branch"] == b), None)


def branch_end_of_life(branch: Any, today: Optional[datetime.date] = None) -> Optional[bool]:
    """True when NVIDIA lists the branch as end of life by ``today``; None when not listed."""
    row = lifecycle(branch)
    if row is None or row["eol"] is None:
        return None
    if row["eol"] == "past":
        return True
    year, month = (int(x) for x in row["eol"].split("-"))
    today = today or datetime.date.today()
    return (today.year, today.month) > (year, month)


class RepositoryAdvisor(Advisor):
    """check_stack's fixes, limited to what the repository serves.

    A branch suggestion is the oldest branch that meets the minimum, is served by the
    repository, is in NVIDIA's lifecycle table and is not end of life; failing that, the
    minimum's own branch. A CUDA suggestion is the oldest series served at or after the
    one needed.
    """

    def __init__(self, repo: Optional[str], today: Optional[datetime.date] = None) -> None:
        self.repo = repo if repository(repo) else None
        self.today = today

    def branch_for(self, min_driver: Any) -> str:
        need = int(driver_branch(min_driver))
        for branch in sorted((row["branch"] for row in DRIVER_LIFECYCLE), key=int):
            if int(branch) < need or branch_end_of_life(branch, self.today) is not False:
                continue
            if self.repo and branch_in_repository(self.repo, branch) is False:
                continue
            return branch
        return str(need)

    def cuda_from(self, first: Any) -> str:
        if not self.repo:
            return str(first)
        served = [v for v in repository_cuda_versions(self.repo) if version_cmp(v, first) >= 0]
        return served[0] if served else str(first)


def repository_notes(plan: Dict[str, Any], repo: Optional[str], arch: Optional[str]) -> List[str]:
    """What the plan asks of the repository that no source confirms (never fatal)."""
    row = repository(repo)
    if row is None:
        return []
    notes = []
    if row["driver_branches"]["first"] is None:
        notes.append(
            f"{repo}: the catalogue knows no first driver branch for this repository; a branch is "
            "refused only where a source says it is absent"
        )
    if arch and arch in (row.get("arches_unknown") or []):
        notes.append(f"{repo}: no source confirms NVIDIA serves it for {arch}")
    cudnn = plan.get("cudnn_version")
    if cudnn:
        try:
            major = parse_version(cudnn)[0]
        except ValueError:
            major = None
        if major is not None and major not in row["cudnn"]["present"]:
            notes.append(
                f"{repo}: no source shows cuDNN {major} apt packages in this repository; the "
                "cuda stage installs them if apt finds them (cuda_cudnn_install_method: tarball "
                "does not need them)"
            )
    return notes


def _other_repos_with_cuda(cuda: str) -> List[str]:
    return [r for r in supported_repositories() if cuda_in_repository(r, cuda)]


def _describe(repo: str) -> str:
    row = REPOSITORIES[repo]
    return f"{row['distribution']} {row['release']}"


def repository_problems(
    plan: Dict[str, Any],
    repo: Optional[str],
    arch: Optional[str],
    today: Optional[datetime.date] = None,
) -> List[Dict[str, Any]]:
    """What the plan asks of NVIDIA's repository ``repo``/``arch`` that it does not serve."""
    problems: List[Dict[str, Any]] = []
    if not repo:
        return problems
    row = repository(repo)
    if row is None:
        problems.append(
            _problem(
                "unknown-repository",
                f"NVIDIA's CUDA repository for {repo} is not in the vendor catalogue (known: "
                f"{', '.join(supported_repositories())}); use a supported OS, or add the "
                "repository to data/vendor_catalogue.yml.",
                [],
            )
        )
        return problems
    if arch and arch not in row["arches"] and arch not in (row.get("arches_unknown") or []):
        problems.append(
            _problem(
                "arch-not-in-repository",
                f"NVIDIA's {repo} repository serves {', '.join(row['arches'])}, not {arch}; use "
                f"an OS whose repository serves {arch}.",
                [],
            )
        )
    cudas = [
        str(v)
        for v in [plan.get("cuda_version"), *list(plan.get("cuda_versions_extra") or [])]
        if v
    ]
    for cuda in cudas:
        try:
            served = cuda_in_repository(repo, cuda)
        except ValueError:
            continue
        if served is not False:
            continue
        here = repository_cuda_versions(repo)
        first, last = row["cuda"]["first"], row["cuda"]["last"]
        if first and version_cmp(_mm(cuda), first) < 0:
            hint = f"use {first}+ here"
            fix_to = here[0] if here else first
        else:
            hint = f"use {last} or older here"
            fix_to = last or (here[-1] if here else cuda)
        elsewhere = [_describe(r) for r in _other_repos_with_cuda(cuda)]
        where = f", or {' / '.join(elsewhere)}" if elsewhere else ""
        problems.append(
            _problem(
                "cuda-not-in-repository",
                f"CUDA {_mm(cuda)} is not in {repo} (NVIDIA's repository for {_describe(repo)} "
                f"serves CUDA {first or 'its first'} to {last or 'current'}); {hint}{where}.",
                [f'cuda_version: "{fix_to}"'],
            )
        )
    branch = plan.get("driver_branch") or (
        driver_branch(plan["driver_version"]) if plan.get("driver_version") else None
    )
    if branch and branch_in_repository(repo, branch) is False:
        advisor = RepositoryAdvisor(repo, today)
        need = min_driver_for_cuda(cudas[0]) if cudas else None
        suggestion = advisor.branch_for(need or branch)
        problems.append(
            _problem(
                "driver-branch-not-in-repository",
                f"Driver branch {branch} is not in {repo}: NVIDIA's repository for "
                f"{_describe(repo)} has no packages of it; set nvidia_driver_branch to "
                f"{suggestion}.",
                [f'nvidia_driver_branch: "{suggestion}"'],
            )
        )
    return problems


# ---------------------------------------------------------------------------
# Kernel modules
# ---------------------------------------------------------------------------


def _gpu_cc(gpu: Dict[str, Any]) -> Optional[str]:
    return normalize_cc(gpu.get("compute_capability")) or compute_capability_for(gpu.get("name"))


def _name_has(gpu: Dict[str, Any], token: str) -> bool:
    """Whether nvidia-smi's name of the GPU has the product token ("GH200", not "GH2000")."""
    name = " ".join(str(gpu.get("name") or "").upper().split())
    return re.search(r"(?<![A-Z0-9])" + re.escape(token.upper()) + r"(?!\d)", name) is not None


def _gpu_dict(gpu: Any) -> Dict[str, Any]:
    return gpu if isinstance(gpu, dict) else {"name": str(gpu)}


def _needs_open(gpu: Dict[str, Any]) -> Optional[str]:
    """What makes a GPU open-only ("Blackwell"), or None."""
    cc = _gpu_cc(gpu)
    for rule in KERNEL_MODULES["open_only"]:
        token = rule.get("token")
        if token and _name_has(gpu, token):
            return rule["what"]
        if rule.get("cc_min") and cc and version_cmp(cc, rule["cc_min"]) >= 0:
            return rule["what"]
    return None


def _cannot_open(gpu: Dict[str, Any]) -> bool:
    cc = _gpu_cc(gpu)
    return bool(cc) and version_cmp(cc, KERNEL_MODULES["open_min_cc"]) < 0


def _label(gpu: Dict[str, Any], index: int) -> str:
    return f"{gpu.get('name') or 'GPU'} (GPU {gpu.get('index', index)})"


def kernel_modules(
    requested: str,
    gpus: Optional[List[Dict[str, Any]]],
    branch: Any,
) -> Tuple[Optional[str], str, List[Dict[str, Any]]]:
    """(flavour, why, problems) for ``requested`` in auto, open, proprietary.

    auto picks open when a GPU runs only on the open modules (Blackwell, Grace Hopper),
    proprietary when a GPU can't run them (before Turing), else NVIDIA's default for the
    branch (open from R560, proprietary before). open and proprietary are checked
    against the GPUs and the branch.
    """
    gpus = [g if isinstance(g, dict) else {"name": str(g)} for g in (gpus or [])]
    b = int(driver_branch(branch))
    first_open = int(KERNEL_MODULES["open_first_branch"])
    default_open = int(KERNEL_MODULES["open_default_from_branch"])
    open_only = [(i, g, _needs_open(g)) for i, g in enumerate(gpus) if _needs_open(g)]
    closed_only = [(i, g) for i, g in enumerate(gpus) if _cannot_open(g)]
    problems: List[Dict[str, Any]] = []
    if open_only and closed_only:
        problems.append(
            _problem(
                "kernel-modules-conflict",
                f"{_label(open_only[0][1], open_only[0][0])} runs only on the open kernel modules "
                f"and {_label(closed_only[0][1], closed_only[0][0])} only on the proprietary ones; "
                "one driver can't serve both, so put them in different hosts.",
                [],
            )
        )
        return None, "conflict", problems
    flavour = requested
    why = f"nvidia_driver_kernel_modules is {requested}"
    if requested == "auto":
        if open_only:
            flavour, why = (
                "open",
                f"{_label(open_only[0][1], open_only[0][0])} is {open_only[0][2]}",
            )
        elif closed_only:
            gpu = closed_only[0][1]
            flavour = "proprietary"
            arch = architecture_for(_gpu_cc(gpu))
            why = f"{_label(gpu, closed_only[0][0])} ({arch}) predates Turing"
        elif b >= default_open:
            flavour, why = "open", f"NVIDIA's default from branch {default_open}"
        else:
            flavour, why = "proprietary", f"NVIDIA's default before branch {default_open}"
    if flavour == "open" and b < first_open:
        problems.append(
            _problem(
                "open-modules-need-newer-branch",
                f"The open kernel modules start with branch {first_open}; branch {b} has only the "
                f"proprietary ones; raise nvidia_driver_branch to {first_open} or newer.",
                [f'nvidia_driver_branch: "{first_open}"'],
            )
        )
    if flavour == "open" and closed_only:
        gpu = closed_only[0][1]
        problems.append(
            _problem(
                "gpu-cannot-run-open-modules",
                f"{_label(gpu, closed_only[0][0])} is {architecture_for(_gpu_cc(gpu))}: the open "
                "kernel modules need Turing or newer; set nvidia_driver_kernel_modules: "
                "proprietary (or auto).",
                ["nvidia_driver_kernel_modules: proprietary"],
            )
        )
    if flavour == "proprietary" and open_only:
        i, gpu, what = open_only[0]
        problems.append(
            _problem(
                "gpu-needs-open-modules",
                f"{_label(gpu, i)} is {what}: NVIDIA's proprietary kernel modules do not support "
                "it; set nvidia_driver_kernel_modules: open (or auto).",
                ["nvidia_driver_kernel_modules: open"],
            )
        )
    if (
        flavour == "proprietary"
        and closed_only
        and b > int(KERNEL_MODULES["pre_turing_last_branch"])
    ):
        gpu = closed_only[0][1]
        last = KERNEL_MODULES["pre_turing_last_branch"]
        problems.append(
            _problem(
                "branch-drops-pre-turing-gpu",
                f"Branch {b} no longer supports {_label(gpu, closed_only[0][0])} "
                f"({architecture_for(_gpu_cc(gpu))}); {last} is the last branch for it, so set "
                f"nvidia_driver_branch to {last}.",
                [f'nvidia_driver_branch: "{last}"'],
            )
        )
    return flavour, why, problems


# ---------------------------------------------------------------------------
# Packages
# ---------------------------------------------------------------------------


def _branch_row_matches(row: Dict[str, Any], branch: int) -> bool:
    low, high = row["branches"]["from"], row["branches"]["to"]
    return (low is None or branch >= int(low)) and (high is None or branch <= int(high))


def version_glob(branch: Any, version: Optional[str] = None) -> str:
    """apt version glob: "510.*" for a branch, "510.47.03-*" for a version, or the full one."""
    if version:
        return version if "-" in version else f"{version}-*"
    return f"{driver_branch(branch)}.*"


def version_regex(branch: Any, version: Optional[str] = None) -> str:
    """A regex an installed Debian version of the wanted driver matches."""
    if version:
        return "^" + re.escape(version) + ("$" if "-" in version else "-")
    return "^" + driver_branch(branch) + r"\."


def driver_packages(
    layout: str,
    branch: Any,
    modules: str,
    package_flavor: str,
    version: Optional[str] = None,
) -> Optional[Dict[str, Any]]:
    """The driver packages for a layout, branch, module flavour and package flavour.

    None when the catalogue has no such combination (it does not exist, or was not
    found: either way the role can't install it).
    """
    b = int(driver_branch(branch))
    for row in DRIVER_PACKAGES:
        if row["layout"] != layout or row["modules"] != modules:
            continue
        if row["package_flavor"] != package_flavor or not _branch_row_matches(row, b):
            continue
        names = [p.format(branch=b) for p in row["packages"]]
        pinning = row["pinning"].format(branch=b) if row["pinning"] else None
        return {
            "packages": names,
            "pinning": pinning,
            "version": version_glob(b, version),
            "version_regex": version_regex(b, version),
            "hold": names + ([pinning] if pinning else []),
            "selection": CATALOGUE["driver_selection_packages"][layout],
            "modules": modules,
            "package_flavor": package_flavor,
            "source": row["source"],
        }
    return None


def distro_driver_packages(
    layout: str,
    branch: Any,
    modules: str,
    release: Optional[str] = None,
    version: Optional[str] = None,
) -> Optional[Dict[str, Any]]:
    """The distribution's own driver packages (install method ``distro``).

    None when the distribution has no such package (Debian serves one branch per release,
    checked when ``release`` is given).
    """
    row = CATALOGUE["distro_driver_packages"].get(layout)
    if row is None or not row.get(modules):
        return None
    b = int(driver_branch(branch))
    served = (row.get("branches") or {}).get(str(release).split(".")[0]) if release else None
    if served and int(served) != b:
        return None
    names = [p.format(branch=b) for p in row[modules]]
    companions = [p.format(branch=b) for p in row.get("companions") or []]
    return {
        "packages": names,
        # Installed at the branch (their own version numbers), held with the driver.
        "companions": companions,
        "companion_version": version_glob(b, None),
        "pinning": None,
        "version": version_glob(b, version),
        "version_regex": version_regex(b, version),
        "hold": names + companions,
        "selection": CATALOGUE["driver_selection_packages"][layout],
        "components": list(row["components"]),
        "suites": list(row["suites"]),
        "served_branch": served,
        "served": distro_driver_served(layout, release),
        "source": row["source"],
    }


def distro_driver_served(layout: str, release: Optional[str]) -> List[Dict[str, Any]]:
    """Per suite, the driver version the distribution's archive served (catalogue's record)."""
    row = CATALOGUE["distro_driver_packages"].get(layout) or {}
    if not release:
        return []
    return list((row.get("served") or {}).get(str(release).split(".")[0]) or [])


def distro_toolkit(distribution: str, release: Optional[str]) -> Optional[Dict[str, Any]]:
    """The distribution's own CUDA toolkit package for a release (cuda role, method distro)."""
    layout = str(distribution or "").lower()
    rows = CATALOGUE["distro_toolkit_packages"].get(layout) or {}
    row = rows.get(str(release or "").split(".")[0])
    if not row:
        return None
    # The suites whose entries get the component: the same rule as the driver's packages.
    return {**row, "suites": list(CATALOGUE["distro_driver_packages"][layout]["suites"])}


def distro_toolkit_plan(
    distribution: str, release: Optional[str], cuda: Optional[str], extra: List[Any]
) -> Tuple[Optional[Dict[str, Any]], List[Dict[str, Any]]]:
    """The distro toolkit for ``cuda`` on this release, or the problems that stop it.

    A distribution ships one toolkit per release, in its own layout (nvcc in /usr/bin):
    the requested version must be that one, and no second toolkit fits beside it.
    """
    row = distro_toolkit(distribution, release)
    known = ", ".join(
        f"{d.title()} {r} (CUDA {t['cuda']})"
        for d, rows in sorted(CATALOGUE["distro_toolkit_packages"].items())
        for r, t in sorted(rows.items())
    )
    if row is None:
        return None, [
            _problem(
                "toolkit-not-in-distribution",
                f"{distribution} {release} has no CUDA toolkit package in the vendor catalogue "
                f"(known: {known}); use cuda_install_method: cuda_repo.",
                ["cuda_install_method: cuda_repo"],
            )
        ]
    problems: List[Dict[str, Any]] = []
    if cuda and _mm(cuda) != row["cuda"]:
        problems.append(
            _problem(
                "toolkit-not-in-distribution",
                f"{distribution} {release} ships CUDA {row['cuda']} "
                f"({row['package']} {row['version']}), not {_mm(cuda)}; set cuda_version to "
                f'"{row["cuda"]}", or use cuda_install_method: cuda_repo for NVIDIA\'s toolkits.',
                [f'cuda_version: "{row["cuda"]}"', "cuda_install_method: cuda_repo"],
            )
        )
    if extra:
        problems.append(
            _problem(
                "distro-toolkit-is-single",
                f"the distribution's toolkit is one package ({row['package']}); "
                f"cuda_versions_extra ({', '.join(map(str, extra))}) needs "
                "cuda_install_method: cuda_repo.",
                ["cuda_versions_extra: []"],
            )
        )
    return row, problems


def driver_package_choices(layout: str, branch: Any) -> List[Tuple[str, str]]:
    """(modules, package_flavor) combinations the layout has for a branch."""
    b = int(driver_branch(branch))
    return [
        (row["modules"], row["package_flavor"])
        for row in DRIVER_PACKAGES
        if row["layout"] == layout and _branch_row_matches(row, b)
    ]


def toolkit_packages(layout: str, cuda_versions: List[Any]) -> List[str]:
    """cuda-toolkit-X-Y for each toolkit (never the ``cuda`` metapackage)."""
    pattern = CATALOGUE["toolkit_packages"][layout]
    out = []
    for cuda in cuda_versions:
        major, minor = _mm(cuda).split(".")
        out.append(pattern.format(major=major, minor=minor))
    return out


def fabric_manager_packages(branch: Any, driver_version: Optional[str] = None) -> Dict[str, Any]:
    """The fabric manager packages of a branch, at the exact driver version when known."""
    b = int(driver_branch(branch))
    row = next(r for r in CATALOGUE["fabric_manager_packages"] if _branch_row_matches(r, b))
    nvlink5 = CATALOGUE["nvlink5_packages"]
    return {
        "packages": [p.format(branch=b) for p in row["packages"]],
        "version": f"{driver_version}-*" if driver_version else f"{b}.*",
        "nvlink5_packages": list(nvlink5["packages"]) if _branch_row_matches(nvlink5, b) else [],
        "nvlink5_kernel_modules": list(nvlink5["kernel_modules"]),
    }


def module_options(gpus: Optional[List[Any]], branch: Any) -> List[Dict[str, Any]]:
    """The kernel-module options the GPUs' platform needs on this branch (catalogue rows).

    Each: module, option, value, the modprobe.d ``line``, the module's own default, why
    (which GPU it is for) and the source. The driver role writes them; nothing here does.
    """
    b = int(driver_branch(branch))
    found = [_gpu_dict(g) for g in (gpus or [])]
    out: List[Dict[str, Any]] = []
    for row in KERNEL_MODULE_OPTIONS:
        if not _branch_row_matches(row, b):
            continue
        hit = next(
            (
                (i, gpu)
                for i, gpu in enumerate(found)
                if any(_name_has(gpu, token) for token in row["tokens"])
            ),
            None,
        )
        if hit is None:
            continue
        out.append(
            {
                "module": row["module"],
                "option": row["option"],
                "value": row["value"],
                "line": f"options {row['module']} {row['option']}={row['value']}",
                "module_default": row["module_default"],
                "why": f"{_label(hit[1], hit[0])} is a {row['platform']}: {row['why']}",
                "source": row["source"],
            }
        )
    return out


def _flavor_choice(
    repo: str,
    layout: str,
    branch: Any,
    flavour: str,
    may_use_proprietary: bool,
    version: Optional[str],
) -> Tuple[Optional[Dict[str, Any]], str, str]:
    """nvidia_driver_package_flavor ``auto``: (driver packages, module flavour, why).

    cuda-drivers where the repository serves it with the module flavour; else, when the
    flavour is only NVIDIA's default for the branch (``may_use_proprietary``), cuda-drivers
    with the proprietary modules, as the default flavour planned before ``auto``; else the
    first other flavour that serves the module flavour. (None, flavour, "") when none does.
    """
    b = driver_branch(branch)
    preferred = PACKAGE_FLAVORS[0]
    driver = driver_packages(layout, branch, flavour, preferred, version)
    if driver is not None:
        return (
            driver,
            flavour,
            f"nvidia_driver_package_flavor auto: {repo} serves {preferred} (the CUDA driver "
            f"metapackage) with the {flavour} kernel modules for branch {b}",
        )
    if may_use_proprietary:
        driver = driver_packages(layout, branch, "proprietary", preferred, version)
        if driver is not None:
            return (
                driver,
                "proprietary",
                f"nvidia_driver_package_flavor auto: {repo} has no {flavour}-module {preferred} "
                f"packages of branch {b} and no GPU here needs the {flavour} modules, so "
                f"{preferred} with the proprietary ones",
            )
    for other in PACKAGE_FLAVORS[1:]:
        driver = driver_packages(layout, branch, flavour, other, version)
        if driver is not None:
            return (
                driver,
                flavour,
                f"nvidia_driver_package_flavor auto: {repo} has no {flavour}-module {preferred} "
                f"packages of branch {b}; {other} serves the {flavour} kernel modules",
            )
    return None, flavour, ""


def plan_packages(
    repo: Optional[str],
    branch: Optional[str],
    version: Optional[str],
    install_method: str,
    kernel_modules_wanted: str,
    package_flavor: str,
    gpus: Optional[List[Any]],
    cuda_versions: List[str],
    release: Optional[str] = None,
) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """The packages of every install step, and the problems that stop them existing.

    ``package_flavor`` is cuda-drivers, nvidia-driver or auto (see _flavor_choice); the
    driver's ``package_flavor`` and ``why`` say which flavour the plan installs and why.
    """
    problems: List[Dict[str, Any]] = []
    row = repository(repo)
    layout = row["layout"] if row else None
    result: Dict[str, Any] = {
        "layout": layout,
        "driver": None,
        "toolkit": [],
        "kernel_modules": None,
        "persistenced": CATALOGUE["persistenced"],
    }
    if layout and cuda_versions:
        result["toolkit"] = toolkit_packages(layout, cuda_versions)
    if not branch:
        return result, problems
    flavour, why, module_problems = kernel_modules(kernel_modules_wanted, gpus, branch)
    problems.extend(module_problems)
    result["kernel_modules"] = {"flavour": flavour, "why": why}
    result["fabric_manager"] = fabric_manager_packages(
        branch, version.split("-")[0] if version else None
    )
    result["module_options"] = module_options(gpus, branch)
    if not layout or flavour is None:
        return result, problems
    if install_method == "distro":
        driver = distro_driver_packages(layout, branch, flavour, release, version)
        if driver is None:
            served = (CATALOGUE["distro_driver_packages"][layout].get("branches") or {}).get(
                str(release)
            )
            hint = (
                f"{row['distribution']} {release} serves branch {served} only; set "
                f"nvidia_driver_branch to {served}, or use nvidia_driver_install_method: cuda_repo"
                if served
                else "use nvidia_driver_install_method: cuda_repo"
            )
            problems.append(
                _problem(
                    "driver-packages-not-in-distribution",
                    f"{row['distribution']} {release} has no {flavour}-module driver package of "
                    f"branch {driver_branch(branch)}; {hint}.",
                    [f'nvidia_driver_branch: "{served}"']
                    if served
                    else ["nvidia_driver_install_method: cuda_repo"],
                )
            )
    else:
        needs_open = any(_needs_open(_gpu_dict(g)) for g in (gpus or []))
        may_use_proprietary = (
            kernel_modules_wanted == "auto"
            and flavour == "open"
            and not needs_open
            and not any(p["code"] == "gpu-cannot-run-open-modules" for p in module_problems)
        )
        if package_flavor == "auto":
            driver, chosen, flavor_why = _flavor_choice(
                str(repo), layout, branch, flavour, may_use_proprietary, version
            )
            if chosen != flavour:
                why = f"{why}, but {flavor_why.split(': ', 1)[1]}"
                flavour = chosen
                result["kernel_modules"] = {"flavour": flavour, "why": why}
            if driver is not None:
                driver["why"] = flavor_why
        else:
            driver = driver_packages(layout, branch, flavour, package_flavor, version)
            if driver is None and may_use_proprietary:
                fallback = driver_packages(layout, branch, "proprietary", package_flavor, version)
                if fallback is not None:
                    driver, flavour = fallback, "proprietary"
                    why = (
                        f"{why}, but {repo} has no open-module {package_flavor} packages of "
                        f"branch {driver_branch(branch)}; nvidia_driver_package_flavor "
                        "nvidia-driver has them"
                    )
                    result["kernel_modules"] = {"flavour": flavour, "why": why}
            if driver is not None:
                driver["why"] = f"nvidia_driver_package_flavor is {package_flavor}"
        if driver is None:
            choices = driver_package_choices(layout, branch)
            offered = ", ".join(f"{m}/{f}" for m, f in choices) or "none"
            if package_flavor == "auto":
                problems.append(
                    _problem(
                        "driver-packages-not-in-repository",
                        f"NVIDIA's {repo} repository has no {flavour}-module packages of branch "
                        f"{driver_branch(branch)} in any package flavour (it offers, as "
                        f"modules/flavour: {offered}).",
                        [],
                    )
                )
            else:
                others = [f for m, f in choices if m == flavour and f != package_flavor]
                fix = [f"nvidia_driver_package_flavor: {others[0]}"] if others else []
                problems.append(
                    _problem(
                        "driver-packages-not-in-repository",
                        f"NVIDIA's {repo} repository has no {flavour}-module packages of branch "
                        f"{driver_branch(branch)} with nvidia_driver_package_flavor "
                        f"{package_flavor} (it offers, as modules/flavour: {offered})"
                        + (f"; set {fix[0]} (or auto, which picks it)." if fix else "."),
                        fix,
                    )
                )
    result["driver"] = driver
    return result, problems


# ---------------------------------------------------------------------------
# Python packages
# ---------------------------------------------------------------------------


def _requires_python_ok(spec: str, python: str) -> bool:
    """A Requires-Python of the simple forms PyPI uses here (">=3.10", ">=3.8,<4")."""
    py = parse_version(python)[:2]
    for part in spec.split(","):
        part = part.strip()
        match = re.match(r"^(>=|<=|>|<|==|!=)\s*([0-9.]+)$", part)
        if not match:
            raise ValueError(f"unsupported Requires-Python {spec!r}")
        op, ver = match.groups()
        v = parse_version(ver)[:2]
        v = v + (0,) * (2 - len(v))
        ok = {
            ">=": py >= v,
            "<=": py <= v,
            ">": py > v,
            "<": py < v,
            "==": py == v,
            "!=": py != v,
        }[op]
        if not ok:
            return False
    return True


def python_package_releases(name: str) -> List[Dict[str, str]]:
    return list(PYTHON_PACKAGES.get(name) or [])


def python_package_supports(name: str, version: str, python: str) -> Optional[bool]:
    """Whether ``name==version`` has wheels for ``python``; None when not in the catalogue."""
    for row in python_package_releases(name):
        if row["version"] == version:
            return _requires_python_ok(row["requires_python"], python)
    return None


def python_package_pin(name: str, python: str) -> Optional[str]:
    """The newest catalogued release of ``name`` whose wheels suit ``python``."""
    for row in python_package_releases(name):
        if _requires_python_ok(row["requires_python"], python):
            return row["version"]
    return None


def python_package_problem(
    name: str, version: str, python: str, variable: str
) -> Optional[Dict[str, Any]]:
    """A problem when a pinned release can't be installed into ``python``."""
    if python_package_supports(name, version, python) is not False:
        return None
    row = next(r for r in python_package_releases(name) if r["version"] == version)
    pick = python_package_pin(name, python)
    advice = (
        f'set {variable}: "{pick}" (or leave it empty to derive it)'
        if pick
        else ("no catalogued release suits it")
    )
    return _problem(
        "python-package-needs-newer-python",
        f"{name} {version} requires Python {row['requires_python']}, but the interpreter is "
        f"Python {_mm(python)}; {advice}.",
        [f'{variable}: "{pick}"'] if pick else [],
    )


# ---------------------------------------------------------------------------
# The whole plan
# ---------------------------------------------------------------------------


def _problem(code: str, message: str, fix: List[str]) -> Dict[str, Any]:
    return {"code": code, "message": message, "fix": fix}


def check_plan(
    plan: Dict[str, Any],
    gpus: Optional[List[Any]] = None,
    repo: Optional[str] = None,
    arch: Optional[str] = None,
    today: Optional[datetime.date] = None,
) -> List[Dict[str, Any]]:
    """check_stack with fixes that exist in ``repo``, plus what the repository lacks."""
    advisor = RepositoryAdvisor(repo, today) if repo else None
    stack_keys = {k: v for k, v in plan.items() if k != "cuda_versions_extra"}
    problems = check_stack(stack_keys, gpus, advisor)
    seen = {(p["code"], p["message"]) for p in problems}
    for problem in repository_problems(plan, repo, arch, today):
        if (problem["code"], problem["message"]) not in seen:
            problems.append(problem)
    return problems
