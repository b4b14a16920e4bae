"""tools/fleet_report.py: event folding, the three reports, and a real ansible-runner run."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import pytest
from ansible.module_utils import nvidia_smi as ns
from conftest import CAPTURES, REPO_ROOT

spec = importlib.util.spec_from_file_location(
    "fleet_report", REPO_ROOT / "tools" / "fleet_report.py"
)
fleet_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fleet_report)


def _event(kind, host, action, res, task="t"):
    return {
        "event": kind,
        "event_data": {"host": host, "task_action": action, "task": task, "res": res},
    }


def _judged(verdict, img_s, reference, status):
    return {
        "verdict": verdict,
        "summary": f"{verdict}: amp_fp16_cl {img_s} img/s",
        "judgement": {
            "amp_fp16_cl": {
                "img_s": img_s,
                "reference": reference,
                "ratio": img_s / reference,
                "status": status,
                "source": "Kindling H200 measurements",
            }
        },
        "failed_modes": ["amp_fp16_cl"] if status == "fail" else [],
        "diagnosis": ["GPU 0's PCIe link runs at gen 3 x16, below its max gen 5 x16."]
        if status == "fail"
        else [],
        "gpu_key": "h200",
        "gpu_name": "NVIDIA H200",
        "tolerance": 0.8,
        "throughput": {
            "environment": {"gpu_count": 1},
            "modes": {"amp_fp16_cl": {"batch_size": 256}},
        },
    }


EVENTS = [
    _event(
        "runner_on_ok",
        "fast",
        "nvidia_smi_facts",
        {"ansible_facts": {"nvidia_smi": {"present": True, "gpu_count": 1}}},
    ),
    _event(
        "runner_on_ok", "fast", "gpu_throughput_measure", _judged("pass", 5800.0, 5781.0, "pass")
    ),
    _event(
        "runner_on_ok",
        "slow",
        "torch_cuda_facts",
        {"ansible_facts": {"torch_cuda": {"cuda_available": True}}},
    ),
    _event(
        "runner_on_ok", "slow", "gpu_throughput_measure", _judged("fail", 2100.0, 5781.0, "fail")
    ),
    _event("runner_on_unreachable", "gone", "setup", {"msg": "ssh: connect to host gone port 22"}),
    _event(
        "runner_on_failed",
        "broken",
        "torch_cuda_facts",
        {"msg": "torch is the CPU-only wheel"},
        task="Probe torch.cuda",
    ),
    _event("runner_on_failed", "tolerated", "command", {"msg": "ignored"}),
    {"event": "playbook_on_stats", "event_data": {}},
]
EVENTS[6]["event_data"]["ignore_errors"] = True


def test_collect_classifies_every_host():
    hosts = fleet_report.collect(EVENTS)
    assert {h: r["status"] for h, r in hosts.items()} == {
        "fast": "ok",
        "slow": "slow",
        "gone": "unreachable",
        "broken": "failed",
        "tolerated": "no-measurement",
    }
    assert hosts["fast"]["nvidia_smi"] == {"present": True, "gpu_count": 1}
    assert hosts["slow"]["torch_cuda"] == {"cuda_available": True}
    assert hosts["slow"]["throughput"]["batch_sizes"] == {"amp_fp16_cl": 256}
    assert "ssh: connect" in hosts["gone"]["errors"][0]
    assert hosts["broken"]["errors"] == ["Probe torch.cuda: torch is the CPU-only wheel"]


def test_reports_name_the_slow_host_and_why(tmp_path):
    hosts = fleet_report.collect(EVENTS)
    meta = {"timestamp": "20261129T000000Z", "inventory": "inv", "playbook": "playbooks/verify.yml"}
    out = tmp_path / "reports" / "run"
    fleet_report.write_reports(hosts, out, meta)
    data = json.loads((out / "results.json").read_text())
    assert data["hosts"]["slow"]["status"] == "slow"
    md = (out / "summary.md").read_text()
    assert "| slow | NVIDIA H200 | amp_fp16_cl | 256 | 2100 | 5781 | 0.36 | fail |" in md
    assert "- **slow** (slow)" in md and "PCIe link runs at gen 3" in md
    page = (out / "index.html").read_text()
    # Offline: no style or image fetched, and plotly.js once per reports folder, beside
    # the report's folder, loaded relatively.
    assert "<link" not in page and "<img" not in page
    (script,) = re.findall(r'<script src="([^"]+)"', page)
    assert re.fullmatch(r"\.\./plotly-\d+\.\d+\.\d+\.min\.js", script)
    assert (out / script).resolve().stat().st_size > 1_000_000
    assert len(page) < 200_000  # not 4.8 MB of plotly.js inline
    assert page.count('id="hosts-figure"') == 1 and 'id="heatmap-figure"' in page
    # The table starts with the slowest row, and the attention list names why.
    body = page.split('<table id="hosts-table" class="sortable">')[1].split("<tbody>")[1]
    assert body.startswith('<tr class="fail"><td>slow</td>')
    assert '<li data-host="slow"><b>slow</b> <span class="status slow">slow</span>' in page
    assert '<li data-host="gone"><b>gone</b> <span class="status unreachable">' in page
    assert "PCIe link runs at gen 3" in page
    # What the page draws: a bar per host and mode, with its reference and causes.
    drawn = fleet_report.html_rows(hosts)
    # Every host has a row: those without a measurement one, with their status and why.
    assert [(r["host"], r["img_s"], r["reference"]) for r in drawn["host_rows"]] == [
        ("fast", 5800.0, 5781.0),
        ("slow", 2100.0, 5781.0),
        ("broken", None, None),
        ("gone", None, None),
        ("tolerated", None, None),
    ]
    gone = next(r for r in drawn["host_rows"] if r["host"] == "gone")
    assert gone["status"] == "unreachable" and "ssh: connect" in gone["causes"][0]
    slow = next(r for r in drawn["host_rows"] if r["host"] == "slow")
    assert slow["causes"][0].startswith("GPU 0's PCIe link runs at gen 3 x16")
    assert slow["host_status"] == "slow" and drawn["gpu_rows"] == []
    assert drawn["counts"] == {
        "ok": 1,
        "slow": 1,
        "unreachable": 1,
        "failed": 1,
        "no-measurement": 1,
    }


# --- GPU health codes beside the verdict

BUILT = REPO_ROOT / "tests" / "fixtures" / "nvidia_smi"
H200_XML = (CAPTURES / "nvidia-smi-q.xml").read_text()
H200_QUERY = (CAPTURES / "query-full.csv").read_text()
XID_79 = (
    "[  812.001] h200 kernel: NVRM: Xid (PCI:0000:00:06): 79, pid=1234, name=python, "
    "GPU has fallen off the bus.\n"
)
XID_13 = (
    "[  700.500] h200 kernel: NVRM: Xid (PCI:0000:00:06): 13, pid=99, name=python, "
    "Graphics SM Warp Exception\n"
)


def _constructed(case):
    """A constructed fixture's facts ('#' header lines dropped as the stand-in does)."""

    def read(name):
        path = BUILT / case / name
        if not path.exists():
            return None
        return "".join(ln for ln in path.read_text().splitlines(True) if not ln.startswith("#"))

    return ns.build_facts(read("nvidia-smi-q.xml"), read("query.csv"), read("topo.txt"))


