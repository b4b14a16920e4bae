"""Run the benchmark: ``python3 -m kindling_bench ARGS``, ``python3 DIR/kindling_bench ARGS``."""

from __future__ import annotations

import importlib
import os
import sys

if __package__:
    from .cli import main
else:
    # Run as a directory: Python put the package's own directory first on sys.path, where
    # its modules (cli, modes, report, ...) would shadow top-level modules of those names.
    # Import the package from its parent instead.
    _HERE = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == _HERE:
        sys.path[0] = os.path.dirname(_HERE)
    else:
        sys.path.insert(0, os.path.dirname(_HERE))
    main = importlib.import_module(os.path.basename(_HERE) + ".cli").main

if __name__ == "__main__":
    sys.exit(main())
