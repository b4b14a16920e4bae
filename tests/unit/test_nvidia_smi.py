"""module_utils/nvidia_smi.py: parsing nvidia-smi output and judging GPU health.

Real H200 captures come from tests/fixtures/captures/h200/; every other document is a
constructed one from tests/fixtures/nvidia_smi/ (their '#' header lines, which say so,
are dropped the way the stand-in nvidia-smi drops them).
"""

from __future__ import annotations

import pytest
from ansible.module_utils import nvidia_smi as ns
from conftest import CAPTURES, REPO_ROOT

BUILT = REPO_ROOT / "tests" / "fixtures" / "nvidia_smi"


def read(path) -> str:
    """A fixture as nvidia-smi would print it (constructed documents' '#' headers dropped)."""
    return "".join(line for line in path.read_text().splitlines(True) if not line.startswith("#"))


def built(case: str, name: str) -> str:
    return read(BUILT / case / name)


def facts_for(case: str, expect_mig: bool = False) -> dict:
    folder = BUILT / case
    query = folder / "query.csv"
    topo = folder / "topo.txt"
    return ns.build_facts(
        read(folder / "nvidia-smi-q.xml"),
        read(query) if query.exists() else None,
        read(topo) if topo.exists() else None,
        expect_mig=expect_mig,
    )


@pytest.fixture(scope="module")
def h200():
    return ns.build_facts(
        (CAPTURES / "nvidia-smi-q.xml").read_text(),
        (CAPTURES / "query-full.csv").read_text(),
        (CAPTURES / "topo.txt").read_text(),
    )


def test_constructed_documents_say_so():
    for path in BUILT.rglob("*"):
        if path.is_file() and path.name not in ("rc", "query.rc"):
            assert "CONSTRUCTED TEST DOCUMENT" in path.read_text() or path.suffix == ".md", path


# ---------------------------------------------------------------------------
# The real H200 capture
# ---------------------------------------------------------------------------


def test_h200_capture_every_field(h200):
    assert h200["present"] is True
    assert h200["driver_version"] == "580.159.04"
    assert h200["cuda_driver_version"] == "13.0"
    assert h200["gpu_count"] == 1
    assert h200["health"] == [] and h200["health_notes"] == []
    assert h200["reboot_required"] is False and h200["reboot_reason"] is None
    assert h200["error"] is None
    assert h200["query_error"] is None and h200["topology_error"] is None
    # the kernel log was not read here (build_facts without kernel_log)
    assert h200["xid_events"] == [] and h200["kernel_log_source"] is None
    assert h200["xid_error"] is None
    (gpu,) = h200["gpus"]
    assert gpu == {
        "index": 0,
        "name": "NVIDIA H200",
        "uuid": "GPU-ffd10a58-2a0a-8054-e02e-73e856c45a93",
        "pci_bus_id": "00000000:00:06.0",
        "product_architecture": "Hopper",
        "compute_capability": "9.0",
        "compute_capability_source": "nvidia-smi",
        "architecture": "Hopper",
        "memory_total_mib": 143771,
        "memory_used_mib": 0,
        "persistence_mode": True,
        "mig_mode": False,
        "mig_mode_pending": False,
        "mig_devices": [],
        "ecc_mode": True,
        "ecc_uncorrected_volatile": 0,
        "ecc_uncorrected_aggregate": 0,
        "ecc_sram_threshold_exceeded": False,
        "retired_pages_pending": None,  # "N/A" on this GPU: it uses row remapping
        "retired_pages_sbe": None,
        "retired_pages_dbe": None,
        "remapped_rows_pending": False,
        "remapped_rows_failure": False,
        "remapped_rows_correctable": 0,
        "remapped_rows_uncorrectable": 0,
        "row_remap_banks_low": 0,
        "row_remap_banks_none": 0,
        "pcie_gen_current": 5,
        "pcie_gen_max": 5,
        "pcie_width_current": 16,
        "pcie_width_max": 16,
        "temperature_c": 36,
        "power_limit_w": 700.0,
        "power_default_limit_w": 700.0,
        "power_draw_w": 126.58,
        "utilization_gpu_pct": 0,
        "utilization_memory_pct": 0,
        "processes": [],
        "clocks_sm_mhz": 1980,
        "clocks_max_sm_mhz": 1980,
        "performance_state": "P0",
        "clock_event_reasons_active": ["gpu_idle"],
        "clock_event_reasons_schema": "clocks_event_reasons",
    }