def _h200(log):
    return ns.build_facts(
        H200_XML, H200_QUERY, kernel_log={"text": log, "source": "journalctl", "error": None}
    )


def _facts_event(host, facts, kind="runner_on_ok", msg=""):
    res = {"msg": msg, "ansible_facts": {"nvidia_smi": facts}}
    return _event(kind, host, "nvidia_smi_facts", res, task="Read nvidia-smi")


# A fabric host: the findings gpu_fabric.fabric_health adds (shape of the facts' entries).
FABRIC = {
    "present": True,
    "health": [
        {"code": "nvlink-down", "gpu": 3, "message": "GPU 3 has 12 of 18 NVLinks active."},
        {"code": "nvlink-down", "gpu": 5, "message": "GPU 5 has 0 of 18 NVLinks active."},
        {
            "code": "fabric-manager-version-mismatch",
            "gpu": None,
            "message": "nvidia-fabricmanager 550.54.15 runs beside driver 550.90.07.",
        },
    ],
    "health_notes": [],
}

HEALTH_EVENTS = [
    # Passes throughput, but GPU 0 fell off the bus once: it must stand out.
    _facts_event("xid", _h200(XID_13 + XID_79)),
    _event(
        "runner_on_ok", "xid", "gpu_throughput_measure", _judged("pass", 5800.0, 5781.0, "pass")
    ),
    # Passes, with an application Xid only: a note, the host stays ok.
    _facts_event("noted", _h200(XID_13)),
    _event(
        "runner_on_ok", "noted", "gpu_throughput_measure", _judged("pass", 5790.0, 5781.0, "pass")
    ),
    # Slow, and the facts say why (PCIe, thermal, power, a pending row remap).
    _facts_event("hot", _constructed("degraded")),
    _event(
        "runner_on_ok", "hot", "gpu_throughput_measure", _judged("fail", 2100.0, 5781.0, "fail")
    ),
    # nvidia_smi_facts (require: true) failed, with its facts: the lost GPU's Xid 79.
    _facts_event(
        "lost",
        ns.absent_facts(
            ns.classify_error(
                "Unable to determine the device handle for GPU0000:A1:00.0: GPU is lost", "", 15
            ),
            present=True,
            kernel_log={
                "text": "[  99.000] NVRM: Xid (PCI:0000:a1:00): 79, pid=1, name=python, "
                "GPU has fallen off the bus.\n",
                "source": "dmesg",
                "error": None,
            },
        ),
        kind="runner_on_failed",
        msg="nvidia-smi: GPU is lost",
    ),
    _facts_event("fabric", FABRIC),
    _event(
        "runner_on_ok", "fabric", "gpu_throughput_measure", _judged("pass", 5800.0, 5781.0, "pass")
    ),
    _facts_event("clean", _h200("")),
    _event(
        "runner_on_ok", "clean", "gpu_throughput_measure", _judged("pass", 5800.0, 5781.0, "pass")
    ),
]


