"""module_utils/gpu_fabric.py: the NVSwitch fabric, and its place in the two fact modules.

Real input: the H200 captures (tests/fixtures/captures/h200 and h200-fabric: one H200 alone,
every fabric field "N/A", an empty `nvlink -s`, its sysfs listing = tests/fixtures/pci/
h200-vm.txt) and output lines quoted from public listings (each test names its source).
Everything else is constructed: the HGX cases under tests/fixtures/nvidia_smi/ (h100-8gpu,
hgx-h100-fm-missing, hgx-h100-nvlink-down, hgx-b200-8gpu) and the other sysfs trees under
tests/fixtures/pci/ (their README says what each models).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nvidia_pci_facts
import nvidia_smi_facts
import pytest
from ansible.module_utils import gpu_fabric as gf
from ansible.module_utils.nvidia_smi import build_facts, parse_topo
from ansible.module_utils.pci_gpus import scan
from ansible.module_utils.testing import patch_module_args
from ansible.module_utils.vendor_catalogue import CATALOGUE
from conftest import CAPTURES, REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tests" / "fixture_sources"))
from pci_trees import build_tree

FIXTURES = REPO_ROOT / "tests" / "fixtures"
SMI_CASES = FIXTURES / "nvidia_smi"
PCI_CASES = FIXTURES / "pci"
FAKE_SMI = str(FIXTURES / "bin" / "nvidia-smi")
FABRIC_CODES = {
    "nvlink-down",
    "fabric-state-not-completed",
    "fabric-state-failed",
    "fabric-manager-version-mismatch",
    "fabric-manager-missing",
}


def text_of(path: Path) -> str:
    """A fixture without its '#' header lines, as the stand-in prints it."""
    return "".join(line for line in path.read_text().splitlines(True) if not line.startswith("#"))


def make_sysfs(tmp_path: Path, case: str) -> Path:
    """Build /sys/bus/pci/devices from tests/fixtures/pci/<case>.txt (see its README)."""
    return build_tree(PCI_CASES / f"{case}.txt", tmp_path / f"sysfs-{case}")


def smi_case(case: str):
    """(nvidia_smi facts, -q -x text, parsed nvlink -s) of a constructed case."""
    d = SMI_CASES / case
    xml = (d / "nvidia-smi-q.xml").read_text()
    facts = build_facts(xml, text_of(d / "query.csv"), text_of(d / "topo.txt"))
    status = gf.parse_nvlink_status(text_of(d / "nvlink-s.txt"))
    return facts, xml, status


def requirements_for(tmp_path, smi: str, pci: str, status=True):
    facts, xml, nvlinks = smi_case(smi)
    root = make_sysfs(tmp_path, pci)
    return (
        gf.fabric_requirements(
            scan(str(root)),
            facts,
            nvlinks if status else None,
            fabric=gf.parse_fabric_xml(xml),
            nvlink5_bridges=gf.scan_nvlink5_bridges(str(root)),
        ),
        facts,
    )


# ---------------------------------------------------------------------------
# Parsers: fabric state
# ---------------------------------------------------------------------------


def test_fabric_of_the_real_h200_capture_is_not_supported():
    fabric = gf.parse_fabric_xml((CAPTURES / "nvidia-smi-q.xml").read_text())
    assert fabric == [
        {
            "gpu": 0,
            "pci_bus_id": "00000000:00:06.0",
            "state": "not_supported",
            "state_text": None,
            "status": None,
            "clique_id": None,
            "cluster_uuid": None,
            "health_summary": None,
        }
    ]


def test_fabric_text_of_the_real_h200_capture_matches_its_xml():
    text = gf.parse_fabric_text((CAPTURES / "nvidia-smi-q.txt").read_text())
    assert text == gf.parse_fabric_xml((CAPTURES / "nvidia-smi-q.xml").read_text())


def test_state_spellings_follow_nvml_and_nvidia_smi():
    # NVML: NOT_SUPPORTED 0, NOT_STARTED 1, IN_PROGRESS 2, COMPLETED 3 (go-nvml's nvml.h);
    # "In Progress" / "Completed" as the Fabric Manager guide shows nvidia-smi printing them.
    rows = {r["key"]: r["nvml"] for r in CATALOGUE["nvswitch_devices"]["fabric_states"]}
    assert rows == {"not_supported": 0, "not_started": 1, "in_progress": 2, "completed": 3}
    assert gf.state_key("N/A") == "not_supported"
    assert gf.state_key("Not Supported") == "not_supported"
    assert gf.state_key("In Progress") == "in_progress"
    assert gf.state_key(" completed ") == "completed"
    assert gf.state_key("Not Started") == "not_started"
    assert gf.state_key("Registering Harder") == "unknown"
    assert gf.state_key(None) is None


# nvidia-smi -q Fabric blocks as printed: the Fabric Manager guide (registering, then
# registered), Azure/azhpc-images PR 506 (a failed status), kubernetes-sigs/
# dra-driver-nvidia-gpu issue 626 (an unhealthy summary). GPU headers added.
FABRIC_TEXT = """\
GPU 00000000:18:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Fabric
        State                             : In Progress
        Status                            : N/A
    Processes                             : None

