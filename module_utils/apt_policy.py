"""What apt would install: ``apt-cache policy <packages>`` read in Python.

For each package apt knows, ``apt-cache policy`` (run with ``LC_ALL=C``; the labels are
translated otherwise) prints a block::

    nvidia-driver:
      Installed: (none)
      Candidate: 535.309.01-0+deb12u1
      Version table:
         535.309.01-0+deb12u1 500
            500 http://deb.debian.org/debian-security bookworm-security/non-free amd64 Packages
     *** 535.261.03-1 100
            100 /var/lib/dpkg/status

A version row is indented five columns (`` *** `` marks the installed one) and ends with
the version's priority; each of its sources follows, indented eight, with the source's own
priority. ``(none)`` means no installed version or no candidate (no source offers the
package, or a pin of priority below 0 forbids it). A package apt has never heard of prints
nothing at all, and apt-cache still exits 0.

Runs on target hosts: Python 3.8, standard library only.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

NONE = "(none)"
_FIELD = re.compile(r"^  ([A-Za-z][A-Za-z ]*): ?(.*)$")
_VERSION = re.compile(r"^ (\*\*\*| {3}) (\S+) (-?\d+)\s*$")
_SOURCE = re.compile(r"^ {6,}(-?\d+) (.+?)\s*$")


def _value(text: str) -> Optional[str]:
    text = text.strip()
    return None if text in ("", NONE) else text


def parse(text: str) -> Dict[str, Dict[str, object]]:
    """Each package block of ``apt-cache policy`` output, by the name apt prints (``bash``,
    ``libc6:i386``): ``installed`` and ``candidate`` (None for ``(none)``), ``pin`` (the
    ``Package pin`` line older apt prints, else None) and ``versions`` (each ``version``,
    ``priority``, ``installed`` and ``sources``, each source ``priority`` and ``source``)."""
    found: Dict[str, Dict[str, object]] = {}
    current: Optional[Dict[str, object]] = None
    versions: List[Dict[str, object]] = []
    sources: Optional[List[Dict[str, object]]] = None  # the last version row's
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" ") and line.endswith(":"):
            versions, sources = [], None
            current = {"installed": None, "candidate": None, "pin": None, "versions": versions}
            found[line[:-1]] = current
            continue
        if current is None:
            continue
        row = _VERSION.match(line)
        if row:
            sources = []
            versions.append(
                {
                    "version": row.group(2),
                    "priority": int(row.group(3)),
                    "installed": row.group(1) == "***",
                    "sources": sources,
                }
            )
            continue
        source = _SOURCE.match(line)
        if source and sources is not None:
            sources.append({"priority": int(source.group(1)), "source": source.group(2)})
            continue
        field = _FIELD.match(line)
        if field:
            key = field.group(1).strip().lower()
            if key == "installed":
                current["installed"] = _value(field.group(2))
            elif key == "candidate":
                current["candidate"] = _value(field.group(2))
            elif key == "package pin":
                current["pin"] = _value(field.group(2))
    return found


def policy(names: List[str], text: str) -> List[Dict[str, object]]:
    """One entry per asked name, in the order asked: ``name``, ``known`` (apt printed a
    block for it) and the block's fields (``installed``, ``candidate``, ``pin``,
    ``versions``; None and [] for a package apt does not know). Names match as apt prints
    them: ``pkg:<arch>`` for a foreign architecture; apt prints ``bash:amd64`` on amd64 as
    ``bash``, so ask for the bare name."""
    blocks = parse(text)
    out: List[Dict[str, object]] = []
    for name in names:
        block = blocks.get(name)
        entry: Dict[str, object] = {"name": name, "known": block is not None}
        entry.update(block or {"installed": None, "candidate": None, "pin": None, "versions": []})
        out.append(entry)
    return out