def test_collect_gives_each_host_its_health_codes():
    hosts = fleet_report.collect(HEALTH_EVENTS)
    assert {h: r["status"] for h, r in hosts.items()} == {
        "xid": "unhealthy",
        "noted": "ok",
        "hot": "slow",
        "lost": "failed",
        "fabric": "unhealthy",
        "clean": "ok",
    }
    assert hosts["xid"]["health_failing"] == ["xid-79"]
    assert [(r["code"], r["gpu"], r["severity"]) for r in hosts["xid"]["health"]] == [
        ("xid-79", 0, "failing"),  # failing first, though the note was logged earlier
        ("xid-13", 0, "informational"),
    ]
    assert "reboot the host" in hosts["xid"]["health"][0]["remediation"]
    assert (
        hosts["xid"]["health_line"] == "GPU health: FAILING xid-79 (GPU 0); notes: xid-13 (GPU 0)"
    )
    assert hosts["noted"]["health_failing"] == []
    assert hosts["noted"]["health_line"] == "GPU health: no failing code; notes: xid-13 (GPU 0)"
    assert hosts["hot"]["health_failing"] == [
        "pcie-link-degraded",
        "row-remap-pending",
        "ecc-uncorrected-volatile",
        "thermal-slowdown",
    ]
    assert [r["code"] for r in hosts["lost"]["health"]] == ["xid-79"]
    assert hosts["lost"]["health"][0]["where"] == "no GPU index"
    assert hosts["fabric"]["health_line"] == (
        "GPU health: FAILING nvlink-down (GPUs 3, 5), fabric-manager-version-mismatch"
    )
    assert hosts["clean"]["health"] == [] and hosts["clean"]["health_line"] == (
        "GPU health: no findings"
    )


