"""One way to do each common thing (issue 33, item 2), held by reading the source.

- Programs run through module_utils/command.py (``run``/``runner``): no other file in
  module_utils/ or library/ imports subprocess, calls os.system/os.popen, or uses
  AnsibleModule.run_command.
- Files are replaced through module_utils/atomic_file.py (``write_atomic``): no other file
  there makes its own temporary file (mkstemp, NamedTemporaryFile), calls
  AnsibleModule.atomic_move, or renames with os.replace/os.rename.

The documented exceptions, and why, are in ALLOWED below; each is counted, so a new use in
the same file fails too.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path
from typing import Dict, Iterator, Tuple

import pytest
from conftest import REPO_ROOT

RUNNER = "module_utils/command.py"
WRITER = "module_utils/atomic_file.py"

# (file, what) -> how many uses are allowed, and why.
ALLOWED: Dict[Tuple[str, str], Tuple[int, str]] = {
    # The benchmark runs for minutes; a sampling thread reads nvidia-smi while it runs and
    # its progress is streamed: command.run cannot express that (its docstring says so).
    ("library/gpu_throughput_measure.py", "subprocess"): (1, "Popen of the streaming benchmark"),
    # A directory cannot be written like a file: unpack renames the old unpack directory
    # aside and the new one into place (3 renames); _link replaces a path by a symlink.
    ("module_utils/cudnn_tarball.py", "os.rename"): (3, "directory swap in unpack"),
    ("module_utils/cudnn_tarball.py", "os.replace"): (1, "symlink swap in _link"),
    # Moving the emptied keyring aside as its backup: a move of the file, no new content.
    ("library/apt_key_remove.py", "os.replace"): (1, "keyring moved aside as backup"),
}

FORBIDDEN_CALLS = {
    ("os", "system"): "os.system",
    ("os", "popen"): "os.popen",
    ("os", "replace"): "os.replace",
    ("os", "rename"): "os.rename",
    ("tempfile", "mkstemp"): "mkstemp",
    ("tempfile", "NamedTemporaryFile"): "NamedTemporaryFile",
}
FORBIDDEN_ATTRIBUTES = {"run_command": "run_command", "atomic_move": "atomic_move"}
FORBIDDEN_NAMES = {"mkstemp": "mkstemp", "NamedTemporaryFile": "NamedTemporaryFile"}


def sources() -> Iterator[Path]:
    for folder in ("module_utils", "library"):
        yield from sorted(p for p in (REPO_ROOT / folder).glob("*.py") if not p.is_symlink())


def uses(path: Path) -> Counter:
    """What of the runner's and the writer's business this file does itself."""
    found: Counter = Counter()
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("subprocess", "pty"):
                    found["subprocess"] += 1
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] in ("subprocess", "pty"):
                found["subprocess"] += 1
            for alias in node.names:
                if alias.name in FORBIDDEN_NAMES:
                    found[FORBIDDEN_NAMES[alias.name]] += 1
        elif isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name):
                key = (node.value.id, node.attr)
                if key in FORBIDDEN_CALLS:
                    found[FORBIDDEN_CALLS[key]] += 1
                    continue
            if node.attr in FORBIDDEN_ATTRIBUTES:
                found[FORBIDDEN_ATTRIBUTES[node.attr]] += 1
    return found


@pytest.mark.parametrize("path", list(sources()), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_programs_run_and_files_are_written_one_way(path):
    relative = str(path.relative_to(REPO_ROOT))
    if relative in (RUNNER, WRITER):
        return
    wrong = []
    for what, count in sorted(uses(path).items()):
        allowed, _why = ALLOWED.get((relative, what), (0, ""))
        if count > allowed:
            wrong.append(f"{what} x{count} (allowed {allowed})")
    assert not wrong, (
        f"{relative}: {', '.join(wrong)}. Run programs with module_utils/command.py "
        "(run, runner) and replace files with module_utils/atomic_file.py (write_atomic)."
    )


def test_the_documented_exceptions_are_still_there():
    """An exception that is no longer needed is removed from ALLOWED, not left to rot."""
    for (relative, what), (allowed, why) in ALLOWED.items():
        assert uses(REPO_ROOT / relative)[what] == allowed, f"{relative}: {what} ({why})"


def test_the_check_sees_each_pattern(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import subprocess\nimport os, tempfile\nfrom tempfile import mkstemp\n"
        "module.run_command(['x'])\nmodule.atomic_move(a, b)\nos.replace(a, b)\n"
        "os.rename(a, b)\nos.system('x')\ntempfile.NamedTemporaryFile()\n"
    )
    assert uses(sample) == Counter(
        {
            "subprocess": 1,
            "mkstemp": 1,
            "run_command": 1,
            "atomic_move": 1,
            "os.replace": 1,
            "os.rename": 1,
            "os.system": 1,
            "NamedTemporaryFile": 1,
        }
    )
