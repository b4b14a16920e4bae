"""KINDLING TEST FIXTURE (stand-in, not PyTorch): torch.cuda of a CPU build (no CUDA)."""

from . import nccl


def is_available():
    return False


def device_count():
    return 0


def get_arch_list():
    return []


def is_bf16_supported(including_emulation=True):
    return False


__all__ = ["device_count", "get_arch_list", "is_available", "is_bf16_supported", "nccl"]