def test_reports_show_the_health_codes_beside_the_verdict(tmp_path):
    hosts = fleet_report.collect(HEALTH_EVENTS + EVENTS)
    meta = {"timestamp": "20261129T000000Z", "inventory": "inv", "playbook": "playbooks/verify.yml"}
    out = tmp_path / "reports" / "run"
    fleet_report.write_reports(hosts, out, meta)

    data = json.loads((out / "results.json").read_text())
    xid = data["hosts"]["xid"]
    assert xid["status"] == "unhealthy" and xid["health_failing"] == ["xid-79"]
    assert {"code", "gpu", "severity", "message", "remediation"} <= set(xid["health"][0])
    assert data["hosts"]["fast"]["health"] is None  # its facts carry no findings at all

    md = (out / "summary.md").read_text()
    # The health column sits beside the verdict; failing codes are bold, notes plain.
    assert "| verdict | vs peers | health | source |" in md
    assert (
        "| xid | NVIDIA H200 | amp_fp16_cl | 256 | 5800 | 5781 | 1.00 | pass "
        "| 1.00 of 5,795 (n=6) | **xid-79**, xid-13 |" in md
    )
    assert "| noted | NVIDIA H200 | amp_fp16_cl | 256 | 5790 | 5781 | 1.00 | pass | 1.00 of" in md
    assert "| 1.00 of 5,800 (n=6) | xid-13 |" in md
    assert "| clean | NVIDIA H200 | amp_fp16_cl | 256 | 5800 | 5781 | 1.00 | pass | 1.00 of" in md
    assert "| fast | NVIDIA H200 | amp_fp16_cl | 256 | 5800 | 5781 | 1.00 | pass | 1.00 of" in md
    assert "| 0.36 of 5,800 (n=6) **trails** | - |" in md  # slow: the table failed it too
    assert (
        "| **fabric-manager-version-mismatch** |" not in md
        and "**nvlink-down**, **fabric-manager-version-mismatch**" in md
    )
    # A host that passed but has a failing code needs attention, and says why.
    attention = md.split("## Hosts that need attention")[1].split("## Throughput")[0]
    assert (
        "- **xid** (unhealthy): pass: amp_fp16_cl 5800.0 img/s; "
        "failing health codes: xid-79 (GPU 0)" in attention
    )
    assert "- **noted**" not in attention and "- **clean**" not in attention
    assert (
        "- **lost** (failed): Read nvidia-smi: nvidia-smi: GPU is lost; "
        "failing health codes: xid-79" in attention
    )
    # The findings section: per host, each finding with its remedy, failing first.
    findings = md.split("## GPU health findings")[1]
    assert "[docs/HEALTH_CODES.md](" in findings
    assert "- **xid** (unhealthy): 1 failing, 1 informational" in findings
    xid_block = findings.split("- **xid** (unhealthy)")[1]
    assert xid_block.index("**failing** `xid-79` (GPU 0)") < xid_block.index("note `xid-13`")
    # The remedy follows the message, unless the message already says it (Xid messages do).
    assert "or replace it. Remedy:" not in findings
    assert "the GPU no longer answers on PCIe: reboot the host" in xid_block
    assert "**failing** `thermal-slowdown` (GPU 0): GPU 0 (NVIDIA H100 PCIe" in findings
    assert "Remedy: Check the fans, the airflow and the inlet temperature." in findings
    assert "note `pcie-gen-idle-downtrain` (GPU 1)" in findings
    assert "**failing** `xid-79` (no GPU index): The GPU at" in findings
    assert "- No findings: clean." in findings
    assert "- No nvidia-smi findings reported: broken, fast, gone, slow, tolerated." in findings

    page = (out / "index.html").read_text()
    # The table's health cell: failing codes in bold, notes plain; the attention list
    # carries each failing code with its message.
    assert '<td data-sort="xid-79"><b>xid-79</b>, xid-13</td>' in page
    assert '<li data-host="xid"><b>xid</b> <span class="status unhealthy">unhealthy</span>' in page
    drawn = fleet_report.html_rows(hosts)
    xid = next(r for r in drawn["host_rows"] if r["host"] == "xid")
    assert xid["health_failing"] == ["xid-79"] and xid["health_notes"] == ["xid-13"]
    assert "FAILING xid-79 (GPU 0)" in xid["hover"]
    hot = next(a for a in drawn["attention"] if a["host"] == "hot")
    assert any(c.startswith("pcie-link-degraded (GPU") for c in hot["causes"])
    fabric = next(r for r in drawn["host_rows"] if r["host"] == "fabric")
    assert fabric["health_failing"] == ["nvlink-down", "fabric-manager-version-mismatch"]


def test_an_unhealthy_host_makes_the_run_fail(tmp_path, monkeypatch):
    artifacts = tmp_path / "artifacts"
    (artifacts / "job_events").mkdir(parents=True)
    for number, event in enumerate(HEALTH_EVENTS[:4], start=1):
        (artifacts / "job_events" / f"{number}-event.json").write_text(json.dumps(event))
    code = fleet_report.main(["--from-artifacts", str(artifacts), "--reports", str(tmp_path / "r")])
    assert code == 1  # "xid" passed throughput, but its GPU 0 logged Xid 79


def test_bad_arguments_exit_2():
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "fleet_report.py")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "give -i INVENTORY" in result.stderr


