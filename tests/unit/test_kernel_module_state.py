"""module_utils/kernel_module_state.py and library/nvidia_kernel_module_facts.py.

The ``dkms status`` lines are shaped like dkms 3 (Debian 12, Ubuntu 22.04+:
``name/version, kernel, arch: state``) and dkms 2 (Ubuntu 20.04: ``name, version, kernel,
arch: state``) output; the /proc lines like the first line of
``/proc/driver/nvidia/version`` of the proprietary and the open kernel module. The module
test puts fake ``dkms`` and ``modinfo`` first on PATH.
"""

from __future__ import annotations

import json
import os
import stat

import nvidia_kernel_module_facts
import pytest
from ansible.module_utils import kernel_module_state
from ansible.module_utils.kernel_module_state import (
    decide,
    nvidia_rows,
    parse_dkms_status,
    parse_proc_version,
)
from ansible.module_utils.testing import patch_module_args

RUNNING = "6.1.0-28-amd64"
NEWER = "6.1.0-30-amd64"

DKMS3_INSTALLED = "nvidia-current/535.261.03, 6.1.0-28-amd64, x86_64: installed"
DKMS3_ADDED = "nvidia-current/535.261.03: added"
DKMS3_WARNING = (
    "nvidia/580.95.05, 6.8.0-45-generic, x86_64: installed "
    "(WARNING! Diff between built and installed module!)"
)
DKMS2_INSTALLED = "nvidia, 470.82.01, 5.4.0-91-generic, x86_64: installed"
DKMS2_ADDED = "nvidia, 470.82.01: added"

PROC_PROPRIETARY = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03  Release Build  "
    "(dvs-builder@U16-I3-B03-4-3)  Sun Jul 20 06:39:22 UTC 2025\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
)
PROC_OPEN = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
    "(dvs-builder@U22-I3-AF03-09-1)  Tue Sep 23 09:03:31 UTC 2025\n"
    "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n"
)


# ---------------------------------------------------------------------------
# parse_dkms_status
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "row"),
    [
        (
            DKMS3_INSTALLED,
            {
                "name": "nvidia-current",
                "version": "535.261.03",
                "kernel": "6.1.0-28-amd64",
                "state": "installed",
            },
        ),
        (
            DKMS3_ADDED,
            {"name": "nvidia-current", "version": "535.261.03", "kernel": None, "state": "added"},
        ),
        (
            DKMS3_WARNING,
            {
                "name": "nvidia",
                "version": "580.95.05",
                "kernel": "6.8.0-45-generic",
                "state": "installed",
            },
        ),
        (
            DKMS2_INSTALLED,
            {
                "name": "nvidia",
                "version": "470.82.01",
                "kernel": "5.4.0-91-generic",
                "state": "installed",
            },
        ),
        (DKMS2_ADDED, {"name": "nvidia", "version": "470.82.01", "kernel": None, "state": "added"}),
        (
            "nvidia/580.95.05, 6.8.0-45-generic, x86_64: Built",
            {
                "name": "nvidia",
                "version": "580.95.05",
                "kernel": "6.8.0-45-generic",
                "state": "built",
            },
        ),
    ],
)
def test_parse_dkms_status_lines(line, row):
    assert parse_dkms_status(line + "\n") == [row]


def test_parse_dkms_status_ignores_garbage_and_keeps_the_order():
    text = "\n".join(
        [
            "Error! Could not locate dkms.conf file.",
            "File: /var/lib/dkms/nvidia/535.261.03/source/dkms.conf does not exist.",
            "",
            "   " + DKMS3_INSTALLED + "   ",
            "virtualbox/7.0.20, 6.1.0-28-amd64, x86_64: installed",
            "something: else",
            DKMS3_ADDED,
        ]
    )
    rows = parse_dkms_status(text)
    assert [(r["name"], r["kernel"]) for r in rows] == [
        ("nvidia-current", "6.1.0-28-amd64"),
        ("virtualbox", "6.1.0-28-amd64"),
        ("nvidia-current", None),
    ]
    assert parse_dkms_status("") == []


def test_nvidia_rows_drop_other_modules():
    rows = parse_dkms_status(
        "\n".join(
            [
                "virtualbox/7.0.20, 6.1.0-28-amd64, x86_64: installed",
                "zfs/2.1.11, 6.1.0-28-amd64, x86_64: installed",
                DKMS3_INSTALLED,
                "nvidia-srv/580.95.05, 6.8.0-45-generic, x86_64: installed",
            ]
        )
    )
    assert [r["name"] for r in nvidia_rows(rows)] == ["nvidia-current", "nvidia-srv"]


