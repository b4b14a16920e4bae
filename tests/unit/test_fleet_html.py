"""The fleet report's index.html in a real browser: headless Chromium opens it offline.

Two constructed fleets (every host's numbers are made up for the test, none measured):

- one host, one GPU: the smallest page;
- fifty hosts: 44 measured 8-GPU H100 hosts (one GPU of three hosts behind, one host
  below the table, 20 with the same thermal cause, two on another driver, one on another
  torch), 3 failed, 2 unreachable and 1 that the play never reached (not-run); compared
  with an earlier report of the same inventory in the same reports folder, in which one
  host since gone was measured, one host now new was not, and one host was faster.

"Fits the screen" is defined and tested so: at a 1920x1080 viewport, the first screen
(the header with the host counts, the heatmap with a row for every host, and the causes
and changes beside it) ends above 1,080 pixels. The test also copies the reports folder
elsewhere and checks that every link and script of the page resolves there.

Screenshots of the first screen go to docs/images/ with KINDLING_SCREENSHOTS=docs (the
committed ones), else beside make test's logs.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import struct
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tools"))
from headless import Browser

spec = importlib.util.spec_from_file_location(
    "fleet_report", REPO_ROOT / "tools" / "fleet_report.py"
)
fleet_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fleet_report)

SHOT_DIR = (
    REPO_ROOT / "docs" / "images"
    if os.environ.get("KINDLING_SCREENSHOTS") == "docs"
    else Path(os.environ.get("KINDLING_CACHE", "/tmp")) / "test-logs"
)
MODES = {"fp32": 1300.0, "amp_fp16": 2616.0, "amp_fp16_cl": 3050.0}  # constructed references
GPU = "NVIDIA H100 80GB HBM3"


def _facts(host, gpus=8, driver="580.159.04", torch="2.11.0+cu130"):
    smi = {
        "present": True,
        "driver_version": driver,
        "cuda_driver_version": "13.0",
        "gpu_count": gpus,
        "gpus": [{"index": i, "name": GPU} for i in range(gpus)],
    }
    return [
        _ev("runner_on_ok", host, "nvidia_smi_facts", {"ansible_facts": {"nvidia_smi": smi}}),
        _ev(
            "runner_on_ok",
            host,
            "torch_cuda_facts",
            {
                "ansible_facts": {
                    "torch_cuda": {"torch_version": torch, "built_cuda_version": "13.0"}
                }
            },
        ),
    ]


def _ev(kind, host, action, res, task="t"):
    return {
        "event": kind,
        "event_data": {"host": host, "task_action": action, "task": task, "res": res},
    }


def _measured(host, factors, causes=()):
    """A host's throughput result: per GPU and mode img/s = reference x factor."""
    gpus = []
    for index, factor in enumerate(factors):
        modes = {}
        for mode, ref in MODES.items():
            img_s = round(ref * factor, 1)
            status = "pass" if factor >= 0.8 else "fail"
            modes[mode] = {"img_s": img_s, "reference": ref, "ratio": factor, "status": status}
        gpus.append({"index": index, "bus_id": f"0000:{index:02x}:00.0", "modes": modes})
    judgement = {
        mode: {
            "img_s": round(ref * min(factors) * len(factors), 1),
            "reference": ref * len(factors),
            "ratio": min(factors),
            "status": "pass" if min(factors) >= 0.8 else "fail",
            "source": "constructed",
        }
        for mode, ref in MODES.items()
    }
    verdict = "pass" if min(factors) >= 0.8 else "fail"
    return _ev(
        "runner_on_ok",
        host,
        "gpu_throughput_measure",
        {
            "verdict": verdict,
            "summary": f"{verdict}: constructed",
            "judgement": judgement,
            "diagnosis": [c["message"] for c in causes],
            "causes": list(causes),
            "gpu_key": "h100_sxm",
            "gpu_name": GPU,
            "gpus": gpus,
            "gpu_outliers": [],
            "throughput": {"modes": {m: {"batch_size": 256} for m in MODES}},
        },
    )