@pytest.mark.slow
def test_runs_verify_through_ansible_runner_on_the_local_connection(tmp_path):
    """The real thing: ansible-runner runs playbooks/verify.yml on this machine (CPU)."""
    extra = {
        "gpu_check_device": "cpu",
        "gpu_check_python": sys.executable,
        "gpu_check_modes": ["fp32"],
        "gpu_check_probes": ["none"],
        "gpu_check_batch_size": 2,
        "gpu_check_image_size": 32,
        "gpu_check_extra_args": ["--warmup", "1", "--steps", "2", "--windows", "1"],
        "gpu_check_install_dir": str(tmp_path / "bin"),
        "gpu_check_host_report_dir": str(tmp_path / "host"),
        "gpu_check_report_dir": str(tmp_path / "controller"),
    }
    result = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "tools" / "fleet_report.py"),
            "-i",
            str(REPO_ROOT / "inventories" / "local"),
            "--reports",
            str(tmp_path / "reports"),
            "-e",
            json.dumps(extra),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (run_dir,) = [p for p in (tmp_path / "reports").iterdir() if p.is_dir()]
    data = json.loads((run_dir / "results.json").read_text())
    host = data["hosts"]["localhost"]
    assert host["status"] == "ok"
    assert host["torch_cuda"]["importable"] is True
    assert host["throughput"]["judgement"]["fp32"]["status"] == "not_run"
    assert host["throughput"]["judgement"]["fp32"]["img_s"] > 0
    assert host["health_failing"] == [] and isinstance(host["health"], list)
    controller = tmp_path / "controller" / "localhost"
    report = json.loads((controller / "gpu-check.json").read_text())
    assert report["health"] == [] and isinstance(report["health_notes"], list)
    assert report["health_summary"].startswith("GPU health: ")
    lines = (controller / "gpu-check.md").read_text().splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("- Verdict: "))
    assert lines[verdict + 1] == f"- {report['health_summary']}" or lines[verdict + 1].startswith(
        f"- {report['health_summary']} (explained in docs/HEALTH_CODES.md)"
    )
    page = (run_dir / "index.html").read_text()
    assert '<tr class="not_run"><td>' in page and 'id="hosts-figure"' in page
    # Every callback ansible.cfg enables loads under ansible-runner too (the H200 run of
    # 2026-12-02 found kindling_progress skipped: runner's callback folder hid ours).
    (stdout,) = (run_dir / "runner" / "artifacts").glob("*/stdout")
    assert "Skipping callback plugin" not in stdout.read_text()


def _h200_host(name, img_s, status="pass", gpu_key="h200", gpu_name="NVIDIA H200"):
    judged = _judged(status, img_s, 6180.0, status)
    judged.update(gpu_key=gpu_key, gpu_name=gpu_name)
    return _event("runner_on_ok", name, "gpu_throughput_measure", judged)


def test_the_fleet_is_its_own_baseline(tmp_path):
    # Four H200s pass the table (0.80 x 6,180 = 4,944); h200-d passes it at 5,000 but
    # trails its three peers (6,150) by 19%: an outlier. One T4 host has no peers.
    events = [
        _h200_host("h200-a", 6150.0),
        _h200_host("h200-b", 6140.0),
        _h200_host("h200-c", 6160.0),
        _h200_host("h200-d", 5000.0),
        _h200_host("t4-a", 480.0, gpu_key="t4", gpu_name="Tesla T4"),
    ]
    hosts = fleet_report.collect(events)
    assert {h: r["status"] for h, r in hosts.items()} == {
        "h200-a": "ok",
        "h200-b": "ok",
        "h200-c": "ok",
        "h200-d": "outlier",
        "t4-a": "ok",
    }
    d = hosts["h200-d"]["peers"]["amp_fp16_cl"]
    assert d["flag"] == "trails-peers" and d["peer_median"] == 6150.0
    assert hosts["t4-a"]["peers"]["amp_fp16_cl"]["verdict"] == "no-peers"
    # A wider margin lets it through.
    assert fleet_report.collect(events, peer_margin=0.25)["h200-d"]["status"] == "ok"

    meta = {"timestamp": "20261201T000000Z", "inventory": "inv", "playbook": "playbooks/verify.yml"}
    out = tmp_path / "reports" / "run"
    fleet_report.write_reports(hosts, out, meta)
    md = (out / "summary.md").read_text()
    attention = md.split("## Hosts that need attention")[1].split("## Throughput")[0]
    assert (
        "- **h200-d** (outlier): pass: amp_fp16_cl 5000.0 img/s; trails-peers: h200-d" in attention
    )
    assert "81% of its 3 peer(s)' median 6,150, more than 10% below (the table passed it)" in md
    peers = md.split("## Peer baseline")[1].split("## GPU health")[0]
    assert "| h200 | amp_fp16_cl | 4 | 6,145 | 5,000 | 6,160 | h200-d |" in peers
    assert "- t4 / amp_fp16_cl: one host of this model in the run, so no peer baseline" in peers
    assert "| t4-a | Tesla T4 | amp_fp16_cl | 256 | 480 |" in md and "| no peers |" in md
    page = (out / "index.html").read_text()
    assert '<b>h200-d</b> <span class="status outlier">outlier</span>' in page
    assert '<td data-sort="0.813">0.81 of 6,150 (n=3)</td>' in page
    assert ">no peers</td>" in page  # the T4
    drawn = fleet_report.html_rows(hosts)
    d_row = next(r for r in drawn["host_rows"] if r["host"] == "h200-d")
    assert (d_row["peer_median"], d_row["peer_verdict"]) == (6150.0, "trails")
    assert d_row["causes"][0].startswith("trails-peers: h200-d amp_fp16_cl 5,000 img/s")
    results = json.loads((out / "results.json").read_text())
    assert results["hosts"]["h200-d"]["peers"]["amp_fp16_cl"]["peer_ratio"] == 0.813