# ---------------------------------------------------------------------------
# decide
# ---------------------------------------------------------------------------


def test_loaded():
    state = decide(
        RUNNING, DKMS3_INSTALLED, modinfo_version="535.261.03", loaded_version="535.261.03"
    )
    assert state["state"] == "loaded"
    assert state["stale"] is False
    assert state["loaded_version"] == "535.261.03"
    assert state["next_step"] == ""
    assert state["reason"] == "module 535.261.03 is loaded"


def test_loaded_without_modinfo_is_not_stale():
    state = decide(RUNNING, "", loaded_version="535.261.03")
    assert state["state"] == "loaded" and state["stale"] is False


def test_loaded_but_stale_when_the_installed_module_differs():
    """The upgrade installed 535.261.03 but 535.216.01 still runs until the reboot."""
    state = decide(
        RUNNING, DKMS3_INSTALLED, modinfo_version="535.261.03", loaded_version="535.216.01"
    )
    assert state["state"] == "loaded"
    assert state["stale"] is True
    assert "535.216.01 is loaded" in state["reason"]
    assert f"the installed module for {RUNNING} is 535.261.03" in state["reason"]
    assert state["next_step"].startswith("reboot")


def test_built_from_modinfo_alone():
    """A precompiled module package: modinfo knows it, DKMS does not."""
    state = decide(RUNNING, "", modinfo_version="535.261.03")
    assert state["state"] == "built"
    assert state["module_version"] == "535.261.03"
    assert (
        "535.261.03 is built for the running kernel 6.1.0-28-amd64 but not loaded"
        in state["reason"]
    )
    assert "reboot" in state["next_step"] and "modprobe nvidia" in state["next_step"]


def test_built_from_a_dkms_row_for_the_running_kernel():
    state = decide(RUNNING, DKMS3_INSTALLED + "\n" + DKMS3_ADDED)
    assert state["state"] == "built"
    assert state["built_for"] == [RUNNING]
    assert state["dkms_versions"] == ["535.261.03"]
    assert "535.261.03" in state["reason"]


def test_built_with_dkms2_output():
    state = decide("5.4.0-91-generic", DKMS2_INSTALLED)
    assert state["state"] == "built"
    assert state["built_for"] == ["5.4.0-91-generic"]


def test_an_added_row_alone_is_not_built():
    state = decide(RUNNING, DKMS3_ADDED, headers_present=True)
    assert state["state"] == "not_built"
    assert state["built_for"] == []
    assert state["reason"].startswith(
        "driver userspace installed, kernel module 535.261.03 not built for the running kernel "
        f"{RUNNING}: "
    )
    assert "DKMS build did not produce it" in state["reason"]
    assert f"dkms autoinstall -k {RUNNING}" in state["next_step"]


def test_not_built_in_a_container():
    state = decide(RUNNING, DKMS3_ADDED, in_container=True)
    assert state["state"] == "not_built"
    assert (
        "driver userspace installed, kernel module 535.261.03 not built for the running kernel"
        in (state["reason"])
    )
    assert "container" in state["reason"]
    assert "on the host" in state["next_step"]
    assert "linux-headers" not in state["next_step"]


def test_not_built_without_headers():
    state = decide(RUNNING, DKMS3_ADDED, headers_present=False)
    assert state["state"] == "not_built"
    assert state["headers_present"] is False
    assert (
        "driver userspace installed, kernel module 535.261.03 not built for the running kernel"
        in (state["reason"])
    )
    assert f"the headers of {RUNNING} are not installed" in state["reason"]
    assert f"linux-headers-{RUNNING}" in state["next_step"]
    assert "reboot" in state["next_step"]


def test_not_built_when_built_only_for_a_newer_kernel():
    """apt upgraded the kernel: DKMS built the module for the new one, the old one runs."""
    text = f"nvidia-current/535.261.03, {NEWER}, x86_64: installed\n{DKMS3_ADDED}\n"
    state = decide(RUNNING, text, headers_present=False)
    assert state["state"] == "not_built"
    assert state["built_for"] == [NEWER]
    assert state["reason"].startswith(
        "driver userspace installed, kernel module 535.261.03 not built for the running kernel "
        + RUNNING
    )
    assert state["reason"].endswith(f"; it is built for {NEWER}")
    assert state["next_step"].startswith(f"reboot into {NEWER}")
    assert f"linux-headers-{RUNNING}" in state["next_step"]


