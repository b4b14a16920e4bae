"""KINDLING TEST FIXTURE: a stand-in for torch @VERSION@ (CPU build), not PyTorch.

tests/fixture_sources/build_fixtures.py builds this package into the wheel
@WHEEL@ of the fixture PyTorch index. No registry that Kindling's test machines reach serves
a CPU torch for CPython 3.9, so this stands in for PyTorch's real CPU wheel of that release:
the wheel carries the real release's Requires-Python and Requires-Dist (so pip resolves the
real dependencies for Python 3.9), and the package answers exactly what Kindling's torch
probe (module_utils/torch_probe.py) asks on a CPU host, as the real CPU build does: its
version, and no CUDA (torch.version.cuda is None, torch.cuda.is_available() is False, no
devices, no arch list, no NCCL, no cuDNN). Nothing else of torch is here; it can't make a
tensor. See docs/FIXTURES.md.
"""

from . import _C, backends, cuda, version

#: Marks this package as a test stand-in: the real torch has no such attribute.
KINDLING_FIXTURE_STANDIN = True
__version__ = version.__version__

__all__ = ["KINDLING_FIXTURE_STANDIN", "_C", "__version__", "backends", "cuda", "version"]
