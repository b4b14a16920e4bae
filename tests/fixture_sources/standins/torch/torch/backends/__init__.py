"""KINDLING TEST FIXTURE (stand-in, not PyTorch): torch.backends of a CPU build."""

from . import cudnn

__all__ = ["cudnn"]
