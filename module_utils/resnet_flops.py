"""ResNet-50's training cost per image, and model FLOPs utilisation: the one copy.

Two readers: ``module_utils/gpu_throughput_ref.py`` (the judge, inside Ansible modules)
and the benchmark program that runs on the host, ``roles/gpu_check/files/kindling_bench/``,
whose ``reference.py`` is a symlink to this file. The gpu_check role copies the package
with the symlink followed, so the host gets a plain file; hence this module imports
nothing but the standard library (no Ansible, no other module_utils) and stays Python 3.8
compatible.
"""

from __future__ import annotations

# ResNet-50 forward at 224x224 is 4.11 GMAC = 8.2 GFLOP; a training step (forward +
# backward, backward = 2x forward) is about 3x that per image.
FLOP_PER_IMAGE = 24.7e9
# The image side FLOP_PER_IMAGE is for; the cost grows with the image's area.
REFERENCE_IMAGE_SIZE = 224


def flop_per_image(image_size: int = REFERENCE_IMAGE_SIZE) -> float:
    """FLOP per image per training step at a square image side of ``image_size``."""
    return FLOP_PER_IMAGE * (image_size / float(REFERENCE_IMAGE_SIZE)) ** 2


def model_flops_utilisation(
    img_s: float, peak_tflops: float, flop: float = FLOP_PER_IMAGE
) -> float:
    """img/s x FLOP per image / the peak dense FLOP/s (unrounded; callers round)."""
    return float(img_s) * flop / (peak_tflops * 1e12)