def test_a_whole_group_below_the_table_is_reported_as_group_slow():
    events = [_h200_host(f"h{i}", 4000.0 + i, status="fail") for i in range(3)]
    hosts = fleet_report.collect(events)
    assert {r["status"] for r in hosts.values()} == {"slow"}
    assert all(r["peers"]["amp_fp16_cl"]["flag"] == "group-slow" for r in hosts.values())
    assert "group-slow: h0 fails the table" in fleet_report._why(hosts["h0"])


def test_a_bad_peer_margin_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        fleet_report.main(["--from-artifacts", str(tmp_path), "--peer-margin", "1.5"])
    assert exc.value.code == 2
    assert "--peer-margin must be between 0 and 1, got 1.5" in capsys.readouterr().err


def test_hosts_that_measured_every_gpu_are_judged_gpu_by_gpu():
    from ansible.module_utils.gpu_throughput_ref import judge_report

    doc = json.loads(
        (REPO_ROOT / "tests" / "fixtures" / "throughput" / "h200x8_one_gpu_behind.json").read_text()
    )
    judged = judge_report(doc, "h200")
    events = []
    for name in ("hgx-a", "hgx-b"):
        result = _judged("pass", 6150.0, 6180.0, "pass")
        result.update(gpus=judged["gpus"], gpu_outliers=judged["gpu_outliers"], not_run=[])
        events.append(_event("runner_on_ok", name, "gpu_throughput_measure", result))
    hosts = fleet_report.collect(events)
    # 16 GPUs in one group; GPU 5 of each host trails the other 15 (the table passed it).
    flagged = [v for v in hosts["hgx-a"]["peer_verdicts"] if v["flag"] == "trails-peers"]
    assert [(v["gpu"], v["mode"]) for v in flagged] == [(5, "amp_fp16_cl")]
    assert flagged[0]["peer_count"] == 15
    assert hosts["hgx-a"]["status"] == "outlier"
    assert hosts["hgx-a"]["peers"]["amp_fp16_cl"]["gpu"] == 5  # the worst GPU per mode
    md = fleet_report.render_markdown(hosts, {"timestamp": "t", "inventory": "i", "playbook": "p"})
    assert "| h200 | amp_fp16_cl | 16 | 6,152 | 5,200 | 6,162 | hgx-a GPU 5, hgx-b GPU 5 |" in md
    assert "hgx-a GPU 5 amp_fp16_cl 5,200 img/s is 84% of its 15 peer(s)' median 6,155" in md
    # The page's per-GPU bars: 8 per host, GPU 5 against its host's other GPUs and its peers.
    drawn = fleet_report.html_rows(hosts)
    assert len(drawn["gpu_rows"]) == 16
    gpu5 = next(r for r in drawn["gpu_rows"] if (r["host"], r["gpu_index"]) == ("hgx-a", 5))
    assert gpu5["img_s"] == 5200.0 and gpu5["vs_host"] < 0.9 and gpu5["peer_median"] > 6100
    assert "bus_id" in gpu5  # filled from the nvidia-smi facts on a real host
    row = next(r for r in drawn["host_rows"] if r["host"] == "hgx-a")
    assert any(c.startswith("GPU 5 (") and "of its host's other GPUs" in c for c in row["causes"])


