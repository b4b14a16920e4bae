"""KINDLING TEST FIXTURE (stand-in, not PyTorch): torch.cuda.nccl of a CPU build."""

from .. import _C


def version():
    # As on the real CPU build: AttributeError, torch._C has no _nccl_version.
    return _C._nccl_version()
