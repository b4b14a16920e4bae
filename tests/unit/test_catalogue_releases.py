"""The releases of the last year (issue 35, item 1), as the plan checks read them.

torch 2.12.1, 2.14.x and 2.15.0, their variants, Python ranges, cuDNN and NCCL, and each
cuDNN 9 release's CUDA majors (data/vendor_catalogue.yml; docs/CATALOGUE.md).
"""

from __future__ import annotations

import pytest
from ansible.module_utils import gpu_compat as gc
from ansible.module_utils.gpu_compat import check_stack

V100 = {"name": "Tesla V100-SXM2-16GB"}
H100 = {"name": "NVIDIA H100 80GB HBM3"}
B200 = {"name": "NVIDIA B200"}


def codes(problems):
    return [p["code"] for p in problems]


# --- torch ------------------------------------------------------------------


def test_the_new_releases_and_their_torchvision():
    assert gc.torchvision_for("2.12.1") == "0.27.1"
    assert gc.torchvision_for("2.14.0") == "0.29.0"
    assert gc.torchvision_for("2.14.1+cu130") == "0.29.1"
    assert gc.torch_release("2.15.0") is not None
    assert gc.torchvision_for("2.15.0") is None  # none yet on PyPI
    assert gc.latest_torch_release(gc.torch_release("2.14")) == "2.14.1"


def test_variants_python_cudnn_and_nccl_of_2_14_and_2_15():
    r214, r215 = gc.torch_release("2.14.1"), gc.torch_release("2.15.0")
    assert sorted(r214["variants"]) == ["cu126", "cu130", "cu132"]
    assert sorted(r215["variants"]) == ["cu130", "cu132"]  # 2.15 dropped cu126
    assert (r214["python_min"], r214["python_max"]) == ("3.10", "3.14")
    assert (r215["python_min"], r215["python_max"]) == ("3.11", "3.15")
    assert (r214["pypi_default"], r215["pypi_default"]) == ("cu130", "cu132")
    assert r214["variants"]["cu130"]["cudnn"] == "9.24.0.43"
    assert r214["variants"]["cu130"]["nccl"] == "2.30.7"
    assert r214["variants"]["cu126"]["arch_list"] == "5.0;6.0;7.0;7.5;8.0;8.6;9.0"
    assert r215["variants"]["cu132"]["cudnn"] == "9.26.0.51"
    assert r215["variants"]["cu130"]["cudnn"] is None
    assert r215["variants"]["cu130"]["cudnn_source"].startswith("[no source found]")


def test_every_pypi_default_is_a_variant_of_its_release():
    for row in gc.TORCH_RELEASES:
        if "pypi_default" in row:
            assert row["pypi_default"] in row["variants"], row["series"]


@pytest.mark.parametrize("torch", ["2.15.0", "2.15.0+cu132", "2.15.0+cu130"])
def test_v100_with_torch_2_15_is_refused_naming_the_newest_torch_that_serves_it(torch):
    problems = check_stack(
        {"torch_version": torch, "python_version": "3.12", "driver_branch": "595"}, [V100]
    )
    assert codes(problems) == ["torch-arch-not-covered"]
    message = problems[0]["message"]
    assert "sm_70" in message and "Volta" in message
    assert "the newest torch that still does is 2.14.1 (cu126 wheel)" in message
    assert problems[0]["fix"] == [
        'conda_pytorch_version: "2.14.1"',
        'conda_pytorch_cuda_variant: "cu126"',
    ]


def test_the_newest_torch_for_a_dropped_gpu_honours_python_and_driver():
    assert gc.newest_torch_for_cc("7.0", "2.15.0") == ("2.14.1", "cu126", "12.6")
    assert gc.newest_torch_for_cc("7.0", "2.14.0") == ("2.13.0", "cu126", "12.6")
    assert gc.newest_torch_for_cc("7.5", "1.12.0") is None  # nothing older is listed
    # Pascal: cu126 up to 2.14 serves 6.0 too
    assert gc.newest_torch_for_cc("6.0", "2.15.0")[0] == "2.14.1"


def test_a_v100_on_torch_2_14_is_accepted():
    plan = {
        "torch_version": "2.14.1",
        "torch_cuda_variant": "cu126",
        "python_version": "3.12",
        "driver_branch": "580",
        "cuda_version": "12.6",
    }
    assert check_stack(plan, [V100]) == []


@pytest.mark.parametrize(
    "torch, variant, cuda, branch",
    [
        ("2.14.0", "cu130", "13.0", "580"),
        ("2.14.1", "cu130", "13.0", "580"),
        ("2.14.1", "cu132", "13.2", "595"),
        ("2.15.0", "cu132", "13.2", "595"),
        ("2.15.0", "cu130", "13.0", "580"),
        ("2.12.1", "cu130", "13.0", "580"),
    ],
)
@pytest.mark.parametrize("gpu", [H100, B200])
def test_current_torch_plans_are_accepted_for_a_current_gpu(torch, variant, cuda, branch, gpu):
    plan = {
        "torch_version": torch,
        "torch_cuda_variant": variant,
        "python_version": "3.12",
        "driver_branch": branch,
        "cuda_version": cuda,
    }
    assert check_stack(plan, [gpu]) == []


def test_torch_2_15_refuses_python_3_10():
    problems = check_stack({"torch_version": "2.15.0", "python_version": "3.10"}, [H100])
    assert codes(problems) == ["python-unsupported-by-torch"]
    assert problems[0]["fix"] == ['conda_pytorch_python_version: "3.11"']


# --- cuDNN ------------------------------------------------------------------


def test_cudnn_9_14_with_cuda_11_8_is_refused_naming_the_newest_cudnn_for_cuda_11():
    problems = check_stack({"cudnn_version": "9.14", "cuda_version": "11.8"})
    assert codes(problems) == ["cudnn-cuda-mismatch"]
    message = problems[0]["message"]
    assert "the newest cuDNN for CUDA 11 is 9.10.2.21" in message
    assert "9.12.0 and later is built for CUDA 12 and 13 only" in message
    assert problems[0]["fix"] == ['cuda_cudnn_version: "9.10.2.21"']


@pytest.mark.parametrize(
    "cudnn, cuda, ok",
    [
        ("9.10.2", "11.8", True),
        ("9.10.2.21", "11.8", True),
        ("9.11.0", "11.8", False),
        ("9.11.1", "12.8", True),
        ("9.11.1", "13.0", False),
        ("9.12.0", "13.0", True),
        ("9.14.0", "12.8", True),
        ("9.14.0", "13.2", True),
        ("9.5.1", "13.0", False),
        ("9.26.0.51", "13.2", True),
        ("8.9.7", "11.8", True),  # cuDNN 8: the per-major range only
    ],
)
def test_cudnn_release_cuda_majors(cudnn, cuda, ok):
    assert gc.cudnn_supports_cuda(cudnn, cuda) is ok


def test_the_newest_cudnn_per_cuda_major():
    assert gc.newest_cudnn_for_cuda_major(11) == "9.10.2.21"
    assert gc.newest_cudnn_for_cuda_major(12) is None  # still served
    assert gc.newest_cudnn_for_cuda_major(13) is None


def test_cudnn_packages_refuse_a_release_without_the_cuda_major():
    with pytest.raises(ValueError, match=r"no packages for CUDA 11\.8"):
        gc.cudnn_packages("9.14.0", "11.8")
    assert gc.cudnn_packages("9.10.2.21", "11.8")["runtime"].startswith("libcudnn9-cuda-11")
