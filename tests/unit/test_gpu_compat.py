"""module_utils/gpu_compat.py: the tables, the lookups and check_stack."""

from __future__ import annotations

import re

import pytest
from ansible.module_utils import gpu_compat as gc
from ansible.module_utils.gpu_compat import check_stack
from conftest import CAPTURES, REPO_ROOT

FIX_RE = re.compile(
    r"^(nvidia_driver_branch|nvidia_driver_version|cuda_version|cuda_cudnn_version|"
    r"conda_pytorch_version|conda_pytorch_cuda_variant|conda_pytorch_python_version|gpus\[\d+\]\.compute_capability)"
    r': "[^"]+"$'
)
KNOWN_CODES = {
    "invalid-version",
    "driver-branch-version-mismatch",
    "unknown-cuda-version",
    "driver-too-old-for-cuda",
    "unknown-gpu",
    "unknown-compute-capability",
    "cuda-too-old-for-gpu",
    "cuda-too-new-for-gpu",
    "driver-too-old-for-gpu",
    "unknown-cudnn-version",
    "cudnn-cuda-mismatch",
    "unknown-torch-version",
    "torch-no-wheel-for-variant",
    "python-unsupported-by-torch",
    "driver-too-old-for-torch-wheel",
    "torch-cuda-major-mismatch",
    "torch-arch-not-covered",
}
SEED_PLAN = {
    "driver_branch": "470",
    "cuda_version": "11.6",
    "cudnn_version": "8.4.0",
    "torch_version": "1.12.1",
    "torch_cuda_variant": "cu116",
    "python_version": "3.8",
}
H200_PLAN = {
    "driver_version": "580.159.04",
    "cuda_version": "13.0",
    "cudnn_version": "9.19.0",
    "torch_version": "2.11.0",
    "torch_cuda_variant": "cu130",
    "python_version": "3.12",
}
H100 = {"name": "NVIDIA H100 80GB HBM3"}
H200 = {"name": "NVIDIA H200", "compute_capability": "9.0"}


def codes(problems):
    return [p["code"] for p in problems]


def only(problems, code):
    found = [p for p in problems if p["code"] == code]
    assert len(found) == 1, (code, problems)
    return found[0]


def assert_well_formed(problems):
    for p in problems:
        assert set(p) == {"code", "message", "fix"}
        assert p["code"] in KNOWN_CODES
        assert p["message"].endswith(".")
        assert "\n" not in p["message"]
        for fix in p["fix"]:
            assert FIX_RE.match(fix), fix


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "table",
    [
        gc.CUDA_DRIVER_TABLE,
        gc.COMPUTE_CAPABILITIES,
        gc.GPU_PRODUCTS,
        gc.TORCH_RELEASES,
        gc.CUDNN_BUILDS,
        gc.DRIVER_BRANCHES,
        list(gc.CUDA_MINOR_VERSION_COMPAT.values()),
        list(gc.CUDNN_CUDA_SUPPORT.values()),
        list(gc.CUDNN_APT_NAMING.values()),
    ],
)
def test_every_row_names_its_source(table):
    assert table
    for row in table:
        assert isinstance(row["source"], str) and len(row["source"]) > 10, row


@pytest.mark.parametrize(
    ("cuda", "driver"),
    [
        ("11.0", "450.51.05"),
        ("11.1", "455.23"),
        ("11.2", "460.27.03"),
        ("11.3", "465.19.01"),
        ("11.4", "470.42.01"),
        ("11.5", "495.29.05"),
        ("11.6", "510.39.01"),
        ("11.7", "515.43.04"),
        ("11.8", "520.61.05"),
        ("12.0", "525.60.13"),
        ("12.1", "530.30.02"),
        ("12.2", "535.54.03"),
        ("12.3", "545.23.06"),
        ("12.4", "550.54.14"),
        ("12.5", "555.42.02"),
        ("12.6", "560.28.03"),
        ("12.8", "570.26"),
        ("12.9", "575.51.03"),
        ("13.0", "580.65.06"),
        ("13.1", "590.44.01"),
        ("13.2", "595.45.04"),
    ],
)
def test_min_driver_for_cuda_ga(cuda, driver):
    assert gc.min_driver_for_cuda(cuda) == driver
    assert gc.min_driver_for_cuda(cuda + ".0") == driver or cuda == "11.0"


@pytest.mark.parametrize(
    ("cuda", "driver"),
    [
        ("11.6.1", "510.47.03"),
        ("11.6.2", "510.47.03"),
        ("11.0.2", "450.51.05"),
        ("11.0.3", "450.51.06"),
        ("12.4.1", "550.54.15"),
        ("12.6.3", "560.35.05"),
        ("12.6.9", "560.35.05"),  # newer patch than listed: newest listed row
        ("13.2.2", "595.71.05"),
        ("11.0.0", "450.51.05"),  # older than the first listed patch: the GA row
    ],
)
def test_min_driver_for_cuda_patch_levels(cuda, driver):
    assert gc.min_driver_for_cuda(cuda) == driver


@pytest.mark.parametrize("cuda", ["12.7", "10.2", "14.0", "11", "nonsense", ""])
def test_min_driver_for_unknown_cuda_is_none(cuda):
    assert gc.min_driver_for_cuda(cuda) is None
    assert gc.cuda_row(cuda) is None


