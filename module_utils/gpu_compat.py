"""Kindling's one source of GPU software-stack compatibility truth.

Everything here is plain data plus pure functions over it. No other file in the
project may hold a copy of these tables: roles, modules and tests look facts up
through the functions below (the modules import this file as
``ansible.module_utils.gpu_compat``).

Every row (or, where a whole table comes from one place, the table) names its
source in a ``source`` string. Facts marked ``[unverified]`` were not stated by
the source that was read; they are kept out of decisions where they matter
(for example, wheel arch lists that no source confirmed are ``None`` rather than
guessed).

Runs on target hosts: Python 3.8 compatible, standard library only.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

# ---------------------------------------------------------------------------
# Sources (referenced by the rows below)
# ---------------------------------------------------------------------------

SRC_CTK_TABLE3 = (
    "NVIDIA CUDA Toolkit Release Notes 13.2.2, Table 3 'CUDA Toolkit and Corresponding "
    "Driver Versions' (docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes)"
)
SRC_CTK_TABLE2 = (
    "NVIDIA CUDA Toolkit Release Notes 13.2.2, Table 2 'Minor Version Compatibility'; "
    "docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html; "
    "arrayfire src/backend/cuda/device_manager.cpp @492718b5 (CudaToDriverVersion)"
)
SRC_DC_BRANCHES = (
    "docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html"
)
SRC_LLVM_KEPLER = (
    "llvm/llvm-project commit 0f49116e ('sm_30 and sm_32 were removed in cuda-11.0, sm_35 "
    "and sm_37 were removed in cuda-12.0'); CMake MR !8031"
)
SRC_CTK13_DROP = (
    "CUDA 13.2.2 release notes s2.6.2 (Maxwell/Pascal/Volta offline compilation removed in "
    "CUDA 13.0); pytorch/pytorch#157517; NVIDIA/cuDecomp PR #97"
)
SRC_TURING = (
    "CUDA 13.0 features archive ('supports all architectures from Turing through Grace "
    "Blackwell'); llvm D77670 (SM_75 -> CUDA 10.0)"
)
SRC_AMPERE = "forums.developer.nvidia.com/t/.../276955; llvm D77670"
SRC_ORIN = "CMake MR !8031"
SRC_ADA_HOPPER = "forums.developer.nvidia.com/t/.../276955; CMake MR !8031; gromacs MR 3180"
SRC_BLACKWELL = (
    "NVIDIA Blackwell compatibility guide ('Building Applications Using CUDA Toolkit 12.8'); "
    "pytorch PR #141724; PyTorch cu128 arch list (10.0, 12.0)"
)
SRC_THOR = "CUDA 13.0 features archive ('SM101 has been renumbered as SM110'); cuRANDDx 0.2.1"
SRC_SM103 = (
    "CUDA 12.9 features archive ('adds compiler target support for ... sm_103 ... and sm_121')"
)
SRC_BINARY_COMPAT = (
    "CUDA C++ Programming Guide, 'Binary Compatibility' (a cubin for X.y runs on X.z, z >= y) "
    "and 'Application Compatibility' (PTX is JIT-compiled for any newer compute capability)"
)
SRC_CUDA_GPUS = (
    "developer.nvidia.com/cuda-gpus and developer.nvidia.com/cuda-legacy-gpus "
    "(K80/A30/T4 via the older table mirrored at cnblogs.com/nightnine/p/16591404.html)"
)
SRC_TORCH_PREV = (
    "pytorch.org/get-started/previous-versions; pytorch/pytorch.github.io "
    "_get_started/previous-versions.md @e3f009bb (<= 2.3.1); pytorch/vision README "
    "compatibility table; pytorch/pytorch RELEASE.md 'Release Compatibility Matrix'"
)
SRC_TORCH_NEW = (
    "pytorch/pytorch RELEASE.md 'Release Compatibility Matrix' (copy, rows >= 2.10 not "
    "independently confirmed); data.pyg.org/whl/nightly (CUDA tags)"
)
SRC_ARCH_BUILDER = (
    "pytorch/builder manywheel/build_cuda.sh (release/1.12 @049415d4 .. release/2.5 @aec5fb5d)"
)
SRC_ARCH_28 = (
    "pytorch/pytorch .ci/manywheel/build_cuda.sh @00c7a380 (2.8-era); pytorch/pytorch#157517"
)
SRC_ARCH_MATRIX = "pytorch/pytorch RELEASE.md 'PyTorch CUDA Support Matrix' (copy)"
SRC_H200_CAPTURE = (
    "Kindling H200 capture 2026-11-29 (tests/fixtures/captures/h200/torch-facts.json, "
    "torch-collect-env.txt)"
)
SRC_TORCH_CUDNN = "pytorch/pytorch RELEASE.md 'Release Compatibility Matrix' cuDNN column (copy)"
SRC_CUDNN_IMAGES = (
    "NVIDIA CUDA image Dockerfiles, gitlab.com/nvidia/container-images/cuda "
    "dist/<ver>/<distro>/{runtime,devel}/cudnn*/Dockerfile (NV_CUDNN_VERSION, NV_CUDNN_PACKAGE)"
)
SRC_CUDNN9_NAMES = (
    "NVIDIA CUDA image Dockerfiles (libcudnn9-cuda-12 / libcudnn9-dev-cuda-12); "
    "pytorch/xla PR #6835"
)
SRC_CUDNN_MATRIX = (
    "cuDNN support matrices: docs.nvidia.com/deeplearning/cudnn/archives/cudnn-822 (8.2: CUDA "
    "10.2, 11.0-11.4), cudnn-896 (8.9: CUDA 11.0-11.8, 12.0-12.2), backend/v9.0.0 and "
    "latest (9.x: CUDA 11.x, 12.x); CUDA 13 with cuDNN 9.19 from the H200 capture"
)
SRC_CONDA = "pytorch/pytorch#138506 ('Deprecating PyTorch's official Anaconda channel')"

# ---------------------------------------------------------------------------
# a) CUDA toolkit -> minimum Linux x86_64 driver
# ---------------------------------------------------------------------------


def _ctk(cuda: str, release: str, linux: str, windows: Optional[str]) -> Dict[str, Any]:
    return {
        "cuda": cuda,
        "release": release,
        "linux_min_driver": linux,
        "windows_min_driver": windows,
        "source": SRC_CTK_TABLE3,
    }


#: One row per toolkit release (full X.Y.Z). ``release`` is NVIDIA's label.
#: The GA row of a minor version is the minimum for that ``X.Y``. There is no 12.7.
CUDA_DRIVER_TABLE: List[Dict[str, Any]] = [
    _ctk("13.2.2", "Update 2", "595.71.05", None),
    _ctk("13.2.1", "Update 1", "595.58.03", None),
    _ctk("13.2.0", "GA", "595.45.04", None),
    _ctk("13.1.1", "Update 1", "590.48.01", None),
    _ctk("13.1.0", "GA", "590.44.01", None),
    _ctk("13.0.2", "Update 2", "580.95.05", None),
    _ctk("13.0.1", "Update 1", "580.82.07", None),
    _ctk("13.0.0", "GA", "580.65.06", None),
    _ctk("12.9.1", "Update 1", "575.57.08", "576.57"),
    _ctk("12.9.0", "GA", "575.51.03", "576.02"),
    _ctk("12.8.1", "Update 1", "570.124.06", "572.61"),
    # The 12.8.0 runfile bundles 570.86.10; Table 3 states 570.26, which is the minimum.
    _ctk("12.8.0", "GA", "570.26", "570.65"),
    _ctk("12.6.3", "Update 3", "560.35.05", "561.17"),
    _ctk("12.6.2", "Update 2", "560.35.03", "560.94"),
    _ctk("12.6.1", "Update 1", "560.35.03", "560.94"),
    _ctk("12.6.0", "GA", "560.28.03", "560.76"),
    _ctk("12.5.1", "Update 1", "555.42.06", "555.85"),
    _ctk("12.5.0", "GA", "555.42.02", "555.85"),
    _ctk("12.4.1", "Update 1", "550.54.15", "551.78"),
    _ctk("12.4.0", "GA", "550.54.14", "551.61"),
    _ctk("12.3.1", "Update 1", "545.23.08", "546.12"),
    _ctk("12.3.0", "GA", "545.23.06", "545.84"),
    _ctk("12.2.2", "Update 2", "535.104.05", "537.13"),
    _ctk("12.2.1", "Update 1", "535.86.09", "536.67"),
    _ctk("12.2.0", "GA", "535.54.03", "536.25"),
    _ctk("12.1.1", "Update 1", "530.30.02", "531.14"),
    _ctk("12.1.0", "GA", "530.30.02", "531.14"),
    _ctk("12.0.1", "Update 1", "525.85.12", "528.33"),
    _ctk("12.0.0", "GA", "525.60.13", "527.41"),
    _ctk("11.8.0", "GA", "520.61.05", "520.06"),
    _ctk("11.7.1", "Update 1", "515.48.07", "516.31"),
    _ctk("11.7.0", "GA", "515.43.04", "516.01"),
    _ctk("11.6.2", "Update 2", "510.47.03", "511.65"),
    _ctk("11.6.1", "Update 1", "510.47.03", "511.65"),
    _ctk("11.6.0", "GA", "510.39.01", "511.23"),
    _ctk("11.5.2", "Update 2", "495.29.05", "496.13"),
    _ctk("11.5.1", "Update 1", "495.29.05", "496.13"),
    _ctk("11.5.0", "GA", "495.29.05", "496.04"),
    _ctk("11.4.4", "Update 4", "470.82.01", "472.50"),
    _ctk("11.4.3", "Update 3", "470.82.01", "472.50"),
    _ctk("11.4.2", "Update 2", "470.57.02", "471.41"),
    _ctk("11.4.1", "Update 1", "470.57.02", "471.41"),
    _ctk("11.4.0", "GA", "470.42.01", "471.11"),
    _ctk("11.3.1", "Update 1", "465.19.01", "465.89"),
    _ctk("11.3.0", "GA", "465.19.01", "465.89"),
    _ctk("11.2.2", "Update 2", "460.32.03", "461.33"),
    _ctk("11.2.1", "Update 1", "460.32.03", "461.09"),
    _ctk("11.2.0", "GA", "460.27.03", "460.82"),
    _ctk("11.1.1", "Update 1", "455.32", "456.81"),
    _ctk("11.1.0", "GA", "455.23", "456.38"),
    _ctk("11.0.3", "Update 1", "450.51.06", "451.82"),
    _ctk("11.0.2", "GA", "450.51.05", "451.48"),
    _ctk("11.0.1", "RC", "450.36.06", "451.22"),
]

#: CUDA minor-version compatibility: within a toolkit family, an application built
#: with any 1x.y runs (without PTX JIT and some newer features) on a driver at or
#: above the family floor, even if that driver is older than the toolkit's own.
CUDA_MINOR_VERSION_COMPAT: Dict[int, Dict[str, Any]] = {
    11: {"min_driver": "450.80.02", "max_driver_exclusive": "525", "source": SRC_CTK_TABLE2},
    12: {"min_driver": "525.60.13", "max_driver_exclusive": "580", "source": SRC_CTK_TABLE2},
    13: {"min_driver": "580", "max_driver_exclusive": None, "source": SRC_CTK_TABLE2},
}

#: Data-center driver branches that are still supported (all others are EOL).
DRIVER_BRANCHES: List[Dict[str, Any]] = [
    {"branch": "580", "kind": "LTSB", "eol": "2028-08", "cuda": "13.x", "source": SRC_DC_BRANCHES},
    {"branch": "570", "kind": "PB", "eol": "2026-02", "cuda": "12.x", "source": SRC_DC_BRANCHES},
    {"branch": "535", "kind": "LTSB", "eol": "2026-06", "cuda": "12.x", "source": SRC_DC_BRANCHES},
]

# ---------------------------------------------------------------------------
# b) Compute capability -> first / last CUDA that can target it
# ---------------------------------------------------------------------------


def _cc(
    cc: str, arch: str, first: Optional[str], last: Optional[str], source: str, note: str = ""
) -> Dict[str, Any]:
    row = {"cc": cc, "arch": arch, "first_cuda": first, "last_cuda": last, "source": source}
    if note:
        row["note"] = note
    return row


#: ``first_cuda`` None: older than every toolkit in CUDA_DRIVER_TABLE (all of 11.0+
#: can target it, up to ``last_cuda``). ``last_cuda`` None: current toolkits still do.
COMPUTE_CAPABILITIES: List[Dict[str, Any]] = [
    _cc("3.0", "Kepler", None, "10.2", SRC_LLVM_KEPLER),
    _cc("3.2", "Kepler", None, "10.2", SRC_LLVM_KEPLER),
    _cc("3.5", "Kepler", None, "11.8", SRC_LLVM_KEPLER),
    _cc("3.7", "Kepler", None, "11.8", SRC_LLVM_KEPLER),
    _cc("5.0", "Maxwell", None, "12.9", SRC_CTK13_DROP),
    _cc("5.2", "Maxwell", None, "12.9", SRC_CTK13_DROP),
    _cc("5.3", "Maxwell", None, "12.9", SRC_CTK13_DROP),
    _cc("6.0", "Pascal", None, "12.9", SRC_CTK13_DROP),
    _cc("6.1", "Pascal", None, "12.9", SRC_CTK13_DROP),
    _cc("6.2", "Pascal", None, "12.9", SRC_CTK13_DROP),
    _cc("7.0", "Volta", None, "12.9", SRC_CTK13_DROP),
    _cc("7.2", "Volta", None, "12.9", SRC_CTK13_DROP),
    _cc("7.5", "Turing", "10.0", None, SRC_TURING),
    _cc("8.0", "Ampere", "11.0", None, SRC_AMPERE),
    _cc("8.6", "Ampere", "11.1", None, SRC_AMPERE),
    _cc("8.7", "Ampere", "11.4", None, SRC_ORIN),
    _cc("8.9", "Ada", "11.8", None, SRC_ADA_HOPPER),
    _cc("9.0", "Hopper", "11.8", None, SRC_ADA_HOPPER),
    _cc("10.0", "Blackwell", "12.8", None, SRC_BLACKWELL),
    _cc("10.1", "Blackwell", "12.8", "12.9", SRC_THOR, "renumbered 11.0 (sm_110) in CUDA 13.0"),
    _cc("10.3", "Blackwell", "12.9", None, SRC_SM103),
    _cc("11.0", "Blackwell", "13.0", None, SRC_THOR, "formerly 10.1 (sm_101)"),
    _cc("12.0", "Blackwell", "12.8", None, SRC_BLACKWELL),
    _cc("12.1", "Blackwell", "12.9", None, SRC_SM103),
]

#: GPU product-name token -> compute capability. Tokens are matched against the
#: name nvidia-smi prints (e.g. "NVIDIA A100-SXM4-40GB", "Tesla V100-SXM2-16GB"),
#: case-insensitively, longest token first; see compute_capability_for().
GPU_PRODUCTS: List[Dict[str, str]] = [
    {"token": token, "cc": cc, "source": SRC_CUDA_GPUS}
    for token, cc in (
        ("K80", "3.7"),
        ("P100", "6.0"),
        ("V100", "7.0"),
        ("T4", "7.5"),
        ("A100", "8.0"),
        ("A30", "8.0"),
        ("A10", "8.6"),
        ("A10G", "8.6"),
        ("A40", "8.6"),
        ("RTX 3090", "8.6"),
        ("L4", "8.9"),
        ("L40", "8.9"),
        ("L40S", "8.9"),
        ("RTX 4090", "8.9"),
        ("H100", "9.0"),
        ("H200", "9.0"),
        ("GH200", "9.0"),
        ("B200", "10.0"),
        ("GB200", "10.0"),
        ("B300", "10.3"),
        ("GB300", "10.3"),
        ("RTX 5090", "12.0"),
        ("RTX PRO 6000 Blackwell", "12.0"),
        ("GB10", "12.1"),
    )
]

_ARCH_BY_MAJOR = {3: "Kepler", 5: "Maxwell", 6: "Pascal", 9: "Hopper", 10: "Blackwell"}
_ARCH_BY_MAJOR.update({11: "Blackwell", 12: "Blackwell"})

# ---------------------------------------------------------------------------
# c) PyTorch releases -> wheels
# ---------------------------------------------------------------------------

_AL_KEPLER_AMPERE = "3.7;5.0;6.0;7.0;7.5;8.0;8.6"
_AL_CU118 = "3.7;5.0;6.0;7.0;7.5;8.0;8.6;9.0"
_AL_CU12 = "5.0;6.0;7.0;7.5;8.0;8.6;9.0"
_AL_CU128 = "7.0;7.5;8.0;8.6;9.0;10.0;12.0"
_AL_CU129 = "7.0;7.5;8.0;8.6;9.0;10.0;12.0+PTX"
_AL_CU13 = "7.5;8.0;8.6;9.0;10.0;12.0+PTX"


def _w(
    cuda: str,
    arch: Optional[str],
    arch_src: Optional[str],
    cudnn: Optional[str],
    experimental: bool = False,
) -> Dict[str, Any]:
    """One wheel variant: bundled CUDA, official TORCH_CUDA_ARCH_LIST, bundled cuDNN."""
    return {
        "cuda": cuda,
        "arch_list": arch,  # TORCH_CUDA_ARCH_LIST syntax; None = not confirmed by a source
        "arch_list_source": arch_src,
        "cudnn": cudnn,  # None = not stated by a source
        "experimental": experimental,  # never suggested by best_variant/suggest_torch_for_cc
    }


#: One row per torch minor series. ``releases`` maps each torch patch release to
#: its matching torchvision. Python range is inclusive; ``python_experimental``
#: lists versions with experimental wheels (accepted by check_stack).
TORCH_RELEASES: List[Dict[str, Any]] = [
    {
        "series": "1.12",
        "releases": {"1.12.0": "0.13.0", "1.12.1": "0.13.1"},
        "python_min": "3.7",
        "python_max": "3.10",
        "python_experimental": [],
        "variants": {
            "cu102": _w("10.2", "3.7;5.0;6.0;7.0", SRC_ARCH_BUILDER, "8.3.2.44"),
            "cu113": _w("11.3", _AL_KEPLER_AMPERE, SRC_ARCH_BUILDER, "8.3.2.44"),
            "cu116": _w("11.6", _AL_KEPLER_AMPERE, SRC_ARCH_BUILDER, "8.3.2.44"),
        },
        "conda": "pytorch channel (cudatoolkit 10.2/11.3/11.6; 11.6 needs -c conda-forge)",
        "source": SRC_TORCH_PREV + "; cuDNN: " + SRC_TORCH_CUDNN,
    },
    {
        "series": "1.13",
        "releases": {"1.13.0": "0.14.0", "1.13.1": "0.14.1"},
        "python_min": "3.7",
        "python_max": "3.10",
        "python_experimental": [],
        "variants": {
            "cu116": _w("11.6", _AL_KEPLER_AMPERE, SRC_ARCH_BUILDER, "8.3.2.44"),
            "cu117": _w("11.7", _AL_KEPLER_AMPERE, SRC_ARCH_BUILDER, "8.3.2.44"),
        },
        "conda": "pytorch channel (pytorch-cuda=11.6/11.7 -c pytorch -c nvidia)",
        "source": SRC_TORCH_PREV + "; cuDNN: " + SRC_TORCH_CUDNN,
    },
    {
        "series": "2.0",
        "releases": {"2.0.0": "0.15.1", "2.0.1": "0.15.2"},
        "python_min": "3.8",
        "python_max": "3.11",
        "python_experimental": [],
        "variants": {
            "cu117": _w("11.7", _AL_KEPLER_AMPERE, SRC_ARCH_BUILDER, "8.5.0.96"),
            "cu118": _w("11.8", _AL_CU118, SRC_ARCH_BUILDER, "8.7.0.84"),
        },
        "conda": "pytorch channel",
        "source": SRC_TORCH_PREV + "; cuDNN: " + SRC_TORCH_CUDNN,
    },
    {
        "series": "2.1",
        "releases": {"2.1.0": "0.16.0", "2.1.1": "0.16.1", "2.1.2": "0.16.2"},
        "python_min": "3.8",
        "python_max": "3.11",
        "python_experimental": [],
        "variants": {
            "cu118": _w("11.8", _AL_CU118, SRC_ARCH_BUILDER, "8.7.0.84"),
            "cu121": _w("12.1", _AL_CU12, SRC_ARCH_BUILDER, "8.9.2.26"),
        },
        "conda": "pytorch channel",
        "source": SRC_TORCH_PREV + "; cuDNN: " + SRC_TORCH_CUDNN,
    },
    {
        "series": "2.2",
        "releases": {"2.2.0": "0.17.0", "2.2.1": "0.17.1", "2.2.2": "0.17.2"},
        "python_min": "3.8",
        "python_max": "3.11",
        "python_experimental": ["3.12"],
        "variants": {
            "cu118": _w("11.8", _AL_CU118, SRC_ARCH_BUILDER, "8.7.0.84"),
            "cu121": _w("12.1", _AL_CU12, SRC_ARCH_BUILDER, "8.9.2.26"),
        },
        "conda": "pytorch channel",
        "source": SRC_TORCH_PREV + "; cuDNN: " + SRC_TORCH_CUDNN,
    },
    {
        "series": "2.3",
        "releases": {"2.3.0": "0.18.0", "2.3.1": "0.18.1"},
        "python_min": "3.8",
        "python_max": "3.11",
        "python_experimental": ["3.12"],
        "variants": {
            "cu118": _w("11.8", _AL_CU118, SRC_ARCH_BUILDER, "8.7.0.84"),
            "cu121": _w("12.1", _AL_CU12, SRC_ARCH_BUILDER, "8.9.2.26"),
        },
        "conda": "pytorch channel",
        "source": SRC_TORCH_PREV + "; cuDNN: " + SRC_TORCH_CUDNN,
    },
    {
        "series": "2.4",
        "releases": {"2.4.0": "0.19.0", "2.4.1": "0.19.1"},
        "python_min": "3.8",
        "python_max": "3.12",
        "python_experimental": [],
        "variants": {
            "cu118": _w("11.8", _AL_CU118, SRC_ARCH_BUILDER, "9.1.0.70"),
            "cu121": _w("12.1", _AL_CU12, SRC_ARCH_BUILDER, "9.1.0.70"),
            "cu124": _w("12.4", _AL_CU12, SRC_ARCH_BUILDER, "9.1.0.70"),
        },
        "conda": "pytorch channel",
        "source": SRC_TORCH_PREV + "; cuDNN: " + SRC_TORCH_CUDNN,
    },
    {
        "series": "2.5",
        "releases": {"2.5.0": "0.20.0", "2.5.1": "0.20.1"},
        "python_min": "3.9",
        "python_max": "3.12",
        "python_experimental": ["3.13"],
        "variants": {
            "cu118": _w("11.8", _AL_CU118, SRC_ARCH_BUILDER, "9.1.0.70"),
            "cu121": _w("12.1", _AL_CU12, SRC_ARCH_BUILDER, "9.1.0.70"),
            "cu124": _w("12.4", _AL_CU12, SRC_ARCH_BUILDER, "9.1.0.70"),
        },
        "conda": "pytorch channel (the last release published there: " + SRC_CONDA + ")",
        "source": SRC_TORCH_PREV + "; cuDNN: " + SRC_TORCH_CUDNN,
    },
    {
        "series": "2.6",
        "releases": {"2.6.0": "0.21.0"},
        "python_min": "3.9",
        "python_max": "3.13",
        "python_experimental": [],
        "variants": {
            # Arch lists for 2.6 were not read from a release-branch build script.
            "cu118": _w("11.8", None, None, "9.1.0.70"),
            "cu124": _w("12.4", None, None, "9.1.0.70"),
            "cu126": _w("12.6", None, None, "9.1.0.70"),
        },
        "conda": None,
        "source": SRC_TORCH_PREV + "; cuDNN: " + SRC_TORCH_CUDNN,
    },
    {
        "series": "2.7",
        "releases": {"2.7.0": "0.22.0", "2.7.1": "0.22.1"},
        "python_min": "3.9",
        "python_max": "3.13",
        "python_experimental": [],
        "variants": {
            # cu128 list is only partly confirmed (#157517 text) -> not used for decisions.
            "cu118": _w("11.8", None, None, None),
            "cu126": _w("12.6", None, None, "9.5.1.17"),
            "cu128": _w("12.8", None, None, "9.7.1.26"),
        },
        "conda": None,
        "source": SRC_TORCH_PREV + "; cuDNN: " + SRC_TORCH_CUDNN,
    },
    {
        "series": "2.8",
        "releases": {"2.8.0": "0.23.0"},
        "python_min": "3.9",
        "python_max": "3.13",
        "python_experimental": [],
        "variants": {
            "cu126": _w("12.6", _AL_CU12, SRC_ARCH_28, "9.10.2.21"),
            "cu128": _w("12.8", _AL_CU128, SRC_ARCH_28, "9.10.2.21"),
            "cu129": _w("12.9", _AL_CU129, SRC_ARCH_28, "9.10.2.21"),
        },
        "conda": None,
        "source": SRC_TORCH_PREV + "; cuDNN: " + SRC_TORCH_CUDNN,
    },
    {
        "series": "2.9",
        "releases": {"2.9.0": "0.24.0", "2.9.1": "0.24.1"},
        "python_min": "3.10",
        "python_max": "3.14",
        "python_experimental": [],
        "variants": {
            "cu126": _w("12.6", _AL_CU12, SRC_ARCH_28, "9.10.2.21"),
            "cu128": _w("12.8", _AL_CU128, SRC_ARCH_28, "9.10.2.21"),
            "cu129": _w("12.9", None, None, None),  # on the index; list not confirmed
            "cu130": _w("13.0", _AL_CU13, SRC_ARCH_MATRIX, None),
        },
        "conda": None,
        "source": SRC_TORCH_PREV + "; cuDNN: " + SRC_TORCH_CUDNN,
    },
    {
        "series": "2.10",
        "releases": {"2.10.0": "0.25.0"},
        "python_min": "3.10",
        "python_max": "3.14",
        "python_experimental": [],
        "variants": {
            "cu126": _w("12.6", None, None, None),
            "cu128": _w("12.8", None, None, None),
            "cu130": _w("13.0", None, None, None, experimental=True),
        },
        "conda": None,
        "source": SRC_TORCH_NEW,
    },
    {
        "series": "2.11",
        "releases": {"2.11.0": "0.26.0"},
        "python_min": "3.10",
        "python_max": "3.14",
        "python_experimental": [],
        "variants": {
            "cu126": _w("12.6", None, None, None),
            "cu128": _w("12.8", None, None, None),
            # Seen on the H200: get_arch_list() sm_75..sm_120 (no PTX), cuDNN 9.19.0.56.
            "cu130": _w("13.0", "7.5;8.0;8.6;9.0;10.0;12.0", SRC_H200_CAPTURE, "9.19.0.56"),
        },
        "conda": None,
        "source": SRC_TORCH_NEW + "; torchvision 0.26.0 and cu130 data: " + SRC_H200_CAPTURE,
    },
    {
        "series": "2.12",
        "releases": {"2.12.0": "0.27.0"},
        "python_min": "3.10",
        "python_max": "3.14",
        "python_experimental": [],
        "variants": {
            "cu126": _w("12.6", _AL_CU12, SRC_ARCH_MATRIX, None),
            "cu130": _w("13.0", _AL_CU13, SRC_ARCH_MATRIX, None),
            "cu132": _w("13.2", _AL_CU13, SRC_ARCH_MATRIX, None, experimental=True),
        },
        "conda": None,
        "source": SRC_TORCH_NEW,
    },
    {
        "series": "2.13",
        "releases": {"2.13.0": "0.28.0"},
        "python_min": "3.10",
        "python_max": "3.14",
        "python_experimental": [],
        "variants": {
            "cu126": _w("12.6", _AL_CU12, SRC_ARCH_MATRIX, None),
            "cu130": _w("13.0", _AL_CU13, SRC_ARCH_MATRIX, None),
            "cu132": _w("13.2", _AL_CU13, SRC_ARCH_MATRIX, None, experimental=True),
        },
        "conda": None,
        "source": SRC_TORCH_NEW,
    },
]

# ---------------------------------------------------------------------------
# d) cuDNN: which CUDA majors each cuDNN major serves, known builds, apt naming
# ---------------------------------------------------------------------------

#: cuDNN major -> CUDA versions it has builds for (inclusive range).
CUDNN_CUDA_SUPPORT: Dict[int, Dict[str, Any]] = {
    8: {"cuda_min": "10.2", "cuda_max_major": 12, "source": SRC_CUDNN_MATRIX},
    9: {"cuda_min": "11.0", "cuda_max_major": 13, "source": SRC_CUDNN_MATRIX},
}

#: Known cuDNN builds and the CUDA they were packaged for (apt: ``+cuda<X.Y>`` for v8).
CUDNN_BUILDS: List[Dict[str, str]] = [
    {"cudnn": "8.4.0.27", "cuda": "11.6", "source": SRC_CUDNN_IMAGES + " (11.6.x)"},
    {"cudnn": "8.6.0.163", "cuda": "11.8", "source": SRC_CUDNN_IMAGES},
    {"cudnn": "8.9.2.26", "cuda": "11.8", "source": SRC_CUDNN_IMAGES},
    {"cudnn": "9.0.0.312", "cuda": "12.3", "source": SRC_CUDNN_IMAGES + " (12.3.2)"},
    {"cudnn": "9.5.1.17", "cuda": "12.6", "source": SRC_CUDNN_IMAGES + " (12.6.3)"},
    {"cudnn": "9.7.0.66", "cuda": "12.8", "source": SRC_CUDNN_IMAGES + " (12.8.0)"},
    {"cudnn": "9.8.0.87", "cuda": "12.8", "source": SRC_CUDNN_IMAGES + " (12.8.1)"},
    {"cudnn": "9.9.0.52", "cuda": "12.9", "source": SRC_CUDNN_IMAGES + " (12.9.0)"},
    {
        "cudnn": "9.19.0.56",
        "cuda": "13.0",
        "source": SRC_H200_CAPTURE + " (pip nvidia-cudnn-cu13; apt build [unverified])",
    },
]

CUDNN_APT_NAMING: Dict[int, Dict[str, str]] = {
    8: {
        "runtime": "libcudnn8",
        "dev": "libcudnn8-dev",
        "version": "{full}-1+cuda{cuda_mm}",
        "source": SRC_CUDNN_IMAGES + " ('libcudnn8=8.4.0.27-1+cuda11.6', apt-mark hold)",
    },
    9: {
        "runtime": "libcudnn9-cuda-{cuda_major}",
        "dev": "libcudnn9-dev-cuda-{cuda_major}",
        "meta": "cudnn9-cuda-{cuda_major}",
        "version": "{full}-1",
        "source": SRC_CUDNN9_NAMES,
    },
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


def min_driver_for_cuda(cuda: Any) -> Optional[str]:
    """Minimum Linux x86_64 driver for a CUDA toolkit ("11.6" -> "510.39.01"), or None."""
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
    """Whether the cuDNN major of ``cudnn_version`` has builds for ``cuda``; None if unknown."""
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
    return cuda_t[0] <= row["cuda_max_major"]


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


def cudnn_packages(cudnn_version: Any, cuda_version: Any) -> Dict[str, Any]:
    """apt package names and version pattern of cuDNN ``cudnn_version`` for ``cuda_version``.

    ``cudnn_packages("8.4.0", "11.6")`` gives ``libcudnn8=8.4.0.27-1+cuda11.6`` (and -dev);
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
        "source": naming["source"] + ((" ; build: " + build["source"]) if build else ""),
    }
    return result


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
    return preferred[0][:3] if preferred else None


