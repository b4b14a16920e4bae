"""tools/device/kernel_profile.py: how kernel names fall into the families BENCHMARKS.md reports."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[2] / "tools" / "device" / "kernel_profile.py"
spec = importlib.util.spec_from_file_location("kernel_profile", PATH)
kernel_profile = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kernel_profile)  # torch is imported only in main()


@pytest.mark.parametrize(
    "name, family",
    [
        # Names as torch.profiler reported them on the H200 (docs/benchmarks/2026-12-02).
        ("void cudnn::batchnorm_bwtr_nhwc_semiPersist<__half, float, __half, 512>", "batch norm"),
        ("triton_red_fused__native_batch_norm_legit_functional_14", "batch norm"),
        ("sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc", "convolution"),
        ("sm90_xmma_wgrad_indexed_implicit_gemm_f16f16_f16f32_f32", "convolution"),
        ("triton_poi_fused_add_max_pool2d_with_indices_backward_66", "pooling"),
        (
            "void at::native::vectorized_elementwise_kernel<8, CUDAFunctor_add<c10::Half>>",
            "pointwise",
        ),
        (
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedSgd>",
            "optimizer",
        ),
        ("triton_red_fused_sum_3", "other reduction"),
        ("Memcpy DtoD (Device -> Device)", "other"),
    ],
)
def test_family(name: str, family: str) -> None:
    assert kernel_profile.family(name) == family
