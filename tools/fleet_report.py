#!/usr/bin/env python3
"""Run playbooks/verify.yml over an inventory with ansible-runner and report the fleet.

    python tools/fleet_report.py -i inventories/gpu                 # run, then report
    python tools/fleet_report.py -i inventories/gpu -e gpu_check_profile=full
    python tools/fleet_report.py --from-artifacts DIR               # report an earlier run

It collects each host's nvidia-smi facts, torch.cuda facts and throughput judgement
from the runner's job events, and writes reports/<timestamp>/ with:

- results.json  every host: status, facts summary, per-mode img/s, reference, ratio,
                and its GPU health codes (``health``, ``health_failing``);
- summary.md    one table row per host and mode, failures and likely causes first, a
                ``health`` column beside the verdict (failing codes in bold) and a
                "GPU health findings" section: per host, each finding with its remedy;
- index.html    a bar chart of img/s per host and mode against the reference, so one
                look shows which host is slow and why (no JavaScript, no network); a
                bar's label names the host's failing codes, its title every code.

Health codes are the nvidia_smi facts' ``health`` (failing) and ``health_notes``
(informational) findings, as ``module_utils/gpu_health.py``'s ``report_codes`` rows
``{code, gpu, where, severity, message, remediation}``, failing first; every code is
explained in docs/HEALTH_CODES.md. They come from the host's nvidia_smi_facts result
(also a failed one: a lost GPU's Xid 79 is still reported), else from the gpu_throughput
result's ``health_codes``.

The fleet is also its own baseline (``module_utils/peer_baseline.py``): every mode of
every host is compared with the median of its peers, the other hosts of the same GPU
model measured in the same run. The summary's ``vs peers`` column and its "Peer
baseline" section show each group (count, median, spread) and say where a model has one
host only and so no peer baseline.

Host status: ``ok``, ``slow`` (a mode below tolerance), ``unhealthy`` (throughput
passed, or could only be reported, but nvidia-smi reports a failing health code: the
host trains at speed now, yet a GPU needs attention before it takes work), ``outlier``
(the table passed it, but a mode trails its peers' median by more than the margin,
``--peer-margin``, default 10%), ``failed`` (a task failed), ``unreachable`` and
``no-measurement``. A slow, failed or unmeasured host keeps its status; its failing
codes show beside it in the attention list, the health column and the findings section.
A slow host whose every peer is as slow is marked ``group-slow``: the table's number,
not this host, is then the likely mismatch.

Exit status: 0 when every host passed or could only be reported, 1 when any host
failed, was unreachable, was slow, is unhealthy or an outlier, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import datetime as dt
import html
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional

import ansible.module_utils

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(ROOT / "module_utils"))

from ansible.module_utils.gpu_health import (  # noqa: E402
    FAILING,
    code_list,
    health_line,
    report_codes,
)
from ansible.module_utils.peer_baseline import (  # noqa: E402
    DEFAULT_MARGIN,
    group_summary,
    judge_peers,
    worst,
)

HEALTH_DOC = "docs/HEALTH_CODES.md"
FACT_TASKS = ("nvidia_smi_facts", "torch_cuda_facts")
# The throughput result: the gpu_throughput module's, which the gpu_check role runs as an
# async job and collects with async_status (the async start itself carries no result).
THROUGHPUT_ACTIONS = ("gpu_throughput", "async_status")


def _action(event_data: Dict[str, Any]) -> str:
    action = event_data.get("task_action") or event_data.get("resolved_action") or ""
    return action.rsplit(".", 1)[-1]


def collect(
    events: Iterable[Dict[str, Any]], peer_margin: float = DEFAULT_MARGIN
) -> Dict[str, Dict[str, Any]]:
    """Fold ansible-runner job events into one record per host, judged against its peers."""
    hosts: Dict[str, Dict[str, Any]] = {}

    def host_record(name: str) -> Dict[str, Any]:
        return hosts.setdefault(
            name,
            {
                "host": name,
                "status": "ok",
                "errors": [],
                "nvidia_smi": None,
                "torch_cuda": None,
                "throughput": None,
            },
        )

    for event in events:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        name = data.get("host")
        if not name or not kind.startswith("runner_on_"):
            continue
        record = host_record(name)
        result = data.get("res") or {}
        action = _action(data)
        if kind == "runner_on_unreachable":
            record["status"] = "unreachable"
            record["errors"].append(f"unreachable: {result.get('msg', '')}".strip())
        elif kind == "runner_on_failed" and not data.get("ignore_errors"):
            record["status"] = "failed"
            record["errors"].append(f"{data.get('task', action)}: {result.get('msg', '')}".strip())
            # nvidia_smi_facts with require: true fails with its facts, health included.
            facts = result.get("ansible_facts") or {}
            if action == "nvidia_smi_facts" and isinstance(facts.get("nvidia_smi"), dict):
                record["nvidia_smi"] = facts["nvidia_smi"]
        elif kind == "runner_on_ok":
            facts = result.get("ansible_facts") or {}
            if action == "nvidia_smi_facts" and "nvidia_smi" in facts:
                record["nvidia_smi"] = facts["nvidia_smi"]
            elif action == "torch_cuda_facts" and "torch_cuda" in facts:
                record["torch_cuda"] = facts["torch_cuda"]
            elif (
                action in THROUGHPUT_ACTIONS
                and not result.get("skipped")
                and ("verdict" in result or "judgement" in result)
            ):
                record["throughput"] = {
                    key: result.get(key)
                    for key in (
                        "verdict",
                        "summary",
                        "judgement",
                        "failed_modes",
                        "diagnosis",
                        "gpu_key",
                        "gpu_name",
                        "tolerance",
                        "health_codes",
                        "health_line",
                        "gpus",
                        "gpu_outliers",
                        "not_run",
                    )
                }
                record["throughput"]["environment"] = (result.get("throughput") or {}).get(
                    "environment", {}
                )
                modes = (result.get("throughput") or {}).get("modes", {})
                record["throughput"]["batch_sizes"] = {
                    m: (v or {}).get("batch_size") for m, v in modes.items()
                }
        elif kind == "runner_on_skipped":
            continue
    for record in hosts.values():
        record.update(host_health(record))
        verdict = (record["throughput"] or {}).get("verdict")
        if record["status"] == "ok" and verdict == "fail":
            record["status"] = "slow"
        elif record["status"] == "ok" and record["throughput"] is None:
            record["status"] = "no-measurement"
        elif record["status"] == "ok" and record["health_failing"]:
            record["status"] = "unhealthy"
    apply_peers(hosts, peer_margin)
    return hosts


def measurements(hosts: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Every host's judged modes as peer_baseline measurements: one per GPU where the
    host measured every GPU (the gpu_throughput module's ``gpus``), else one per host."""
    out = []
    for name in sorted(hosts):
        tp = hosts[name]["throughput"] or {}
        gpus = [g for g in tp.get("gpus") or [] if isinstance(g, dict) and g.get("modes")]
        if gpus:
            for gpu in gpus:
                for mode, j in gpu["modes"].items():
                    out.append(
                        {
                            "host": name,
                            "gpu": gpu.get("index"),
                            "gpu_key": tp.get("gpu_key"),
                            "mode": mode,
                            "img_s": j.get("img_s"),
                            "table_status": j.get("status"),
                        }
                    )
            continue
        for mode, j in (tp.get("judgement") or {}).items():
            out.append(
                {
                    "host": name,
                    "gpu_key": tp.get("gpu_key"),
                    "mode": mode,
                    "img_s": j.get("img_s"),
                    "table_status": j.get("status"),
                }
            )
    return out