def test_an_earlier_report_is_drawn_again_from_its_results(tmp_path, capsys):
    hosts = fleet_report.collect(EVENTS)
    meta = {"timestamp": "20261129T000000Z", "inventory": "inv", "playbook": "playbooks/verify.yml"}
    fleet_report.write_reports(hosts, tmp_path / "first", meta)
    again = tmp_path / "again"
    rc = fleet_report.main(
        ["--from-results", str(tmp_path / "first" / "results.json"), "--reports", str(again)]
    )
    assert rc == 1  # the same hosts need attention as in the first run
    (run_dir,) = [p for p in again.iterdir() if p.is_dir()]
    redrawn = json.loads((run_dir / "results.json").read_text())
    assert redrawn["hosts"] == json.loads(json.dumps(hosts))
    assert redrawn["meta"]["timestamp"] == "20261129T000000Z" and redrawn["meta"]["redrawn_at"]
    assert "<td>slow</td>" in (run_dir / "index.html").read_text()
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(SystemExit) as exc:
        fleet_report.main(["--from-results", str(tmp_path / "bad.json"), "--reports", str(again)])
    assert exc.value.code == 2
    assert "not a fleet report's results.json" in capsys.readouterr().err


# --- the fleet page: every host, its stack, causes grouped, the previous report


def _smi(driver="580.159.04", gpus=8, name="NVIDIA H100 80GB HBM3"):
    return {
        "present": True,
        "driver_version": driver,
        "cuda_driver_version": "13.0",
        "gpu_count": gpus,
        "gpus": [{"index": i, "name": name} for i in range(gpus)],
    }


def test_stack_majority_and_drift():
    hosts = {
        "a": {"nvidia_smi": _smi(), "torch_cuda": {"torch_version": "2.11.0+cu130"}},
        "b": {"nvidia_smi": _smi(), "torch_cuda": {"torch_version": "2.11.0+cu130"}},
        "c": {"nvidia_smi": _smi("570.86.15", 4), "torch_cuda": {"torch_version": "2.11.0+cu130"}},
        "gone": {"nvidia_smi": None, "torch_cuda": None},  # unknown: never drift
    }
    stack = fleet_report.fleet_stack(hosts)
    assert stack["majority"] == {
        "driver": "580.159.04",
        "cuda": "13.0",
        "torch": "2.11.0+cu130",
        "gpu_model": "NVIDIA H100 80GB HBM3",
        "gpu_count": 8,
    }
    assert stack["drift"] == {"c": ["driver", "gpu_count"]}
    # A tie has no majority, and nobody drifts on that field.
    tie = fleet_report.fleet_stack({k: hosts[k] for k in ("a", "c")})
    assert "driver" not in tie["majority"] and tie["drift"] == {}


def test_causes_are_grouped_by_code_else_by_message_without_host_names():
    def host(name, causes=None, diagnosis=(), status="slow"):
        tp = {"diagnosis": list(diagnosis)}
        if causes is not None:
            tp["causes"] = causes
        return {"host": name, "status": status, "errors": [], "throughput": tp, "health": []}

    busy = {"code": "gpu-busy-foreign-process", "gpu": 0, "message": "GPU 0 runs pid 7"}
    hosts = {
        "n1": host("n1", [busy, dict(busy, gpu=1)]),
        "n2": host("n2", [busy]),
        # An older report: diagnosis lines only, the host's name in the text.
        "old1": host("old1", diagnosis=["old1: GPU 0 is held at a 500 W power limit."]),
        "old2": host("old2", diagnosis=["old2: GPU 0 is held at a 500 W power limit."]),
        "gone": {
            "host": "gone",
            "status": "unreachable",
            "errors": ["unreachable: ssh: no route"],
            "throughput": None,
            "health": None,
        },
    }
    groups = fleet_report.group_causes(hosts)
    assert [(g["key"], g["hosts"]) for g in groups] == [
        ("<host>: GPU 0 is held at a 500 W power limit.", ["old1", "old2"]),
        ("gpu-busy-foreign-process", ["n1", "n2"]),
        ("host-unreachable", ["gone"]),
    ]
    assert groups[1]["gpus"] == {"n1": [0, 1], "n2": [0]}


