"""KINDLING TEST FIXTURE (stand-in, not PyTorch): torch.version of a CPU build."""

__version__ = "@VERSION@"
# A CPU build: no CUDA or ROCm.
cuda = None
hip = None
git_version = "kindling-test-fixture-standin"
