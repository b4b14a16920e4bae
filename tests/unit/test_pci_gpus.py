"""module_utils/pci_gpus.py and library/nvidia_pci_facts.py: NVIDIA devices from sysfs.

The fake sysfs tree in tmp_path has the files the kernel writes under
/sys/bus/pci/devices/<slot>/ (vendor, device, class: "0x10de\\n" style).
"""

from __future__ import annotations

import json
import stat

import nvidia_pci_facts
import pytest
from ansible.module_utils.gpu_fabric import pci_facts
from ansible.module_utils.pci_gpus import lspci_name, scan
from ansible.module_utils.testing import patch_module_args

# slot -> (vendor, device, class)
DEVICES = {
    "0000:c6:00.0": ("0x10de", "0x2335", "0x030200"),  # H200 SXM, 3D controller
    "0000:00:06.0": ("0x10de", "0x2330", "0x030000"),  # H100, VGA-compatible controller
    "0000:c5:00.0": ("0x10de", "0x22a3", "0x068000"),  # NVSwitch, bridge (other)
    "0000:00:01.0": ("0x8086", "0x7000", "0x060100"),  # Intel ISA bridge
    "0000:00:05.0": ("0x1af4", "0x1000", "0x020000"),  # virtio network
    "0000:00:07.0": ("0x10de", "0x22e8", "0x040300"),  # NVIDIA HD audio function: neither
}

LSPCI_MM = (
    '00:06.0 "3D controller" "NVIDIA Corporation" "GH100 [H200 SXM 141GB]" -ra1 '
    '"NVIDIA Corporation" "Device 1996"'
)


@pytest.fixture
def sysfs(tmp_path):
    root = tmp_path / "devices"
    for slot, (vendor, device, klass) in DEVICES.items():
        d = root / slot
        d.mkdir(parents=True)
        (d / "vendor").write_text(vendor + "\n")
        (d / "device").write_text(device + "\n")
        (d / "class").write_text(klass + "\n")
    return root


def test_scan_finds_gpus_and_nvswitches_sorted_by_slot(sysfs):
    found = scan(str(sysfs))
    assert [g["pci_slot"] for g in found["gpus"]] == ["0000:00:06.0", "0000:c6:00.0"]
    assert [g["pci_device_id"] for g in found["gpus"]] == ["233010DE", "233510DE"]
    assert found["nvswitches"] == [
        {"pci_slot": "0000:c5:00.0", "pci_device_id": "22A310DE", "name": ""}
    ]
    assert all(g["name"] == "" for g in found["gpus"])


def test_scan_asks_for_names_by_slot(sysfs):
    asked = []

    def name_of(slot):
        asked.append(slot)
        return "GH100 [H200 SXM 141GB]" if slot == "0000:c6:00.0" else ""

    found = scan(str(sysfs), name_of)
    assert found["gpus"][1]["name"] == "GH100 [H200 SXM 141GB]"
    assert found["gpus"][0]["name"] == ""
    assert "0000:00:01.0" not in asked  # only NVIDIA devices


def test_scan_skips_a_device_without_readable_files(sysfs):
    (sysfs / "0000:ff:00.0").mkdir()
    broken = sysfs / "0000:fe:00.0"
    broken.mkdir()
    (broken / "vendor").write_text("0x10de\n")
    found = scan(str(sysfs))
    assert len(found["gpus"]) == 2 and len(found["nvswitches"]) == 1