def fifty_host_fleet(previous=False):
    events = []
    names = [f"gpu{i:02d}" for i in range(50)]
    measured = names[:44]
    if previous:  # the earlier run: gpu43 not yet there, "gpu-retired" still there
        measured = [n for n in measured if n != "gpu43"] + ["gpu-retired"]
    for n, host in enumerate(measured):
        factors = [1.0 - 0.004 * ((n + g) % 5) for g in range(8)]
        if host in ("gpu05", "gpu17", "gpu30"):
            factors[3] = 0.84  # one GPU behind its host
        if host == "gpu11":
            factors = [0.7] * 8  # below the table
        if host == "gpu20" and not previous:
            factors = [0.85] * 8  # 15% slower than last time, yet passes the table
        causes = []
        if n % 2 == 0 and n < 40:
            causes.append(
                {
                    "code": "throttle-thermal",
                    "gpu": 3,
                    "message": f"GPU 3 of {host} slowed down by heat (thermal slowdown).",
                    "remedy": "Check the fans, the airflow and the inlet temperature.",
                }
            )
        events += _facts(
            host,
            driver="570.86.15" if host in ("gpu08", "gpu09") else "580.159.04",
            torch="2.10.0+cu128" if host == "gpu10" else "2.11.0+cu130",
        )
        events.append(_measured(host, factors, causes))
    if not previous:
        for host in names[44:47]:
            events += _facts(host)
            events.append(
                _ev(
                    "runner_on_failed",
                    host,
                    "torch_cuda_facts",
                    {"msg": "torch is not importable"},
                    task="Probe torch.cuda",
                )
            )
        for host in names[47:49]:
            events.append(
                _ev(
                    "runner_on_unreachable",
                    host,
                    "setup",
                    {"msg": "ssh: connect to host timed out"},
                )
            )
    hosts = fleet_report.collect(events)
    expected = {n: {"kindling_instance_type": "p5.48xlarge"} for n in names}
    if previous:
        expected = {n: {} for n in hosts}
    return fleet_report.add_expected_hosts(hosts, expected)


def one_host_fleet():
    events = [*_facts("solo", gpus=1), _measured("solo", [0.98])]
    return fleet_report.collect(events)


def _meta(stamp):
    return {"timestamp": stamp, "inventory": "inventories/gpu", "playbook": "playbooks/verify.yml"}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet") / "reports"
    fleet_report.write_reports(
        fifty_host_fleet(previous=True), root / "20261201T000000Z", _meta("20261201T000000Z")
    )
    fleet_report.write_reports(
        fifty_host_fleet(), root / "20261202T000000Z", _meta("20261202T000000Z")
    )
    # Another inventory's report in the same folder, later: never the one compared with.
    fleet_report.write_reports(
        one_host_fleet(),
        root / "20261202T010000Z",
        dict(_meta("20261202T010000Z"), inventory="inventories/one"),
    )
    # Copied elsewhere: every link must still resolve.
    copy = tmp_path_factory.mktemp("elsewhere") / "copied-reports"
    shutil.copytree(root, copy)
    shutil.rmtree(root)
    return copy


def _open(browser, page):
    browser.open(page.as_uri())
    browser.wait_for("document.querySelectorAll('#heatmap-figure .main-svg').length > 0")


@pytest.fixture(scope="module")
def fifty(reports):
    with Browser(1920, 1080) as browser:
        _open(browser, reports / "20261202T000000Z" / "index.html")
        yield browser


@pytest.fixture(scope="module")
def one(reports):
    with Browser(1920, 1080) as browser:
        _open(browser, reports / "20261202T010000Z" / "index.html")
        yield browser


def _box(browser, selector):
    return browser.evaluate(
        f"(() => {{ const r = document.querySelector('{selector}').getBoundingClientRect();"
        " return {top: r.top, bottom: r.bottom, height: r.height, width: r.width}; })()"
    )


