"""module_utils/cuda_init.py and library/cuda_init_facts.py.

The probe's real path (ctypes loading a shared library, calling cuInit) runs against a
stand-in libcuda.so.1 compiled here with gcc: a few lines of C, not NVIDIA's library. Its
cuInit returns the code in $FAKE_CUINIT (0 by default) and names 802 as libcuda does.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import cuda_init_facts
import pytest
from ansible.module_utils.cuda_init import (
    api_version_text,
    interpret,
    known_error,
    probe_command,
)
from ansible.module_utils.testing import patch_module_args

STANDIN_C = r"""
#include <stdlib.h>
static int code(void) { const char *v = getenv("FAKE_CUINIT"); return v ? atoi(v) : 0; }
int cuInit(unsigned int flags) {
    (void)flags;
    if (getenv("FAKE_CUINIT_HANG")) for (;;) {}
    return code();
}
int cuGetErrorName(int rc, const char **name) {
    *name = rc == 802 ? "CUDA_ERROR_SYSTEM_NOT_READY" : rc == 100 ? "CUDA_ERROR_NO_DEVICE" : 0;
    return *name ? 0 : 1;
}
int cuGetErrorString(int rc, const char **text) {
    *text = rc == 802 ? "system not yet initialized"
          : rc == 100 ? "no CUDA-capable device is detected" : 0;
    return *text ? 0 : 1;
}
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuDeviceGetCount(int *n) { *n = 8; return 0; }
"""


@pytest.fixture(scope="module")
def standin_libcuda(tmp_path_factory):
    gcc = shutil.which("gcc")
    assert gcc, "gcc is needed to build the stand-in libcuda.so.1 (make apt-deps installs it)"
    work = tmp_path_factory.mktemp("libcuda")
    (work / "cuda.c").write_text(STANDIN_C)
    lib = work / "libcuda.so.1"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(lib), str(work / "cuda.c")], check=True)
    return str(lib)


def probe(lib, monkeypatch, **env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    proc = subprocess.run(probe_command(sys.executable, lib), capture_output=True, text=True)
    return interpret(proc.returncode, proc.stdout, proc.stderr)


def test_cuda_initialises(standin_libcuda, monkeypatch):
    result = probe(standin_libcuda, monkeypatch)
    assert result["state"] == "ok"
    assert result["device_count"] == 8
    assert result["driver_api"] == "13.0"
    assert result["message"] == "CUDA initialises: 8 device(s), driver API 13.0."


def test_system_not_ready_names_the_fabric_manager(standin_libcuda, monkeypatch):
    result = probe(standin_libcuda, monkeypatch, FAKE_CUINIT="802")
    assert result["state"] == "failed"
    assert result["code"] == 802
    assert result["name"] == "CUDA_ERROR_SYSTEM_NOT_READY"
    assert "system not yet initialized" in result["message"]
    assert "fabric manager" in result["message"]
    assert result["fix"] == known_error("CUDA_ERROR_SYSTEM_NOT_READY")["fix"]


def test_an_error_without_a_known_fix_is_reported_plainly(standin_libcuda, monkeypatch):
    result = probe(standin_libcuda, monkeypatch, FAKE_CUINIT="100")
    assert result["state"] == "failed"
    assert result["fix"] is None
    assert result["message"] == (
        "cuInit failed with 100 CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)."
    )


def test_missing_library(tmp_path, monkeypatch):
    result = probe(str(tmp_path / "libcuda.so.1"), monkeypatch)
    assert result["state"] == "no_library"
    assert "can't be loaded" in result["message"]


def test_interpret_timeout_and_garbage():
    assert interpret(-1, "", "timed out after 5 s")["state"] == "timeout"
    assert "timed out after 5 s" in interpret(-1, "", "timed out after 5 s")["message"]
    broken = interpret(1, "", "Traceback ... Segmentation fault")
    assert broken["state"] == "error" and "rc 1" in broken["message"]
    assert interpret(0, "not json", "")["state"] == "error"


@pytest.mark.parametrize(
    "value,text", [(13000, "13.0"), (12080, "12.8"), (11060, "11.6"), (0, None)]
)
def test_api_version_text(value, text):
    assert api_version_text(value) == text


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        cuda_init_facts.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def test_module_reports_the_fact(standin_libcuda, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_CUINIT", "802")
    failed, result = run_module({"library": standin_libcuda}, capsys)
    assert not failed
    assert result["changed"] is False
    assert result["ansible_facts"]["cuda_init"]["state"] == "failed"


def test_module_kills_a_hung_cuinit(standin_libcuda, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_CUINIT_HANG", "1")
    failed, result = run_module({"library": standin_libcuda, "timeout": 2}, capsys)
    assert not failed
    fact = result["ansible_facts"]["cuda_init"]
    assert fact["state"] == "timeout"
    assert "timed out after 2 s" in fact["message"]