def test_scan_of_an_empty_or_missing_root(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert scan(str(empty)) == {"gpus": [], "nvswitches": []}
    assert scan(str(tmp_path / "missing")) == {"gpus": [], "nvswitches": []}


def test_lspci_name():
    assert lspci_name(LSPCI_MM) == "GH100 [H200 SXM 141GB]"
    assert lspci_name('c5:00.0 "Bridge" "NVIDIA Corporation" "GH100 [NVSwitch]"') == (
        "GH100 [NVSwitch]"
    )
    assert lspci_name("") == ""
    assert lspci_name('00:06.0 "3D controller"') == ""


# ---------------------------------------------------------------------------
# gpu_fabric.pci_facts: the nvidia_pci fact (nvidia_pci_facts, nvidia_smi_facts' pci_facts)
# ---------------------------------------------------------------------------


def test_pci_facts_is_the_whole_fact_in_its_order(sysfs, tmp_path, monkeypatch):
    _path_with(tmp_path, monkeypatch)  # no lspci
    facts = pci_facts(str(sysfs), None)
    assert list(facts) == [
        "gpus",
        "gpu_count",
        "nvswitches",
        "present",
        "nvswitch_count",
        "nvswitch_generation",
        "nvlink5_bridges",
        "fabric_manager_needed_by_pci",
        "nvlink5_needed_by_pci",
        "fabric_reason",
        "fabric_evidence",
    ]
    assert facts["gpus"] == scan(str(sysfs))["gpus"] and facts["gpu_count"] == 2
    assert facts["present"] is True and facts["nvswitches"][0]["pci_slot"] == "0000:c5:00.0"
    assert facts["nvswitch_count"] == 1 and facts["nvswitch_generation"] == 3
    assert facts["fabric_manager_needed_by_pci"] is True and facts["nvlink5_needed_by_pci"] is False
    assert facts["nvlink5_bridges"] == [] and facts["fabric_reason"].startswith("1 NVSwitch(es)")


def test_pci_facts_names_by_lspci_through_run_command(sysfs, tmp_path, monkeypatch):
    _path_with(tmp_path, monkeypatch, "#!/bin/sh\nexit 0\n")
    lspci = str(tmp_path / "bin" / "lspci")
    asked = []

    def run_command(cmd):
        asked.append(cmd)
        return (0, LSPCI_MM + "\n", "") if cmd[-1] == "0000:c6:00.0" else (1, "", "no")

    facts = pci_facts(str(sysfs), run_command)
    assert [g["name"] for g in facts["gpus"]] == ["", "GH100 [H200 SXM 141GB]"]
    # every NVIDIA function, as scan() asks (the HD audio function 00:07.0 too)
    nvidia = ["0000:00:06.0", "0000:00:07.0", "0000:c5:00.0", "0000:c6:00.0"]
    assert [c[-1] for c in asked] == nvidia
    assert all(c[:3] == [lspci, "-mm", "-s"] for c in asked)
    asked.clear()
    assert all(g["name"] == "" for g in pci_facts(str(sysfs), None)["gpus"])
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))  # no lspci: nothing is run
    assert all(g["name"] == "" for g in pci_facts(str(sysfs), run_command)["gpus"])
    assert asked == []


# ---------------------------------------------------------------------------
# library/nvidia_pci_facts.py
# ---------------------------------------------------------------------------


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        nvidia_pci_facts.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def _path_with(tmp_path, monkeypatch, lspci_script=None):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    if lspci_script is not None:
        script = bindir / "lspci"
        script.write_text(lspci_script)
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", str(bindir))


def test_module_sets_facts_without_lspci(sysfs, tmp_path, monkeypatch, capsys):
    _path_with(tmp_path, monkeypatch)
    failed, result = run_module({"sysfs_root": str(sysfs)}, capsys)
    assert not failed
    assert result["changed"] is False
    facts = result["ansible_facts"]["nvidia_pci"]
    assert facts["gpu_count"] == 2
    assert facts["present"] is True
    assert [g["pci_device_id"] for g in facts["gpus"]] == ["233010DE", "233510DE"]
    assert [s["pci_slot"] for s in facts["nvswitches"]] == ["0000:c5:00.0"]
    assert all(g["name"] == "" for g in facts["gpus"])


def test_module_names_gpus_with_lspci(sysfs, tmp_path, monkeypatch, capsys):
    log = tmp_path / "lspci.log"
    script = (
        "#!/bin/sh\n"
        f'echo "$@" >> "{log}"\n'
        'case "$3" in\n'
        f"  0000:c6:00.0) echo '{LSPCI_MM}' ;;\n"
        "  *) exit 1 ;;\n"
        "esac\n"
    )
    _path_with(tmp_path, monkeypatch, script)
    failed, result = run_module({"sysfs_root": str(sysfs)}, capsys)
    assert not failed
    gpus = result["ansible_facts"]["nvidia_pci"]["gpus"]
    assert [g["name"] for g in gpus] == ["", "GH100 [H200 SXM 141GB]"]
    calls = log.read_text().splitlines()
    assert "-mm -s 0000:c6:00.0" in calls


def test_module_on_a_host_without_nvidia_devices(tmp_path, monkeypatch, capsys):
    _path_with(tmp_path, monkeypatch)
    failed, result = run_module({"sysfs_root": str(tmp_path / "nothing")}, capsys)
    assert not failed
    facts = result["ansible_facts"]["nvidia_pci"]
    assert {k: facts[k] for k in ("gpus", "gpu_count", "nvswitches", "present")} == {
        "gpus": [],
        "gpu_count": 0,
        "nvswitches": [],
        "present": False,
    }
    assert facts["nvswitch_count"] == 0 and facts["fabric_manager_needed_by_pci"] is False