@pytest.mark.parametrize("which,hosts", [("one", 1), ("fifty", 50)])
def test_the_first_screen_holds_the_summary_and_the_heatmap(which, hosts, request):
    browser = request.getfixturevalue(which)
    first = _box(browser, "#first-screen")
    heat = _box(browser, "#heatmap-figure")
    summary = _box(browser, "#summary")
    counts = _box(browser, "#counts")
    assert counts["top"] >= 0 and counts["bottom"] < first["top"]
    assert first["bottom"] <= 1080 and heat["bottom"] <= 1080 and summary["bottom"] <= 1080, (
        first,
        heat,
        summary,
    )
    assert heat["width"] > 1000  # most of the screen's width
    # A row per host in the heatmap, of a readable height.
    rows = browser.evaluate("document.getElementById('heatmap-figure').data[0].y.length")
    assert rows == hosts
    plot = browser.evaluate(
        "document.querySelector('#heatmap-figure .nsewdrag').getBoundingClientRect().height"
    )
    assert plot / hosts >= 12
    print(
        f"{which}: first screen ends at {first['bottom']:.0f} px; page "
        f"{browser.evaluate('document.documentElement.scrollHeight')} px tall"
    )


def test_every_host_is_in_the_table_and_the_heatmap(fifty):
    names = {f"gpu{i:02d}" for i in range(50)}
    table = fifty.evaluate(
        "Array.from(document.querySelectorAll('#fleet-table tbody tr')).map(r => r.dataset.host)"
    )
    assert sorted(table) == sorted(names)
    labels = fifty.evaluate("document.getElementById('heatmap-figure').data[0].y")
    assert {label.split(" ")[0] for label in labels} == names
    # Unmeasured hosts are rows too, at the top, named with their status.
    assert set(labels[:6]) == {
        "gpu44 (failed)", "gpu45 (failed)", "gpu46 (failed)",
        "gpu47 (unreachable)", "gpu48 (unreachable)", "gpu49 (not-run)",
    }  # fmt: skip
    assert labels[6] == "gpu11"  # the slowest measured host next (0.70)
    z = fifty.evaluate("document.getElementById('heatmap-figure').data[0].z")
    assert all(v is None for v in z[0]) and z[6][0] == pytest.approx(0.7)
    assert len(z[7]) == 8
    # Their status and why are in the table.
    why = fifty.evaluate(
        "Object.fromEntries(Array.from(document.querySelectorAll('#fleet-table tbody tr'))"
        ".map(r => [r.dataset.host, r.cells[1].textContent + ': ' + r.cells[10].textContent]))"
    )
    assert why["gpu47"] == "unreachable: unreachable: ssh: connect to host timed out"
    assert why["gpu44"] == "failed: Probe torch.cuda: torch is not importable"
    assert why["gpu49"].startswith("not-run: in the inventory, but the play never reached it")
    # And in the per-host bars.
    bars = fifty.evaluate(
        "new Set(document.getElementById('hosts-figure').data"
        ".flatMap(t => t.y.map(y => y.split(' ')[0]))).size"
    )
    assert bars == 50


def test_the_stack_columns_and_drift(fifty):
    cells = fifty.evaluate(
        "Object.fromEntries(Array.from(document.querySelectorAll('#fleet-table tbody tr'))"
        ".map(r => [r.dataset.host, Array.from(r.cells).map(c => [c.textContent, c.className])]))"
    )
    heads = fifty.evaluate(
        "Array.from(document.querySelectorAll('#fleet-table th')).map(t => t.textContent)"
    )
    col = {h: i for i, h in enumerate(heads)}
    ok = cells["gpu00"]
    assert ok[col["instance type"]][0] == "p5.48xlarge"
    assert ok[col["GPU model"]][0] == GPU and ok[col["GPUs"]][0] == "8"
    assert ok[col["driver"]][0] == "580.159.04" and ok[col["torch"]][0] == "2.11.0+cu130"
    assert ok[col["CUDA (driver)"]][0] == "13.0"
    assert "drift" not in ok[col["driver"]][1]
    assert (
        "drift" in cells["gpu08"][col["driver"]][1]
        and "570.86.15" in cells["gpu08"][col["driver"]][0]
    )
    assert (
        "drift" in cells["gpu10"][col["torch"]][1]
        and "drift" not in cells["gpu10"][col["driver"]][1]
    )
    stack = fifty.evaluate("document.getElementById('stack').textContent")
    assert "driver 580.159.04" in stack and "3 hosts differ" in stack