def test_h200_topology_single_gpu(h200):
    topo = h200["topology"]
    assert topo["gpus"] == ["GPU0"]
    assert topo["matrix"] == {"GPU0": {}}
    assert topo["cpu_affinity"] == {"GPU0": "0-15"}
    assert topo["numa_affinity"] == {"GPU0": "0"}
    assert topo["nics"] == {} and topo["link_types"] == [] and topo["all_nvlink"] is False


def test_h200_xml_alone_uses_the_name_table():
    parsed = ns.parse_xml((CAPTURES / "nvidia-smi-q.xml").read_text())
    gpu = parsed["gpus"][0]
    assert gpu["compute_capability"] == "9.0"
    assert gpu["compute_capability_source"] == "name"


def test_h200_query_csv_with_units_and_na():
    rows = ns.parse_query_csv((CAPTURES / "query-full.csv").read_text())
    assert len(rows) == 1
    row = rows[0]
    assert row["compute_cap"] == "9.0"
    assert row["memory.total"] == "143771 MiB"
    assert row["retired_pages.pending"] is None  # "[N/A]"
    assert row["clocks_event_reasons.active"] == "0x0000000000000001"
    # the capture's CSV was taken in another session (another UUID): merge by PCI bus id
    assert row["uuid"] != "GPU-ffd10a58-2a0a-8054-e02e-73e856c45a93"
    assert row["pci.bus_id"] == "00000000:00:06.0"


# ---------------------------------------------------------------------------
# Constructed documents: other schema generations
# ---------------------------------------------------------------------------


def test_v100_470_schema_every_field():
    facts = facts_for("v100-470")  # this case has no query.csv: 470 lacks compute_cap
    assert facts["driver_version"] == "470.82.01"
    assert facts["cuda_driver_version"] == "11.4"
    assert facts["gpu_count"] == 1
    assert facts["topology"] is None
    (gpu,) = facts["gpus"]
    assert gpu["name"] == "Tesla V100-SXM2-16GB"
    assert gpu["uuid"] == "GPU-00000000-0000-4000-8000-000000000470"
    assert gpu["pci_bus_id"] == "00000000:00:1E.0"
    assert gpu["product_architecture"] is None  # not in the 470 schema
    assert gpu["compute_capability"] == "7.0"
    assert gpu["compute_capability_source"] == "name"
    assert gpu["architecture"] == "Volta"
    assert (gpu["memory_total_mib"], gpu["memory_used_mib"]) == (16160, 0)
    assert gpu["persistence_mode"] is False
    assert gpu["mig_mode"] is None and gpu["mig_mode_pending"] is None  # N/A on V100
    assert gpu["mig_devices"] == []
    assert gpu["ecc_mode"] is True
    assert gpu["ecc_uncorrected_volatile"] == 0
    assert gpu["ecc_uncorrected_aggregate"] == 1  # double_bit/total
    assert gpu["retired_pages_pending"] is False
    assert (gpu["retired_pages_sbe"], gpu["retired_pages_dbe"]) == (0, 1)
    assert gpu["remapped_rows_pending"] is None and gpu["remapped_rows_failure"] is None
    assert gpu["remapped_rows_uncorrectable"] is None and gpu["row_remap_banks_none"] is None
    assert gpu["ecc_sram_threshold_exceeded"] is None  # not in the 470 schema
    assert (gpu["pcie_gen_current"], gpu["pcie_gen_max"]) == (1, 3)
    assert (gpu["pcie_width_current"], gpu["pcie_width_max"]) == (16, 16)
    assert gpu["temperature_c"] == 34
    assert gpu["power_limit_w"] == 300.0 and gpu["power_draw_w"] == 24.37
    assert (gpu["clocks_sm_mhz"], gpu["clocks_max_sm_mhz"]) == (135, 1530)
    assert gpu["clock_event_reasons_active"] == ["gpu_idle"]
    assert gpu["clock_event_reasons_schema"] == "clocks_throttle_reasons"
    # idle at gen 1 of 3, one retired page, one lifetime DBE: notes, not problems
    assert facts["health"] == []
    assert [n["code"] for n in facts["health_notes"]] == [
        "pcie-gen-idle-downtrain",
        "retired-pages",
        "ecc-uncorrected-aggregate",
    ]
    assert {n["gpu"] for n in facts["health_notes"]} == {0}
    assert "gen 1 of 3 while idle" in facts["health_notes"][0]["message"]
    retired = facts["health_notes"][1]["message"]
    assert "1 retired page(s) (0 for single-bit, 1 for double-bit" in retired


