#!/usr/bin/python3
"""nvcc -- KINDLING TEST STAND-IN, not NVIDIA's CUDA compiler.

Installed by the Kindling test-fixture package cuda-toolkit-<X>-<Y> (built by
tests/fixture_sources/build_fixtures.py) as /usr/lib/kindling-fixture/cuda-<X.Y>/bin/nvcc, reached
through /usr/local/cuda-<X.Y>/bin/nvcc. It answers --version / -V in the real nvcc format with
the toolkit release baked in at build time; it compiles nothing.
"""

import sys

# Substituted per package by build_fixtures.py.
COPYRIGHT_YEAR = "@COPYRIGHT_YEAR@"
BUILT_ON = "@BUILT_ON@"
RELEASE = "@CUDA_RELEASE@"
NVCC_VERSION = "@NVCC_VERSION@"
BUILD = "@BUILD@"


def main(argv):
    if "--version" in argv or "-V" in argv:
        sys.stdout.write(
            "nvcc: NVIDIA (R) Cuda compiler driver\n"
            "Copyright (c) 2005-%s NVIDIA Corporation\n"
            "Built on %s\n"
            "Cuda compilation tools, release %s, V%s\n"
            "Build %s\n" % (COPYRIGHT_YEAR, BUILT_ON, RELEASE, NVCC_VERSION, BUILD)
        )
        return 0
    sys.stderr.write(
        "nvcc (Kindling test stand-in for CUDA %s): only --version is implemented; "
        "this fixture cannot compile anything.\n" % RELEASE
    )
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