def test_causes_are_grouped_with_their_hosts(fifty):
    causes = fifty.evaluate(
        "Array.from(document.querySelectorAll('#causes > li')).map(li => "
        "[li.dataset.key, +li.dataset.count, li.querySelector('.hosts').textContent])"
    )
    thermal = [c for c in causes if c[0] == "throttle-thermal"]
    assert len(thermal) == 1 and thermal[0][1] == 20  # one entry, not twenty
    assert thermal[0][2].startswith("gpu00 (GPU 3), gpu02 (GPU 3)")
    assert causes[0][0] == "throttle-thermal"  # most hosts first
    failed = [c for c in causes if "torch is not importable" in c[0]]
    assert len(failed) == 1 and failed[0][1] == 3


def test_the_page_compares_with_the_previous_report(fifty):
    text = fifty.evaluate("document.getElementById('changes').textContent")
    assert "20261201T000000Z" in text
    assert "new hosts: 7 (gpu43, gpu44, gpu45, gpu46, gpu47, gpu48, gpu49)" in text
    assert "hosts gone: 1 (gpu-retired)" in text
    slower = fifty.evaluate(
        "Array.from(document.querySelectorAll('#slower li')).map(li => li.textContent)"
    )
    # gpu20 is 15% slower than in the previous report in each mode (more than the 10%
    # margin), though it passes the table; no other host changed.
    assert [s.split(":")[0] for s in slower] == [
        "gpu20 amp_fp16",
        "gpu20 amp_fp16_cl",
        "gpu20 fp32",
    ]
    assert slower[0] == "gpu20 amp_fp16: 20,593 → 17,789 img/s (86%)"


def test_links_resolve_in_the_copied_folder_and_plotly_is_not_inline(fifty, one, reports):
    for browser, page in ((fifty, "20261202T000000Z"), (one, "20261202T010000Z")):
        html_text = (reports / page / "index.html").read_text()
        assert len(html_text) < 600_000 and html_text.count("<script src=") == 1
        assert browser.evaluate("typeof Plotly") == "object"
        urls = browser.evaluate(
            "Array.from(document.querySelectorAll('a[href], script[src]'))"
            ".map(e => e.href || e.src)"
        )
        assert len(urls) >= 4
        for url in urls:
            parsed = urlparse(url)
            assert parsed.scheme == "file", url
            path = Path(unquote(parsed.path))
            assert path.is_file() and reports in path.parents, url
        requested = browser.requests()
        assert requested and all(
            u.startswith(("data:", "blob:")) or reports.as_uri() in u for u in requested
        ), requested
    assert len(list(reports.glob("plotly-*.min.js"))) == 1  # once per reports folder
    previous = fifty.evaluate("document.getElementById('previous-link').href")
    assert previous.endswith("/copied-reports/20261201T000000Z/index.html")
    assert one.evaluate("document.getElementById('changes').textContent").startswith(
        "No earlier report of this inventory"
    )


def test_screenshots_of_the_first_screen(fifty, one):
    for browser, name in ((fifty, "fleet-report-50-hosts.png"), (one, "fleet-report-1-host.png")):
        shot = browser.screenshot(SHOT_DIR / name, full_page=False)
        head = shot.read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n"
        assert struct.unpack(">II", head[16:24]) == (1920, 1080)
        assert 20_000 < shot.stat().st_size < 1_500_000


def test_the_mode_buttons_redraw_the_heatmap(fifty):
    fifty.evaluate(
        "Array.from(document.querySelectorAll('#heatmap-figure .updatemenu-button'))"
        ".find(b => b.textContent === 'fp32')"
        ".dispatchEvent(new MouseEvent('click', {bubbles: true}))"
    )
    fifty.wait_for("document.getElementById('heatmap-figure').data[0].text[6][0] === '0.70'")
    hover = fifty.evaluate("document.getElementById('heatmap-figure').data[0].customdata[6][0]")
    assert hover.startswith("fp32: 0.70 of the reference (910 img/s, fail)")
