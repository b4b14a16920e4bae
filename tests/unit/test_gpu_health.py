"""module_utils/gpu_health.py and the health rules of nvidia_smi.py: Xid events, memory limits.

Kernel-log lines come from real hosts (tests/fixtures/captures/kernel-log-xid/, each file
named in its README); memory-error values come from real `nvidia-smi -q` excerpts
(tests/fixtures/captures/nvidia-smi-q-memory/) carried into the real H200 XML capture.
A line or value built here for a case the captures lack says so next to it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from ansible.module_utils import gpu_health as gh
from ansible.module_utils import nvidia_smi as ns
from ansible.module_utils.vendor_catalogue import CATALOGUE
from conftest import CAPTURES, REPO_ROOT

KLOG = REPO_ROOT / "tests" / "fixtures" / "captures" / "kernel-log-xid"
MEMORY = REPO_ROOT / "tests" / "fixtures" / "captures" / "nvidia-smi-q-memory"
H200_XML = (CAPTURES / "nvidia-smi-q.xml").read_text()
H200_QUERY = (CAPTURES / "query-full.csv").read_text()
H200_BUS = "00000000:00:06.0"


def klog(name: str) -> str:
    return (KLOG / name).read_text()


def with_log(text: str, xml: str = H200_XML, source: str = "journalctl") -> dict:
    return ns.build_facts(
        xml, H200_QUERY, kernel_log={"text": text, "source": source, "error": None}
    )


def codes(findings) -> list:
    return [f["code"] for f in findings]


# ---------------------------------------------------------------------------
# Parsing real kernel-log lines
# ---------------------------------------------------------------------------


def test_dmesg_T_xid_119_five_times_with_gsp_noise():
    events = gh.parse_kernel_log(klog("gpud-dmesg-T-xid119.log"))
    assert [e["xid"] for e in events] == [119] * 5
    assert {e["pci"] for e in events} == {"0000:9b:00"}
    first = events[0]
    assert first["pid"] == 2024380 and first["process"] == "nvidia-smi"
    assert first["timestamp"] == "Sun Feb 23 16:24:18 2025"
    assert first["message"].startswith(
        "Timeout after 6s of waiting for RPC response from GPU4 GSP!"
    )
    assert [e["process"] for e in events] == [
        "nvidia-smi",
        "nvidia-smi",
        "nvidia-smi",
        "cache_mgr_main",
        "gpud",
    ]


def test_dmesg_T_app_errors_and_a_contained_error_with_unknown_pid():
    events = gh.parse_kernel_log(klog("akash-244-dmesg-T.log"))
    assert [(e["xid"], e["pci"]) for e in events] == [
        (43, "0000:00:05"),
        (43, "0000:00:05"),
        (31, "0000:00:07"),
        (94, "0000:00:08"),
    ]
    assert events[2]["timestamp"] == "Mon Aug  5 03:54:13 2024"  # day padded with a space
    assert events[2]["process"] == "python3.10"
    contained = events[3]
    assert contained["pid"] is None and contained["process"] is None  # pid='<unknown>'
    assert contained["message"] == "Contained: SM (0x1). RST: No, D-RST: No"


def test_dmesg_T_fallen_off_the_bus_ignores_the_continuation_lines():
    (event,) = gh.parse_kernel_log(klog("akash-209-dmesg-T-xid79.log"))
    assert (event["xid"], event["pci"], event["pid"]) == (79, "0000:a1:00", None)
    assert event["message"] == "GPU has fallen off the bus."


def test_syslog_prefix_with_kernel_seconds_prefers_the_wall_clock():
    events = gh.parse_kernel_log(klog("gpu-operator-1146-syslog.log"))
    assert [e["xid"] for e in events] == [48, 64]
    assert events[0]["timestamp"] == "Dec  2 11:38:47"
    assert events[0]["message"].startswith("An uncorrectable double bit error (DBE)")
    assert events[1]["message"].startswith("Dynamic Page Retirement: Blacklisting failed.")


def test_dmesg_ctime_xid_13_message_with_parentheses():
    events = gh.parse_kernel_log(klog("gpud-pr46-dmesg-ctime.log"))
    assert [e["xid"] for e in events] == [13, 13, 13, 109]
    assert events[0]["message"].startswith("Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0)")
    assert events[3]["process"] == "pt_main_thread"


def test_journal_without_host_and_without_pid():
    (event,) = gh.parse_kernel_log(klog("ogkm-1151-journal-xid79.log"))
    assert (event["xid"], event["pci"], event["pid"], event["process"]) == (
        79,
        "0000:2b:00",
        None,
        None,
    )
    assert event["timestamp"] == "May 18 19:02:39"
    assert event["message"] == "GPU has fallen off the bus."


def test_journal_without_timestamp():
    events = gh.parse_kernel_log(klog("ogkm-1150-journal-xid45.log"))
    assert [e["xid"] for e in events] == [45] * 7
    assert {e["timestamp"] for e in events} == {None}


def test_pid_without_name_and_other_pci_domains():
    (event,) = gh.parse_kernel_log(klog("ml-engineering-xid63.log"))
    assert (event["pid"], event["process"]) == (1896, None)
    assert event["message"].startswith("Row Remapper: New row marked for remapping")
    nvlink5 = gh.parse_kernel_log(klog("gpud-pr1174-kmsg-nvlink5.log"))
    assert [(e["xid"], e["pci"]) for e in nvlink5] == [(149, "0019:01:00"), (145, "0018:01:00")]


@pytest.mark.parametrize(
    ("line", "xid", "pci", "timestamp"),
    [
        # CONSTRUCTED: journalctl -o short-monotonic, the module's own command
        (
            "[ 1843.308145] gpu-host kernel: NVRM: Xid (PCI:0000:b3:00): 79, pid=1234, "
            "name=python, GPU has fallen off the bus.",
            79,
            "0000:b3:00",
            "1843.308145",
        ),
        # CONSTRUCTED: journalctl -o short-iso
        (
            "2026-12-01T10:00:00+0000 gpu-host kernel: NVRM: Xid (PCI:0000:18:00): 48, DBE",
            48,
            "0000:18:00",
            "2026-12-01T10:00:00+0000",
        ),
        # CONSTRUCTED: an older driver's address without "PCI:"
        ("NVRM: Xid (0000:01:00): 13, 0003 00000000 0000a297", 13, "0000:01:00", None),
        # CONSTRUCTED: an address redacted by whoever posted the log
        (
            "kernel: NVRM: Xid (PCI:...): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 11 (...)",
            145,
            None,
            None,
        ),
    ],
)
def test_other_prefixes_and_addresses(line, xid, pci, timestamp):
    event = gh.parse_xid_line(line)
    assert (event["xid"], event["pci"], event["timestamp"]) == (xid, pci, timestamp)


@pytest.mark.parametrize(
    "line",
    [
        "[    0.000000] Linux version 6.1.0",
        "NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d",
        "NVRM: Xid is mentioned here without a code",
        "nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44",
    ],
)
def test_other_lines_are_not_xid_events(line):
    assert gh.parse_xid_line(line) is None
    assert gh.parse_kernel_log(line + "\n") == []


def test_empty_or_missing_text():
    assert gh.parse_kernel_log("") == [] and gh.parse_kernel_log(None) == []


# ---------------------------------------------------------------------------
# Counting per GPU and code, mapping the PCI address to the GPU
# ---------------------------------------------------------------------------


def _gpus(*buses):
    return [{"index": i, "name": "NVIDIA H100", "pci_bus_id": b} for i, b in enumerate(buses)]


def test_repeated_events_are_counted_with_first_and_last_time():
    gpus = _gpus("00000000:18:00.0", "00000000:9B:00.0")  # lower-case 9b in the log
    (group,) = ns.xid_events(klog("gpud-dmesg-T-xid119.log"), gpus)
    assert group["gpu"] == 1 and group["pci_bus_id"] == "00000000:9B:00.0"
    assert (group["xid"], group["code"], group["count"]) == (119, "xid-119", 5)
    assert group["first_seen"] == "Sun Feb 23 16:24:18 2025"
    assert group["last_seen"] == "Sun Feb 23 16:30:13 2025"
    assert group["processes"] == ["nvidia-smi", "cache_mgr_main", "gpud"]
    assert (group["severity"], group["action"]) == ("failing", "reset-gpu")
    assert group["mnemonic"] == "GSP_RPC_TIMEOUT"


def test_events_of_gpus_nvidia_smi_does_not_list_keep_their_address():
    (group,) = ns.xid_events(klog("akash-209-dmesg-T-xid79.log"), _gpus("00000000:18:00.0"))
    assert group["gpu"] is None and group["pci_bus_id"] == "00000000:A1:00"


def test_groups_per_address_in_the_order_first_seen():
    gpus = _gpus("00000000:97:00.0", "00000000:BA:00.0", "00000000:DC:00.0", "00000000:ED:00.0")
    groups = ns.xid_events(klog("ogkm-1150-journal-xid45.log"), gpus)
    assert [(g["gpu"], g["count"]) for g in groups] == [(2, 2), (3, 2), (1, 2), (0, 1)]
    assert {g["first_seen"] for g in groups} == {None}


def test_one_gpu_many_codes_and_a_missing_pid():
    groups = ns.xid_events(klog("akash-244-dmesg-T.log"), [])
    assert [(g["xid"], g["count"], g["gpu"]) for g in groups] == [
        (43, 2, None),
        (31, 1, None),
        (94, 1, None),
    ]
    assert groups[0]["processes"] == ["pt_main_thread"] and groups[2]["processes"] == []


# ---------------------------------------------------------------------------
# Health: the real H200 capture, and every Xid code of the table
# ---------------------------------------------------------------------------

H200_BOOT_LOG = (
    # CONSTRUCTED: a boot without Xid events, in journalctl -o short-monotonic form
    "[    0.000000] h200 kernel: Linux version 6.8.0-87-generic\n"
    "[    5.112233] h200 kernel: nvidia: loading out-of-tree module taints kernel.\n"
    "[    5.934455] h200 kernel: NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  "
    "580.159.04\n"
)


def test_the_real_h200_capture_stays_healthy():
    facts = with_log(H200_BOOT_LOG)
    assert facts["health"] == [] and facts["health_notes"] == []
    assert facts["xid_events"] == [] and facts["kernel_log_source"] == "journalctl"
    assert facts["xid_error"] is None


def test_xid_79_of_a_gpu_that_fell_off_the_bus_fails_the_host():
    facts = with_log(klog("akash-209-dmesg-T-xid79.log"), source="dmesg")
    (problem,) = facts["health"]
    assert problem["code"] == "xid-79" and problem["gpu"] is None
    assert "The GPU at 00000000:A1:00 (not listed by nvidia-smi)" in problem["message"]
    assert "1 time(s) since boot (first Fri Apr  5 21:29:39 2024" in problem["message"]
    assert "reboot the host" in problem["message"]
    assert facts["kernel_log_source"] == "dmesg"


def test_application_errors_are_notes_and_the_dbe_a_problem():
    log = klog("akash-244-dmesg-T.log") + klog("gpu-operator-1146-syslog.log")
    facts = with_log(log)
    assert codes(facts["health"]) == ["xid-48", "xid-64"]
    assert codes(facts["health_notes"]) == ["xid-43", "xid-31", "xid-94"]
    note = facts["health_notes"][0]["message"]
    assert "Xid 43 ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR" in note and "2 time(s)" in note
    assert "nothing to do on the host" in note


def test_unlisted_codes_are_notes():
    facts = with_log(klog("gpud-pr1174-kmsg-nvlink5.log"))
    assert facts["health"] == []
    assert codes(facts["health_notes"]) == ["xid-unlisted", "xid-unlisted"]
    assert "Xid 149 " in facts["health_notes"][0]["message"]
    assert "not in Kindling's table" in facts["health_notes"][0]["message"]
    assert facts["xid_events"][0]["action"] is None


#: Kindling's reading of NVIDIA's bucket for each code of the table, written out here so a
#: change to a row of the catalogue (or to the rule) fails this test.
EXPECTED_XID = {
    8: ("informational", "application"),
    13: ("informational", "application"),
    31: ("informational", "application"),
    32: ("informational", "application"),
    43: ("informational", "application"),
    45: ("informational", "none"),
    46: ("failing", "reset-gpu"),
    48: ("failing", "drain"),
    61: ("failing", "contact-support"),
    62: ("failing", "reset-gpu"),
    63: ("informational", "none"),
    64: ("failing", "reset-gpu"),
    68: ("informational", "application"),
    69: ("informational", "application"),
    74: ("failing", "drain"),
    79: ("failing", "reboot"),
    92: ("informational", "none"),
    94: ("informational", "application"),
    95: ("failing", "reset-gpu"),
    109: ("failing", "reset-gpu"),
    119: ("failing", "reset-gpu"),
    120: ("failing", "reset-gpu"),
    121: ("informational", "none"),
    140: ("failing", "reset-gpu"),
    143: ("failing", "reset-gpu"),
    154: ("informational", "none"),
}

#: NVIDIA's immediate-action bucket -> Kindling's severity (the rule the catalogue states).
BUCKET_SEVERITY = {
    "RESTART_APP": "informational",
    "IGNORE": "informational",
    "WORKFLOW_XID_45": "informational",
    "XID_154": "informational",
    "RESET_GPU": "failing",
    "RESTART_BM": "failing",
    "CONTACT_SUPPORT": "failing",
    "WORKFLOW_XID_48": "failing",
    "WORKFLOW_NVLINK_ERR": "failing",
}


def test_the_table_has_the_codes_this_test_expects():
    assert sorted(gh.XID_TABLE) == sorted(EXPECTED_XID)


@pytest.mark.parametrize("xid", sorted(EXPECTED_XID))
def test_every_xid_of_the_table_goes_where_its_severity_says(xid):
    severity, action = EXPECTED_XID[xid]
    row = gh.xid_row(xid)
    assert (row["severity"], row["action"]) == (severity, action)
    assert BUCKET_SEVERITY[row["resolution"]] == severity
    # CONSTRUCTED: one line of this code for the H200's own address
    line = f"[  100.000001] h200 kernel: NVRM: Xid (PCI:0000:00:06): {xid}, pid=1, name=python, x\n"
    facts = with_log(H200_BOOT_LOG + line)
    (event,) = facts["xid_events"]
    assert (event["gpu"], event["pci_bus_id"], event["count"]) == (0, H200_BUS, 1)
    assert (event["severity"], event["action"]) == (severity, action)
    wanted, other = (
        ("health", "health_notes") if severity == "failing" else ("health_notes", "health")
    )
    assert codes(facts[wanted]) == [f"xid-{xid}"]
    assert codes(facts[other]) == []
    finding = facts[wanted][0]
    assert finding["gpu"] == 0
    assert finding["message"].startswith(f"GPU 0 (NVIDIA H200, {H200_BUS}) logged Xid {xid} ")
    assert row["remediation"] in finding["message"]


def test_a_failed_nvidia_smi_still_reports_the_xid_that_explains_it():
    error = ns.classify_error(
        "Unable to determine the device handle for GPU0000:A1:00.0: GPU is lost", "", 15
    )
    facts = ns.absent_facts(
        error,
        present=True,
        kernel_log={"text": klog("akash-209-dmesg-T-xid79.log"), "source": "dmesg", "error": None},
    )
    assert facts["error"]["kind"] == "gpu_lost"
    assert codes(facts["health"]) == ["xid-79"]
    assert facts["xid_events"][0]["pci_bus_id"] == "00000000:A1:00"


def test_an_unreadable_kernel_log_is_a_note():
    facts = ns.build_facts(
        H200_XML,
        H200_QUERY,
        kernel_log={"text": None, "source": None, "error": "dmesg failed (rc=1): denied"},
    )
    assert facts["health"] == []
    (note,) = facts["health_notes"]
    assert note["code"] == "kernel-log-unreadable" and note["gpu"] is None
    assert "dmesg failed (rc=1): denied" in note["message"]
    assert (
        facts["xid_error"] == "dmesg failed (rc=1): denied" and facts["kernel_log_source"] is None
    )


def test_without_a_kernel_log_nothing_is_said_about_it():
    facts = ns.build_facts(H200_XML, H200_QUERY)
    assert (facts["xid_events"], facts["kernel_log_source"], facts["xid_error"]) == ([], None, None)
    assert facts["health_notes"] == []


# ---------------------------------------------------------------------------
# Memory errors: real values, carried into the real H200 XML
# ---------------------------------------------------------------------------


def text_sections(text: str) -> dict:
    """`nvidia-smi -q` text -> {("Remapped Rows", "Uncorrectable Error"): "1", ...}."""
    values, path = {}, []
    for line in text.splitlines():
        if not line.startswith(" "):
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 4
        label, _, value = line.strip().partition(":")
        path = [*path[: depth - 1], label.strip()]
        if value.strip():
            values[tuple(path)] = value.strip()
    return values


#: nvidia-smi -q labels -> the -q -x element (parent path, tag) that prints the same field.
TEXT_TO_XML = {
    ("ECC Errors", "Aggregate", "DRAM Uncorrectable"): ("aggregate", "dram_uncorrectable"),
    ("ECC Errors", "Aggregate", "DRAM Correctable"): ("aggregate", "dram_correctable"),
    ("ECC Errors", "Aggregate", "SRAM Threshold Exceeded"): (
        "aggregate",
        "sram_threshold_exceeded",
    ),
    ("Retired Pages", "Single Bit ECC"): ("multiple_single_bit_retirement", "retired_count"),
    ("Retired Pages", "Double Bit ECC"): ("double_bit_retirement", "retired_count"),
    ("Retired Pages", "Pending Page Blacklist"): ("retired_pages", "pending_blacklist"),
    ("Remapped Rows", "Correctable Error"): ("remapped_rows", "remapped_row_corr"),
    ("Remapped Rows", "Uncorrectable Error"): ("remapped_rows", "remapped_row_unc"),
    ("Remapped Rows", "Pending"): ("remapped_rows", "remapped_row_pending"),
    ("Remapped Rows", "Remapping Failure Occurred"): ("remapped_rows", "remapped_row_failure"),
    ("Remapped Rows", "Bank Remap Availability Histogram", "Low"): (
        "row_remapper_histogram",
        "row_remapper_histogram_low",
    ),
    ("Remapped Rows", "Bank Remap Availability Histogram", "None"): (
        "row_remapper_histogram",
        "row_remapper_histogram_none",
    ),
}


def set_value(xml: str, parent: str, tag: str, value: str) -> str:
    """Set <tag> inside the first <parent> block of the XML (exactly one change)."""
    block = re.search(rf"<{parent}>.*?</{parent}>", xml, re.S)
    assert block, parent
    inner, n = re.subn(rf"<{tag}>[^<]*</{tag}>", f"<{tag}>{value}</{tag}>", block.group(0), count=1)
    assert n == 1, (parent, tag)
    return xml[: block.start()] + inner + xml[block.end() :]


def xml_with(values: dict, xml: str = H200_XML) -> str:
    for key, value in values.items():
        parent, tag = TEXT_TO_XML[key]
        xml = set_value(xml, parent, tag, value)
    return xml


def capture_xml(name: str) -> str:
    """The H200 XML with the memory-error values of a real `nvidia-smi -q` excerpt."""
    values = text_sections((MEMORY / name).read_text())
    return xml_with({k: v for k, v in values.items() if k in TEXT_TO_XML and v != "N/A"})


def test_text_excerpts_parse():
    values = text_sections((MEMORY / "gh200-dram-uncorrectable.txt").read_text())
    assert values[("Remapped Rows", "Uncorrectable Error")] == "1"
    assert values[("ECC Errors", "Aggregate", "DRAM Uncorrectable")] == "1"
    assert values[("Remapped Rows", "Bank Remap Availability Histogram", "High")] == "1 bank(s)"


def test_gh200_one_remapped_row_and_one_lifetime_dbe_are_notes():
    facts = ns.build_facts(capture_xml("gh200-dram-uncorrectable.txt"))
    gpu = facts["gpus"][0]
    assert (gpu["remapped_rows_uncorrectable"], gpu["ecc_uncorrected_aggregate"]) == (1, 1)
    assert gpu["row_remap_banks_none"] == 0
    assert facts["health"] == []
    assert codes(facts["health_notes"]) == [
        "remapped-rows-uncorrectable",
        "ecc-uncorrected-aggregate",
    ]
    assert (
        "1 row(s) remapped for uncorrectable errors (the limit is 512)"
        in (facts["health_notes"][0]["message"])
    )


def test_a100_remap_pending_is_a_problem():
    facts = ns.build_facts(capture_xml("a100-sxm4-remap-pending.txt"))
    gpu = facts["gpus"][0]
    assert gpu["remapped_rows_pending"] is True and gpu["remapped_rows_correctable"] == 1
    assert codes(facts["health"]) == ["row-remap-pending"]
    assert facts["health_notes"] == []  # correctable remaps are not a finding


def test_v100_one_retired_page_is_a_note():
    facts = ns.build_facts(capture_xml("v100-sxm2-retired-sbe.txt"))
    gpu = facts["gpus"][0]
    assert (gpu["retired_pages_sbe"], gpu["retired_pages_dbe"]) == (1, 0)
    assert gpu["retired_pages_pending"] is False
    assert facts["health"] == []
    (note,) = facts["health_notes"]
    assert note["code"] == "retired-pages"
    assert "1 retired page(s) (1 for single-bit, 0 for double-bit errors)" in note["message"]


def _retired(sbe: str, dbe: str) -> dict:
    return ns.build_facts(
        xml_with(
            {("Retired Pages", "Single Bit ECC"): sbe, ("Retired Pages", "Double Bit ECC"): dbe}
        )
    )


def test_retired_pages_fail_at_the_limit():
    # CONSTRUCTED counts around DCGM's limit of 63 (SBE plus DBE)
    below = _retired("40", "22")
    assert below["health"] == [] and codes(below["health_notes"]) == ["retired-pages"]
    assert "within a week" in below["health_notes"][0]["message"]  # 22 DBE pages > 15
    at = _retired("40", "23")
    assert codes(at["health"]) == ["retired-pages-limit"] and at["health_notes"] == []
    assert "63 retired page(s)" in at["health"][0]["message"]
    few_dbe = _retired("10", "5")
    assert "within a week" not in few_dbe["health_notes"][0]["message"]


def test_retired_pages_in_the_470_schema():
    xml = (
        REPO_ROOT / "tests" / "fixtures" / "nvidia_smi" / "v100-470" / "nvidia-smi-q.xml"
    ).read_text()
    gpu = ns.parse_xml(xml)["gpus"][0]
    assert (gpu["retired_pages_sbe"], gpu["retired_pages_dbe"]) == (0, 1)


def test_remapped_rows_fail_at_512():
    # CONSTRUCTED counts around NVIDIA's limit of 512 remappings
    key = ("Remapped Rows", "Uncorrectable Error")
    below = ns.build_facts(xml_with({key: "511"}))
    assert below["health"] == [] and codes(below["health_notes"]) == ["remapped-rows-uncorrectable"]
    at = ns.build_facts(xml_with({key: "512"}))
    assert codes(at["health"]) == ["remapped-rows-limit"] and at["health_notes"] == []


def test_banks_without_spare_rows_are_a_note_and_low_banks_nothing():
    # CONSTRUCTED histogram counts: NVML defines 'none', not 'low'
    histogram = ("Remapped Rows", "Bank Remap Availability Histogram")
    facts = ns.build_facts(xml_with({(*histogram, "None"): "2 bank(s)"}))
    assert facts["gpus"][0]["row_remap_banks_none"] == 2
    assert facts["health"] == [] and codes(facts["health_notes"]) == ["row-remap-bank-exhausted"]
    low = ns.build_facts(xml_with({(*histogram, "Low"): "5 bank(s)"}))
    assert low["gpus"][0]["row_remap_banks_low"] == 5
    assert low["health"] == [] and low["health_notes"] == []


def test_sram_threshold_exceeded_fails():
    # CONSTRUCTED: the flag set
    key = ("ECC Errors", "Aggregate", "SRAM Threshold Exceeded")
    facts = ns.build_facts(xml_with({key: "Yes"}))
    assert facts["gpus"][0]["ecc_sram_threshold_exceeded"] is True
    assert codes(facts["health"]) == ["sram-threshold-exceeded"]


def test_limits_come_from_the_catalogue_with_sources():
    limits = CATALOGUE["memory_error_limits"]
    assert limits["retired_pages"]["failing_at"] == 63
    assert "DCGM_LIMIT_MAX_RETIRED_PAGES 63" in limits["retired_pages"]["source"]
    assert limits["remapped_rows_uncorrectable"]["failing_at"] == 512
    assert "512 remappings" in limits["remapped_rows_uncorrectable"]["source"]
    # what no source gives is unknown, not guessed
    assert limits["ecc_uncorrected_aggregate"]["failing_at"] is None
    assert limits["ecc_uncorrected_aggregate"]["source"].startswith("[no source found]")
    assert limits["row_remapper_histogram"]["low"]["meaning"] is None
    assert limits["row_remapper_histogram"]["low"]["source"].startswith("[no source found]")
    for row in CATALOGUE["xid_events"]:
        assert "analyzing-xid-catalog" in row["source"], row["xid"]


def test_kernel_log_commands():
    assert gh.journal_command("/usr/bin/journalctl") == [
        "/usr/bin/journalctl",
        "-k",
        "-b",
        "0",
        "--no-pager",
        "-o",
        "short-monotonic",
    ]
    assert gh.dmesg_command("/usr/bin/dmesg") == ["/usr/bin/dmesg"]
    assert gh.journal_has_entries(H200_BOOT_LOG)
    assert not gh.journal_has_entries("-- No entries --\n")
    assert not gh.journal_has_entries("")


# ---------------------------------------------------------------------------
# The registry: every code emitted is there, with a matching severity
# ---------------------------------------------------------------------------

_ISSUE_CALL = re.compile(r"\b_?issue\(\s*\"([^\"]+)\"")


def emitted_codes(source: str) -> set:
    """Code literals passed to ``_issue("code", ...)`` and ``issue("code", ...)``."""
    return set(_ISSUE_CALL.findall(source))


def test_the_scan_finds_codes_and_would_fail_on_a_new_one():
    sample = '_issue(\n    "made-up-code",\n    gpu,\n    "msg")\nissue("other-code", None, m)\n'
    assert emitted_codes(sample) == {"made-up-code", "other-code"}
    assert not emitted_codes(sample) <= set(gh.HEALTH_CODES)


def test_every_code_a_module_emits_is_in_the_registry():
    files = sorted((REPO_ROOT / "module_utils").glob("*.py"))
    found = {}
    for path in files:
        for code in emitted_codes(path.read_text()):
            found.setdefault(code, path.name)
    assert "row-remap-pending" in found and "kernel-log-unreadable" in found
    missing = {code: where for code, where in found.items() if code not in gh.HEALTH_CODES}
    assert not missing, f"codes emitted but not in gpu_health.HEALTH_CODES: {missing}"


def test_xid_codes_and_the_fabric_codes_are_registered():
    for xid in gh.XID_TABLE:
        assert gh.xid_code(xid) in gh.HEALTH_CODES
    assert gh.xid_code(149) == "xid-unlisted" in gh.HEALTH_CODES
    for code in (
        "nvlink-down",
        "fabric-state-not-completed",
        "fabric-state-failed",
        "fabric-manager-version-mismatch",
        "fabric-manager-missing",
    ):
        assert gh.HEALTH_CODES[code]["severity"] == "failing"
        assert gh.HEALTH_CODES[code]["emitted_by"] == "module_utils/gpu_fabric.py"


def test_every_registry_entry_is_complete():
    for code, entry in gh.HEALTH_CODES.items():
        assert re.match(r"^[a-z0-9]+(-[a-z0-9]+)*$", code), code
        assert entry["severity"] in ("failing", "informational"), code
        assert entry["meaning"].strip() and entry["remediation"].strip(), code
        assert (REPO_ROOT / entry["emitted_by"]).parent.is_dir(), code


def _scenarios():
    """Fact sets that between them emit most codes of nvidia_smi.py."""
    built = REPO_ROOT / "tests" / "fixtures" / "nvidia_smi"

    def read(case):
        text = (built / case / "nvidia-smi-q.xml").read_text()
        return "".join(line for line in text.splitlines(True) if not line.startswith("#"))

    every_xid = "".join(f"NVRM: Xid (PCI:0000:00:06): {xid}, x\n" for xid in [*gh.XID_TABLE, 149])
    yield with_log(H200_BOOT_LOG + every_xid)
    yield ns.build_facts(read("degraded"))
    yield ns.build_facts(read("a100-mig"))
    yield ns.build_facts(
        read("a100-mig").replace("Enabled</current_mig>", "Disabled</current_mig>"), expect_mig=True
    )
    yield ns.build_facts(
        read("v100-470").replace("<pending_retirement>No<", "<pending_retirement>Yes<")
    )
    yield _retired("40", "23")
    yield ns.build_facts(xml_with({("Remapped Rows", "Uncorrectable Error"): "600"}))
    yield ns.build_facts(xml_with({("ECC Errors", "Aggregate", "SRAM Threshold Exceeded"): "Yes"}))
    histogram_none = ("Remapped Rows", "Bank Remap Availability Histogram", "None")
    failed = xml_with({("Remapped Rows", "Remapping Failure Occurred"): "Yes", histogram_none: "1"})
    yield ns.build_facts(
        failed.replace(
            "<clocks_event_reason_hw_slowdown>Not Active<",
            "<clocks_event_reason_hw_slowdown>Active<",
        )
    )
    yield ns.build_facts(H200_XML, kernel_log={"text": None, "source": None, "error": "denied"})
    # CONSTRUCTED from the H200 capture: the power brake engaged, the limit lowered to 500 W
    yield ns.build_facts(
        H200_XML.replace(
            "<clocks_event_reason_hw_power_brake_slowdown>Not Active<",
            "<clocks_event_reason_hw_power_brake_slowdown>Active<",
        ).replace("<current_power_limit>700.00 W<", "<current_power_limit>500.00 W<")
    )


def test_severity_of_every_emitted_finding_matches_the_registry():
    seen = set()
    for facts in _scenarios():
        for finding in facts["health"]:
            assert gh.HEALTH_CODES[finding["code"]]["severity"] == "failing", finding
            seen.add(finding["code"])
        for finding in facts["health_notes"]:
            assert gh.HEALTH_CODES[finding["code"]]["severity"] == "informational", finding
            seen.add(finding["code"])
    smi_codes = {
        c for c, e in gh.HEALTH_CODES.items() if e["emitted_by"] == "module_utils/nvidia_smi.py"
    }
    assert smi_codes <= seen, smi_codes - seen


# ---------------------------------------------------------------------------
# The findings in reports (report_codes, health_line)
# ---------------------------------------------------------------------------

DEGRADED = REPO_ROOT / "tests" / "fixtures" / "nvidia_smi" / "degraded"


def constructed(name: str) -> str:
    """A constructed fixture as the stand-in prints it (its '#' header lines dropped)."""
    text = (DEGRADED / name).read_text()
    return "".join(line for line in text.splitlines(True) if not line.startswith("#"))


def test_report_codes_put_failing_first_with_severity_and_remedy():
    facts = ns.build_facts(
        constructed("nvidia-smi-q.xml"), constructed("query.csv"), constructed("topo.txt")
    )
    # The list a finding is in decides its severity; the facts' order stays within each.
    rows = gh.report_codes(facts["health"], facts["health_notes"])
    assert [(r["code"], r["gpu"], r["severity"]) for r in rows] == [
        ("pcie-link-degraded", 0, "failing"),
        ("row-remap-pending", 0, "failing"),
        ("ecc-uncorrected-volatile", 0, "failing"),
        ("thermal-slowdown", 0, "failing"),
        ("remapped-rows-uncorrectable", 0, "informational"),
        ("ecc-uncorrected-aggregate", 0, "informational"),
        ("power-cap-reached", 0, "informational"),
        ("pcie-gen-idle-downtrain", 1, "informational"),
    ]
    for row in rows:
        assert row["remediation"] == gh.HEALTH_CODES[row["code"]]["remediation"]
        assert row["where"] == f"GPU {row['gpu']}" and row["message"].startswith(row["where"])
    assert gh.health_line(rows) == (
        "GPU health: FAILING pcie-link-degraded (GPU 0), row-remap-pending (GPU 0), "
        "ecc-uncorrected-volatile (GPU 0), thermal-slowdown (GPU 0); "
        "notes: remapped-rows-uncorrectable (GPU 0), ecc-uncorrected-aggregate (GPU 0), "
        "power-cap-reached (GPU 0), pcie-gen-idle-downtrain (GPU 1)"
    )


def test_report_codes_of_a_gpu_off_the_bus_and_of_odd_input():
    facts = with_log(klog("akash-209-dmesg-T-xid79.log"), source="dmesg")
    (row,) = gh.report_codes(facts["health"], facts["health_notes"])
    assert (row["code"], row["gpu"], row["where"]) == ("xid-79", None, "no GPU index")
    assert row["remediation"].startswith("The GPU no longer answers on PCIe: reboot the host")
    assert gh.health_line([row]) == "GPU health: FAILING xid-79"
    # Not findings, a code the registry lacks, and no lists at all.
    odd = gh.report_codes([None, "x", {"gpu": 1}, {"code": "made-up", "gpu": 2}], None)
    assert odd == [
        {
            "code": "made-up",
            "gpu": 2,
            "where": "GPU 2",
            "severity": "failing",
            "message": "",
            "remediation": None,
        }
    ]
    assert gh.report_codes(None, None) == []


def test_health_line_groups_a_code_over_its_gpus():
    rows = gh.report_codes(
        [
            {"code": "nvlink-down", "gpu": 3, "message": "m"},
            {"code": "fabric-manager-missing", "gpu": None, "message": "m"},
            {"code": "nvlink-down", "gpu": 5, "message": "m"},
        ],
        [{"code": "xid-13", "gpu": 1, "message": "m"}],
    )
    assert gh.health_line(rows) == (
        "GPU health: FAILING nvlink-down (GPUs 3, 5), fabric-manager-missing; notes: xid-13 (GPU 1)"
    )
    assert gh.health_line(rows[-1:]) == "GPU health: no failing code; notes: xid-13 (GPU 1)"
    assert gh.health_line([]) == "GPU health: no findings"
    assert gh.health_line(None) == "GPU health: unknown (no nvidia_smi facts)"


# ---------------------------------------------------------------------------
# tools/health_codes.py
# ---------------------------------------------------------------------------

sys.path.insert(0, str(REPO_ROOT / "tools"))
import health_codes  # noqa: E402


def test_health_codes_page_is_current():
    assert health_codes.main(["--check"]) == 0, "run tools/health_codes.py"


def test_the_page_lists_every_code_and_every_xid_with_its_source():
    page = health_codes.render()
    for code in gh.HEALTH_CODES:
        assert f"`{code}`" in page, code
    for xid, row in gh.XID_TABLE.items():
        assert f"| {xid} | `xid-{xid}` | `{row['mnemonic']}` |" in page
    assert "### nv_xid_catalog" in page and "### dcgm_limits" in page
    assert "unknown: an NVIDIA limit on the lifetime count" in page


def test_check_fails_when_the_page_is_stale(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "HEALTH_CODES.md"
    stale.write_text(health_codes.render().replace("| 79 | `xid-79`", "| 79 | `xid-97`", 1))
    monkeypatch.setattr(health_codes, "DOC", stale)
    assert health_codes.main(["--check"]) == 1
    assert "docs/HEALTH_CODES.md is out of date" in capsys.readouterr().err


def test_the_page_is_written_when_missing(tmp_path, monkeypatch):
    target = tmp_path / "HEALTH_CODES.md"
    monkeypatch.setattr(health_codes, "DOC", target)
    assert health_codes.main([]) == 0
    assert target.read_text() == health_codes.render()
    assert Path(health_codes.DOC) == target
