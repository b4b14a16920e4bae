"""module_utils/nouveau_state.py and the nouveau_info module: the nouveau role's one read
of the host, on temporary files standing in for /etc/modprobe.d, the initramfs tools and
/sys/module/nouveau."""

from __future__ import annotations

import json

import nouveau_info as nouveau_state
import pytest
from ansible.module_utils.managed_files import describe
from ansible.module_utils.nouveau_state import initramfs_tool, read
from ansible.module_utils.testing import patch_module_args


def tools(tmp_path, *present):
    """INITRAMFS_TOOLS' shape under tmp_path, with the named tools' files created."""
    pairs = []
    for name in ("update-initramfs", "dracut"):
        path = tmp_path / name
        if name in present:
            path.write_text("#!/bin/sh\n")
        pairs.append((name, str(path)))
    return pairs


@pytest.mark.parametrize(
    "present, found",
    [
        ((), ""),
        (("dracut",), "dracut"),
        (("update-initramfs",), "update-initramfs"),
        (("update-initramfs", "dracut"), "update-initramfs"),  # Debian's own first
    ],
)
def test_the_first_initramfs_tool_there_is_the_hosts(tmp_path, present, found):
    assert initramfs_tool(tools(tmp_path, *present)) == found


def test_a_host_without_modprobe_d_does_not_manage_its_modules(tmp_path):
    found = read(
        str(tmp_path / "modprobe.d" / "blacklist-nouveau.conf"),
        str(tmp_path / "sys-module-nouveau"),
        describe,
        modprobe_dir=str(tmp_path / "modprobe.d"),
        tools=tools(tmp_path),
    )
    assert found["manages_modules"] is False
    assert found["loaded"] is False
    assert found["initramfs_tool"] == ""
    assert found["initramfs_command"] == []
    assert found["blacklist"] == {
        "path": str(tmp_path / "modprobe.d" / "blacklist-nouveau.conf"),
        "regular": False,
    }


def test_a_host_with_nouveau_loaded_and_the_blacklist_written(tmp_path):
    modprobe_d = tmp_path / "modprobe.d"
    modprobe_d.mkdir()
    blacklist = modprobe_d / "blacklist-nouveau.conf"
    blacklist.write_text("blacklist nouveau\noptions nouveau modeset=0\n")
    (tmp_path / "sys-module-nouveau").mkdir()
    found = read(
        str(blacklist),
        str(tmp_path / "sys-module-nouveau"),
        describe,
        modprobe_dir=str(modprobe_d),
        tools=tools(tmp_path, "dracut"),
    )
    assert found["manages_modules"] is True and found["loaded"] is True
    assert found["initramfs_tool"] == "dracut"
    assert found["initramfs_command"] == ["dracut", "--force", "--regenerate-all"]
    assert found["blacklist"] == describe(str(blacklist))
    assert found["blacklist"]["regular"] is True


def test_modprobe_d_must_be_a_directory(tmp_path):
    (tmp_path / "modprobe.d").write_text("")
    found = read(
        str(tmp_path / "modprobe.d" / "x.conf"),
        str(tmp_path / "none"),
        describe,
        modprobe_dir=str(tmp_path / "modprobe.d"),
        tools=tools(tmp_path),
    )
    assert found["manages_modules"] is False


def test_the_module_returns_the_read(tmp_path, capsys):
    (tmp_path / "nouveau").mkdir()
    args = {
        "blacklist": str(tmp_path / "blacklist-nouveau.conf"),
        "module_sysfs_path": str(tmp_path / "nouveau"),
        "modprobe_dir": str(tmp_path),
        "_ansible_check_mode": True,
    }
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        nouveau_state.main()
    result = json.loads(capsys.readouterr().out)
    assert exc.value.code == 0, result
    assert result["changed"] is False
    assert result["manages_modules"] is True and result["loaded"] is True
    assert result["modprobe_dir"] == str(tmp_path)
    assert result["blacklist"]["regular"] is False


def test_debian_regenerates_every_kernels_initramfs(tmp_path):
    found = read(
        str(tmp_path / "blacklist-nouveau.conf"),
        str(tmp_path / "none"),
        describe,
        modprobe_dir=str(tmp_path),
        tools=tools(tmp_path, "update-initramfs", "dracut"),
    )
    assert found["initramfs_tool"] == "update-initramfs"
    assert found["initramfs_command"] == ["update-initramfs", "-u", "-k", "all"]
