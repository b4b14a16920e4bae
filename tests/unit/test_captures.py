"""The in-repo H200 captures must stay verbatim copies of the shared capture set."""

from __future__ import annotations

import hashlib

import pytest
from conftest import CAPTURES, SHARED_CAPTURES


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_captures_present():
    names = {p.name for p in CAPTURES.iterdir()}
    assert {"nvidia-smi-q.xml", "query-full.csv", "topo.txt", "torch-facts.json"} <= names


@pytest.mark.skipif(
    not SHARED_CAPTURES.is_dir(), reason="shared capture set not beside this checkout"
)
def test_captures_identical_to_shared_set():
    for original in sorted(SHARED_CAPTURES.iterdir()):
        copy = CAPTURES / original.name
        assert copy.is_file(), f"{original.name} missing from tests/fixtures/captures/h200"
        assert _digest(copy) == _digest(original), (
            f"{original.name} differs from the shared capture"
        )


CONTENTION = CAPTURES.parent / "h100-contention"
SHARED_CONTENTION = SHARED_CAPTURES.parent / "h100-contention"


def test_contention_captures_present():
    names = {p.name for p in CONTENTION.iterdir()}
    for prefix in ("idle", "busy", "memheld"):
        assert {f"{prefix}-q.xml", f"{prefix}-apps.csv", f"{prefix}-gpu.csv"} <= names


@pytest.mark.skipif(
    not SHARED_CONTENTION.is_dir(), reason="shared capture set not beside this checkout"
)
def test_contention_captures_identical_to_shared_set():
    for original in sorted(SHARED_CONTENTION.iterdir()):
        copy = CONTENTION / original.name
        assert copy.is_file(), (
            f"{original.name} missing from tests/fixtures/captures/h100-contention"
        )
        assert _digest(copy) == _digest(original), (
            f"{original.name} differs from the shared capture"
        )
