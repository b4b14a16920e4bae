"""A generated block of a hand-written document: the text between two marker lines.

README.md's stack x OS table (tools/stack_matrix.py) and docs/BENCHMARKS.md's reference
table (tools/reference_table.py) are generated from the vendor catalogue into documents
whose other text people write. Both rewrite the block between their markers, or check it.
"""

from __future__ import annotations

import sys
from pathlib import Path


def replace(text: str, begin: str, end: str, body: str, where: str) -> str:
    """``text`` with everything between the ``begin`` and ``end`` lines set to ``body``."""
    if begin not in text or end not in text:
        raise SystemExit(f"{where} lacks the markers {begin} ... {end}")
    head, rest = text.split(begin, 1)
    _old, tail = rest.split(end, 1)
    return head + begin + "\n" + body + "\n" + end + tail


def write_or_check(path: Path, text: str, wanted: str, check: bool, what: str, tool: str) -> int:
    """Write ``wanted`` to ``path`` when it differs; with ``check``, fail instead (exit 1)."""
    if check:
        if wanted != text:
            print(f"{what} is out of date: run {tool}", file=sys.stderr)
            return 1
        return 0
    if wanted != text:
        path.write_text(wanted, encoding="utf-8")
        print(f"wrote {what}")
    return 0