def test_the_next_step_names_the_newest_kernel_by_version_not_by_text():
    """5.15.0-101 is newer than 5.15.0-91, though "101" sorts before "91" as text."""
    text = (
        "nvidia/580.95.05, 5.15.0-101-generic, x86_64: installed\n"
        "nvidia/580.95.05, 5.15.0-91-generic, x86_64: installed\n"
    )
    state = decide("5.15.0-89-generic", text, headers_present=True)
    assert state["state"] == "not_built"
    assert state["built_for"] == ["5.15.0-91-generic", "5.15.0-101-generic"]
    assert state["next_step"].startswith("reboot into 5.15.0-101-generic")


def test_other_modules_do_not_make_an_nvidia_module():
    state = decide(RUNNING, "virtualbox/7.0.20, 6.1.0-28-amd64, x86_64: installed\n")
    assert state["state"] == "absent"
    assert state["dkms"] == []


def test_absent():
    state = decide(RUNNING, "")
    assert state["state"] == "absent"
    assert state["module_version"] is None and state["loaded_version"] is None
    assert "DKMS knows none" in state["reason"]
    assert state["next_step"] == "install the driver's kernel-module package"


# ---------------------------------------------------------------------------
# parse_proc_version
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "version"),
    [
        (PROC_PROPRIETARY, "535.261.03"),
        (PROC_OPEN, "580.95.05"),
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.95.05  Release Build  "
            "(dvs-builder@U22-I3-AE18-23-3)  Tue Sep 23 09:19:59 UTC 2025\n",
            "580.95.05",
        ),
        ("", ""),
        (None, ""),
        ("garbage\n", ""),
        ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  Release Build\n", ""),
    ],
)
def test_parse_proc_version(text, version):
    assert parse_proc_version(text) == version


# ---------------------------------------------------------------------------
# library/nvidia_kernel_module_facts.py
# ---------------------------------------------------------------------------


def _script(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    """dkms and modinfo first on PATH; /proc/driver/nvidia/version unreadable."""

    def install(dkms_out, modinfo_out="", modinfo_rc=0):
        bindir = tmp_path / "bin"
        bindir.mkdir(exist_ok=True)
        argv = tmp_path / "modinfo-argv.txt"
        _script(bindir / "dkms", f"cat <<'EOF'\n{dkms_out}\nEOF\n")
        _script(
            bindir / "modinfo",
            f'for arg in "$@"; do printf \'%s\\n\' "$arg"; done > "{argv}"\n'
            f"printf '%s' '{modinfo_out}'\nexit {modinfo_rc}\n",
        )
        monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
        return argv

    real_open = open

    def no_proc(path, *args, **kwargs):
        if str(path).startswith("/proc/driver/nvidia"):
            raise FileNotFoundError(path)
        return real_open(path, *args, **kwargs)

    # The reader's own global `open` (module_utils/kernel_module_state.py's read, which
    # nvidia_kernel_module_facts and nvidia_driver_plan share), so the host's /proc does
    # not decide the test.
    monkeypatch.setattr(kernel_module_state, "open", no_proc, raising=False)
    return install


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        nvidia_kernel_module_facts.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def test_module_built_for_the_running_kernel(fake_tools, capsys):
    kernel = os.uname().release
    argv_file = fake_tools(
        f"nvidia-current/535.261.03, {kernel}, x86_64: installed\n"
        f"zfs/2.1.11, {kernel}, x86_64: installed",
        modinfo_out="535.261.03\n",
    )
    failed, result = run_module({}, capsys)
    assert not failed, result
    assert result["changed"] is False
    facts = result["ansible_facts"]["nvidia_kernel_module"]
    assert facts["state"] == "built"
    assert facts["running_kernel"] == kernel
    assert facts["module_version"] == "535.261.03"
    assert facts["loaded_version"] is None
    assert facts["built_for"] == [kernel]
    assert [r["name"] for r in facts["dkms"]] == ["nvidia-current"]
    assert facts["headers_present"] is os.path.isdir(f"/lib/modules/{kernel}/build")
    assert argv_file.read_text().splitlines() == ["-k", kernel, "-F", "version", "nvidia"]


def test_module_not_built_for_the_running_kernel(fake_tools, capsys):
    kernel = os.uname().release
    fake_tools(
        "nvidia-current/535.261.03, 99.0.0-1-amd64, x86_64: installed\n"
        "nvidia-current/535.261.03: added",
        modinfo_rc=1,
    )
    failed, result = run_module({"in_container": True}, capsys)
    assert not failed, result
    facts = result["ansible_facts"]["nvidia_kernel_module"]
    assert facts["state"] == "not_built"
    assert facts["module_version"] is None
    assert facts["built_for"] == ["99.0.0-1-amd64"]
    assert (
        "driver userspace installed, kernel module 535.261.03 not built for the running kernel "
        + kernel
    ) in facts["reason"]
    assert "container" in facts["reason"]