GPU 00000000:2A:00.0
    Fabric
        State                             : Completed
        Status                            : Success

GPU 00000000:3A:00.0
    Fabric
        State                             : Completed
        Status                            : Insufficient Resources
        CliqueId                          : 0
        ClusterUUID                       : 00000000-0000-0000-0000-000000000000

GPU 00000000:5D:00.0
    Fabric
        State                             : Completed
        Status                            : Success
        CliqueId                          : 2
        ClusterUUID                       : dc6e40c4-d722-4357-9ba6-5291dd461278
        Health
            Summary                       : Unhealthy
            Bandwidth                     : Full
    Processes                             : None
"""


def test_fabric_text_blocks_from_public_listings():
    fabric = gf.parse_fabric_text(FABRIC_TEXT)
    assert [(f["gpu"], f["state"], f["status"]) for f in fabric] == [
        (0, "in_progress", None),
        (1, "completed", "Success"),
        (2, "completed", "Insufficient Resources"),
        (3, "completed", "Success"),
    ]
    assert fabric[2]["clique_id"] == "0"
    assert fabric[3]["cluster_uuid"] == "dc6e40c4-d722-4357-9ba6-5291dd461278"
    assert fabric[3]["health_summary"] == "Unhealthy"
    assert fabric[0]["health_summary"] is None
    assert fabric[1]["pci_bus_id"] == "00000000:2A:00.0"


def test_fabric_xml_of_the_constructed_hgx_cases():
    h100 = gf.parse_fabric_xml((SMI_CASES / "h100-8gpu" / "nvidia-smi-q.xml").read_text())
    assert [(f["state"], f["status"]) for f in h100] == [("completed", "Success")] * 8
    waiting = gf.parse_fabric_xml(
        (SMI_CASES / "hgx-h100-fm-missing" / "nvidia-smi-q.xml").read_text()
    )
    assert [f["state"] for f in waiting] == ["in_progress"] * 7 + ["not_started"]
    b200 = gf.parse_fabric_xml((SMI_CASES / "hgx-b200-8gpu" / "nvidia-smi-q.xml").read_text())
    assert {(f["clique_id"], f["health_summary"]) for f in b200} == {("32766", "Healthy")}
    assert b200[0]["pci_bus_id"] == "00000000:1B:00.0"


def test_a_driver_without_a_fabric_element_reports_no_state():
    fabric = gf.parse_fabric_xml((SMI_CASES / "v100-470" / "nvidia-smi-q.xml").read_text())
    assert [f["state"] for f in fabric] == [None]


def test_fabric_xml_that_is_not_xml_raises():
    with pytest.raises(ValueError, match="not XML"):
        gf.parse_fabric_xml("Failed to initialize NVML")


# ---------------------------------------------------------------------------
# Parsers: nvidia-smi nvlink -s and topo -m
# ---------------------------------------------------------------------------


def test_nvlink_status_of_an_h100_host():
    # Format and speed of bottlerocket-os/bottlerocket PR 4418's H100 listing.
    status = gf.parse_nvlink_status(text_of(SMI_CASES / "h100-8gpu" / "nvlink-s.txt"))
    assert len(status["gpus"]) == 8 and status["all_inactive"] is False
    first = status["gpus"][0]
    assert (first["index"], first["name"]) == (0, "NVIDIA H100 80GB HBM3")
    assert first["uuid"] == "GPU-00000000-0000-4000-8000-000000055000"
    assert (first["links_total"], first["links_up"]) == (18, 18)
    assert first["links"][17] == {"link": 17, "active": True, "speed_gbps": 26.562}


def test_nvlink_status_with_inactive_links():
    # Azure/azhpc-diagnostics issue 73, verbatim but for the UUID.
    text = """GPU 3: Tesla V100-SXM2-32GB (UUID: GPU-0)
         Link 0: 25.781 GB/s
         Link 1: 25.781 GB/s
         Link 2: 25.781 GB/s
         Link 3: <inactive>
         Link 4: 25.781 GB/s
         Link 5: <inactive>