def test_v100_pending_page_retirement():
    xml = built("v100-470", "nvidia-smi-q.xml").replace(
        "<pending_retirement>No</pending_retirement>",
        "<pending_retirement>Yes</pending_retirement>",
    )
    facts = ns.build_facts(xml)
    assert facts["gpus"][0]["retired_pages_pending"] is True
    assert [h["code"] for h in facts["health"]] == ["retired-pages-pending"]
    assert "reboot" in facts["health"][0]["message"]


def test_pending_blacklist_counts_when_retirement_is_absent():
    xml = (
        built("v100-470", "nvidia-smi-q.xml")
        .replace("<pending_retirement>No</pending_retirement>", "")
        .replace(
            "<pending_blacklist>No</pending_blacklist>",
            "<pending_blacklist>Yes</pending_blacklist>",
        )
    )
    assert ns.build_facts(xml)["gpus"][0]["retired_pages_pending"] is True


def test_v100_uncorrected_volatile_ecc_old_schema():
    xml = built("v100-470", "nvidia-smi-q.xml")
    volatile = xml.split("<volatile>")[1].split("</volatile>")[0]
    broken = volatile.replace(
        "<double_bit>\n\t\t\t\t\t<device_memory>0</device_memory>",
        "<double_bit>\n\t\t\t\t\t<device_memory>3</device_memory>",
    ).replace(
        "<cbu>0</cbu>\n\t\t\t\t\t<total>0</total>", "<cbu>0</cbu>\n\t\t\t\t\t<total>3</total>"
    )
    facts = ns.build_facts(xml.replace(volatile, broken))
    assert facts["gpus"][0]["ecc_uncorrected_volatile"] == 3
    assert [h["code"] for h in facts["health"]] == ["ecc-uncorrected-volatile"]
    # without a total, the double-bit counters are summed
    no_total = xml.replace(volatile, broken.replace("<total>3</total>", "<total>N/A</total>"))
    assert ns.build_facts(no_total)["gpus"][0]["ecc_uncorrected_volatile"] == 3


def test_a100_mig_every_field():
    facts = facts_for("a100-mig")
    assert facts["driver_version"] == "525.147.05"
    assert facts["cuda_driver_version"] == "12.0"
    (gpu,) = facts["gpus"]
    assert gpu["name"] == "NVIDIA A100-SXM4-40GB"
    assert gpu["compute_capability"] == "8.0"
    assert gpu["compute_capability_source"] == "nvidia-smi"
    assert gpu["architecture"] == "Ampere" and gpu["product_architecture"] == "Ampere"
    assert gpu["mig_mode"] is True and gpu["mig_mode_pending"] is True
    assert gpu["mig_devices"] == [
        {
            "index": 0,
            "gpu_instance_id": 1,
            "compute_instance_id": 0,
            "multiprocessor_count": 42,
            "memory_total_mib": 19968,
            "memory_used_mib": 13,
        },
        {
            "index": 1,
            "gpu_instance_id": 2,
            "compute_instance_id": 0,
            "multiprocessor_count": 42,
            "memory_total_mib": 19968,
            "memory_used_mib": 4096,
        },
    ]
    assert (gpu["memory_total_mib"], gpu["memory_used_mib"]) == (40960, 4109)
    assert gpu["ecc_uncorrected_volatile"] == 0  # sram_uncorrectable + dram_uncorrectable
    assert gpu["retired_pages_pending"] is None
    assert gpu["remapped_rows_pending"] is False and gpu["remapped_rows_failure"] is False
    assert (gpu["pcie_gen_current"], gpu["pcie_gen_max"]) == (4, 4)
    assert gpu["power_limit_w"] == 400.0 and gpu["power_draw_w"] == 55.84
    assert (gpu["clocks_sm_mhz"], gpu["clocks_max_sm_mhz"]) == (1410, 1410)
    assert gpu["clock_event_reasons_active"] == []
    assert gpu["clock_event_reasons_schema"] == "clocks_throttle_reasons"
    assert [h["code"] for h in facts["health"]] == ["mig-enabled-unexpected"]
    assert "nvidia-smi -i 0 -mig 0" in facts["health"][0]["message"]
    assert facts_for("a100-mig", expect_mig=True)["health"] == []