def test_cuda_table_shape():
    known = gc.known_cuda_versions()
    assert known[0] == "11.0" and known[-1] == "13.2"
    assert "12.7" not in known
    assert len(known) == 21  # 11.0-11.8, 12.0-12.9 without 12.7, 13.0-13.2
    for row in gc.CUDA_DRIVER_TABLE:
        assert re.match(r"^\d+\.\d+\.\d+$", row["cuda"])
        gc.parse_version(row["linux_min_driver"])
    assert {r["cuda"] for r in gc.CUDA_DRIVER_TABLE if r["release"] == "GA"} >= {
        "11.6.0",
        "12.4.0",
        "13.0.0",
    }


def test_minor_version_compat_floors():
    assert gc.CUDA_MINOR_VERSION_COMPAT[11]["min_driver"] == "450.80.02"
    assert gc.CUDA_MINOR_VERSION_COMPAT[12]["min_driver"] == "525.60.13"
    assert gc.CUDA_MINOR_VERSION_COMPAT[13]["min_driver"] == "580"
    assert gc.minor_version_compat_floor("11.6") == "450.80.02"
    assert gc.minor_version_compat_floor("12.8") == "525.60.13"
    assert gc.minor_version_compat_floor("13.1") == "580"
    assert gc.minor_version_compat_floor("10.2") is None
    assert gc.minor_version_compat_floor("x") is None


def test_compute_capability_table():
    names = {row["arch"] for row in gc.COMPUTE_CAPABILITIES}
    assert names == {
        "Kepler",
        "Maxwell",
        "Pascal",
        "Volta",
        "Turing",
        "Ampere",
        "Ada",
        "Hopper",
        "Blackwell",
    }
    row = gc.cc_row("9.0")
    assert (row["first_cuda"], row["last_cuda"]) == ("11.8", None)
    assert gc.cc_row("3.7")["last_cuda"] == "11.8"
    assert gc.cc_row("3.0")["last_cuda"] == "10.2"
    assert gc.cc_row("7.0")["last_cuda"] == "12.9"
    assert gc.cc_row("7.5")["first_cuda"] == "10.0"
    assert gc.cc_row("10.0")["first_cuda"] == "12.8"
    assert gc.cc_row("12.1")["first_cuda"] == "12.9"
    assert gc.cc_row("10.1")["last_cuda"] == "12.9"
    assert gc.cc_row("11.0")["first_cuda"] == "13.0"
    assert gc.cc_row("4.0") is None


def test_torch_table_covers_1_12_to_2_15():
    series = [row["series"] for row in gc.TORCH_RELEASES]
    assert series[0] == "1.12" and series[-1] == "2.15"
    assert "2.11" in series
    r112 = gc.torch_release("1.12.1")
    assert sorted(r112["variants"]) == ["cu102", "cu113", "cu116"]
    assert (r112["python_min"], r112["python_max"]) == ("3.7", "3.10")
    assert gc.torchvision_for("1.12.1") == "0.13.1"
    assert r112["variants"]["cu116"]["arch_list"] == "3.7;5.0;6.0;7.0;7.5;8.0;8.6"
    assert r112["variants"]["cu116"]["cudnn"] == "8.3.2.44"
    r211 = gc.torch_release("2.11.0")
    assert sorted(r211["variants"]) == ["cu126", "cu128", "cu130"]
    assert gc.torchvision_for("2.11.0+cu130") == "0.26.0"
    for row in gc.TORCH_RELEASES:
        for variant, wheel in row["variants"].items():
            assert re.match(r"^cu\d{3}$", variant)
            assert gc.variant_for_cuda(wheel["cuda"]) == variant
            if wheel["arch_list"]:
                assert wheel["arch_list_source"]
        for torch, vision in row["releases"].items():
            assert torch.startswith(row["series"] + ".")
            # null: PyPI has no torchvision for it yet (torch 2.15.0, December 2026)
            assert vision is None or vision.startswith("0.")


def test_h200_capture_agrees_with_table():
    import json

    facts = json.loads((CAPTURES / "torch-facts.json").read_text())
    wheel = gc.torch_variant(facts["torch"].split("+")[0], "cu130")
    assert gc.expand_arch_list(wheel["arch_list"]) == facts["arch_list"]
    assert wheel["cudnn"].startswith("9.19.0")


def test_no_other_code_file_holds_compatibility_data():
    """The catalogue (YAML and its generated copy) is the only place with the raw data."""
    markers = ["510.39.01", "550.54.14", "580.65.06", "3.7;5.0;6.0;7.0", "libcudnn8="]
    offenders = []
    for folder in ("library", "module_utils"):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            if path.name == "vendor_catalogue.py":
                continue
            text = path.read_text()
            offenders += [f"{path.name}: {m}" for m in markers if m in text]
    assert offenders == []


# ---------------------------------------------------------------------------
# Version helpers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("510.47.03", (510, 47, 3)),
        ("11.6", (11, 6)),
        ("2.11.0+cu130", (2, 11, 0)),
        ("8.4.0.27", (8, 4, 0, 27)),
        ("v1.2", (1, 2)),
        ("2.0.0a0", (2, 0, 0)),
        (" 580 ", (580,)),
        (11.6, (11, 6)),
        (470, (470,)),
    ],
)
def test_parse_version(text, parsed):
    assert gc.parse_version(text) == parsed


@pytest.mark.parametrize("text", ["", "abc", "+cu118", "cu116"])
def test_parse_version_rejects(text):
    with pytest.raises(ValueError):
        gc.parse_version(text)