def _check_driver_and_cuda(p: Dict[str, Optional[str]]) -> List[Dict[str, Any]]:
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
        problems.append(
            _problem(
                "unknown-cuda-version",
                f"CUDA {cuda} is not in the compatibility table (known: {known[0]} to "
                f"{known[-1]}; there is no 12.7); set cuda_version to a released toolkit "
                f"such as {suggestion}.",
                [_fix("cuda_version", suggestion)],
            )
        )
    elif cuda and driver and not driver_supports_cuda(driver, cuda):
        need = str(min_driver_for_cuda(cuda))
        fallback = cuda_for_driver(driver)
        fix = [_fix("driver_branch", driver_branch(need))]
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
                f"{need}{compat}; raise nvidia_driver_branch to {driver_branch(need)} or "
                f"newer{alternative}.",
                fix,
            )
        )
    return problems


def _check_gpus(p: Dict[str, Optional[str]], groups: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
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
            fix = [_fix("cuda_version", first)]
            if driver and not driver_supports_cuda(driver, first):
                fix.append(_fix("driver_branch", driver_branch(str(min_driver_for_cuda(first)))))
            problems.append(
                _problem(
                    "cuda-too-old-for-gpu",
                    f"CUDA {cuda} cannot target {label}: compute capability {cc} ({arch}, {sm}) "
                    f"needs CUDA >= {first}; set cuda_version to {first} or newer.",
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
                    f"nvidia_driver_branch to {driver_branch(need)} or newer.",
                    [_fix("driver_branch", driver_branch(need))],
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


def _check_torch(p: Dict[str, Optional[str]], groups: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
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
                f"{driver_branch(need)} or newer{alternative}.",
                [_fix("driver_branch", driver_branch(need))],
            )
        )

    if wheel is not None and cuda and parse_version(wheel["cuda"])[0] != parse_version(cuda)[0]:
        major = parse_version(cuda)[0]
        same = [v for v, w in _by_cuda(variants) if parse_version(w["cuda"])[0] == major]
        fix = (
            [_fix("torch_cuda_variant", same[-1])]
            if same
            else [_fix("cuda_version", wheel["cuda"])]
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
                fix.append(_fix("driver_branch", driver_branch(str(min_driver_for_cuda(pick[2])))))
            advice = (
                f"set conda_pytorch_version to {pick[0]} with conda_pytorch_cuda_variant {pick[1]}"
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
    plan: Optional[Dict[str, Any]], gpus: Optional[List[Any]] = None
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
    """
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
    problems.extend(_check_driver_and_cuda(p))
    problems.extend(_check_gpus(p, groups))
    problems.extend(_check_cudnn(p))
    problems.extend(_check_torch(p, groups))
    return problems