def test_mig_expected_but_disabled_and_pending_change():
    xml = built("a100-mig", "nvidia-smi-q.xml").replace(
        "<current_mig>Enabled</current_mig>", "<current_mig>Disabled</current_mig>"
    )
    facts = ns.build_facts(xml, expect_mig=True)
    assert [h["code"] for h in facts["health"]] == ["mig-not-enabled", "mig-change-pending"]
    facts = ns.build_facts(xml, expect_mig=False)
    assert [h["code"] for h in facts["health"]] == ["mig-change-pending"]
    # a GPU without MIG support (N/A) is never a MIG problem
    assert ns.build_facts(built("v100-470", "nvidia-smi-q.xml"), expect_mig=True)["health"] == []


def test_h100_8gpu_nvlink_host():
    facts = facts_for("h100-8gpu")
    assert facts["driver_version"] == "550.90.07"
    assert facts["cuda_driver_version"] == "12.4"
    assert facts["gpu_count"] == 8
    assert [g["index"] for g in facts["gpus"]] == list(range(8))
    assert [g["pci_bus_id"] for g in facts["gpus"]] == [
        f"00000000:{b}:00.0" for b in ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")
    ]
    for gpu in facts["gpus"]:
        assert gpu["name"] == "NVIDIA H100 80GB HBM3"
        assert gpu["compute_capability"] == "9.0"
        assert gpu["compute_capability_source"] == "nvidia-smi"
        assert gpu["memory_total_mib"] == 81559
        assert gpu["power_limit_w"] == 700.0
        assert gpu["clock_event_reasons_schema"] == "clocks_event_reasons"
        assert gpu["ecc_uncorrected_volatile"] == 0
    busy = facts["gpus"][3]
    assert busy["clock_event_reasons_active"] == []
    assert busy["memory_used_mib"] == 61234 and busy["power_draw_w"] == 611.4
    assert facts["health"] == [] and facts["health_notes"] == []
    topo = facts["topology"]
    assert topo["gpus"] == [f"GPU{i}" for i in range(8)]
    for i in range(8):
        row = topo["matrix"][f"GPU{i}"]
        assert sorted(row) == sorted(f"GPU{j}" for j in range(8) if j != i)
        assert set(row.values()) == {"NV18"}
    assert topo["link_types"] == ["NV18"]
    assert topo["all_nvlink"] is True
    assert topo["nic_links"]["GPU0"] == {
        "NIC0": "PXB",
        "NIC1": "NODE",
        "NIC2": "SYS",
        "NIC3": "SYS",
    }
    assert topo["nics"] == {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": "mlx5_2", "NIC3": "mlx5_3"}
    assert topo["cpu_affinity"]["GPU0"] == "0-55,112-167"
    assert topo["cpu_affinity"]["GPU7"] == "56-111,168-223"
    assert topo["numa_affinity"] == {f"GPU{i}": ("0" if i < 4 else "1") for i in range(8)}


def test_degraded_host_health():
    facts = facts_for("degraded")
    assert facts["gpu_count"] == 2
    gpu0, gpu1 = facts["gpus"]
    assert (gpu0["pcie_gen_current"], gpu0["pcie_gen_max"]) == (3, 5)
    assert (gpu0["pcie_width_current"], gpu0["pcie_width_max"]) == (8, 16)
    assert gpu0["remapped_rows_pending"] is True
    assert gpu0["ecc_uncorrected_volatile"] == 2
    assert gpu0["temperature_c"] == 91
    assert gpu0["clock_event_reasons_active"] == [
        "sw_power_cap",
        "hw_thermal_slowdown",
        "sw_thermal_slowdown",
    ]
    assert [(h["code"], h["gpu"]) for h in facts["health"]] == [
        ("pcie-link-degraded", 0),
        ("row-remap-pending", 0),
        ("ecc-uncorrected-volatile", 0),
        ("thermal-slowdown", 0),
    ]
    messages = {h["code"]: h["message"] for h in facts["health"]}
    assert "gen 3 x8, below its max gen 5 x16 while busy" in messages["pcie-link-degraded"]
    assert "00000000:3B:00.0" in messages["pcie-link-degraded"]
    assert "nvidia-smi -r -i 0" in messages["row-remap-pending"]
    assert "2 uncorrected ECC error(s)" in messages["ecc-uncorrected-volatile"]
    assert "hw_thermal_slowdown, sw_thermal_slowdown" in messages["thermal-slowdown"]
    assert "91 C" in messages["thermal-slowdown"]
    # the software power cap at 100% utilisation is a note, not a power fault
    notes = {h["code"]: h["message"] for h in facts["health_notes"]}
    assert "350.0 W power limit at 100% utilisation" in notes["power-cap-reached"]
    assert "not a power fault" in notes["power-cap-reached"]
    # GPU 1 idles at gen 1: informational only
    assert gpu1["clock_event_reasons_active"] == ["gpu_idle"]
    # GPU 0's one remapped row and two lifetime uncorrectable errors are notes
    assert [(n["code"], n["gpu"]) for n in facts["health_notes"]] == [
        ("remapped-rows-uncorrectable", 0),
        ("ecc-uncorrected-aggregate", 0),
        ("power-cap-reached", 0),
        ("pcie-gen-idle-downtrain", 1),
    ]
    assert facts["topology"]["matrix"] == {"GPU0": {"GPU1": "SYS"}, "GPU1": {"GPU0": "SYS"}}
    assert facts["topology"]["all_nvlink"] is False


def test_width_drop_at_idle_is_still_a_problem():
    xml = built("v100-470", "nvidia-smi-q.xml").replace(
        "<current_link_width>16x</current_link_width>",
        "<current_link_width>4x</current_link_width>",
    )
    facts = ns.build_facts(xml)
    assert [h["code"] for h in facts["health"]] == ["pcie-link-degraded"]
    assert "while busy" not in facts["health"][0]["message"]
    assert "pcie-gen-idle-downtrain" not in [n["code"] for n in facts["health_notes"]]


def test_remap_failure_and_hw_slowdown_and_power_brake():
    xml = built("degraded", "nvidia-smi-q.xml")
    first_gpu_end = xml.index("</gpu>")
    gpu1 = xml[first_gpu_end:]
    gpu1 = gpu1.replace(
        "<remapped_row_failure>No</remapped_row_failure>",
        "<remapped_row_failure>Yes</remapped_row_failure>",
        1,
    ).replace(
        "<clocks_event_reason_hw_slowdown>Not Active</clocks_event_reason_hw_slowdown>",
        "<clocks_event_reason_hw_slowdown>Active</clocks_event_reason_hw_slowdown>",
        1,
    )
    facts = ns.build_facts(xml[:first_gpu_end] + gpu1)
    gpu1_codes = [h["code"] for h in facts["health"] if h["gpu"] == 1]
    assert gpu1_codes == ["row-remap-failure", "hw-slowdown"]


# ---------------------------------------------------------------------------
# Parsers: edge cases
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not xml at all", "not XML"),
        ("<other/>", "not <nvidia_smi_log>"),
    ],
)
def test_parse_xml_rejects(text, message):
    with pytest.raises(ValueError, match=message):
        ns.parse_xml(text)


