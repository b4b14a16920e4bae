"""The fleet report's index.html in a real browser: headless Chromium opens it offline,
and the test reads what Plotly drew, sorts the table by clicking, and keeps a screenshot.

The fleet is constructed: two 8-GPU H200 hosts (GPU 5 of each trails its host, from the
tests/fixtures/throughput/h200x8_one_gpu_behind.json report), four 1-GPU H200 hosts of
which one trails its peers and one is below the table, and one T4 without peers.
"""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tools"))
from headless import Browser

spec = importlib.util.spec_from_file_location(
    "fleet_report", REPO_ROOT / "tools" / "fleet_report.py"
)
fleet_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fleet_report)

# The screenshot is kept beside make test's logs (CI keeps that folder).
SHOT_DIR = Path(os.environ.get("KINDLING_CACHE", "/tmp")) / "test-logs"


def _result(verdict, img_s, reference, status, gpu_key="h200", gpu_name="NVIDIA H200"):
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
        "diagnosis": ["GPU 0 is held at a 500 W power limit of its 700 W."]
        if status == "fail"
        else [],
        "gpu_key": gpu_key,
        "gpu_name": gpu_name,
        "throughput": {"modes": {"amp_fp16_cl": {"batch_size": 256}}},
    }


def _event(host, result):
    return {
        "event": "runner_on_ok",
        "event_data": {"host": host, "task_action": "gpu_throughput", "task": "t", "res": result},
    }


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from ansible.module_utils.gpu_throughput_ref import judge_report

    doc = json.loads(
        (REPO_ROOT / "tests" / "fixtures" / "throughput" / "h200x8_one_gpu_behind.json").read_text()
    )
    judged = judge_report(doc, "h200")
    events = []
    for name in ("hgx-a", "hgx-b"):
        result = _result("fail", 6150.0, 6180.0, "pass")
        result.update(gpus=judged["gpus"], gpu_outliers=judged["gpu_outliers"])
        events.append(_event(name, result))
    for name, img_s, status in (
        ("h200-a", 6150.0, "pass"),
        ("h200-b", 6140.0, "pass"),
        ("h200-c", 5000.0, "pass"),  # passes the table (0.81), trails its peers
        ("h200-d", 3000.0, "fail"),  # below the table
    ):
        events.append(_event(name, _result(status, img_s, 6180.0, status)))
    events.append(_event("t4-a", _result("pass", 480.0, 500.0, "pass", "t4", "Tesla T4")))
    hosts = fleet_report.collect(events)
    out = tmp_path_factory.mktemp("report")
    meta = {"timestamp": "20261202T000000Z", "inventory": "inv", "playbook": "playbooks/verify.yml"}
    fleet_report.write_reports(hosts, out, meta)
    shot = SHOT_DIR / "fleet-report.png"
    with Browser(1280, 900) as browser:
        browser.open((out / "index.html").as_uri())
        browser.wait_for("document.querySelectorAll('#gpus-figure g.point').length > 0")
        yield {
            "browser": browser,
            "hosts": hosts,
            "drawn": fleet_report.html_rows(hosts),
            "shot": shot,
        }


def _labels_top_down(browser, figure):
    """A figure's y-axis labels, top of the screen first."""
    return browser.evaluate(
        f"""Array.from(document.querySelectorAll('#{figure} .yaxislayer-above .ytick text'))
            .map(t => [t.getBoundingClientRect().top, t.textContent])
            .sort((a, b) => a[0] - b[0]).map(p => p[1])"""
    )


def test_the_page_works_offline(page):
    urls = page["browser"].requests()
    assert urls and all(u.startswith(("file://", "data:", "blob:")) for u in urls), urls
    assert page["browser"].evaluate("typeof Plotly") == "object"