def test_not_measured_not_run_and_the_instance_type():
    busy = _judged("not_measured", 1.0, 5781.0, "not_run")
    events = [
        _event("runner_on_ok", "busy", "gpu_throughput_measure", busy),
        _event(
            "runner_on_ok",
            "ec2",
            "setup",
            {
                "ansible_facts": {
                    "ansible_system_vendor": "Amazon EC2",
                    "ansible_product_name": "g5.xlarge",
                }
            },
        ),
        _event(
            "runner_on_ok", "ec2", "gpu_throughput_measure", _judged("pass", 5800.0, 5781.0, "pass")
        ),
    ]
    hosts = fleet_report.collect(events)
    assert hosts["busy"]["status"] == "not-measured"  # nothing measured: not "slow"
    assert hosts["ec2"]["instance_type"] == "g5.xlarge"
    fleet_report.add_expected_hosts(
        hosts, {"ec2": {}, "late": {"kindling_instance_type": "p5.48xlarge"}}
    )
    assert hosts["late"]["status"] == "not-run" and hosts["late"]["instance_type"] == "p5.48xlarge"
    rows = {r["host"]: r for r in fleet_report.host_table(hosts)}
    assert set(rows) == {"busy", "ec2", "late"}
    assert rows["late"]["reason"] == "in the inventory, but the play never reached it"
    heat = fleet_report.heatmap(hosts)
    assert heat["hosts"][-1] == "ec2" and heat["cells"]["ec2"][0]["amp_fp16_cl"]["basis"] == (
        "reference"
    )
    md = fleet_report.render_markdown(hosts, {"timestamp": "t", "inventory": "i", "playbook": "p"})
    assert "| late | not-run | p5.48xlarge |" in md


def test_the_inventory_names_the_hosts_the_play_targets(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  children:\n    gpu_hosts:\n      hosts:\n"
        "        g1: {kindling_instance_type: p4d.24xlarge}\n        g2: {}\n"
        "    other:\n      hosts:\n        x1: {}\n"
    )
    assert fleet_report.inventory_hosts(inventory, "gpu_hosts") == {
        "g1": {"kindling_instance_type": "p4d.24xlarge"},
        "g2": {},
    }
    assert set(fleet_report.inventory_hosts(inventory, "gpu_hosts", limit="g2")) == {"g2"}
    assert fleet_report.inventory_hosts(tmp_path / "missing.yml", "gpu_hosts") == {}


def test_the_previous_report_of_the_same_inventory_is_compared(tmp_path):
    reports = tmp_path / "reports"
    meta = {"inventory": "inv", "playbook": "p"}
    first = fleet_report.collect(
        [_h200_host("a", 6100.0), _h200_host("b", 6150.0), _h200_host("old", 6150.0)]
    )
    fleet_report.write_reports(first, reports / "1", dict(meta, timestamp="20261201T000000Z"))
    other = fleet_report.collect([_h200_host("a", 1000.0, status="fail")])
    fleet_report.write_reports(
        other, reports / "2", dict(meta, timestamp="20261201T120000Z", inventory="elsewhere")
    )
    now = fleet_report.collect(
        [_h200_host("a", 5400.0), _h200_host("b", 6000.0), _h200_host("new", 6150.0)]
    )
    fleet_report.write_reports(now, reports / "3", dict(meta, timestamp="20261202T000000Z"))
    data = json.loads((reports / "3" / "results.json").read_text())
    comparison = data["comparison"]
    assert comparison["timestamp"] == "20261201T000000Z" and comparison["href"] == "../1/index.html"
    # a: 5,400 against 6,100 is 11% slower (beyond the 10% margin); b: 2.4%, within it.
    assert [(s["host"], s["mode"], s["ratio"]) for s in comparison["slower"]] == [
        ("a", "amp_fp16_cl", 0.885)
    ]
    assert comparison["new"] == ["new"] and comparison["gone"] == ["old"]
    page = (reports / "3" / "index.html").read_text()
    assert 'href="../1/index.html"' in page and 'href="../HEALTH_CODES.md"' in page
    assert (reports / "HEALTH_CODES.md").read_text() == (
        REPO_ROOT / "docs" / "HEALTH_CODES.md"
    ).read_text()
    assert json.loads((reports / "1" / "results.json").read_text())["comparison"] is None