def test_parse_xml_minimal_document():
    parsed = ns.parse_xml("<nvidia_smi_log><driver_version>N/A</driver_version></nvidia_smi_log>")
    assert parsed == {
        "driver_version": None,
        "cuda_driver_version": None,
        "gpu_count": 0,
        "gpus": [],
    }
    gpu = ns.parse_xml('<nvidia_smi_log><gpu id="0000:01:00.0"/></nvidia_smi_log>')["gpus"][0]
    assert gpu["pci_bus_id"] == "00000000:01:00.0"
    assert gpu["clock_event_reasons_active"] == [] and gpu["clock_event_reasons_schema"] is None
    assert gpu["power_limit_w"] is None and gpu["ecc_uncorrected_volatile"] is None
    assert gpu["retired_pages_pending"] is None and gpu["compute_capability"] is None


def test_value_helpers():
    assert ns.clean("  N/A ") is None and ns.clean("[Not Supported]") is None
    assert ns.clean(" a  b ") == "a b" and ns.clean(None) is None
    assert ns.to_number("700.00 W") == 700.0 and ns.to_number("-8 C") == -8.0
    assert ns.to_number("abc") is None and ns.to_int("16x") == 16 and ns.to_int(None) is None
    assert ns.to_flag("Enabled") is True and ns.to_flag("Not Active") is False
    assert ns.to_flag("Pass-Through") is None and ns.to_flag("N/A") is None
    assert ns.normalize_bus_id("0000:3b:00.0") == "00000000:3B:00.0"
    assert ns.normalize_bus_id("[N/A]") is None
    assert ns.normalize_bus_id("weird") == "WEIRD"