def test_version_cmp():
    assert gc.version_cmp("11.6", "11.6.0") == 0
    assert gc.version_cmp("570.26", "570.124.06") == -1
    assert gc.version_cmp("13.0", "12.9") == 1
    assert gc.driver_branch("510.47.03") == "510"
    assert gc.driver_branch("580") == "580"


def test_driver_supports_cuda():
    assert gc.driver_supports_cuda("470", "11.6") is False
    assert gc.driver_supports_cuda("470.82.01", "11.6") is False
    assert gc.driver_supports_cuda("510", "11.6") is True  # a branch = its newest release
    assert gc.driver_supports_cuda("510.39.01", "11.6") is True
    assert gc.driver_supports_cuda("510.39.01", "11.6.1") is False
    assert gc.driver_supports_cuda("580.159.04", "13.0") is True
    assert gc.driver_supports_cuda("580.159.04", "13.1") is False
    assert gc.driver_supports_cuda("570.26", "12.8") is True
    assert gc.driver_supports_cuda("570.124.06", "12.8.1") is True
    assert gc.driver_supports_cuda("580", "12.7") is None


@pytest.mark.parametrize(
    ("driver", "cuda"),
    [
        ("580.159.04", "13.0"),
        ("590.44.01", "13.1"),
        ("595.58.03", "13.2"),
        ("535.183.01", "12.2"),
        ("470", "11.4"),
        ("470.82.01", "11.4"),
        ("510", "11.6"),
        ("525.60.13", "12.0"),
        ("450.36.06", None),
        ("440", None),
    ],
)
def test_cuda_for_driver(driver, cuda):
    assert gc.cuda_for_driver(driver) == cuda


# ---------------------------------------------------------------------------
# Compute capability
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "cc"),
    [
        ("9.0", "9.0"),
        (9.0, "9.0"),
        ("90", "9.0"),
        ("sm_90", "9.0"),
        ("sm_90a", "9.0"),
        ("compute_120", "12.0"),
        ("sm_100", "10.0"),
        ((8, 6), "8.6"),
        ("12.1", "12.1"),
        ("9", "9.0"),
        (None, None),
        ("gpu", None),
    ],
)
def test_normalize_cc(value, cc):
    assert gc.normalize_cc(value) == cc


def test_sm_name():
    assert gc.sm_name("9.0") == "sm_90"
    assert gc.sm_name("12.0") == "sm_120"
    assert gc.sm_name(None) is None


