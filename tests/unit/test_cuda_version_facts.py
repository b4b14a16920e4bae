"""The cuda_version_info module and its parsers in module_utils/toolkit_state.py: the release
each nvcc names (the same parser cuda_toolkit_plan uses) and the version a cuDNN header
defines. The nvccs are real executables (shell scripts printing nvcc's text) and the headers
real files in a temporary directory."""

from __future__ import annotations

import json
import stat
import subprocess

import cuda_version_info
import pytest
from ansible.module_utils.testing import patch_module_args
from ansible.module_utils.toolkit_state import (
    cudnn_header_version,
    nvcc_release,
    nvcc_release_line,
    read_cudnn_header,
    read_nvcc,
    reports_version,
)

# nvcc --version, as NVIDIA's 12.6 Update 3 toolkit prints it.
NVCC_126 = (
    "nvcc: NVIDIA (R) Cuda compiler driver\n"
    "Copyright (c) 2005-2024 NVIDIA Corporation\n"
    "Built on Tue_Oct_29_23:50:19_PDT_2024\n"
    "Cuda compilation tools, release 12.6, V12.6.85\n"
    "Build cuda_12.6.r12.6/compiler.35059454_0\n"
)
RELEASE_LINE = "Cuda compilation tools, release 12.6, V12.6.85"
# cudnn_version.h as cuDNN 9.14.0 ships it (cudnn_version_v9.h in the Debian packages).
CUDNN_HEADER = """\
/*
 * Copyright 2014-2025 NVIDIA Corporation. All rights reserved.
 */

/**
 * \\file: The master cuDNN version file.
 */

#ifndef CUDNN_VERSION_H_
#define CUDNN_VERSION_H_

#define CUDNN_MAJOR 9
#define CUDNN_MINOR 14
#define CUDNN_PATCHLEVEL 0

#define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)

/* cannot use constexpr here since this is a C-only file */
/* Below is the max SM version this cuDNN library is aware of and supports natively */

#define CUDNN_MAX_SM_MAJOR_NUMBER 12
#define CUDNN_MAX_SM_MINOR_NUMBER 0
#define CUDNN_MAX_DEVICE_VERSION (CUDNN_MAX_SM_MAJOR_NUMBER * 100 + CUDNN_MAX_SM_MINOR_NUMBER * 10)

#endif /* CUDNN_VERSION_H */
"""


def run(argv):
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, done.stderr


def script(path, body):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def nvcc(path, banner=NVCC_126, rc=0):
    return script(path, f"cat <<'EOF'\n{banner}EOF\nexit {rc}\n")


def test_the_release_and_its_line_from_nvccs_text():
    assert nvcc_release(NVCC_126) == "12.6"
    assert nvcc_release_line(NVCC_126) == RELEASE_LINE
    # "release 12.60," is 12.60, which is not 12.6.
    assert nvcc_release(NVCC_126.replace("12.6,", "12.60,")) == "12.60"
    assert reports_version(0, NVCC_126.replace("12.6,", "12.60,"), "12.6") is False


def test_no_release_in_other_text():
    assert nvcc_release("") is None and nvcc_release_line("") is None
    assert nvcc_release("bash: nvcc: command not found\n") is None
    # A line that says release but not "release X.Y," is still shown in messages.
    odd = "Cuda compilation tools, release twelve\n"
    assert nvcc_release(odd) is None
    assert nvcc_release_line(odd) == "Cuda compilation tools, release twelve"


def test_an_executable_nvcc_is_asked(tmp_path):
    path = nvcc(tmp_path / "cuda-12.6" / "bin" / "nvcc")
    answer = read_nvcc(str(path), run)
    assert answer == {
        "path": str(path),
        "rc": 0,
        "release": "12.6",
        "line": RELEASE_LINE,
        "error": None,
    }


def test_a_missing_or_non_executable_nvcc_is_not_run(tmp_path):
    missing = read_nvcc(str(tmp_path / "bin" / "nvcc"), run)
    assert missing["rc"] is None and missing["release"] is None
    assert missing["error"] == f"{tmp_path}/bin/nvcc is not there"
    plain = tmp_path / "nvcc"
    plain.write_text(NVCC_126)
    answer = read_nvcc(str(plain), run)
    assert answer["rc"] is None and answer["error"] == f"{plain} is not an executable file"
    assert read_nvcc(str(tmp_path), run)["error"] == f"{tmp_path} is not an executable file"


def test_a_failing_nvcc_keeps_its_rc_and_says_why(tmp_path):
    path = script(tmp_path / "nvcc", "echo 'nvcc fatal   : cannot load libnvvm' >&2\nexit 1\n")
    answer = read_nvcc(str(path), run)
    assert answer["rc"] == 1 and answer["release"] is None and answer["line"] is None
    assert answer["error"] == f"{path} --version failed (rc=1: nvcc fatal   : cannot load libnvvm)"
    # It printed its release but failed: the release is read, the failure kept.
    failed = read_nvcc(str(nvcc(tmp_path / "other" / "nvcc", rc=3)), run)
    assert failed["rc"] == 3 and failed["release"] == "12.6" and "rc=3" in failed["error"]