def test_parse_query_csv_forms():
    assert ns.parse_query_csv("") == []
    noheader = "0, 00000000:18:00.0, 9.0\n1, 00000000:2A:00.0, [N/A]\n"
    rows = ns.parse_query_csv(noheader, ["index", "pci.bus_id", "compute_cap"])
    assert rows == [
        {"index": "0", "pci.bus_id": "00000000:18:00.0", "compute_cap": "9.0"},
        {"index": "1", "pci.bus_id": "00000000:2A:00.0", "compute_cap": None},
    ]
    with pytest.raises(ValueError, match="no header"):
        ns.parse_query_csv(noheader)
    short = ns.parse_query_csv("index, compute_cap\n0\n")
    assert short == [{"index": "0", "compute_cap": None}]


def test_merge_query_by_bus_id_then_index_then_position():
    def gpus():
        return [
            {"index": 0, "pci_bus_id": "00000000:18:00.0", "product_architecture": None},
            {"index": 1, "pci_bus_id": "00000000:2A:00.0", "product_architecture": "Hopper"},
        ]

    by_bus = gpus()
    ns.merge_query(
        by_bus,
        [
            {"index": "1", "pci.bus_id": "0000:2a:00.0", "compute_cap": "9.0"},
            {"index": "0", "pci.bus_id": "00000000:99:00.0", "compute_cap": "8.0"},  # no match
        ],
    )
    assert by_bus[1]["compute_capability"] == "9.0" and by_bus[1]["architecture"] == "Hopper"
    assert by_bus[1]["compute_capability_source"] == "nvidia-smi"
    assert "compute_capability" not in by_bus[0]

    by_index = gpus()
    ns.merge_query(
        by_index, [{"index": "0", "compute_cap": "8.6"}, {"index": "7", "compute_cap": "7.5"}]
    )
    assert by_index[0]["compute_capability"] == "8.6" and by_index[0]["architecture"] == "Ampere"
    assert "compute_capability" not in by_index[1]

    by_position = gpus()
    ns.merge_query(
        by_position, [{"compute_cap": "[N/A]"}, {"compute_cap": "12.0"}, {"compute_cap": "9.0"}]
    )
    assert "compute_capability" not in by_position[0]
    assert by_position[1]["compute_capability"] == "12.0"
    assert by_position[1]["architecture"] == "Blackwell"


def test_build_facts_with_bad_query_raises_for_the_module_to_handle():
    with pytest.raises(ValueError):
        ns.build_facts((CAPTURES / "nvidia-smi-q.xml").read_text(), "0, 9.0\n")