@pytest.mark.parametrize(
    ("name", "cc"),
    [
        ("NVIDIA H200", "9.0"),
        ("NVIDIA A100-SXM4-40GB", "8.0"),
        ("NVIDIA A100 80GB PCIe", "8.0"),
        ("Tesla T4", "7.5"),
        ("Tesla V100-SXM2-16GB", "7.0"),
        ("Tesla V100S-PCIE-32GB", "7.0"),
        ("NVIDIA H100 80GB HBM3", "9.0"),
        ("NVIDIA H100 PCIe", "9.0"),
        ("NVIDIA GH200 480GB", "9.0"),
        ("Tesla K80", "3.7"),
        ("Tesla P100-PCIE-16GB", "6.0"),
        ("NVIDIA A30", "8.0"),
        ("NVIDIA A10", "8.6"),
        ("NVIDIA A10G", "8.6"),
        ("NVIDIA A40", "8.6"),
        ("NVIDIA GeForce RTX 3090", "8.6"),
        ("NVIDIA L4", "8.9"),
        ("NVIDIA L40", "8.9"),
        ("NVIDIA L40S", "8.9"),
        ("NVIDIA GeForce RTX 4090", "8.9"),
        ("NVIDIA B200", "10.0"),
        ("NVIDIA GB200", "10.0"),
        ("NVIDIA B300", "10.3"),
        ("NVIDIA GB300", "10.3"),
        ("NVIDIA GeForce RTX 5090", "12.0"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0"),
        ("NVIDIA GB10", "12.1"),
        ("nvidia h200", "9.0"),
        # lspci spellings, which some roles pass when nvidia-smi is not there yet
        ("GH100 [H200 SXM 141GB]", "9.0"),
        ("3D controller: NVIDIA Corporation GA100 [A100 SXM4 40GB] (rev a1)", "8.0"),
        ("TU104GL [Tesla T4]", "7.5"),
        ("GV100GL [Tesla V100 SXM2 16GB]", "7.0"),
        ("NVIDIA  H200", "9.0"),
        # not matched: the token is glued to more letters/digits, or unknown
        ("NVIDIA RTX A3000", None),
        ("NVIDIA RTX A1000", None),
        ("NVIDIA H800", None),
        ("Quadro RTX 6000", None),
        ("", None),
        (None, None),
    ],
)
def test_compute_capability_for(name, cc):
    assert gc.compute_capability_for(name) == cc


def test_gpu_product_tokens_longest_first():
    assert gc.gpu_product_for("NVIDIA L40S")["token"] == "L40S"
    assert gc.gpu_product_for("NVIDIA GH200 480GB")["token"] == "GH200"
    assert gc.gpu_product_for("NVIDIA A10G")["token"] == "A10G"


@pytest.mark.parametrize(
    ("cc", "arch"),
    [
        ("3.7", "Kepler"),
        ("5.2", "Maxwell"),
        ("6.1", "Pascal"),
        ("7.0", "Volta"),
        ("7.2", "Volta"),
        ("7.5", "Turing"),
        ("8.0", "Ampere"),
        ("8.6", "Ampere"),
        ("8.9", "Ada"),
        ("9.0", "Hopper"),
        ("10.0", "Blackwell"),
        ("12.0", "Blackwell"),
        ("8.8", "Ampere"),  # not in the table: by major
        ("7.7", "Turing"),
        ("2.0", None),
        ("x", None),
    ],
)
def test_architecture_for(cc, arch):
    assert gc.architecture_for(cc) == arch


def test_cuda_supports_cc():
    assert gc.cuda_supports_cc("11.6", "9.0") is False
    assert gc.cuda_supports_cc("11.8", "9.0") is True
    assert gc.cuda_supports_cc("13.0", "9.0") is True
    assert gc.cuda_supports_cc("12.6", "10.0") is False
    assert gc.cuda_supports_cc("12.8", "10.0") is True
    assert gc.cuda_supports_cc("13.0", "7.0") is False
    assert gc.cuda_supports_cc("12.9", "7.0") is True
    assert gc.cuda_supports_cc("12.0", "3.7") is False
    assert gc.cuda_supports_cc("11.8.0", "3.7") is True
    assert gc.cuda_supports_cc("13.0", "4.0") is None
    assert gc.min_cuda_for_cc("9.0") == "11.8"
    assert gc.max_cuda_for_cc("7.0") == "12.9"
    assert gc.min_cuda_for_cc("4.0") is None and gc.max_cuda_for_cc("4.0") is None


# ---------------------------------------------------------------------------
# torch wheels and arch lists
# ---------------------------------------------------------------------------


def test_torch_release_lookup():
    assert gc.torch_release("1.12.1")["series"] == "1.12"
    assert gc.torch_release("2.11.0+cu130")["series"] == "2.11"
    assert gc.torch_release("2.4")["series"] == "2.4"
    assert gc.torch_release("2.4.9") is None  # not a listed patch release
    assert gc.torch_release("3.0.0") is None
    assert gc.torch_release("2") is None
    assert gc.torch_release("junk") is None
    assert gc.torch_variant("1.12.1", "CU116")["cuda"] == "11.6"
    assert gc.torch_variant("1.12.1", "cu118") is None
    assert gc.torch_variant("9.9.9", "cu118") is None
    assert gc.torch_variant("2.4.1", "") is None
    assert gc.torch_local_variant("2.11.0+cu130") == "cu130"
    assert gc.torch_local_variant("2.11.0") is None
    assert gc.torchvision_for("2.4") is None
    assert gc.torchvision_for("0.1.0") is None
    assert gc.latest_torch_release(gc.torch_release("2.1")) == "2.1.2"


def test_expand_arch_list():
    assert gc.expand_arch_list("7.5;8.0;12.0+PTX") == ["sm_75", "sm_80", "sm_120", "compute_120"]
    assert gc.expand_arch_list(["sm_90", "compute_90"]) == ["sm_90", "compute_90"]
    assert gc.expand_arch_list("8.0 8.6,9.0") == ["sm_80", "sm_86", "sm_90"]
    assert gc.expand_arch_list(None) == []
    assert gc.expand_arch_list("junk;;") == []


@pytest.mark.parametrize(
    ("arch_list", "cc", "entry"),
    [
        (["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], "9.0", "sm_90"),
        ("3.7;5.0;6.0;7.0;7.5;8.0;8.6", "9.0", None),  # torch 1.12 cu116 on H100/H200
        ("5.0;8.0;8.6;9.0", "8.9", "sm_86"),  # same major, lower minor: cubins run
        ("5.0;8.0;9.0", "8.6", "sm_80"),
        ("7.5;8.0;8.6;9.0;10.0;12.0+PTX", "12.1", "sm_120"),
        ("7.5;8.0;8.6;9.0;10.0;12.0+PTX", "11.0", None),  # PTX only for >= 12.0
        ("8.0+PTX", "9.0", "compute_80"),  # lower major PTX JIT
        (["sm_90a"], "9.0", "sm_90a"),
        (["sm_90a"], "10.0", None),
        (["compute_90a"], "10.0", None),
        (["sm_86"], "8.0", None),  # higher minor cubin does not run on lower
        ([], "9.0", None),
        (["sm_90"], "junk", None),
    ],
)
def test_arch_coverage(arch_list, cc, entry):
    assert gc.arch_coverage(arch_list, cc) == entry
    assert gc.arch_list_covers(arch_list, cc) is (entry is not None)


def test_wheel_covers_cc():
    assert gc.wheel_covers_cc("1.12.1", "cu116", "9.0") is False
    assert gc.wheel_covers_cc("2.0.1", "cu118", "9.0") is True
    assert gc.wheel_covers_cc("2.6.0", "cu126", "10.0") is False  # no list: by CUDA 12.6
    assert gc.wheel_covers_cc("2.6.0", "cu126", "9.0") is True
    assert gc.wheel_covers_cc("2.6.0", "cu999", "9.0") is None


def test_python_in_range():
    assert gc.python_in_range("1.12.1", "3.8") is True
    assert gc.python_in_range("1.12.1", "3.11") is False
    assert gc.python_in_range("2.2.2", "3.12") is True  # experimental wheels
    assert gc.python_in_range("2.9.0", "3.9") is False
    assert gc.python_in_range("2.11.0", "3.12.3") is True
    assert gc.python_in_range("5.0", "3.12") is None


def test_variant_choice_helpers():
    r24 = gc.torch_release("2.4.1")
    assert gc.best_variant(r24, cuda="12.1") == "cu121"
    assert gc.best_variant(r24, driver="535") == "cu121"
    assert gc.best_variant(r24, cuda="11.6") == "cu118"  # same CUDA major
    assert gc.best_variant(r24) == "cu124"
    assert gc.best_variant(gc.torch_release("2.13"), driver="600") == "cu130"  # not cu132 (exp.)
    assert gc.variants_for_driver(r24, driver="470") == []
    assert gc.variants_for_driver(r24, driver_cuda="12.1") == ["cu118", "cu121"]
    assert gc.variants_for_driver(r24) == ["cu118", "cu121", "cu124"]
    assert gc.suggest_torch_for_cc("9.0", "1.12.1", "3.8", "470") == ("2.0.1", "cu118", "11.8")
    assert gc.suggest_torch_for_cc("9.0", "1.12.1", "3.8", "550") == ("2.0.1", "cu118", "11.8")
    # 2.7 has no confirmed arch list, so its cu128 wheel is judged by CUDA 12.8 (>= sm_100)
    assert gc.suggest_torch_for_cc("10.0", None, "3.12", "580") == ("2.7.1", "cu128", "12.8")
    assert gc.suggest_torch_for_cc("10.0", "2.8.0", "3.12", "580") == ("2.8.0", "cu128", "12.8")
    assert gc.suggest_torch_for_cc("7.0", "2.9.1", "3.1", None) == ("2.9.1", "cu126", "12.6")
    assert gc.suggest_torch_for_cc("3.0") is None


# ---------------------------------------------------------------------------
# cuDNN
# ---------------------------------------------------------------------------


def test_cudnn_packages_8_4_0_for_cuda_11_6():
    pkgs = gc.cudnn_packages("8.4.0", "11.6")
    assert pkgs["packages"] == [
        "libcudnn8=8.4.0.27-1+cuda11.6",
        "libcudnn8-dev=8.4.0.27-1+cuda11.6",
    ]
    assert pkgs["runtime"] == "libcudnn8" and pkgs["dev"] == "libcudnn8-dev"
    assert pkgs["version"] == pkgs["apt_version_pattern"] == "8.4.0.27-1+cuda11.6"
    assert pkgs["version_exact"] is True
    assert pkgs["hold"] == ["libcudnn8", "libcudnn8-dev"]
    assert pkgs["meta"] is None and pkgs["cudnn_major"] == 8
    assert "Dockerfile" in pkgs["source"]


def test_cudnn_packages_9_naming():
    pkgs = gc.cudnn_packages("9.5.1", "12.6")
    assert pkgs["runtime"] == "libcudnn9-cuda-12"
    assert pkgs["dev"] == "libcudnn9-dev-cuda-12"
    assert pkgs["meta"] == "cudnn9-cuda-12"
    assert pkgs["packages"] == ["libcudnn9-cuda-12=9.5.1.17-1", "libcudnn9-dev-cuda-12=9.5.1.17-1"]
    pkgs13 = gc.cudnn_packages("9.19.0.56", "13.0")
    assert pkgs13["runtime"] == "libcudnn9-cuda-13"
    assert pkgs13["version"] == "9.19.0.56-1"


def test_cudnn_packages_unknown_build_is_a_glob():
    pkgs = gc.cudnn_packages("8.4.1", "11.6")
    assert pkgs["apt_version_pattern"] == "8.4.1.*-1+cuda11.6"
    assert pkgs["version_exact"] is False
    assert pkgs["packages"][0] == "libcudnn8=8.4.1.*-1+cuda11.6"


@pytest.mark.parametrize(
    ("cudnn", "cuda", "text"),
    [("8.9.2", "13.0", "no packages for CUDA 13.0"), ("7.6.5", "10.2", "only cuDNN 8 and 9")],
)
def test_cudnn_packages_rejects(cudnn, cuda, text):
    with pytest.raises(ValueError, match=text):
        gc.cudnn_packages(cudnn, cuda)


def test_cudnn_support_and_suggestions():
    assert gc.cudnn_supports_cuda("8.4.0", "11.6") is True
    assert gc.cudnn_supports_cuda("8.9.2", "12.4") is True
    assert gc.cudnn_supports_cuda("8.9.2", "13.0") is False
    assert gc.cudnn_supports_cuda("9.1.0", "11.8") is True
    assert gc.cudnn_supports_cuda("9.1.0", "10.2") is False
    assert gc.cudnn_supports_cuda("7.6.5", "10.2") is None
    assert gc.cudnn_supports_cuda("x", "10.2") is None
    assert gc.suggest_cudnn_for_cuda("11.6") == "8.4.0"
    assert gc.suggest_cudnn_for_cuda("12.8") == "9.8.0"
    assert gc.suggest_cudnn_for_cuda("12.4") == "9.9.0"
    assert gc.suggest_cudnn_for_cuda("13.0") == "9.19.0"
    assert gc.suggest_cudnn_for_cuda("10.2") is None
    assert gc.suggest_cudnn_for_cuda("x") is None
    assert gc.cudnn_build_for("8.4") == gc.CUDNN_BUILDS[0]
    assert gc.cudnn_build_for("7") is None
    assert gc.cudnn_build_for("x") is None


# ---------------------------------------------------------------------------
# check_stack
# ---------------------------------------------------------------------------


def test_real_h200_stack_is_clean():
    assert check_stack(H200_PLAN, [H200]) == []
    assert check_stack({}, []) == []
    assert check_stack(None) == []


def test_seed_driver_470_with_cuda_11_6():
    problems = check_stack({"driver_branch": "470", "cuda_version": "11.6"}, [])
    assert_well_formed(problems)
    p = only(problems, "driver-too-old-for-cuda")
    assert codes(problems) == ["driver-too-old-for-cuda"]
    assert "510.39.01" in p["message"] and "470" in p["message"]
    assert "lower cuda_version to 11.4" in p["message"]
    assert "minor-version-compatibility floor 450.80.02" in p["message"]
    assert p["fix"] == ['nvidia_driver_branch: "510"']


def test_driver_version_pin_too_old_gets_version_fix():
    problems = check_stack({"driver_version": "510.39.01", "cuda_version": "11.6.2"}, [])
    p = only(problems, "driver-too-old-for-cuda")
    assert p["fix"] == ['nvidia_driver_branch: "510"', 'nvidia_driver_version: "510.47.03"']
    below_floor = check_stack({"driver_version": "440.33.01", "cuda_version": "11.0"}, [])
    assert "floor" not in only(below_floor, "driver-too-old-for-cuda")["message"]
    assert "lower cuda_version" not in only(below_floor, "driver-too-old-for-cuda")["message"]


def test_cuda_11_6_on_sm_90():
    problems = check_stack({"driver_branch": "510", "cuda_version": "11.6"}, [H100])
    assert_well_formed(problems)
    p = only(problems, "cuda-too-old-for-gpu")
    assert "11.8" in p["message"] and "sm_90" in p["message"] and "Hopper" in p["message"]
    assert p["fix"] == ['cuda_version: "11.8"', 'nvidia_driver_branch: "520"']
    d = only(problems, "driver-too-old-for-gpu")
    assert "520.61.05" in d["message"]
    assert d["fix"] == ['nvidia_driver_branch: "520"']


def test_torch_1_12_on_sm_90():
    problems = check_stack(
        {"torch_version": "1.12.1", "torch_cuda_variant": "cu116", "python_version": "3.8"},
        [H100, H100],
    )
    assert_well_formed(problems)
    p = only(problems, "torch-arch-not-covered")
    assert "GPUs 0,1" in p["message"]
    assert "3.7;5.0;6.0;7.0;7.5;8.0;8.6" in p["message"] and "sm_90" in p["message"]
    assert p["fix"] == ['conda_pytorch_version: "2.0.1"', 'conda_pytorch_cuda_variant: "cu118"']


def test_torch_1_12_on_sm_90_without_variant_checks_every_wheel():
    problems = check_stack({"torch_version": "1.12.1"}, [{"compute_capability": "9.0"}])
    p = only(problems, "torch-arch-not-covered")
    assert "none of its wheels (cu102, cu113, cu116) covers sm_90" in p["message"]


def test_torch_variant_from_local_version_and_from_cuda():
    problems = check_stack({"torch_version": "1.12.1+cu116"}, [H100])
    assert "the cu116 wheel" in only(problems, "torch-arch-not-covered")["message"]
    problems = check_stack({"torch_version": "1.12.1", "cuda_version": "11.3"}, [H100])
    assert "the cu113 wheel" in only(problems, "torch-arch-not-covered")["message"]


def test_the_full_seed_stack_on_h100():
    problems = check_stack(SEED_PLAN, [H100] * 8)
    assert_well_formed(problems)
    assert codes(problems) == [
        "driver-too-old-for-cuda",
        "cuda-too-old-for-gpu",
        "driver-too-old-for-gpu",
        "driver-too-old-for-torch-wheel",
        "torch-arch-not-covered",
    ]
    arch = only(problems, "torch-arch-not-covered")
    assert arch["fix"] == [
        'conda_pytorch_version: "2.0.1"',
        'conda_pytorch_cuda_variant: "cu118"',
        'nvidia_driver_branch: "520"',
    ]
    assert "GPUs 0,1,2,3,4,5,6,7" in arch["message"]
    wheel = only(problems, "driver-too-old-for-torch-wheel")
    assert "or use conda_pytorch_cuda_variant cu113" in wheel["message"]


def test_seed_stack_on_an_a100_only_has_the_driver_problems():
    problems = check_stack(SEED_PLAN, [{"name": "NVIDIA A100-SXM4-40GB"}])
    assert codes(problems) == ["driver-too-old-for-cuda", "driver-too-old-for-torch-wheel"]


def test_torch_without_wheel_for_variant():
    problems = check_stack({"torch_version": "2.4.1", "torch_cuda_variant": "cu116"}, [])
    p = only(problems, "torch-no-wheel-for-variant")
    assert "cu118, cu121, cu124" in p["message"]
    assert p["fix"] == ['conda_pytorch_cuda_variant: "cu124"']
    with_cuda = check_stack(
        {"torch_version": "2.4.1", "torch_cuda_variant": "cu130", "cuda_version": "12.1"}, []
    )
    assert only(with_cuda, "torch-no-wheel-for-variant")["fix"] == [
        'conda_pytorch_cuda_variant: "cu121"'
    ]
    with_driver = check_stack(
        {"torch_version": "2.4.1", "torch_cuda_variant": "cu130", "driver_branch": "535"}, []
    )
    assert only(with_driver, "torch-no-wheel-for-variant")["fix"] == [
        'conda_pytorch_cuda_variant: "cu121"'
    ]


@pytest.mark.parametrize(("python", "nearest"), [("3.13", "3.12"), ("3.7", "3.8"), ("3.1", "3.8")])
def test_python_outside_torch_range(python, nearest):
    problems = check_stack({"torch_version": "2.4.1", "python_version": python}, [])
    p = only(problems, "python-unsupported-by-torch")
    assert "3.8 to 3.12" in p["message"]
    assert p["fix"] == [f'conda_pytorch_python_version: "{nearest}"']
    assert ("quote it" in p["message"]) is (python == "3.1")


def test_experimental_python_is_accepted():
    assert check_stack({"torch_version": "2.2.2", "python_version": "3.12"}, []) == []


def test_unknown_cuda_version():
    problems = check_stack({"cuda_version": "12.7", "driver_branch": "580"}, [H100])
    assert codes(problems) == ["unknown-cuda-version"]
    p = problems[0]
    assert "11.0 to 13.2" in p["message"] and "no 12.7" in p["message"]
    assert p["fix"] == ['cuda_version: "12.6"']
    older = check_stack({"cuda_version": "10.2"}, [])
    assert only(older, "unknown-cuda-version")["fix"] == ['cuda_version: "11.0"']


def test_cudnn_major_does_not_match_cuda():
    problems = check_stack({"cuda_version": "13.0", "cudnn_version": "8.9.2"}, [])
    p = only(problems, "cudnn-cuda-mismatch")
    assert "cuDNN 8 has builds for CUDA 10.2 to 12.x" in p["message"]
    assert p["fix"] == ['cuda_cudnn_version: "9.19.0"']
    assert check_stack({"cuda_version": "11.6", "cudnn_version": "8.4.0"}, []) == []
    assert check_stack({"cuda_version": "12.6", "cudnn_version": "9.5.1"}, []) == []


def test_unknown_cudnn_major():
    problems = check_stack({"cuda_version": "11.6", "cudnn_version": "7.6.5"}, [])
    p = only(problems, "unknown-cudnn-version")
    assert p["fix"] == ['cuda_cudnn_version: "8.4.0"']
    no_cuda = check_stack({"cudnn_version": "10.0.0"}, [])
    assert only(no_cuda, "unknown-cudnn-version")["fix"] == []


def test_unknown_gpu_is_reported_not_raised():
    problems = check_stack(
        {"cuda_version": "13.0", "torch_version": "2.11.0"}, [{"name": "Mystery Accelerator 9000"}]
    )
    assert_well_formed(problems)
    p = only(problems, "unknown-gpu")
    assert "Mystery Accelerator 9000 (GPU 0)" in p["message"]
    assert p["fix"] == ['gpus[0].compute_capability: "X.Y"']
    assert len(problems) == 1
    assert codes(check_stack({}, ["NVIDIA H800"])) == ["unknown-gpu"]
    assert codes(check_stack({}, [{}])) == ["unknown-gpu"]


def test_unknown_compute_capability():
    problems = check_stack({"cuda_version": "13.0"}, [{"name": "X", "compute_capability": "4.0"}])
    assert codes(problems) == ["unknown-compute-capability"]
    assert problems[0]["fix"] == []


def test_cuda_too_new_for_volta():
    problems = check_stack({"cuda_version": "13.0"}, [{"name": "Tesla V100-SXM2-16GB"}])
    p = only(problems, "cuda-too-new-for-gpu")
    assert "12.9" in p["message"] and "Volta" in p["message"]
    assert p["fix"] == ['cuda_version: "12.9"']


def test_torch_wheel_for_volta_on_cu130():
    problems = check_stack(
        {"torch_version": "2.9.1", "torch_cuda_variant": "cu130", "python_version": "3.12"},
        [{"name": "Tesla V100-SXM2-16GB", "index": 3}],
    )
    p = only(problems, "torch-arch-not-covered")
    assert "(GPU 3)" in p["message"]
    assert p["fix"] == ['conda_pytorch_version: "2.9.1"', 'conda_pytorch_cuda_variant: "cu126"']


def test_no_torch_release_serves_kepler_3_0():
    problems = check_stack(
        {"torch_version": "1.12.1", "torch_cuda_variant": "cu116"},
        [{"name": "old", "compute_capability": "3.0"}],
    )
    p = only(problems, "torch-arch-not-covered")
    assert "no listed torch release serves it" in p["message"]
    assert p["fix"] == []


def test_driver_too_old_for_torch_wheel():
    problems = check_stack(
        {"driver_version": "535.183.01", "torch_version": "2.4.1", "torch_cuda_variant": "cu124"},
        [],
    )
    p = only(problems, "driver-too-old-for-torch-wheel")
    assert "550.54.14" in p["message"] and "cu121" in p["message"]
    assert p["fix"] == ['nvidia_driver_branch: "550"']
    none_usable = check_stack(
        {"driver_branch": "450", "torch_version": "2.4.1", "torch_cuda_variant": "cu124"}, []
    )
    assert "or use" not in only(none_usable, "driver-too-old-for-torch-wheel")["message"]


def test_torch_cuda_major_mismatch():
    problems = check_stack(
        {"cuda_version": "11.8", "torch_version": "2.4.1", "torch_cuda_variant": "cu124"}, []
    )
    p = only(problems, "torch-cuda-major-mismatch")
    assert p["fix"] == ['conda_pytorch_cuda_variant: "cu118"']
    problems = check_stack(
        {"cuda_version": "11.8", "torch_version": "2.8.0", "torch_cuda_variant": "cu128"}, []
    )
    assert only(problems, "torch-cuda-major-mismatch")["fix"] == ['cuda_version: "12.8"']


def test_unknown_torch_version():
    problems = check_stack({"torch_version": "2.99.0", "python_version": "3.2"}, [H100])
    assert codes(problems) == ["unknown-torch-version"]
    assert "1.12.0 to 2.15.0" in problems[0]["message"]
    assert problems[0]["fix"] == ['conda_pytorch_version: "2.15.0"']


def test_invalid_versions_and_branch_mismatch():
    problems = check_stack(
        {"driver_branch": "r535", "driver_version": "latest", "cuda_version": "cuda"}, []
    )
    assert codes(problems) == ["invalid-version", "invalid-version", "invalid-version"]
    assert problems[0]["fix"] == ['nvidia_driver_branch: "580"']
    assert_well_formed(problems)
    mismatch = check_stack({"driver_branch": "535", "driver_version": "550.90.07"}, [])
    p = only(mismatch, "driver-branch-version-mismatch")
    assert p["fix"] == ['nvidia_driver_branch: "550"']


def test_numbers_from_yaml_are_accepted():
    assert check_stack({"driver_branch": 580, "cuda_version": 13.0}, [H200]) == []


def test_nvidia_smi_facts_gpus_can_be_passed_as_is():
    from ansible.module_utils.nvidia_smi import build_facts

    facts = build_facts(
        (CAPTURES / "nvidia-smi-q.xml").read_text(), (CAPTURES / "query-full.csv").read_text()
    )
    assert check_stack(H200_PLAN, facts["gpus"]) == []
    problems = check_stack({"cuda_version": "11.6"}, facts["gpus"])
    assert "NVIDIA H200 (GPU 0)" in only(problems, "cuda-too-old-for-gpu")["message"]


def test_cpu_wheel_fits_a_host_without_gpus():
    assert check_stack({"torch_version": "2.13.0", "torch_cuda_variant": "cpu"}) == []
    assert (
        check_stack(
            {"torch_version": "1.12.1", "torch_cuda_variant": "cpu", "python_version": "3.10"}
        )
        == []
    )


def test_cpu_wheel_on_a_gpu_host_is_the_cpu_only_wheel_mistake():
    problems = check_stack(
        {"torch_version": "2.13.0", "torch_cuda_variant": "cpu", "cuda_version": "13.0"},
        [{"name": "NVIDIA H200"}],
    )
    assert [p["code"] for p in problems] == ["torch-cpu-wheel-on-gpu-host"]
    assert "CPU-only wheel mistake" in problems[0]["message"]
    assert problems[0]["fix"] == ['conda_pytorch_cuda_variant: "cu130"']


def test_a_major_mismatch_names_the_wheel_the_toolkit_and_driver_can_run():
    """torch 2.14.1 cu126 with the CUDA 13.0 toolkit: the fix is cu130, not the newer cu132,
    which bundles CUDA 13.2 and would need driver 595 where the stack has branch 580."""
    plan = {
        "driver_branch": "580",
        "cuda_version": "13.0",
        "torch_version": "2.14.1",
        "torch_cuda_variant": "cu126",
        "python_version": "3.12",
    }
    (problem,) = [p for p in check_stack(plan) if p["code"] == "torch-cuda-major-mismatch"]
    assert problem["fix"] == ['conda_pytorch_cuda_variant: "cu130"']
    assert check_stack(dict(plan, torch_cuda_variant="cu130")) == []
    # With the 13.2 toolkit (and branch 595), cu132 is the one.
    newer = dict(plan, cuda_version="13.2", driver_branch="595")
    (problem,) = [p for p in check_stack(newer) if p["code"] == "torch-cuda-major-mismatch"]
    assert problem["fix"] == ['conda_pytorch_cuda_variant: "cu132"']


def test_a_released_cuda_whose_minimum_driver_is_unread_is_named_as_such():
    """CUDA 13.3-13.5 exist (NVIDIA's runtime wheels on PyPI) but no source here gave their
    minimum drivers (data/vendor_catalogue.yml cuda_toolkits_unread): the refusal says so,
    instead of calling the release unknown, and names the newest toolkit the catalogue knows."""
    (problem,) = check_stack({"driver_branch": "620", "cuda_version": "13.3"})
    assert problem["code"] == "unknown-cuda-version"
    assert problem["message"].startswith(
        "CUDA 13.3 is released (nvidia-cuda-runtime 13.3.29 on PyPI), but the catalogue has "
        "not read its minimum driver: NVIDIA's CUDA 13.3 release notes, Table 3"
    )
    assert problem["fix"] == ['cuda_version: "13.2"']
    assert gc.min_driver_for_cuda("13.3") is None  # nothing guessed
    assert gc.cuda_unread("13.5.1")["cuda"] == "13.5"
    assert gc.cuda_unread("13.2") is None and gc.cuda_unread("13.9") is None
    (other,) = check_stack({"cuda_version": "13.9"})
    assert "is not in the compatibility table" in other["message"]
    # Each row says what was looked for, and is not also a known toolkit.
    for row in gc.CUDA_UNREAD:
        assert row["min_driver"]["unknown"] and row["source"]
        assert gc.min_driver_for_cuda(row["cuda"]) is None