def test_an_nvcc_that_names_no_release(tmp_path):
    path = script(tmp_path / "nvcc", "echo 'nvcc: NVIDIA (R) Cuda compiler driver'\n")
    answer = read_nvcc(str(path), run)
    assert answer["rc"] == 0 and answer["release"] is None
    assert answer["error"] == (
        f"{path} --version names no release (printed 'nvcc: NVIDIA (R) Cuda compiler driver')"
    )


def test_an_nvcc_that_cannot_be_executed(tmp_path):
    # Executable bit, no interpreter line and no ELF header: exec fails with ENOEXEC.
    path = tmp_path / "nvcc"
    path.write_bytes(b"\x00\x01binary garbage")
    path.chmod(0o755)
    answer = read_nvcc(str(path), run)
    assert answer["rc"] is None and answer["error"].startswith(f"{path} could not be run: ")


def test_the_cudnn_version_from_the_headers_defines():
    assert cudnn_header_version(CUDNN_HEADER) == ("9.14.0", None)
    # cuDNN 8's header, defines in another order and indented: by name, not by position.
    eight = "# define CUDNN_PATCHLEVEL 27\n#define CUDNN_MINOR 4\n  #define CUDNN_MAJOR 8\n"
    assert cudnn_header_version(eight) == ("8.4.27", None)
    no_patch = CUDNN_HEADER.replace("#define CUDNN_PATCHLEVEL 0\n", "")
    assert cudnn_header_version(no_patch) == (None, "no #define of CUDNN_PATCHLEVEL")
    assert cudnn_header_version("") == (
        None,
        "no #define of CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL",
    )
    # CUDNN_MAJOR_X is another macro, not CUDNN_MAJOR.
    assert cudnn_header_version("#define CUDNN_MAJOR_X 9\n")[0] is None


def test_a_header_file_is_read(tmp_path):
    header = tmp_path / "cudnn_version_v9.h"
    header.write_text(CUDNN_HEADER)
    assert read_cudnn_header(str(header)) == {
        "path": str(header),
        "exists": True,
        "version": "9.14.0",
        "error": None,
    }
    header.write_text(CUDNN_HEADER.replace("#define CUDNN_MINOR 14\n", ""))
    answer = read_cudnn_header(str(header))
    assert answer["version"] is None
    assert answer["error"] == f"{header} has no #define of CUDNN_MINOR"


def test_a_missing_header_is_an_answer(tmp_path):
    answer = read_cudnn_header(str(tmp_path / "cudnn_version.h"))
    assert answer["exists"] is False and answer["version"] is None
    assert answer["error"] == f"{tmp_path}/cudnn_version.h is not there"


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        cuda_version_info.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def test_the_module_answers_per_nvcc_in_order_and_reads_the_header(tmp_path, capsys):
    good = nvcc(tmp_path / "cuda" / "bin" / "nvcc")
    wrong = nvcc(tmp_path / "cuda-12.4" / "bin" / "nvcc")  # a 12.6 nvcc where 12.4 should be
    missing = tmp_path / "cuda-11.8" / "bin" / "nvcc"
    header = tmp_path / "cudnn_version.h"
    header.write_text(CUDNN_HEADER)
    failed, result = run_module(
        {
            "nvcc": [str(good), str(wrong), str(missing)],
            "cudnn_header": str(header),
            "_ansible_check_mode": True,
        },
        capsys,
    )
    assert not failed, result
    assert result["changed"] is False
    assert [n["path"] for n in result["nvcc"]] == [str(good), str(wrong), str(missing)]
    assert [n["release"] for n in result["nvcc"]] == ["12.6", "12.6", None]
    assert result["nvcc"][0]["line"] == RELEASE_LINE and result["nvcc"][0]["rc"] == 0
    assert result["nvcc"][2]["rc"] is None
    assert result["nvcc"][2]["error"] == f"{missing} is not there"
    assert result["cudnn"] == {
        "path": str(header),
        "exists": True,
        "version": "9.14.0",
        "error": None,
    }


def test_the_module_without_a_header_or_anything_there(tmp_path, capsys):
    failed, result = run_module({"nvcc": [str(tmp_path / "nvcc")]}, capsys)
    assert not failed, result
    assert result["cudnn"] is None and result["nvcc"][0]["release"] is None
    failed, result = run_module({"cudnn_header": str(tmp_path / "none.h")}, capsys)
    assert not failed and result["nvcc"] == []
    assert result["cudnn"]["exists"] is False and result["cudnn"]["version"] is None