def apply_peers(hosts: Dict[str, Dict[str, Any]], margin: float = DEFAULT_MARGIN) -> None:
    """Each host's ``peers`` verdicts; an ``ok`` host that trails its peers is an outlier."""
    verdicts = judge_peers(measurements(hosts), margin)
    groups = group_summary(verdicts)
    for name, record in hosts.items():
        mine = [v for v in verdicts if v["host"] == name]
        record["peer_verdicts"] = mine
        # Per mode, the host's GPU furthest below its peers (or its only measurement).
        modes = dict.fromkeys(v["mode"] for v in mine)
        record["peers"] = {mode: worst(mine, name, mode) for mode in modes}
        if record["status"] == "ok" and any(v["flag"] == "trails-peers" for v in mine):
            record["status"] = "outlier"
        key = (record["throughput"] or {}).get("gpu_key")
        record["peer_groups"] = [g for g in groups if g["gpu_key"] == key]
        record["peer_margin"] = margin


def host_health(record: Dict[str, Any]) -> Dict[str, Any]:
    """A host's health codes: ``health`` rows, ``health_failing`` codes, ``health_line``.

    ``health`` is None when neither the nvidia_smi facts nor the throughput result carry
    findings (nvidia-smi never ran, or the host was unreachable).
    """
    facts = record.get("nvidia_smi")
    rows: Optional[List[Dict[str, Any]]] = None
    if isinstance(facts, dict) and ("health" in facts or "health_notes" in facts):
        rows = report_codes(facts.get("health"), facts.get("health_notes"))
    elif isinstance((record.get("throughput") or {}).get("health_codes"), list):
        rows = record["throughput"]["health_codes"]
    failing: List[str] = []
    for row in rows or []:
        if row.get("severity") == FAILING and row["code"] not in failing:
            failing.append(row["code"])
    return {"health": rows, "health_failing": failing, "health_line": health_line(rows)}


