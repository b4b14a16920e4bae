"""Kindling's GPU software-stack compatibility decisions.

Pure functions over the compatibility tables of the vendor catalogue
(data/vendor_catalogue.yml, generated into module_utils/vendor_catalogue.py), which is
the only place the facts are written: roles, modules and tests look them up through the
functions below (the modules import this file as ``ansible.module_utils.gpu_compat``).

Every row (or, where a whole table comes from one place, the table) names its
source in a ``source`` string, resolved from the catalogue's ``sources``. Facts
marked ``[unverified]`` were not stated by the source that was read; they are kept
out of decisions where they matter (for example, wheel arch lists that no source
confirmed are ``None`` rather than guessed).

Runs on target hosts: Python 3.8 compatible, standard library only.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible.module_utils.vendor_catalogue import CATALOGUE

# ---------------------------------------------------------------------------
# The tables, as read from the vendor catalogue (data/vendor_catalogue.yml, generated
# into module_utils/vendor_catalogue.py). Each row's ``source`` is its citation.
# ---------------------------------------------------------------------------

#: One row per toolkit release (full X.Y.Z). ``release`` is NVIDIA's label.
#: The GA row of a minor version is the minimum for that ``X.Y``. There is no 12.7.
CUDA_DRIVER_TABLE: List[Dict[str, Any]] = CATALOGUE["cuda_toolkits"]
# Released, but their minimum drivers not read (data/vendor_catalogue.yml).
CUDA_UNREAD: List[Dict[str, Any]] = CATALOGUE.get("cuda_toolkits_unread") or []

#: CUDA minor-version compatibility: within a toolkit family, an application built
#: with any 1x.y runs (without PTX JIT and some newer features) on a driver at or
#: above the family floor, even if that driver is older than the toolkit's own.
CUDA_MINOR_VERSION_COMPAT: Dict[int, Dict[str, Any]] = {
    int(major): row for major, row in CATALOGUE["cuda_minor_version_compat"].items()
}

#: Data-center driver branches with a known kind (LTSB, PB, NFB) and end of life.
DRIVER_BRANCHES: List[Dict[str, Any]] = [
    row for row in CATALOGUE["driver_lifecycle"] if row["kind"] is not None
]

#: ``first_cuda`` None: older than every toolkit in CUDA_DRIVER_TABLE (all of 11.0+
#: can target it, up to ``last_cuda``). ``last_cuda`` None: current toolkits still do.
COMPUTE_CAPABILITIES: List[Dict[str, Any]] = CATALOGUE["compute_capabilities"]

#: GPU product-name token -> compute capability. Tokens are matched against the
#: name nvidia-smi prints (e.g. "NVIDIA A100-SXM4-40GB", "Tesla V100-SXM2-16GB"),
#: case-insensitively, longest token first; see compute_capability_for().
GPU_PRODUCTS: List[Dict[str, str]] = [
    dict(row, source=CATALOGUE["gpu_products"]["source"])
    for row in CATALOGUE["gpu_products"]["rows"]
]

_ARCH_BY_MAJOR = {3: "Kepler", 5: "Maxwell", 6: "Pascal", 9: "Hopper", 10: "Blackwell"}
_ARCH_BY_MAJOR.update({11: "Blackwell", 12: "Blackwell"})

#: One row per torch minor series. ``releases`` maps each torch patch release to
#: its matching torchvision (None: PyPI has none for it yet). Python range is inclusive;
#: ``python_experimental`` lists versions with experimental wheels (accepted by
#: check_stack); ``pypi_default``, where known, is the variant PyPI's wheel is. Each
#: variant: bundled CUDA, official TORCH_CUDA_ARCH_LIST (None = not confirmed by a
#: source), bundled cuDNN and NCCL, and ``experimental`` (never suggested by best_variant).
TORCH_RELEASES: List[Dict[str, Any]] = CATALOGUE["torch_releases"]

#: cuDNN major -> CUDA versions it has builds for (inclusive range).
CUDNN_CUDA_SUPPORT: Dict[int, Dict[str, Any]] = {
    int(major): row for major, row in CATALOGUE["cudnn_cuda_support"].items()
}

#: cuDNN 9 releases ``first``..``last`` (inclusive; ``last`` None: the current line) and the
#: CUDA majors they are built for: 9.11 dropped CUDA 11, 9.12 added CUDA 13.
CUDNN_CUDA_MAJORS: List[Dict[str, Any]] = CATALOGUE.get("cudnn_cuda_majors", [])

#: Known cuDNN builds and the CUDA they were packaged for (apt: ``+cuda<X.Y>`` for v8).
CUDNN_BUILDS: List[Dict[str, str]] = CATALOGUE["cudnn_builds"]

#: apt names of cuDNN's packages per cuDNN major.
CUDNN_APT_NAMING: Dict[int, Dict[str, str]] = {
    int(major): row for major, row in CATALOGUE["cudnn_apt_naming"].items()
}

# ---------------------------------------------------------------------------
# Version helpers
# ---------------------------------------------------------------------------

_BIG = 10**9  # stands in for "newest release of this branch"


def parse_version(version: Any) -> Tuple[int, ...]:
    """Parse "510.47.03", "11.6", "2.11.0+cu130", "8.4.0.27" into a tuple of ints.

    A local suffix after ``+`` is dropped, and each dotted part keeps its leading
    digits ("0a0" -> 0). Raises ValueError when nothing numeric is found.
    """
    text = str(version).strip()
    if text[:1] in ("v", "V"):
        text = text[1:]
    text = text.split("+", 1)[0]
    parts: List[int] = []
    for chunk in text.split("."):
        match = re.match(r"\d+", chunk.strip())
        if not match:
            break
        parts.append(int(match.group(0)))
    if not parts:
        raise ValueError(f"not a version: {version!r}")
    return tuple(parts)


def _pad(a: Sequence[int], n: int) -> Tuple[int, ...]:
    return tuple(a) + (0,) * (n - len(a))


def version_cmp(a: Any, b: Any) -> int:
    """Compare two versions numerically (missing parts count as 0): -1, 0 or 1."""
    ta, tb = parse_version(a), parse_version(b)
    n = max(len(ta), len(tb))
    pa, pb = _pad(ta, n), _pad(tb, n)
    return (pa > pb) - (pa < pb)


def _mm(version: Any) -> str:
    """Major.minor string of a version ("11.6.2" -> "11.6")."""
    parts = parse_version(version)
    return f"{parts[0]}.{parts[1] if len(parts) > 1 else 0}"


def _driver_key(driver: Any) -> Tuple[int, ...]:
    """A driver as a comparable tuple; a bare branch ("510") means its newest release."""
    parts = parse_version(driver)
    if len(parts) == 1:
        return (parts[0], _BIG, _BIG)
    return _pad(parts, 3)


def driver_branch(driver: Any) -> str:
    """The branch (first number) of a driver version: "510.47.03" -> "510"."""
    return str(parse_version(driver)[0])


# ---------------------------------------------------------------------------
# a) functions: CUDA <-> driver
# ---------------------------------------------------------------------------


def known_cuda_versions() -> List[str]:
    """Every CUDA major.minor in the driver table, oldest first."""
    seen: List[str] = []
    for row in reversed(CUDA_DRIVER_TABLE):
        mm = _mm(row["cuda"])
        if mm not in seen:
            seen.append(mm)
    return seen


def cuda_row(cuda: Any) -> Optional[Dict[str, Any]]:
    """The CUDA_DRIVER_TABLE row for a toolkit version, or None when unknown.

    "11.6" (or "11.6.0") gives the GA row; "11.6.2" gives Update 2. A patch level
    newer than any listed maps to the newest listed row of that minor version.
    """
    try:
        parts = parse_version(cuda)
    except ValueError:
        return None
    if len(parts) < 2:
        return None
    mm = f"{parts[0]}.{parts[1]}"
    rows = [r for r in CUDA_DRIVER_TABLE if _mm(r["cuda"]) == mm]
    if not rows:
        return None
    if len(parts) == 2:
        return next(r for r in rows if r["release"] == "GA")
    candidates = [r for r in rows if parse_version(r["cuda"])[2] <= parts[2]]
    if not candidates:
        return next(r for r in rows if r["release"] == "GA")
    return max(candidates, key=lambda r: parse_version(r["cuda"]))


def cuda_unread(cuda: Any) -> Optional[Dict[str, Any]]:
    """The cuda_toolkits_unread row of ``cuda``'s major.minor (a release that exists but whose
    minimum driver the catalogue has not read), or None."""
    try:
        want = parse_version(cuda)[:2]
    except ValueError:
        return None
    for row in CUDA_UNREAD:
        if parse_version(row["cuda"])[:2] == want:
            return row
    return None


def min_driver_for_cuda(cuda: Any) -> Optional[str]:
    """Minimum Linux x86_64 driver for a CUDA toolkit (the GA row's for "X.Y"), or None."""
    row = cuda_row(cuda)
    return row["linux_min_driver"] if row else None


def minor_version_compat_floor(cuda: Any) -> Optional[str]:
    """Family floor under CUDA minor-version compatibility ("11.6" -> "450.80.02")."""
    try:
        major = parse_version(cuda)[0]
    except ValueError:
        return None
    row = CUDA_MINOR_VERSION_COMPAT.get(major)
    return row["min_driver"] if row else None


def driver_supports_cuda(driver: Any, cuda: Any) -> Optional[bool]:
    """True when ``driver`` meets the toolkit minimum of ``cuda``; None if CUDA is unknown.

    ``driver`` is a full version ("510.47.03") or a bare branch ("510"), which
    stands for the newest release of that branch.
    """
    minimum = min_driver_for_cuda(cuda)
    if minimum is None:
        return None
    return _driver_key(driver) >= _pad(parse_version(minimum), 3)


def cuda_for_driver(driver: Any) -> Optional[str]:
    """Highest CUDA major.minor whose GA minimum ``driver`` meets ("580.159.04" -> "13.0")."""
    key = _driver_key(driver)
    best: Optional[str] = None
    for row in CUDA_DRIVER_TABLE:
        if row["release"] != "GA":
            continue
        if key >= _pad(parse_version(row["linux_min_driver"]), 3):
            mm = _mm(row["cuda"])
            if best is None or version_cmp(mm, best) > 0:
                best = mm
    return best


# ---------------------------------------------------------------------------
# b) functions: compute capability
# ---------------------------------------------------------------------------


def normalize_cc(cc: Any) -> Optional[str]:
    """Normalise "9.0", 9.0, "90", "sm_90", "sm_90a", "compute_120" to "X.Y"; None if not one."""
    if cc is None:
        return None
    if isinstance(cc, (tuple, list)) and len(cc) == 2:
        return f"{int(cc[0])}.{int(cc[1])}"
    text = str(cc).strip().lower()
    match = re.match(r"^(?:sm_|compute_)?(\d+)\.(\d+)$", text)
    if match:
        return f"{int(match.group(1))}.{int(match.group(2))}"
    match = re.match(r"^(?:sm_|compute_)?(\d{2,3})[a-z]?$", text)
    if match:
        digits = match.group(1)
        return f"{int(digits[:-1])}.{int(digits[-1])}"
    match = re.match(r"^(\d+)$", text)
    if match:
        return f"{int(match.group(1))}.0"
    return None


def _cc_tuple(cc: Any) -> Tuple[int, int]:
    norm = normalize_cc(cc)
    if norm is None:
        raise ValueError(f"not a compute capability: {cc!r}")
    major, minor = norm.split(".")
    return int(major), int(minor)


def sm_name(cc: Any) -> Optional[str]:
    """The SM target name of a compute capability: "9.0" -> "sm_90", "12.0" -> "sm_120"."""
    norm = normalize_cc(cc)
    if norm is None:
        return None
    major, minor = norm.split(".")
    return f"sm_{major}{minor}"


def cc_row(cc: Any) -> Optional[Dict[str, Any]]:
    """The COMPUTE_CAPABILITIES row of ``cc``, or None."""
    norm = normalize_cc(cc)
    for row in COMPUTE_CAPABILITIES:
        if row["cc"] == norm:
            return row
    return None


def architecture_for(cc: Any) -> Optional[str]:
    """Architecture name of a compute capability ("9.0" -> "Hopper"), or None."""
    row = cc_row(cc)
    if row:
        return row["arch"]
    try:
        major, minor = _cc_tuple(cc)
    except ValueError:
        return None
    if major == 7:
        return "Turing" if minor >= 5 else "Volta"
    if major == 8:
        return "Ada" if minor >= 9 else "Ampere"
    return _ARCH_BY_MAJOR.get(major)


def _token_pattern(token: str) -> re.Pattern[str]:
    # Not glued to a letter/digit before, nor to a digit after: "A10" does not match
    # "A100" or "RTX A1000", "B200" does not match "GB200"; "V100" does match "V100S".
    return re.compile(r"(?<![a-z0-9])" + re.escape(token.lower()) + r"(?!\d)")


_PRODUCT_PATTERNS = [
    (p["token"], p["cc"], _token_pattern(p["token"]))
    for p in sorted(GPU_PRODUCTS, key=lambda p: (-len(p["token"]), p["token"]))
]


def gpu_product_for(name: Any) -> Optional[Dict[str, str]]:
    """The GPU_PRODUCTS row whose token matches ``name`` (longest token first), or None."""
    if not name:
        return None
    text = " ".join(str(name).lower().split())
    for token, _cc_value, pattern in _PRODUCT_PATTERNS:
        if pattern.search(text):
            return next(p for p in GPU_PRODUCTS if p["token"] == token)
    return None


def compute_capability_for(name: Any) -> Optional[str]:
    """Compute capability for a GPU name as nvidia-smi prints it ("NVIDIA H200" -> "9.0")."""
    row = gpu_product_for(name)
    return row["cc"] if row else None


def cuda_supports_cc(cuda: Any, cc: Any) -> Optional[bool]:
    """Whether toolkit ``cuda`` can target ``cc``; None when ``cc`` is not in the table."""
    row = cc_row(cc)
    if row is None:
        return None
    if row["first_cuda"] and version_cmp(_mm(cuda), row["first_cuda"]) < 0:
        return False
    return not (row["last_cuda"] and version_cmp(_mm(cuda), row["last_cuda"]) > 0)


def min_cuda_for_cc(cc: Any) -> Optional[str]:
    """First CUDA that can target ``cc`` (None: older than the table, or unknown)."""
    row = cc_row(cc)
    return row["first_cuda"] if row else None


def max_cuda_for_cc(cc: Any) -> Optional[str]:
    """Last CUDA that can target ``cc`` (None: current toolkits still do, or unknown)."""
    row = cc_row(cc)
    return row["last_cuda"] if row else None


# ---------------------------------------------------------------------------
# c) functions: torch wheels and arch lists
# ---------------------------------------------------------------------------


def torch_release(torch_version: Any) -> Optional[Dict[str, Any]]:
    """The TORCH_RELEASES row of a torch version ("1.12.1", "2.11.0+cu130", "2.4"), or None.

    A full version must be a listed patch release; a bare "X.Y" gives the series.
    """
    try:
        parts = parse_version(torch_version)
    except ValueError:
        return None
    if len(parts) < 2:
        return None
    series = f"{parts[0]}.{parts[1]}"
    for row in TORCH_RELEASES:
        if row["series"] != series:
            continue
        if len(parts) == 2:
            return row
        full = ".".join(str(x) for x in parts[:3])
        return row if full in row["releases"] else None
    return None


def torch_variant(torch_version: Any, variant: str) -> Optional[Dict[str, Any]]:
    """The wheel variant dict (cuda, arch_list, cudnn) of a torch release, or None."""
    row = torch_release(torch_version)
    if row is None or not variant:
        return None
    return row["variants"].get(str(variant).strip().lower())


def torch_local_variant(torch_version: Any) -> Optional[str]:
    """The local tag of a torch version string: "2.11.0+cu130" -> "cu130", else None."""
    text = str(torch_version or "")
    return text.split("+", 1)[1] if "+" in text else None


def variant_for_cuda(cuda: Any) -> str:
    """Wheel tag for a CUDA version: "11.6" -> "cu116", "13.0" -> "cu130"."""
    parts = parse_version(cuda)
    return f"cu{parts[0]}{parts[1] if len(parts) > 1 else 0}"


def torchvision_for(torch_version: Any) -> Optional[str]:
    """Matching torchvision of a torch patch release ("1.12.1" -> "0.13.1"), or None."""
    row = torch_release(torch_version)
    if row is None:
        return None
    parts = parse_version(torch_version)
    if len(parts) < 3:
        return None
    return row["releases"].get(".".join(str(x) for x in parts[:3]))


def latest_torch_release(series_row: Dict[str, Any]) -> str:
    """Newest patch release of a TORCH_RELEASES row."""
    return max(series_row["releases"], key=parse_version)


def expand_arch_list(arch_list: Any) -> List[str]:
    """TORCH_CUDA_ARCH_LIST ("7.0;8.0+PTX") or get_arch_list() entries -> sm_/compute_ names."""
    if arch_list is None:
        return []
    items: List[str] = []
    if isinstance(arch_list, str):
        raw: List[Any] = arch_list.replace(",", ";").replace(" ", ";").split(";")
    else:
        raw = list(arch_list)
    for item in raw:
        text = str(item).strip()
        if not text:
            continue
        lower = text.lower()
        if lower.startswith(("sm_", "compute_")):
            items.append(lower)
            continue
        ptx = lower.endswith("+ptx")
        base = lower[:-4] if ptx else lower
        name = sm_name(base)
        if name is None:
            continue
        items.append(name)
        if ptx:
            items.append(name.replace("sm_", "compute_", 1))
    return items


def arch_coverage(arch_list: Any, cc: Any) -> Optional[str]:
    """How ``arch_list`` serves a GPU of capability ``cc``; None when it does not.

    Returns the covering entry: an exact ``sm_XY`` (or ``sm_XYa``); a lower
    ``sm_XW`` of the same major (cubins run on any X.z with z >= w); or a
    ``compute_XY`` PTX entry at or below ``cc`` (JIT-compiled by the driver).
    Arch-specific ``a`` targets only serve their exact capability.
    """
    try:
        major, minor = _cc_tuple(cc)
    except ValueError:
        return None
    exact: Optional[str] = None
    binary: Optional[str] = None
    binary_minor = -1
    ptx: Optional[str] = None
    for entry in expand_arch_list(arch_list):
        match = re.match(r"^(sm|compute)_(\d+)([a-z]?)$", entry)
        if not match:
            continue
        kind, digits, suffix = match.groups()
        e_major, e_minor = int(digits[:-1]), int(digits[-1])
        if kind == "sm":
            if (e_major, e_minor) == (major, minor):
                exact = exact or entry
            elif not suffix and e_major == major and e_minor < minor and e_minor > binary_minor:
                binary, binary_minor = entry, e_minor  # the nearest lower minor wins
        elif (e_major, e_minor) == (major, minor) or (
            not suffix and (e_major, e_minor) < (major, minor)
        ):
            ptx = ptx or entry  # PTX JIT-compiles for the same or any newer capability
    return exact or binary or ptx


def arch_list_covers(arch_list: Any, cc: Any) -> bool:
    """True when a torch/wheel arch list can run kernels on ``cc`` (see arch_coverage)."""
    return arch_coverage(arch_list, cc) is not None


def wheel_covers_cc(torch_version: Any, variant: str, cc: Any) -> Optional[bool]:
    """Whether an official wheel serves ``cc``: by its arch list when known, else by CUDA.

    None when the release/variant or the capability is unknown.
    """
    wheel = torch_variant(torch_version, variant)
    if wheel is None:
        return None
    if wheel["arch_list"]:
        return arch_list_covers(wheel["arch_list"], cc)
    return cuda_supports_cc(wheel["cuda"], cc)


def python_in_range(torch_version: Any, python_version: Any) -> Optional[bool]:
    """Whether torch publishes wheels for ``python_version`` (incl. experimental ones)."""
    row = torch_release(torch_version)
    if row is None:
        return None
    py = _mm(python_version)
    if py in row["python_experimental"]:
        return True
    return version_cmp(py, row["python_min"]) >= 0 and version_cmp(py, row["python_max"]) <= 0


# ---------------------------------------------------------------------------
# d) functions: cuDNN
# ---------------------------------------------------------------------------


def cudnn_supports_cuda(cudnn_version: Any, cuda: Any) -> Optional[bool]:
    """Whether ``cudnn_version`` has builds for ``cuda``; None if unknown.

    The release's own CUDA majors (CUDNN_CUDA_MAJORS) where the catalogue has them, within
    the range of its cuDNN major (CUDNN_CUDA_SUPPORT).
    """
    try:
        major = parse_version(cudnn_version)[0]
        cuda_t = parse_version(cuda)
    except ValueError:
        return None
    row = CUDNN_CUDA_SUPPORT.get(major)
    if row is None:
        return None
    if version_cmp(_mm(cuda), row["cuda_min"]) < 0:
        return False
    if cuda_t[0] > row["cuda_max_major"]:
        return False
    release = cudnn_release_majors(cudnn_version)
    if release is not None:
        return cuda_t[0] in release["cuda_majors"]
    return True


def cudnn_release_majors(cudnn_version: Any) -> Optional[Dict[str, Any]]:
    """The CUDNN_CUDA_MAJORS row whose releases include ``cudnn_version`` ("9.14"), or None."""
    try:
        parse_version(cudnn_version)
    except ValueError:
        return None
    for row in CUDNN_CUDA_MAJORS:
        if version_cmp(cudnn_version, row["first"]) < 0:
            continue
        if row["last"] is not None and version_cmp(cudnn_version, row["last"]) > 0:
            continue
        return row
    return None


def newest_cudnn_for_cuda_major(cuda_major: int) -> Optional[str]:
    """The last cuDNN release built for CUDA ``cuda_major`` where that line has ended, else None.

    ``newest_cudnn_for_cuda_major(11)`` is "9.10.2.21"; a CUDA major that current releases
    still serve gives None (the newest is whatever NVIDIA ships next).
    """
    rows = [r for r in CUDNN_CUDA_MAJORS if int(cuda_major) in r["cuda_majors"]]
    if not rows or any(r["last"] is None for r in rows):
        return None
    return max((r["last"] for r in rows), key=parse_version)


def cudnn_build_for(cudnn_version: Any) -> Optional[Dict[str, str]]:
    """The CUDNN_BUILDS row whose version starts with ``cudnn_version`` ("8.4.0"), or None."""
    try:
        want = parse_version(cudnn_version)
    except ValueError:
        return None
    for row in CUDNN_BUILDS:
        have = parse_version(row["cudnn"])
        if have[: len(want)] == want:
            return row
    return None


def suggest_cudnn_for_cuda(cuda: Any) -> Optional[str]:
    """A known cuDNN (X.Y.Z) packaged for ``cuda``: same X.Y first, else same CUDA major."""
    try:
        mm = _mm(cuda)
        major = parse_version(cuda)[0]
    except ValueError:
        return None
    exact = [r for r in CUDNN_BUILDS if r["cuda"] == mm]
    same_major = [r for r in CUDNN_BUILDS if parse_version(r["cuda"])[0] == major]
    pool = exact or same_major
    if not pool:
        return None
    best = max(pool, key=lambda r: parse_version(r["cudnn"]))
    return ".".join(str(p) for p in parse_version(best["cudnn"])[:3])


def _cudnn_other_majors(naming: Mapping[str, Any], fmt: Mapping[str, Any], major: int) -> List[str]:
    """The same cuDNN major's runtime and dev packages for the other CUDA majors its releases
    were built for (cuDNN 9 names them per CUDA major: libcudnn9-cuda-12, -13). Kindling holds
    the ones it installs, so a move across CUDA majors must release and remove the old ones
    (roles/cuda/tasks/cudnn-apt.yml); none where the names do not carry the CUDA major."""
    if "{cuda_major}" not in naming["runtime"]:
        return []
    majors = sorted(
        {
            int(m)
            for row in CUDNN_CUDA_MAJORS
            if parse_version(row["first"])[0] == major
            for m in row["cuda_majors"]
        }
        - {fmt["cuda_major"]}
    )
    return [
        naming[kind].format(**dict(fmt, cuda_major=other))
        for other in majors
        for kind in ("runtime", "dev")
    ]


def cudnn_packages(cudnn_version: Any, cuda_version: Any) -> Dict[str, Any]:
    """apt package names and version pattern of cuDNN ``cudnn_version`` for ``cuda_version``.

    ``cudnn_packages("8.4.0", "11.6")`` gives libcudnn8 at 8.4.0.27-1+cuda11.6 (and -dev);
    cuDNN 9 uses CUDA-major-suffixed names (``libcudnn9-cuda-12=<ver>-1``). When the
    4-part build number is unknown the version is a glob ("8.4.1.*-1+cuda11.6").
    Raises ValueError when the cuDNN major has no builds for that CUDA.
    """
    parts = parse_version(cudnn_version)
    major = parts[0]
    naming = CUDNN_APT_NAMING.get(major)
    if naming is None:
        raise ValueError(
            f"cuDNN {cudnn_version}: only cuDNN 8 and 9 apt naming is known "
            "(set cuda_cudnn_version to an 8.x or 9.x release)"
        )
    if not cudnn_supports_cuda(cudnn_version, cuda_version):
        support = CUDNN_CUDA_SUPPORT[major]
        raise ValueError(
            f"cuDNN {cudnn_version} has no packages for CUDA {cuda_version} (cuDNN {major} "
            f"serves CUDA {support['cuda_min']} to {support['cuda_max_major']}.x)"
        )
    build = cudnn_build_for(cudnn_version) if len(parts) < 4 else None
    if len(parts) >= 4:
        full = ".".join(str(p) for p in parts[:4])
        exact = True
    elif build is not None:
        full = build["cudnn"]
        exact = True
    else:
        full = ".".join(str(p) for p in parts[:3]) + ".*"
        exact = False
    cuda_major = parse_version(cuda_version)[0]
    fmt = {"full": full, "cuda_mm": _mm(cuda_version), "cuda_major": cuda_major}
    runtime = naming["runtime"].format(**fmt)
    dev = naming["dev"].format(**fmt)
    version = naming["version"].format(**fmt)
    result: Dict[str, Any] = {
        "cudnn_major": major,
        "runtime": runtime,
        "dev": dev,
        "meta": naming["meta"].format(**fmt) if "meta" in naming else None,
        "version": version,
        "version_exact": exact,
        "apt_version_pattern": version,
        "packages": [f"{runtime}={version}", f"{dev}={version}"],
        "hold": [runtime, dev],
        "replaces": _cudnn_other_majors(naming, fmt, major),
        "source": naming["source"] + ((" ; build: " + build["source"]) if build else ""),
    }
    return result


class Advisor:
    """Where check_stack's fixes come from: which driver branch, which CUDA to suggest.

    This plain one suggests the branch of the minimum driver and the first CUDA that
    works. stack_plan.RepositoryAdvisor suggests only what a repository serves.
    """

    def branch_for(self, min_driver: Any) -> str:
        return driver_branch(min_driver)

    def cuda_from(self, first: Any) -> str:
        return str(first)


# ---------------------------------------------------------------------------
# check_stack: a planned stack + detected GPUs -> every incompatibility
# ---------------------------------------------------------------------------

PLAN_KEYS = (
    "driver_branch",
    "driver_version",
    "cuda_version",
    "cudnn_version",
    "torch_version",
    "torch_cuda_variant",
    "python_version",
)

#: plan key -> the role variable that sets it (used in every ``fix``).
PLAN_VARIABLES = {
    "driver_branch": "nvidia_driver_branch",
    "driver_version": "nvidia_driver_version",
    "cuda_version": "cuda_version",
    "cudnn_version": "cuda_cudnn_version",
    "torch_version": "conda_pytorch_version",
    "torch_cuda_variant": "conda_pytorch_cuda_variant",
    "python_version": "conda_pytorch_python_version",
}

_EXAMPLES = {
    "driver_branch": "580",
    "driver_version": "580.95.05",
    "cuda_version": "13.0",
    "cudnn_version": "9.19.0",
    "torch_version": "2.11.0",
    "python_version": "3.12",
}


def _fix(key: str, value: Any) -> str:
    return f'{PLAN_VARIABLES.get(key, key)}: "{value}"'


def _problem(code: str, message: str, fix: List[str]) -> Dict[str, Any]:
    return {"code": code, "message": message, "fix": fix}


def _clean(value: Any) -> Optional[str]:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _valid_version(value: Optional[str]) -> bool:
    if value is None:
        return False
    try:
        parse_version(value)
    except ValueError:
        return False
    return True


def _by_cuda(
    variants: Dict[str, Dict[str, Any]], stable_only: bool = False
) -> List[Tuple[str, Dict[str, Any]]]:
    items = [kv for kv in variants.items() if not (stable_only and kv[1].get("experimental"))]
    return sorted(items, key=lambda kv: parse_version(kv[1]["cuda"]))


def _resolve_gpus(gpus: Optional[List[Any]]) -> List[Dict[str, Any]]:
    """Group detected GPUs by (name, compute capability), keeping first-seen order."""
    groups: Dict[Tuple[str, Optional[str]], List[Tuple[int, Dict[str, Any]]]] = {}
    for i, gpu in enumerate(gpus or []):
        if not isinstance(gpu, dict):
            gpu = {"name": str(gpu)}
        cc = normalize_cc(gpu.get("compute_capability")) or compute_capability_for(gpu.get("name"))
        groups.setdefault((str(gpu.get("name") or ""), cc), []).append((i, gpu))
    resolved = []
    for (name, cc), entries in groups.items():
        indices = [str(g.get("index", i)) for i, g in entries]
        word = "GPU" if len(indices) == 1 else "GPUs"
        label = f"{name or 'unnamed GPU'} ({word} {','.join(indices)})"
        resolved.append({"name": name, "cc": cc, "label": label, "first": entries[0][0]})
    return resolved


def variants_for_driver(
    row: Dict[str, Any], driver: Optional[str] = None, driver_cuda: Optional[str] = None
) -> List[str]:
    """Stable wheel variants of a torch release that a driver runs, lowest CUDA first.

    ``driver`` is a driver version or branch; without it, ``driver_cuda`` (the CUDA
    version the driver reports, e.g. "11.4") bounds the wheel's CUDA.
    """
    result = []
    for variant, wheel in _by_cuda(row["variants"], stable_only=True):
        if driver:
            ok = bool(driver_supports_cuda(driver, wheel["cuda"]))
        elif driver_cuda:
            ok = version_cmp(wheel["cuda"], driver_cuda) <= 0
        else:
            ok = True
        if ok:
            result.append(variant)
    return result


def best_variant(
    row: Dict[str, Any], cuda: Optional[str] = None, driver: Optional[str] = None
) -> str:
    """The variant of a torch release to suggest: the toolkit's own CUDA, else the newest
    stable one the driver runs, else the newest of the toolkit's CUDA major, else the newest.
    """
    variants = row["variants"]
    if cuda and variant_for_cuda(cuda) in variants:
        return variant_for_cuda(cuda)
    ordered = [v for v, _w in _by_cuda(variants, stable_only=True)] or sorted(variants)
    usable = variants_for_driver(row, driver) if driver else []
    if usable:
        return usable[-1]
    if cuda:
        major = parse_version(cuda)[0]
        same = [v for v in ordered if parse_version(variants[v]["cuda"])[0] == major]
        if same:
            return same[-1]
    return ordered[-1]


def suggest_torch_for_cc(
    cc: str,
    current: Optional[str] = None,
    python: Optional[str] = None,
    driver: Optional[str] = None,
) -> Optional[Tuple[str, str, str]]:
    """(torch, variant, wheel CUDA) of the nearest release at/after ``current`` serving ``cc``.

    Prefers a wheel the planned driver already runs; within a release, the lowest CUDA.
    """
    candidates: List[Tuple[str, str, str, bool]] = []
    for row in TORCH_RELEASES:
        latest = latest_torch_release(row)
        if current and version_cmp(latest, current) < 0:
            continue
        if python and not python_in_range(latest, python):
            continue
        for variant, wheel in _by_cuda(row["variants"], stable_only=True):
            if wheel_covers_cc(latest, variant, cc):
                driver_ok = bool(driver and driver_supports_cuda(driver, wheel["cuda"]))
                candidates.append((latest, variant, wheel["cuda"], driver_ok))
    if not candidates and python:
        return suggest_torch_for_cc(cc, current, None, driver)  # the Python is wrong anyway
    preferred = [c for c in candidates if c[3]] or candidates
    if preferred:
        return preferred[0][:3]
    return newest_torch_for_cc(cc, current, python, driver) if current else None


def newest_torch_for_cc(
    cc: str,
    before: Any,
    python: Optional[str] = None,
    driver: Optional[str] = None,
) -> Optional[Tuple[str, str, str]]:
    """(torch, variant, wheel CUDA) of the newest release before ``before`` that serves ``cc``.

    For a GPU that newer releases dropped (a V100, sm_70, after torch 2.15 removed its cu126
    builds): the newest torch that still serves it. Prefers a wheel the planned driver runs,
    then the lowest CUDA; a Python outside every such release is ignored, as above.
    """
    for row in reversed(TORCH_RELEASES):
        latest = latest_torch_release(row)
        if version_cmp(latest, before) >= 0:
            continue
        if python and not python_in_range(latest, python):
            continue
        found = [
            (
                latest,
                variant,
                wheel["cuda"],
                bool(driver and driver_supports_cuda(driver, wheel["cuda"])),
            )
            for variant, wheel in _by_cuda(row["variants"], stable_only=True)
            if wheel_covers_cc(latest, variant, cc)
        ]
        if found:
            return ([f for f in found if f[3]] or found)[0][:3]
    if python:
        return newest_torch_for_cc(cc, before, None, driver)
    return None


def _check_driver_and_cuda(p: Dict[str, Optional[str]], adv: Advisor) -> List[Dict[str, Any]]:
    problems: List[Dict[str, Any]] = []
    driver = p["driver_version"] or p["driver_branch"]
    cuda = p["cuda_version"]
    if p["driver_version"] and p["driver_branch"]:
        have, want = driver_branch(p["driver_version"]), driver_branch(p["driver_branch"])
        if have != want:
            problems.append(
                _problem(
                    "driver-branch-version-mismatch",
                    f"nvidia_driver_version {p['driver_version']} is not in "
                    f"nvidia_driver_branch {p['driver_branch']}; pin a {want}.x version or set "
                    f"nvidia_driver_branch to {have}.",
                    [_fix("driver_branch", have)],
                )
            )
    if cuda and min_driver_for_cuda(cuda) is None:
        known = known_cuda_versions()
        lower = [v for v in known if version_cmp(v, cuda) <= 0]
        suggestion = lower[-1] if lower else known[0]
        unread = cuda_unread(cuda)
        if unread:
            message = (
                f"CUDA {unread['cuda']} is released (nvidia-cuda-runtime {unread['runtime']} "
                "on PyPI), but the catalogue has not read its minimum driver: "
                f"{unread['min_driver']['unknown']}. No plan with CUDA {cuda} can be checked "
                f"yet; set cuda_version to {suggestion}, the newest it knows (docs/CATALOGUE.md)."
            )
        else:
            message = (
                f"CUDA {cuda} is not in the compatibility table (known: {known[0]} to "
                f"{known[-1]}; there is no 12.7); set cuda_version to a released toolkit "
                f"such as {suggestion}."
            )
        problems.append(
            _problem("unknown-cuda-version", message, [_fix("cuda_version", suggestion)])
        )
    elif cuda and driver and not driver_supports_cuda(driver, cuda):
        need = str(min_driver_for_cuda(cuda))
        fallback = cuda_for_driver(driver)
        fix = [_fix("driver_branch", adv.branch_for(need))]
        if p["driver_version"]:
            fix.append(_fix("driver_version", need))
        floor = minor_version_compat_floor(cuda)
        compat = ""
        if floor and _driver_key(driver) >= _pad(parse_version(floor), 3):
            compat = (
                f" (it is only above the CUDA {parse_version(cuda)[0]}.x minor-version-"
                f"compatibility floor {floor}, which lacks PTX JIT; do not rely on it)"
            )
        alternative = f", or lower cuda_version to {fallback}" if fallback else ""
        problems.append(
            _problem(
                "driver-too-old-for-cuda",
                f"Driver {driver} is too old for CUDA {cuda}, which needs Linux driver >= "
                f"{need}{compat}; raise nvidia_driver_branch to {adv.branch_for(need)} or "
                f"newer{alternative}.",
                fix,
            )
        )
    return problems


def _check_gpus(
    p: Dict[str, Optional[str]], groups: List[Dict[str, Any]], adv: Advisor
) -> List[Dict[str, Any]]:
    problems: List[Dict[str, Any]] = []
    driver = p["driver_version"] or p["driver_branch"]
    cuda = p["cuda_version"] if min_driver_for_cuda(p["cuda_version"] or "") else None
    for group in groups:
        cc, label = group["cc"], group["label"]
        if cc is None:
            problems.append(
                _problem(
                    "unknown-gpu",
                    f"{label} is not in the GPU table and reported no compute capability; the "
                    "checks that need it were skipped (pass its compute_capability, or add the "
                    "product to gpu_compat.GPU_PRODUCTS).",
                    [f'gpus[{group["first"]}].compute_capability: "X.Y"'],
                )
            )
            continue
        row = cc_row(cc)
        if row is None:
            problems.append(
                _problem(
                    "unknown-compute-capability",
                    f"{label} has compute capability {cc}, which is not in the compatibility "
                    "table; the CUDA and wheel checks were skipped for it.",
                    [],
                )
            )
            continue
        arch, sm, first, last = row["arch"], sm_name(cc), row["first_cuda"], row["last_cuda"]
        if cuda and first and version_cmp(_mm(cuda), first) < 0:
            want = adv.cuda_from(first)
            fix = [_fix("cuda_version", want)]
            if driver and not driver_supports_cuda(driver, want):
                fix.append(_fix("driver_branch", adv.branch_for(str(min_driver_for_cuda(want)))))
            problems.append(
                _problem(
                    "cuda-too-old-for-gpu",
                    f"CUDA {cuda} cannot target {label}: compute capability {cc} ({arch}, {sm}) "
                    f"needs CUDA >= {first}; set cuda_version to {want} or newer.",
                    fix,
                )
            )
        elif cuda and last and version_cmp(_mm(cuda), last) > 0:
            problems.append(
                _problem(
                    "cuda-too-new-for-gpu",
                    f"CUDA {cuda} dropped compute capability {cc} ({arch}, {sm}) of {label}; "
                    f"the last CUDA that targets it is {last}, so set cuda_version to {last}.",
                    [_fix("cuda_version", last)],
                )
            )
        need = min_driver_for_cuda(first) if first else None
        if driver and need and not driver_supports_cuda(driver, first):
            problems.append(
                _problem(
                    "driver-too-old-for-gpu",
                    f"Driver {driver} is too old for {label}: compute capability {cc} ({arch}) "
                    f"first runs with CUDA {first}, which needs driver >= {need}; raise "
                    f"nvidia_driver_branch to {adv.branch_for(need)} or newer.",
                    [_fix("driver_branch", adv.branch_for(need))],
                )
            )
    return problems


def _check_cudnn(p: Dict[str, Optional[str]]) -> List[Dict[str, Any]]:
    cudnn, cuda = p["cudnn_version"], p["cuda_version"]
    if not cudnn:
        return []
    major = parse_version(cudnn)[0]
    suggestion = suggest_cudnn_for_cuda(cuda) if cuda else None
    fix = [_fix("cudnn_version", suggestion)] if suggestion else []
    if major not in CUDNN_CUDA_SUPPORT:
        such_as = f" such as {suggestion}" if suggestion else ""
        return [
            _problem(
                "unknown-cudnn-version",
                f"cuDNN {cudnn} is neither cuDNN 8 nor 9, the only ones Kindling installs; set "
                f"cuda_cudnn_version to an 8.x or 9.x release{such_as}.",
                fix,
            )
        ]
    release = cudnn_release_majors(cudnn)
    if (
        cuda
        and min_driver_for_cuda(cuda)
        and release is not None
        and not cudnn_supports_cuda(cudnn, cuda)
    ):
        cuda_major = parse_version(cuda)[0]
        newest = newest_cudnn_for_cuda_major(cuda_major)
        if newest and parse_version(newest)[0] == major:
            suggestion = newest
        target = suggestion or f"a release built for CUDA {cuda_major}"
        span = (
            f"{release['first']} to {release['last']}"
            if release["last"]
            else f"{release['first']} and later"
        )
        majors = " and ".join(str(m) for m in release["cuda_majors"])
        newest_text = f"; the newest cuDNN for CUDA {cuda_major} is {newest}" if newest else ""
        return [
            _problem(
                "cudnn-cuda-mismatch",
                f"cuDNN {cudnn} has no build for CUDA {cuda}: cuDNN {span} is built for "
                f"CUDA {majors} only{newest_text}; set "
                f"cuda_cudnn_version to {target}.",
                [_fix("cudnn_version", target)] if suggestion else [],
            )
        ]
    if cuda and min_driver_for_cuda(cuda) and not cudnn_supports_cuda(cudnn, cuda):
        support = CUDNN_CUDA_SUPPORT[major]
        target = suggestion or f"a release built for CUDA {cuda}"
        return [
            _problem(
                "cudnn-cuda-mismatch",
                f"cuDNN {cudnn} does not match CUDA {cuda}: cuDNN {major} has builds for CUDA "
                f"{support['cuda_min']} to {support['cuda_max_major']}.x only; set "
                f"cuda_cudnn_version to {target}.",
                fix,
            )
        ]
    return []


def _check_torch(
    p: Dict[str, Optional[str]], groups: List[Dict[str, Any]], adv: Advisor
) -> List[Dict[str, Any]]:
    torch = p["torch_version"]
    if not torch:
        return []
    problems: List[Dict[str, Any]] = []
    driver = p["driver_version"] or p["driver_branch"]
    cuda = p["cuda_version"] if min_driver_for_cuda(p["cuda_version"] or "") else None
    python = p["python_version"]
    variant = (p["torch_cuda_variant"] or torch_local_variant(torch) or "").lower() or None

    row = torch_release(torch)
    if row is None:
        oldest = min(TORCH_RELEASES[0]["releases"], key=parse_version)
        newest = latest_torch_release(TORCH_RELEASES[-1])
        return [
            _problem(
                "unknown-torch-version",
                f"torch {torch} is not in the compatibility table (known: {oldest} to "
                f"{newest}); set conda_pytorch_version to a listed release such as {newest}.",
                [_fix("torch_version", newest)],
            )
        ]
    variants = row["variants"]
    if variant == "cpu":
        # Every release has a CPU-only wheel (download.pytorch.org/whl/cpu). It can't use a
        # GPU, so it only fits hosts without one.
        gpu_groups = [g for g in groups if g["cc"] is not None]
        if gpu_groups:
            pick = best_variant(row, cuda, driver)
            problems.append(
                _problem(
                    "torch-cpu-wheel-on-gpu-host",
                    f"The cpu wheel of torch {torch} can't use {gpu_groups[0]['label']} (the "
                    f"CPU-only wheel mistake); set conda_pytorch_cuda_variant to {pick}.",
                    [_fix("torch_cuda_variant", pick)],
                )
            )
        variant = None
        wheel = None
        groups = []
    else:
        wheel = variants.get(variant) if variant else None
    if variant and wheel is None:
        pick = best_variant(row, cuda, driver)
        problems.append(
            _problem(
                "torch-no-wheel-for-variant",
                f"torch {torch} has no {variant} wheel (it ships {', '.join(sorted(variants))}); "
                f"set conda_pytorch_cuda_variant to {pick}.",
                [_fix("torch_cuda_variant", pick)],
            )
        )
    elif variant is None and cuda and variant_for_cuda(cuda) in variants:
        variant = variant_for_cuda(cuda)  # the plan did not say; assume the toolkit's own
        wheel = variants[variant]

    if python and not python_in_range(torch, python):
        py = _mm(python)
        over = version_cmp(py, row["python_max"]) > 0
        nearest = row["python_max"] if over else row["python_min"]
        hint = " (did YAML read 3.10 as 3.1? quote it)" if py == "3.1" else ""
        problems.append(
            _problem(
                "python-unsupported-by-torch",
                f"torch {torch} has wheels for Python {row['python_min']} to "
                f"{row['python_max']}, not {python}{hint}; set conda_pytorch_python_version to "
                f"{nearest} or choose another conda_pytorch_version.",
                [_fix("python_version", nearest)],
            )
        )

    if wheel is not None and driver and not driver_supports_cuda(driver, wheel["cuda"]):
        need = str(min_driver_for_cuda(wheel["cuda"]))
        usable = [v for v, w in _by_cuda(variants) if driver_supports_cuda(driver, w["cuda"])]
        alternative = f", or use conda_pytorch_cuda_variant {usable[-1]}" if usable else ""
        problems.append(
            _problem(
                "driver-too-old-for-torch-wheel",
                f"The torch {torch} {variant} wheel bundles CUDA {wheel['cuda']}, which needs "
                f"driver >= {need}, but the driver is {driver}; raise nvidia_driver_branch to "
                f"{adv.branch_for(need)} or newer{alternative}.",
                [_fix("driver_branch", adv.branch_for(need))],
            )
        )

    if wheel is not None and cuda and parse_version(wheel["cuda"])[0] != parse_version(cuda)[0]:
        major = parse_version(cuda)[0]
        same = [(v, w) for v, w in _by_cuda(variants) if parse_version(w["cuda"])[0] == major]
        # The newest wheel of the toolkit's major that is no newer than the toolkit: a newer
        # one (cu132 for CUDA 13.0) would need a newer driver than the toolkit's.
        fitting = [v for v, w in same if version_cmp(w["cuda"], cuda) <= 0]
        pick = (fitting or [v for v, _ in same])[-1:]
        fix = (
            [_fix("torch_cuda_variant", pick[0])] if pick else [_fix("cuda_version", wheel["cuda"])]
        )
        problems.append(
            _problem(
                "torch-cuda-major-mismatch",
                f"torch {torch} {variant} is built with CUDA {wheel['cuda']} but the toolkit is "
                f"CUDA {cuda}; torch.utils.cpp_extension refuses to build CUDA extensions "
                f"across CUDA majors; set {fix[0]}.",
                fix,
            )
        )

    for group in groups:
        cc = group["cc"]
        if cc is None or cc_row(cc) is None:
            continue
        if wheel is not None:
            covered = wheel_covers_cc(torch, str(variant), cc)
            basis = (
                f"arch list {wheel['arch_list']}" if wheel["arch_list"] else f"CUDA {wheel['cuda']}"
            )
            where = f"the {variant} wheel ({basis})"
        else:
            verdicts = [wheel_covers_cc(torch, v, cc) for v in variants]
            covered = (
                True if any(verdicts) else (False if all(v is False for v in verdicts) else None)
            )
            where = f"none of its wheels ({', '.join(sorted(variants))})"
        if covered is not False:
            continue
        pick = suggest_torch_for_cc(cc, torch, python, driver)
        fix: List[str] = []
        advice = "no listed torch release serves it"
        if pick:
            fix = [_fix("torch_version", pick[0]), _fix("torch_cuda_variant", pick[1])]
            if driver and not driver_supports_cuda(driver, pick[2]):
                fix.append(_fix("driver_branch", adv.branch_for(str(min_driver_for_cuda(pick[2])))))
            advice = (
                f"set conda_pytorch_version to {pick[0]} with conda_pytorch_cuda_variant {pick[1]}"
            )
            if version_cmp(pick[0], torch) < 0:
                advice = (
                    f"no torch from {torch.split('+')[0]} on serves it; the newest torch that "
                    f"still does is "
                    f"{pick[0]} ({pick[1]} wheel): {advice}"
                )
        verb = "does not cover" if wheel is not None else "covers"
        problems.append(
            _problem(
                "torch-arch-not-covered",
                f"torch {torch} cannot run on {group['label']}: {where} {verb} {sm_name(cc)} "
                f"(compute capability {cc}, {architecture_for(cc)}); {advice}.",
                fix,
            )
        )
    return problems


def check_stack(
    plan: Optional[Dict[str, Any]],
    gpus: Optional[List[Any]] = None,
    advisor: Optional[Advisor] = None,
) -> List[Dict[str, Any]]:
    """Every incompatibility in a planned GPU stack, each with a reason and a fix.

    ``plan`` keys (all optional): driver_branch ("510"), driver_version ("510.47.03"),
    cuda_version ("11.6"), cudnn_version ("8.4.0"), torch_version ("1.12.1"),
    torch_cuda_variant ("cu116"), python_version ("3.8"). ``gpus`` is a list of dicts
    with ``name`` and/or ``compute_capability`` (nvidia_smi facts' ``gpus`` fit).

    Returns a list of ``{"code", "message", "fix"}``: ``message`` is one actionable
    sentence with the numbers; ``fix`` lists role variables with suggested values
    (``nvidia_driver_branch: "510"``), meant to be applied together. An empty list
    means no known incompatibility. Unknown GPUs are reported, never raised.
    ``advisor`` picks the branches and CUDA versions the fixes suggest (default: the
    minimum's branch; stack_plan.RepositoryAdvisor: only what a repository serves).
    """
    adv = advisor or Advisor()
    p: Dict[str, Optional[str]] = {k: _clean((plan or {}).get(k)) for k in PLAN_KEYS}
    problems: List[Dict[str, Any]] = []
    for key in PLAN_KEYS:
        if key == "torch_cuda_variant" or p[key] is None or _valid_version(p[key]):
            continue
        problems.append(
            _problem(
                "invalid-version",
                f"{PLAN_VARIABLES[key]} {p[key]!r} is not a version number; set it like "
                f'"{_EXAMPLES[key]}".',
                [_fix(key, _EXAMPLES[key])],
            )
        )
        p[key] = None
    groups = _resolve_gpus(gpus)
    problems.extend(_check_driver_and_cuda(p, adv))
    problems.extend(_check_gpus(p, groups, adv))
    problems.extend(_check_cudnn(p))
    problems.extend(_check_torch(p, groups, adv))
    return problems
