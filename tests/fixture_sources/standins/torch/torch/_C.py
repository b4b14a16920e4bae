"""KINDLING TEST FIXTURE (stand-in, not PyTorch): torch._C of a CPU build.

The real one is torch's C++ extension. A CPU build has none of its CUDA entry points
(_cuda_getDriverVersion, _nccl_version), so asking for them raises AttributeError, as here.
"""

KINDLING_FIXTURE_STANDIN = True