"""
    gpu = gf.parse_nvlink_status(text)["gpus"][0]
    assert (gpu["index"], gpu["links_total"], gpu["links_up"]) == (3, 6, 4)
    assert gpu["links"][3] == {"link": 3, "active": False, "speed_gbps": None}


def test_nvlink_status_all_inactive_and_empty():
    # The message leptonai/gpud and Azure/azurehpc-health-checks quote.
    line = "Unable to retrieve NVLink information as all links are inActive"
    per_gpu = gf.parse_nvlink_status(f"GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1)\n{line}\n")
    assert per_gpu["gpus"][0]["all_inactive"] is True
    assert per_gpu["gpus"][0]["links_up"] == 0
    assert gf.parse_nvlink_status(line + "\n")["all_inactive"] is True
    # No output at all: a host without NVLink (canonical/checkbox PR 431).
    assert gf.parse_nvlink_status("") == {"gpus": [], "all_inactive": False}


def test_nvlink_status_of_the_real_h200_is_empty():
    real = CAPTURES.parent / "h200-fabric"
    assert (real / "nvlink-s.txt").read_text() == ""  # one GPU: no line, exit status 0
    assert gf.parse_nvlink_status((real / "nvlink-s.txt").read_text())["gpus"] == []
    assert (real / "query-fabric.csv").read_text().splitlines()[1] == "0, N/A, N/A"
    assert gf.parse_fabric_text(
        "GPU 00000000:00:06.0\n" + (real / "q-fabric.txt").read_text()
    ) == gf.parse_fabric_xml((CAPTURES / "nvidia-smi-q.xml").read_text())


def test_the_real_h200_sysfs_listing_is_the_pci_case():
    real = (CAPTURES.parent / "h200-fabric" / "pci-sysfs.txt").read_text().splitlines()
    case = (PCI_CASES / "h200-vm.txt").read_text().splitlines()
    assert [line for line in case if not line.startswith("#")] == real


def test_topo_nvlinks_reuses_parse_topo():
    eight = parse_topo(text_of(SMI_CASES / "h100-8gpu" / "topo.txt"))
    assert gf.topo_nvlinks(eight) == {i: 18 for i in range(8)}
    assert gf.topo_nvlinks(parse_topo((CAPTURES / "topo.txt").read_text())) == {0: 0}
    assert gf.topo_nvlinks(parse_topo(text_of(SMI_CASES / "degraded" / "topo.txt"))) == {0: 0, 1: 0}
    assert gf.topo_nvlinks(None) == {}


def test_fabric_manager_version_line():
    assert (
        gf.parse_fabric_manager_version("Fabric Manager version is : 450.102.04\n") == "450.102.04"
    )
    assert (
        gf.parse_fabric_manager_version("\n\tFabric Manager version is : 535.161.08\n")
        == "535.161.08"
    )
    assert gf.parse_fabric_manager_version("command not found") is None


# ---------------------------------------------------------------------------
# PCI
# ---------------------------------------------------------------------------


def test_catalogue_nvswitch_ids_by_generation():
    gens = {r["generation"]: r for r in CATALOGUE["nvswitch_devices"]["generations"]}
    assert gens[2]["pci_device_ids"] == ["1af1"] and "A100" in gens[2]["gpus"]
    assert gens[3]["pci_device_ids"] == ["22a3"] and {"H100", "H200"} <= set(gens[3]["gpus"])
    assert gens[4]["pci_device_ids"] == [] and gens[4]["on_host_pci"] is False
    assert gens[4]["nvlink5"] is True and "B200" in gens[4]["gpus"]
    assert all(r["source"] for r in gens.values())


@pytest.mark.parametrize(
    "case, count, generation",
    [("hgx-a100", 6, 2), ("hgx-h100", 4, 3), ("hgx-b200", 0, None), ("h200-vm", 0, None)],
)
def test_nvswitches_on_pci(tmp_path, case, count, generation):
    switches, others = gf.nvswitches_on_pci(scan(str(make_sysfs(tmp_path, case))))
    assert len(switches) == count and others == []
    assert {s["generation"] for s in switches} == ({generation} if generation else set())


def test_an_unknown_nvidia_bridge_is_not_an_nvswitch(tmp_path):
    found = scan(str(make_sysfs(tmp_path, "unknown-bridge")))
    switches, others = gf.nvswitches_on_pci(found)
    assert switches == [] and [o["device"] for o in others] == ["0fff"]
    req = gf.pci_requirements(found)
    assert req["fabric_manager_needed_by_pci"] is False
    assert any("not counted" in e for e in req["evidence"])


def test_nvlink5_bridges_are_found_by_their_vpd(tmp_path):
    b200 = gf.scan_nvlink5_bridges(str(make_sysfs(tmp_path, "hgx-b200")))
    assert b200["functions"] == ["0000:05:00.0", "0000:05:00.1", "0000:05:00.2", "0000:05:00.3"]
    assert b200["management"] == ["0000:05:00.1", "0000:05:00.3"] and b200["unreadable"] == []
    nics = gf.scan_nvlink5_bridges(str(make_sysfs(tmp_path, "hgx-h100")))
    assert len(nics["functions"]) == 2 and nics["management"] == []  # CX7 NICs: same silicon
    hidden = gf.scan_nvlink5_bridges(str(make_sysfs(tmp_path, "hgx-b200-novpd")))
    assert hidden["management"] == [] and len(hidden["unreadable"]) == 4
    assert gf.scan_nvlink5_bridges(str(tmp_path / "missing")) == {
        "functions": [],
        "management": [],
        "unreadable": [],
    }


@pytest.mark.parametrize(
    "case, needed, nvlink5",
    [
        ("h200-vm", False, False),
        ("hgx-a100", True, False),
        ("hgx-h100", True, False),
        ("hgx-b200", True, True),
        ("hgx-b200-novpd", None, None),
    ],
)
def test_pci_requirements_before_any_driver(tmp_path, case, needed, nvlink5):
    root = str(make_sysfs(tmp_path, case))
    req = gf.pci_requirements(scan(root), gf.scan_nvlink5_bridges(root))
    assert req["fabric_manager_needed_by_pci"] is needed
    assert req["nvlink5_needed_by_pci"] is nvlink5
    assert req["reason"] and "\n" not in req["reason"]


# ---------------------------------------------------------------------------
# The decision
# ---------------------------------------------------------------------------


def test_the_real_h200_needs_no_fabric_manager(tmp_path):
    xml = (CAPTURES / "nvidia-smi-q.xml").read_text()
    facts = build_facts(xml, (CAPTURES / "query-full.csv").read_text())
    root = str(make_sysfs(tmp_path, "h200-vm"))
    req = gf.fabric_requirements(
        scan(root),
        facts,
        None,
        fabric=gf.parse_fabric_xml(xml),
        nvlink5_bridges=gf.scan_nvlink5_bridges(root),
    )
    assert (req["needs_fabric_manager"], req["needs_nvlink5"]) == (False, False)
    assert req["nvswitch_count"] == 0 and req["fabric_attached"] is False
    assert req["reason"].startswith("No NVSwitch on the PCI bus")
    assert (
        req["fabric"][0]["state"] == "not_supported" and req["fabric"][0]["name"] == "NVIDIA H200"
    )
    assert gf.fabric_health(req, facts["gpus"], {"found": False}, facts["driver_version"]) == []


def test_hgx_h100_needs_the_fabric_manager_by_pci_and_by_state(tmp_path):
    req, _ = requirements_for(tmp_path, "h100-8gpu", "hgx-h100")
    assert req["needs_fabric_manager"] is True and req["needs_nvlink5"] is False
    assert (req["nvswitch_count"], req["nvswitch_generation"]) == (4, 3)
    assert req["nvlinks_up"] == {str(i): 18 for i in range(8)}
    assert req["nvlinks_expected"] == {str(i): 18 for i in range(8)}
    assert "4 NVSwitch(es) of generation 3" in req["reason"]
    assert any("Completed" in e for e in req["evidence"])


def test_hgx_a100_needs_it_although_its_gpus_report_no_state(tmp_path):
    # The A100 generation registers no fabric state; its NVSwitches are on the bus.
    _, xml, _ = smi_case("h100-8gpu")
    na = [dict(f, state="not_supported", state_text=None) for f in gf.parse_fabric_xml(xml)]
    req = gf.fabric_requirements(scan(str(make_sysfs(tmp_path, "hgx-a100"))), None, None, fabric=na)
    assert req["needs_fabric_manager"] is True and req["nvswitch_generation"] == 2


def test_hgx_b200_is_nvlink5_by_its_management_bridge(tmp_path):
    req, _ = requirements_for(tmp_path, "hgx-b200-8gpu", "hgx-b200")
    assert req["nvswitch_count"] == 0  # fourth-generation NVSwitches are no PCI devices
    assert req["nvlink5_bridges"] == ["0000:05:00.1", "0000:05:00.3"]
    assert req["needs_fabric_manager"] is True and req["needs_nvlink5"] is True
    assert req["nvswitch_generation"] == 4
    assert req["reason"].startswith("An NVLink 5 board")


def test_hgx_b200_is_nvlink5_by_its_gpus_when_the_vpd_is_unreadable(tmp_path):
    req, _ = requirements_for(tmp_path, "hgx-b200-8gpu", "hgx-b200-novpd")
    assert req["needs_nvlink5"] is True and req["nvlink5_bridges"] == []
    assert any("fourth-generation NVSwitch board" in e for e in req["evidence"])
    assert any("could not be read" in e for e in req["evidence"])


def test_hgx_b200_before_the_driver_from_pci_alone(tmp_path):
    root = str(make_sysfs(tmp_path, "hgx-b200"))
    req = gf.fabric_requirements(
        scan(root), None, None, nvlink5_bridges=gf.scan_nvlink5_bridges(root)
    )
    assert (req["needs_fabric_manager"], req["needs_nvlink5"]) == (True, True)


def test_one_b200_without_a_fabric_needs_nothing():
    facts, xml, _ = smi_case("hgx-b200-8gpu")
    one = dict(facts, gpus=facts["gpus"][:1], gpu_count=1)
    fabric = [dict(gf.parse_fabric_xml(xml)[0], state="not_supported", state_text=None)]
    req = gf.fabric_requirements({"gpus": [], "nvswitches": []}, one, None, fabric=fabric)
    assert (req["needs_fabric_manager"], req["needs_nvlink5"]) == (False, False)


def test_hopper_gpus_behind_nvswitches_are_not_nvlink5(tmp_path):
    facts, xml, status = smi_case("hgx-b200-8gpu")
    h100_names = dict(facts, gpus=[dict(g, name="NVIDIA H100 80GB HBM3") for g in facts["gpus"]])
    req = gf.fabric_requirements(
        scan(str(make_sysfs(tmp_path, "hgx-h100"))),
        h100_names,
        status,
        fabric=gf.parse_fabric_xml(xml),
    )
    assert req["needs_fabric_manager"] is True and req["needs_nvlink5"] is False


def test_nvlinks_without_nvswitch_need_no_fabric_manager():
    # Two GPUs on an NVLink bridge: links up, no NVSwitch, no fabric state.
    status = gf.parse_nvlink_status(
        "GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-a)\n\t Link 0: 25 GB/s\n"
        "GPU 1: NVIDIA A100 80GB PCIe (UUID: GPU-b)\n\t Link 0: 25 GB/s\n"
    )
    fabric = [
        {
            "gpu": i,
            "pci_bus_id": None,
            "state": "not_supported",
            "state_text": None,
            "status": None,
            "clique_id": None,
            "cluster_uuid": None,
            "health_summary": None,
        }
        for i in (0, 1)
    ]
    req = gf.fabric_requirements({"gpus": [], "nvswitches": []}, None, status, fabric=fabric)
    assert req["needs_fabric_manager"] is False
    assert any("NVLink bridge" in e for e in req["evidence"])


def test_multi_node_racks_are_flagged_as_outside_the_sources():
    facts, xml, status = smi_case("hgx-b200-8gpu")
    gb200 = dict(facts, gpus=[dict(g, name="NVIDIA GB200") for g in facts["gpus"]])
    req = gf.fabric_requirements(None, gb200, status, fabric=gf.parse_fabric_xml(xml))
    assert any(e.startswith("GB200/GB300 NVL racks") for e in req["evidence"])


# ---------------------------------------------------------------------------
# Health
# ---------------------------------------------------------------------------


def assert_shape(issues):
    for item in issues:
        assert set(item) == {"code", "gpu", "message"}
        assert item["code"] in FABRIC_CODES
        assert "\n" not in item["message"] and item["message"].endswith(".")


def test_a_healthy_hgx_h100_has_no_fabric_issue(tmp_path):
    req, facts = requirements_for(tmp_path, "h100-8gpu", "hgx-h100")
    manager = {"found": True, "version": "550.90.07"}
    assert gf.fabric_health(req, facts["gpus"], manager, facts["driver_version"]) == []


def test_fabric_manager_not_running(tmp_path):
    req, facts = requirements_for(tmp_path, "hgx-h100-fm-missing", "hgx-h100")
    issues = gf.fabric_health(req, facts["gpus"], {"found": False}, facts["driver_version"])
    assert_shape(issues)
    waiting = [i for i in issues if i["code"] == "fabric-state-not-completed"]
    assert [i["gpu"] for i in waiting] == list(range(8))
    assert "In Progress, not Completed" in waiting[0]["message"]
    assert "Not Started" in waiting[7]["message"]
    assert "nvidia-fabricmanager.service" in waiting[0]["message"]
    assert "not running or has not finished" in waiting[0]["message"]
    missing = [i for i in issues if i["code"] == "fabric-manager-missing"]
    assert len(missing) == 1 and missing[0]["gpu"] is None
    # The names and the exact version come from the catalogue via stack_plan (branch 550).
    assert (
        "nvidia-fabricmanager-550 libnvidia-nscq-550 at version 550.90.07-*"
        in missing[0]["message"]
    )


def test_a_running_fabric_manager_outside_path_is_not_missing(tmp_path):
    # Fabric Completed but no nv-fabricmanager on PATH (e.g. a driver container runs it).
    req, facts = requirements_for(tmp_path, "h100-8gpu", "hgx-h100")
    assert gf.fabric_health(req, facts["gpus"], {"found": False}, facts["driver_version"]) == []


def test_nvswitches_without_a_fabric_manager_before_registration(tmp_path):
    # HGX A100: no fabric state to read, NVSwitches on the bus, no nv-fabricmanager.
    req = gf.fabric_requirements(scan(str(make_sysfs(tmp_path, "hgx-a100"))), None, None)
    issues = gf.fabric_health(req, [], {"found": False}, "535.261.03")
    assert [i["code"] for i in issues] == ["fabric-manager-missing"]
    assert "nvidia-fabricmanager-535" in issues[0]["message"]


def test_nvlink5_remedies_name_nvlsm_and_ib_umad(tmp_path):
    req, facts = requirements_for(tmp_path, "hgx-b200-8gpu", "hgx-b200")
    waiting = [dict(f, state="in_progress", state_text="In Progress") for f in req["fabric"]]
    issues = gf.fabric_health(
        dict(req, fabric=waiting), facts["gpus"], {"found": False}, "580.159.04"
    )
    assert_shape(issues)
    assert "nvlsm and the ib_umad module" in issues[0]["message"]
    missing = next(i["message"] for i in issues if i["code"] == "fabric-manager-missing")
    assert "nvidia-fabricmanager libnvidia-nscq at version 580.159.04-*" in missing
    assert "nvlsm infiniband-diags" in missing and "mlx5_core and ib_umad" in missing


def test_fabric_state_failed_status_and_unhealthy_summary():
    fabric = gf.parse_fabric_text(FABRIC_TEXT)
    req = {"needs_fabric_manager": True, "fabric": fabric}
    issues = gf.fabric_health(req)
    assert_shape(issues)
    failed = [(i["gpu"], i["code"]) for i in issues if i["code"] == "fabric-state-failed"]
    assert failed == [(2, "fabric-state-failed"), (3, "fabric-state-failed")]
    text = {i["gpu"]: i["message"] for i in issues}
    assert "status 'Insufficient Resources'" in text[2]
    assert "health summary is 'Unhealthy'" in text[3]
    assert [i["gpu"] for i in issues if i["code"] == "fabric-state-not-completed"] == [0]


def test_fabric_manager_version_mismatch_names_both_and_the_fix():
    item = gf.fabric_manager_version_issue("580.95.05", "580.159.04")
    assert item["code"] == "fabric-manager-version-mismatch" and item["gpu"] is None
    assert "580.95.05" in item["message"] and "580.159.04" in item["message"]
    assert "install the fabric manager at exactly 580.159.04" in item["message"]
    assert "\n" not in item["message"]
    assert gf.fabric_manager_version_issue("580.159.04", "580.159.04") is None
    assert gf.fabric_manager_version_issue(None, "580.159.04") is None
    assert gf.fabric_manager_version_issue("580.159.04", None) is None


def test_fabric_health_reports_a_version_mismatch(tmp_path):
    req, facts = requirements_for(tmp_path, "h100-8gpu", "hgx-h100")
    issues = gf.fabric_health(
        req, facts["gpus"], {"found": True, "version": "550.54.15"}, "550.90.07"
    )
    assert [i["code"] for i in issues] == ["fabric-manager-version-mismatch"]


def test_nvlink_down_on_one_gpu(tmp_path):
    req, facts = requirements_for(tmp_path, "hgx-h100-nvlink-down", "hgx-h100")
    issues = gf.fabric_health(
        req, facts["gpus"], {"found": True, "version": "550.90.07"}, "550.90.07"
    )
    assert_shape(issues)
    assert [(i["code"], i["gpu"]) for i in issues] == [("nvlink-down", 3)]
    message = issues[0]["message"]
    assert message.startswith(
        "GPU 3 (NVIDIA H100 80GB HBM3, 00000000:5D:00.0): 12 NVLink(s) active"
    )
    assert "its peers have 18" in message and "topo -m shows NV18" in message
    assert "nvidia-smi -r" in message and "nvidia-fabricmanager.service" in message


def test_nvlink_down_against_topo_alone_and_on_a_bridge_host():
    req = {
        "needs_fabric_manager": False,
        "fabric": [],
        "nvlinks_up": {"0": 2, "1": 2},
        "nvlinks_expected": {"0": 4, "1": 4},
    }
    issues = gf.fabric_health(req, [{"index": 0, "name": "A"}, {"index": 1, "name": "B"}])
    assert [i["gpu"] for i in issues] == [0, 1]
    assert "topo -m shows NV4" in issues[0]["message"] and "its peers" not in issues[0]["message"]
    assert "NVLink bridge" in issues[0]["message"]


def test_a_mig_gpu_is_not_nvlink_down():
    req = {
        "needs_fabric_manager": True,
        "fabric": [],
        "nvlinks_up": {"0": 18, "1": 0},
        "nvlinks_expected": {},
    }
    gpus = [{"index": 0, "mig_mode": False}, {"index": 1, "mig_mode": True}]
    assert gf.fabric_health(req, gpus) == []


# ---------------------------------------------------------------------------
# collect(): the calls nvidia_smi_facts makes
# ---------------------------------------------------------------------------


class Runner:
    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __call__(self, cmd):
        self.calls.append(cmd)
        for prefix, answer in self.answers.items():
            if " ".join(cmd[1:]).startswith(prefix):
                return answer
        raise AssertionError(f"unexpected call {cmd}")


def test_collect_on_the_h200_runs_nothing_more(tmp_path):
    xml = (CAPTURES / "nvidia-smi-q.xml").read_text()
    run = Runner({})
    fact, issues = gf.collect(
        xml, build_facts(xml), run, "smi", lambda name: None, str(make_sysfs(tmp_path, "h200-vm"))
    )
    assert run.calls == [] and issues == []
    assert fact["needs_fabric_manager"] is False and fact["fabric_manager"] is None
    assert fact["nvlink_error"] is None and fact["nvlinks_up"] == {}


def test_collect_on_an_hgx_host_asks_the_fabric_manager_its_version(tmp_path):
    facts, xml, _ = smi_case("h100-8gpu")
    nvlink = text_of(SMI_CASES / "h100-8gpu" / "nvlink-s.txt")
    run = Runner(
        {
            "nvlink -s": (0, nvlink, ""),
            "--version": (0, "Fabric Manager version is : 550.90.07\n", ""),
        }
    )
    fact, issues = gf.collect(
        xml,
        facts,
        run,
        "smi",
        lambda name: f"/usr/bin/{name}",
        str(make_sysfs(tmp_path, "hgx-h100")),
    )
    assert run.calls == [["smi", "nvlink", "-s"], ["/usr/bin/nv-fabricmanager", "--version"]]
    assert issues == []
    assert fact["fabric_manager"] == {
        "found": True,
        "path": "/usr/bin/nv-fabricmanager",
        "version": "550.90.07",
        "error": None,
    }


def test_collect_records_a_failing_nvlink_call(tmp_path):
    facts, xml, _ = smi_case("h100-8gpu")
    run = Runner({"nvlink -s": (1, "", "Unknown Error"), "--version": (127, "", "not found")})
    fact, issues = gf.collect(
        xml, facts, run, "smi", lambda name: "/x/nv-fabricmanager", str(tmp_path / "none")
    )
    assert "rc=1" in fact["nvlink_error"] and fact["nvlinks_up"] == {}
    assert fact["fabric_manager"]["version"] is None and "rc=127" in fact["fabric_manager"]["error"]
    assert issues == []
    run = Runner({"nvlink -s": (-1, "", "timed out after 1 s")})
    fact, _ = gf.collect(xml, facts, run, "smi", lambda name: None, str(tmp_path / "none"))
    assert fact["nvlink_error"] == "smi nvlink -s: timed out after 1 s"


# ---------------------------------------------------------------------------
# library/nvidia_smi_facts.py and library/nvidia_pci_facts.py
# ---------------------------------------------------------------------------


def run_module(module, args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        module.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


@pytest.fixture
def smi_env(monkeypatch, tmp_path):
    """Select a stand-in case, with PATH holding only a folder this test controls."""
    log = tmp_path / "calls.log"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("KINDLING_FAKE_SMI_LOG", str(log))
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")

    def select(case, fabric_manager=None):
        monkeypatch.setenv("KINDLING_FAKE_SMI", case)
        if fabric_manager:
            tool = bindir / "nv-fabricmanager"
            tool.write_text(f"#!/bin/sh\necho 'Fabric Manager version is : {fabric_manager}'\n")
            tool.chmod(0o755)
        return lambda: log.read_text().splitlines() if log.exists() else []

    return select


def smi_args(tmp_path, pci_case, **extra):
    args = {
        "nvidia_smi_path": FAKE_SMI,
        "pci_sysfs_root": str(make_sysfs(tmp_path, pci_case)),
        "read_kernel_log": False,
    }
    args.update(extra)
    return args


def test_module_h200_has_a_fabric_key_and_no_extra_call(smi_env, tmp_path, capsys):
    calls = smi_env("h200")
    failed, result = run_module(nvidia_smi_facts, smi_args(tmp_path, "h200-vm"), capsys)
    assert not failed
    fabric = result["ansible_facts"]["nvidia_smi"]["fabric"]
    assert fabric["needs_fabric_manager"] is False and fabric["nvswitch_count"] == 0
    assert not [c for c in calls() if c.startswith("nvlink")]


def test_module_hgx_h100_fabric_manager_missing(smi_env, tmp_path, capsys):
    calls = smi_env("hgx-h100-fm-missing")
    failed, result = run_module(nvidia_smi_facts, smi_args(tmp_path, "hgx-h100"), capsys)
    assert not failed
    facts = result["ansible_facts"]["nvidia_smi"]
    assert facts["fabric"]["nvswitch_count"] == 4
    assert facts["fabric"]["needs_fabric_manager"] is True
    assert facts["fabric"]["fabric_manager"]["found"] is False
    codes = [h["code"] for h in facts["health"]]
    assert codes.count("fabric-state-not-completed") == 8 and "fabric-manager-missing" in codes
    assert "nvlink -s" in calls()


def test_module_hgx_h100_version_mismatch(smi_env, tmp_path, capsys):
    smi_env("h100-8gpu", fabric_manager="550.54.15")
    failed, result = run_module(nvidia_smi_facts, smi_args(tmp_path, "hgx-h100"), capsys)
    assert not failed
    facts = result["ansible_facts"]["nvidia_smi"]
    assert facts["fabric"]["fabric_manager"]["version"] == "550.54.15"
    mismatch = [h for h in facts["health"] if h["code"] == "fabric-manager-version-mismatch"]
    assert len(mismatch) == 1 and "550.90.07" in mismatch[0]["message"]
    assert result["commands"][-1].endswith("nv-fabricmanager --version")


def test_module_hgx_h100_nvlink_down(smi_env, tmp_path, capsys):
    smi_env("hgx-h100-nvlink-down", fabric_manager="550.90.07")
    _, result = run_module(nvidia_smi_facts, smi_args(tmp_path, "hgx-h100"), capsys)
    facts = result["ansible_facts"]["nvidia_smi"]
    assert facts["fabric"]["nvlinks_up"]["3"] == 12
    assert [(h["code"], h["gpu"]) for h in facts["health"] if h["code"] in FABRIC_CODES] == [
        ("nvlink-down", 3)
    ]


def test_module_hgx_b200(smi_env, tmp_path, capsys):
    smi_env("hgx-b200-8gpu", fabric_manager="580.159.04")
    _, result = run_module(nvidia_smi_facts, smi_args(tmp_path, "hgx-b200"), capsys)
    fabric = result["ansible_facts"]["nvidia_smi"]["fabric"]
    assert fabric["needs_nvlink5"] is True and fabric["nvswitch_count"] == 0
    assert fabric["nvlinks_up"] == {str(i): 18 for i in range(8)}
    assert not [
        h for h in result["ansible_facts"]["nvidia_smi"]["health"] if h["code"] in FABRIC_CODES
    ]


def _wrapper(tmp_path, body):
    """An nvidia-smi that answers nvlink itself and hands the rest to the stand-in."""
    path = tmp_path / "nvidia-smi-wrap"
    path.write_text(f'#!/bin/sh\nif [ "$1" = nvlink ]; then\n{body}\nfi\nexec {FAKE_SMI} "$@"\n')
    path.chmod(0o755)
    return str(path)


def test_module_survives_a_failing_nvlink_call(smi_env, tmp_path, capsys):
    smi_env("h100-8gpu")
    smi = _wrapper(
        tmp_path, "  echo 'Unable to determine the device handle: Unknown Error' >&2\n  exit 255"
    )
    failed, result = run_module(
        nvidia_smi_facts, smi_args(tmp_path, "hgx-h100", nvidia_smi_path=smi, require=True), capsys
    )
    assert not failed
    fabric = result["ansible_facts"]["nvidia_smi"]["fabric"]
    assert "rc=255" in fabric["nvlink_error"] and fabric["nvlinks_up"] == {}


def test_module_honours_its_timeout_for_nvlink(smi_env, tmp_path, capsys):
    smi_env("h100-8gpu")
    smi = _wrapper(tmp_path, "  sleep 5")
    failed, result = run_module(
        nvidia_smi_facts, smi_args(tmp_path, "hgx-h100", nvidia_smi_path=smi, timeout=1), capsys
    )
    assert not failed
    assert "timed out after 1 s" in result["ansible_facts"]["nvidia_smi"]["fabric"]["nvlink_error"]


def test_module_without_nvidia_smi_has_a_null_fabric(smi_env, tmp_path, capsys):
    smi_env("h200")
    args = {"nvidia_smi_path": str(tmp_path / "none"), "read_kernel_log": False}
    _, result = run_module(nvidia_smi_facts, args, capsys)
    assert result["ansible_facts"]["nvidia_smi"]["fabric"] is None


@pytest.mark.parametrize(
    "case, count, needed, nvlink5",
    [
        ("hgx-h100", 4, True, False),
        ("hgx-b200", 0, True, True),
        ("h200-vm", 0, False, False),
        ("hgx-b200-novpd", 0, None, None),
    ],
)
def test_pci_facts_decide_early(tmp_path, monkeypatch, capsys, case, count, needed, nvlink5):
    monkeypatch.setenv("PATH", str(tmp_path))  # no lspci
    failed, result = run_module(
        nvidia_pci_facts, {"sysfs_root": str(make_sysfs(tmp_path, case))}, capsys
    )
    assert not failed
    facts = result["ansible_facts"]["nvidia_pci"]
    assert facts["nvswitch_count"] == count
    assert facts["fabric_manager_needed_by_pci"] is needed
    assert facts["nvlink5_needed_by_pci"] is nvlink5
    assert facts["fabric_reason"] and isinstance(facts["fabric_evidence"], list)
