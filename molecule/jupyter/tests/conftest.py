"""Make tools/ importable: the hardening-score helpers (tools/systemd_hardening.py)."""

import sys
from pathlib import Path

TOOLS = str(Path(__file__).resolve().parents[3] / "tools")
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)
