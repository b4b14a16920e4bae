#!/usr/bin/python3
"""nvcc -- Kindling test stand-in, NOT NVIDIA's CUDA compiler.

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
            f"Copyright (c) 2005-{COPYRIGHT_YEAR} NVIDIA Corporation\n"
            f"Built on {BUILT_ON}\n"
            f"Cuda compilation tools, release {RELEASE}, V{NVCC_VERSION}\n"
            f"Build {BUILD}\n"
        )
        return 0
    sys.stderr.write(
        f"nvcc (Kindling test stand-in for CUDA {RELEASE}): only --version is implemented; "
        "this fixture cannot compile anything.\n"
    )
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