def test_parse_topo_ignores_noise():
    assert ns.parse_topo("")["gpus"] == []
    assert ns.parse_topo("garbage\nmore garbage\n")["matrix"] == {}


def test_commands():
    assert ns.xml_command("/usr/bin/nvidia-smi") == ["/usr/bin/nvidia-smi", "-q", "-x"]
    assert ns.query_command("smi") == [
        "smi",
        "--query-gpu=index,pci.bus_id,uuid,compute_cap",
        "--format=csv",
    ]
    assert ns.topo_command("smi") == ["smi", "topo", "-m"]


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "kind", "reboot", "rc", "text"),
    [
        ("driver-not-loaded", "driver_not_loaded", True, 9, "kernel module is not loaded"),
        ("version-mismatch", "driver_library_mismatch", True, 18, "upgraded without a reboot"),
        ("gpu-lost", "gpu_lost", True, 15, "fell off the bus"),
        ("no-devices", "no_devices", False, 6, "sees no GPU"),
    ],
)
def test_classify_error_fixtures(case, kind, reboot, rc, text):
    output = built(case, "output.txt")
    assert int((BUILT / case / "rc").read_text()) == rc
    error = ns.classify_error(output, "", rc)
    assert error["kind"] == kind
    assert error["reboot_required"] is reboot
    assert error["rc"] == rc
    assert text in error["message"]
    assert error["message"].startswith(f"nvidia-smi failed (rc={rc}): ")
    if reboot:
        assert text in error["reboot_reason"]
    else:
        assert error["reboot_reason"] is None


def test_version_mismatch_names_the_library_version():
    error = ns.classify_error("", built("version-mismatch", "output.txt"), 18)
    assert "(user-space NVML library is 535.183)" in error["reboot_reason"]


@pytest.mark.parametrize(
    ("output", "kind"),
    [
        ("NVIDIA-SMI couldn't find libnvidia-ml.so library in your system.", "nvml_missing"),
        ("Failed to initialize NVML: Insufficient Permissions", "permission_denied"),
        ('Field "compute_cap" is not a valid field to query.', "invalid_field"),
        ("Failed to initialize NVML: Unknown Error", "nvml_unknown_error"),
        ("Segmentation fault", "unknown"),
        ("", "unknown"),
    ],
)
def test_classify_other_errors(output, kind):
    error = ns.classify_error(output, "", 3)
    assert error["kind"] == kind
    assert error["reboot_required"] is False and error["reboot_reason"] is None


def test_absent_facts():
    facts = ns.absent_facts()
    assert facts["present"] is False and facts["gpu_count"] == 0 and facts["gpus"] == []
    assert facts["error"] is None and facts["reboot_required"] is False
    error = ns.classify_error(built("version-mismatch", "output.txt"), "", 18)
    failed = ns.absent_facts(error, present=True)
    assert failed["present"] is True and failed["reboot_required"] is True
    assert failed["reboot_reason"] == error["reboot_reason"] and failed["error"] is error


@pytest.mark.parametrize(
    ("readings", "limit", "draw"),
    [
        (
            "<gpu_power_readings><enforced_power_limit>300.00 W</enforced_power_limit>"
            "<power_draw>41.00 W</power_draw></gpu_power_readings>",
            300.0,
            41.0,
        ),
        (
            "<gpu_power_readings><current_power_limit>700.00 W</current_power_limit>"
            "<instant_power_draw>N/A</instant_power_draw>"
            "<average_power_draw>99.50 W</average_power_draw></gpu_power_readings>",
            700.0,
            99.5,
        ),
        (
            "<power_readings><power_limit>250.00 W</power_limit>"
            "<power_draw>N/A</power_draw></power_readings>",
            250.0,
            None,
        ),
    ],
)
def test_power_reading_variants(readings, limit, draw):
    gpu = ns.parse_xml(f'<nvidia_smi_log><gpu id="0">{readings}</gpu></nvidia_smi_log>')["gpus"][0]
    assert (gpu["power_limit_w"], gpu["power_draw_w"]) == (limit, draw)