def health_cell(record: Dict[str, Any]) -> str:
    """The summary's health column: codes, failing ones in bold, ``-`` without facts."""
    rows = record.get("health")
    if rows is None:
        return "-"
    if not rows:
        return "ok"
    failing = [r for r in rows if r.get("severity") == FAILING]
    notes = [r for r in rows if r.get("severity") != FAILING]
    cells = [f"**{code}**" for code in _codes(failing)] + _codes(notes)
    return ", ".join(cells)


def _codes(rows: List[Dict[str, Any]]) -> List[str]:
    codes: List[str] = []
    for row in rows:
        if row["code"] not in codes:
            codes.append(row["code"])
    return codes


def _rows(hosts: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    rows = []
    for name in sorted(hosts):
        tp = hosts[name]["throughput"] or {}
        for mode, j in (tp.get("judgement") or {}).items():
            rows.append(
                {
                    "host": name,
                    "gpu": tp.get("gpu_name") or "",
                    "mode": mode,
                    "batch": (tp.get("batch_sizes") or {}).get(mode),
                    "img_s": j.get("img_s"),
                    "reference": j.get("reference"),
                    "ratio": j.get("ratio"),
                    "status": j.get("status"),
                    "source": j.get("source") or "",
                    "peers": (hosts[name].get("peers") or {}).get(mode) or {},
                }
            )
    return rows


def peers_cell(peer: Dict[str, Any]) -> str:
    """The summary's ``vs peers`` cell: ratio to the peers' median, or why there is none."""
    if not peer:
        return "-"
    if peer.get("peer_ratio") is None:
        return "no peers"
    text = f"{peer['peer_ratio']:.2f} of {peer['peer_median']:,.0f} (n={peer['peer_count']})"
    if peer.get("verdict") in ("trails", "leads"):
        text += f" **{peer['verdict']}**"
    return text


def _fmt(value: Optional[float], spec: str) -> str:
    return format(value, spec) if isinstance(value, (int, float)) else "-"


def render_markdown(
    hosts: Dict[str, Dict[str, Any]], meta: Dict[str, Any], health_doc: Optional[str] = None
) -> str:
    """summary.md; ``health_doc`` is the link to docs/HEALTH_CODES.md from the report."""
    lines = [f"# Kindling fleet report {meta['timestamp']}", ""]
    lines.append(f"Inventory `{meta['inventory']}`, playbook `{meta['playbook']}`.")
    lines.append("")
    counts: Dict[str, int] = {}
    for record in hosts.values():
        counts[record["status"]] = counts.get(record["status"], 0) + 1
    lines.append("Hosts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    lines.append("")
    bad = [r for r in hosts.values() if r["status"] != "ok"]
    if bad:
        lines.append("## Hosts that need attention")
        lines.append("")
        for record in sorted(bad, key=lambda r: r["host"]):
            lines.append(f"- **{record['host']}** ({record['status']}): {_why(record)}")
            for cause in (record["throughput"] or {}).get("diagnosis") or []:
                lines.append(f"  - {cause}")
        lines.append("")
    lines.append("## Throughput per host and mode")
    lines.append("")
    lines.append(
        "| host | GPU | mode | batch | img/s | reference | ratio | verdict | vs peers "
        "| health | source |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in _rows(hosts):
        lines.append(
            f"| {row['host']} | {row['gpu']} | {row['mode']} | {row['batch'] or ''} "
            f"| {_fmt(row['img_s'], '.0f')} | {_fmt(row['reference'], '.0f')} "
            f"| {_fmt(row['ratio'], '.2f')} | {row['status']} | {peers_cell(row['peers'])} "
            f"| {health_cell(hosts[row['host']])} | {row['source']} |"
        )
    lines.append("")
    lines.extend(_peer_section(hosts))
    lines.append("")
    lines.extend(_health_section(hosts, health_doc))
    return "\n".join(lines) + "\n"


def _peer_groups(hosts: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    seen: Dict[Any, Dict[str, Any]] = {}
    for record in hosts.values():
        for group in record.get("peer_groups") or []:
            seen[(group["gpu_key"], group["mode"])] = group
    return [seen[k] for k in sorted(seen)]


def _peer_section(hosts: Dict[str, Dict[str, Any]]) -> List[str]:
    margin = next((r.get("peer_margin") for r in hosts.values() if "peer_margin" in r), None)
    lines = ["## Peer baseline", ""]
    lines.append(
        "Each host (each GPU, where the host measured every GPU) against the median of its "
        "peers: the other hosts and GPUs of its model, measured in this run; more than "
        f"{_fmt(margin, '.0%')} below it is flagged, even where the table passes. "
        '"measured" counts hosts, or GPUs.'
    )
    lines.append("")
    lines.append("| GPU | mode | measured | median img/s | min | max | trailing |")
    lines.append("|---|---|---|---|---|---|---|")
    single = []
    for g in _peer_groups(hosts):
        if not g["baseline"]:
            single.append(g)
            continue
        lines.append(
            f"| {g['gpu_key']} | {g['mode']} | {g['count']} | {g['median']:,.0f} "
            f"| {g['min']:,.0f} | {g['max']:,.0f} | {', '.join(g['trailing']) or 'none'} |"
        )
    lines.append("")
    for g in single:
        lines.append(
            f"- {g['gpu_key']} / {g['mode']}: one host of this model in the run, so no peer "
            "baseline; it is judged against the table only."
        )
    flagged = []
    for record in sorted(hosts.values(), key=lambda r: r["host"]):
        for v in record.get("peer_verdicts") or (record.get("peers") or {}).values():
            if v.get("flag"):
                flagged.append(f"- **{v['flag']}**: {v['reason']}")
    if flagged:
        lines.append("")
        lines.extend(flagged)
    return lines


def _why(record: Dict[str, Any]) -> str:
    """Why a host needs attention: errors or summary, peer flags, and its failing codes."""
    tp = record["throughput"] or {}
    why = "; ".join(record["errors"] or [tp.get("summary") or ""])
    for v in record.get("peer_verdicts") or (record.get("peers") or {}).values():
        if v.get("flag"):
            why += f"; {v['flag']}: {v['reason']}"
    failing = [r for r in record.get("health") or [] if r.get("severity") == FAILING]
    if failing:
        why += f"; failing health codes: {code_list(failing)}"
    return why


def _remedy(row: Dict[str, Any]) -> str:
    """`` Remedy: ...`` from the registry, or nothing when the message already says it."""
    remedy = (row.get("remediation") or "").strip()
    if not remedy or remedy.rstrip(".").lower() in (row.get("message") or "").lower():
        return ""
    return f" Remedy: {remedy}"


def _health_section(hosts: Dict[str, Dict[str, Any]], health_doc: Optional[str]) -> List[str]:
    lines = ["## GPU health findings", ""]
    where = f"[{HEALTH_DOC}]({health_doc})" if health_doc else f"`{HEALTH_DOC}`"
    lines.append(
        "The nvidia_smi facts' findings, failing first; every code is explained in "
        f"{where} of the Kindling repository."
    )
    lines.append("")
    clean, unknown = [], []
    for name in sorted(hosts):
        rows = hosts[name].get("health")
        if rows is None:
            unknown.append(name)
            continue
        if not rows:
            clean.append(name)
            continue
        failing = sum(1 for r in rows if r.get("severity") == FAILING)
        lines.append(
            f"- **{name}** ({hosts[name]['status']}): {failing} failing, "
            f"{len(rows) - failing} informational"
        )
        for row in rows:
            mark = "**failing**" if row.get("severity") == FAILING else "note"
            lines.append(
                f"  - {mark} `{row['code']}` ({row.get('where') or '-'}): "
                f"{row.get('message')}{_remedy(row)}"
            )
    if clean:
        lines.append(f"- No findings: {', '.join(clean)}.")
    if unknown:
        lines.append(f"- No nvidia-smi findings reported: {', '.join(unknown)}.")
    return lines


COLOURS = {"pass": "#2e7d32", "fail": "#c62828", "not_run": "#546e7a"}


def render_html(hosts: Dict[str, Dict[str, Any]], meta: Dict[str, Any]) -> str:
    rows = [r for r in _rows(hosts) if isinstance(r["img_s"], (int, float))]
    peak = max([r["img_s"] for r in rows] + [r["reference"] or 0 for r in rows] + [1.0])
    bar_h, gap, label_w, chart_w = 22, 6, 260, 640
    height = len(rows) * (bar_h + gap) + 40
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + chart_w + 120}" '
        f'height="{height}" role="img" aria-label="img/s per host and mode">'
    ]
    for i, row in enumerate(rows):
        y = 20 + i * (bar_h + gap)
        width = chart_w * row["img_s"] / peak
        colour = COLOURS.get(row["status"], "#546e7a")
        record = hosts[row["host"]]
        label = html.escape(f"{row['host']} · {row['mode']}")
        failing = record.get("health_failing") or []
        mark = ""
        if failing:  # the first two codes fit beside the label; the title has them all
            shown = ", ".join(failing[:2]) + (f" +{len(failing) - 2}" if len(failing) > 2 else "")
            mark = (
                f'<tspan class="health-failing" fill="{COLOURS["fail"]}" font-weight="bold">'
                f" ⚠ {html.escape(shown)}</tspan>"
            )
        svg.append(
            f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end" font-size="12">'
            f"{label}{mark}</text>"
        )
        title = f"{row['host']} · {row['mode']}: {row['img_s']:.0f} img/s ({row['status']}); "
        title += record.get("health_line") or health_line(None)
        svg.append(
            f'<rect class="bar {html.escape(str(row["status"]))}" x="{label_w}" y="{y}" '
            f'width="{width:.1f}" height="{bar_h}" fill="{colour}">'
            f"<title>{html.escape(title)}</title></rect>"
        )
        text = f"{row['img_s']:.0f} img/s"
        if isinstance(row["reference"], (int, float)):
            ref_x = label_w + chart_w * row["reference"] / peak
            svg.append(
                f'<line class="reference" x1="{ref_x:.1f}" x2="{ref_x:.1f}" y1="{y - 2}" '
                f'y2="{y + bar_h + 2}" stroke="#000" stroke-width="2" '
                f'stroke-dasharray="3,2"><title>reference {row["reference"]:.0f} img/s'
                f"</title></line>"
            )
            text += f" / ref {row['reference']:.0f} ({_fmt(row['ratio'], '.0%')})"
        svg.append(
            f'<text x="{label_w + width + 6:.1f}" y="{y + 15}" font-size="11">'
            f"{html.escape(text)}</text>"
        )
    svg.append("</svg>")
    attention = []
    for record in sorted(hosts.values(), key=lambda r: r["host"]):
        if record["status"] == "ok":
            continue
        tp = record["throughput"] or {}
        causes = "".join(f"<li>{html.escape(c)}</li>" for c in tp.get("diagnosis") or [])
        causes += "".join(
            f'<li class="health {html.escape(str(r.get("severity")))}"><code>'
            f"{html.escape(r['code'])}</code> ({html.escape(r.get('where') or '-')}): "
            f"{html.escape((r.get('message') or '') + _remedy(r))}</li>"
            for r in record.get("health") or []
            if r.get("severity") == FAILING
        )
        why = _why(record)
        attention.append(
            f'<li class="host {html.escape(record["status"])}"><b>'
            f"{html.escape(record['host'])}</b> ({html.escape(record['status'])}): "
            f"{html.escape(why)}<ul>{causes}</ul></li>"
        )
    table = "".join(
        f"<tr><td>{html.escape(r['host'])}</td><td>{html.escape(r['mode'])}</td>"
        f"<td>{_fmt(r['img_s'], '.0f')}</td><td>{_fmt(r['reference'], '.0f')}</td>"
        f"<td>{_fmt(r['ratio'], '.2f')}</td><td>{html.escape(str(r['status']))}</td>"
        f"<td>{html.escape(peers_cell(r['peers']).replace('**', ''))}</td>"
        f"<td>{_health_html(hosts[r['host']])}</td><td>{html.escape(r['source'])}</td></tr>"
        for r in _rows(hosts)
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Kindling fleet report {html.escape(meta["timestamp"])}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 8px}}.legend span{{padding:0 8px;color:#fff}}</style>
</head><body>
<h1>Kindling fleet report</h1>
<p>{html.escape(meta["timestamp"])} · inventory <code>{html.escape(meta["inventory"])}</code>
· {len(hosts)} hosts</p>
<p class="legend"><span style="background:{COLOURS["pass"]}">pass</span>
<span style="background:{COLOURS["fail"]}">below tolerance</span>
<span style="background:{COLOURS["not_run"]}">not run (not judged)</span>
dashed line: reference img/s</p>
<h2>Hosts that need attention</h2>
<ul id="attention">{"".join(attention) or "<li>none</li>"}</ul>
<h2>img/s per host and mode</h2>
{"".join(svg)}
<h2>Table</h2>
<table><tr><th>host</th><th>mode</th><th>img/s</th><th>reference</th><th>ratio</th>
<th>verdict</th><th>vs peers</th><th>health</th><th>source</th></tr>{table}</table>
<p>Health codes: <code>{HEALTH_DOC}</code> in the Kindling repository.</p>
</body></html>
"""


def _health_html(record: Dict[str, Any]) -> str:
    """The table's health cell: failing codes in bold, notes plain, ``-`` without facts."""
    rows = record.get("health")
    if rows is None:
        return "-"
    failing = [r for r in rows if r.get("severity") == FAILING]
    notes = [r for r in rows if r.get("severity") != FAILING]
    cells = [f"<b>{html.escape(c)}</b>" for c in _codes(failing)]
    cells += [html.escape(c) for c in _codes(notes)]
    return ", ".join(cells) or "ok"


def write_reports(hosts: Dict[str, Dict[str, Any]], out_dir: Path, meta: Dict[str, Any]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(
        json.dumps({"meta": meta, "hosts": hosts}, indent=2, sort_keys=True) + "\n",
        encoding="utf-8",
    )
    health_doc = os.path.relpath(ROOT / HEALTH_DOC, out_dir.resolve())
    (out_dir / "summary.md").write_text(render_markdown(hosts, meta, health_doc), encoding="utf-8")
    (out_dir / "index.html").write_text(render_html(hosts, meta), encoding="utf-8")
    return out_dir


def _events_from_artifacts(artifacts: Path) -> List[Dict[str, Any]]:
    events = []
    for path in sorted(
        (artifacts / "job_events").glob("*.json"), key=lambda p: int(p.stem.split("-")[0])
    ):
        events.append(json.loads(path.read_text()))
    return events


def run_playbook(
    inventory: Path,
    playbook: Path,
    extravars: Dict[str, Any],
    private_dir: Path,
    limit: Optional[str],
) -> List[Dict[str, Any]]:
    import ansible_runner

    # ansible-runner starts ansible-playbook from PATH: prefer the one beside this
    # interpreter (the project's virtualenv).
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    env = {
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_ROLES_PATH": str(ROOT / "roles"),
        "ANSIBLE_LIBRARY": str(ROOT / "library"),
        "ANSIBLE_MODULE_UTILS": str(ROOT / "module_utils"),
    }
    runner = ansible_runner.run(
        private_data_dir=str(private_dir),
        project_dir=str(ROOT),
        playbook=str(playbook),
        inventory=str(inventory),
        extravars=extravars,
        envvars=env,
        limit=limit,
        quiet=True,
    )
    events = list(runner.events)
    if runner.rc not in (0, 2, 4) and not any(
        e.get("event", "").startswith("runner_on_") for e in events
    ):
        tail = (runner.stdout.read() if runner.stdout else "")[-2000:]
        raise SystemExit(f"fleet_report: ansible-playbook did not run (rc {runner.rc}):\n{tail}")
    return events


def _parse_extravars(pairs: List[str]) -> Dict[str, Any]:
    extra: Dict[str, Any] = {}
    for pair in pairs:
        if pair.startswith("{"):
            extra.update(json.loads(pair))
            continue
        if "=" not in pair:
            raise SystemExit(f"fleet_report: -e takes key=value or JSON, got {pair!r}")
        key, value = pair.split("=", 1)
        try:
            extra[key] = json.loads(value)
        except json.JSONDecodeError:
            extra[key] = value
    return extra


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-i", "--inventory", type=Path, help="inventory to verify")
    parser.add_argument(
        "-e",
        "--extra-vars",
        action="append",
        default=[],
        help="key=value or JSON, as with ansible-playbook (repeatable)",
    )
    parser.add_argument("-l", "--limit", help="limit to these hosts")
    parser.add_argument("--playbook", type=Path, default=ROOT / "playbooks" / "verify.yml")
    parser.add_argument(
        "--reports",
        type=Path,
        default=ROOT / "reports",
        help="parent directory of the timestamped report (default: reports/)",
    )
    parser.add_argument(
        "--peer-margin",
        type=float,
        default=DEFAULT_MARGIN,
        help="flag a host more than this fraction below its peers' median (default: %(default)s)",
    )
    parser.add_argument(
        "--from-artifacts",
        type=Path,
        help="report an earlier ansible-runner artifacts directory instead of running",
    )
    args = parser.parse_args(argv)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out_dir = args.reports / stamp
    if args.from_artifacts:
        events = _events_from_artifacts(args.from_artifacts)
        inventory = str(args.from_artifacts)
    else:
        if not args.inventory:
            parser.error("give -i INVENTORY (or --from-artifacts DIR)")
        if not args.inventory.exists():
            parser.error(f"inventory {args.inventory} does not exist")
        private = out_dir / "runner"
        private.mkdir(parents=True, exist_ok=True)
        events = run_playbook(
            args.inventory.resolve(),
            args.playbook.resolve(),
            _parse_extravars(args.extra_vars),
            private,
            args.limit,
        )
        inventory = str(args.inventory)
    if not 0 < args.peer_margin < 1:
        parser.error(f"--peer-margin must be between 0 and 1, got {args.peer_margin}")
    hosts = collect(events, args.peer_margin)
    meta = {
        "timestamp": stamp,
        "inventory": inventory,
        "playbook": os.path.relpath(args.playbook, ROOT),
    }
    write_reports(hosts, out_dir, meta)
    bad = sorted(h for h, r in hosts.items() if r["status"] not in ("ok",))
    print(
        f"fleet report: {out_dir} ({len(hosts)} hosts"
        + (f"; attention: {', '.join(bad)}" if bad else "")
        + ")"
    )
    return 1 if bad or not hosts else 0


if __name__ == "__main__":
    sys.exit(main())