def test_per_host_bars_slowest_first_with_reference_and_peer_markers(page):
    b = page["browser"]
    rows = page["drawn"]["host_rows"]
    assert b.evaluate(
        "document.querySelectorAll('#hosts-figure g.trace.bars g.point').length"
    ) == len(rows)
    labels = _labels_top_down(b, "hosts-figure")
    assert labels[0] == "h200-d · amp_fp16_cl"  # 0.49 of the reference
    assert labels[1] == "h200-c · amp_fp16_cl"  # 0.81 of its peers
    assert labels.index("t4-a · amp_fp16_cl") > labels.index("h200-c · amp_fp16_cl")
    legend = b.evaluate(
        "Array.from(document.querySelectorAll('#hosts-figure .legendtext')).map(t => t.textContent)"
    )
    assert {
        "pass",
        "fail (below tolerance)",
        "trails peers or host",
        "reference",
        "peer median",
    } <= set(legend)
    # Every measured host has its reference mark; every host with peers its peer median.
    data = b.evaluate(
        "Object.fromEntries(document.getElementById('hosts-figure').data"
        ".map(t => [t.name, t.x.length]))"
    )
    assert data["reference"] == len(rows)
    assert (
        data["peer median"] == sum(1 for r in rows if r["peer_median"] is not None) == len(rows) - 1
    )
    # h200-c, and the HGX hosts by their GPU 5 (a host's bar carries its worst GPU's peers).
    assert data["trails peers or host"] == 3 and data["fail (below tolerance)"] == 1


def test_per_gpu_bars_put_the_gpu_that_trails_its_host_first(page):
    b = page["browser"]
    assert b.evaluate("document.querySelectorAll('#gpus-figure g.trace.bars g.point').length") == 16
    labels = _labels_top_down(b, "gpus-figure")
    assert set(labels[:2]) == {"hgx-a · GPU 5 · amp_fp16_cl", "hgx-b · GPU 5 · amp_fp16_cl"}
    names = b.evaluate("document.getElementById('gpus-figure').data.map(t => t.name)")
    assert "host's other GPUs (median)" in names and "trails peers or host" in names


def test_attention_lists_hosts_slowest_first_with_causes(page):
    b = page["browser"]
    hosts = b.evaluate(
        "Array.from(document.querySelectorAll('#attention > li')).map(li => li.dataset.host)"
    )
    assert hosts[0] == "h200-d" and set(hosts) == {"h200-d", "h200-c", "hgx-a", "hgx-b"}
    text = b.evaluate("document.getElementById('attention').textContent")
    assert "power limit" in text and "trails-peers" in text
    notes = b.evaluate("document.getElementById('peer-notes').textContent")
    assert notes == (
        "t4 / amp_fp16_cl: one host of this model in the run, so no peer baseline; judged "
        "against the table only."
    )


def test_the_table_sorts_on_a_click(page):
    b = page["browser"]

    def column(index):
        return b.evaluate(
            "Array.from(document.querySelectorAll('#hosts-table tbody tr'))"
            f".map(r => r.cells[{index}].textContent)"
        )

    hosts = column(0)
    assert hosts[0] == "h200-d" and len(hosts) == len(page["drawn"]["host_rows"])
    header = (
        "Array.from(document.querySelectorAll('#hosts-table th'))"
        ".find(th => th.textContent === '{}')"
    )
    b.evaluate(header.format("img/s") + ".click()")
    values = [float(v.replace(",", "")) for v in column(4)]
    assert values == sorted(values)
    assert b.evaluate(header.format("img/s") + ".getAttribute('aria-sort')") == "ascending"
    b.evaluate(header.format("img/s") + ".click()")
    assert [float(v.replace(",", "")) for v in column(4)] == sorted(values, reverse=True)
    b.evaluate(header.format("host") + ".click()")
    assert column(0) == sorted(hosts)


def test_a_screenshot_is_kept(page):
    shot = page["browser"].screenshot(page["shot"])
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert width == 1280 and height > 900  # the whole page, not the first screen
    assert shot.stat().st_size > 50_000
