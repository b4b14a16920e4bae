#!/usr/bin/env python3
"""Run playbooks/verify.yml over an inventory with ansible-runner and report the fleet.

    python tools/fleet_report.py -i inventories/gpu                 # run, then report
    python tools/fleet_report.py -i inventories/gpu -e gpu_check_profile=full
    python tools/fleet_report.py --from-artifacts DIR               # report an earlier run
    python tools/fleet_report.py --from-results reports/X/results.json  # draw it again

It collects each host's nvidia-smi facts, torch.cuda facts and throughput judgement
from the runner's job events, and writes reports/<timestamp>/ with:

- results.json  every host: status, facts summary, per-mode img/s, reference, ratio,
                its GPU health codes (``health``, ``health_failing``), and the
                ``comparison`` with the previous report of the same inventory;
- summary.md    every host with its stack (driver, CUDA, torch, GPU model and count,
                instance type; drift from the fleet's majority in bold), each cause once
                with its hosts, one table row per host and mode with a ``health``
                column, and a "GPU health findings" section: per host, each finding
                with its remedy;
- index.html    drawn with Plotly (tools/fleet_html.py): on a 1920x1080 first screen
                the host x GPU heatmap beside the grouped causes, the changes since
                the previous report and the fleet's stack; then every host in a table,
                the hosts that need attention, bars per host and mode, and a table of
                hosts, modes, codes and causes that sorts on any column.

Every host the play targets is in the report, read from the inventory before the run:
one never reached is ``not-run``. plotly.js and docs/HEALTH_CODES.md are written once
into the reports folder and linked as ``../NAME``: every link is relative, so the folder
can be copied anywhere. While the play runs, each host's progress (or, above four
hosts, one fleet line per poll) and each failed or unreachable host are printed as they
happen (``ProgressPrinter``, ansible-runner's event handler).

Health codes are the nvidia_smi facts' ``health`` (failing) and ``health_notes``
(informational) findings, as ``module_utils/gpu_health.py``'s ``report_codes`` rows
``{code, gpu, where, severity, message, remediation}``, failing first; every code is
explained in docs/HEALTH_CODES.md. They come from the host's nvidia_smi_facts result
(also a failed one: a lost GPU's Xid 79 is still reported), else from the gpu_throughput_measure
result's ``health_codes``.

The fleet is also its own baseline (``module_utils/peer_baseline.py``): every mode of
every host is compared with the median of its peers, the other hosts of the same GPU
model measured in the same run. The summary's ``vs peers`` column and its "Peer
baseline" section show each group (count, median, spread) and say where a model has one
host only and so no peer baseline.

Host status: ``ok``, ``slow`` (a mode below tolerance), ``not-measured`` (its GPUs
were busy with another process, so nothing was measured), ``not-run`` (in the
inventory, never reached by the play), ``unhealthy`` (throughput
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
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

import ansible.module_utils

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tools") not in sys.path:
    sys.path.insert(0, str(ROOT / "tools"))
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
from ansible.module_utils.throughput_progress import (  # noqa: E402
    FLEET_THRESHOLD,
    FleetProgress,
)

HEALTH_DOC = "docs/HEALTH_CODES.md"
FACT_TASKS = ("nvidia_smi_facts", "torch_cuda_facts")
# The throughput result: the gpu_throughput_measure module's, which the gpu_check role runs as an
# async job and collects with async_status (the async start itself carries no result).
THROUGHPUT_ACTIONS = ("gpu_throughput_measure", "async_status")
# The check's poll, whose retries carry its progress (printed while the play runs).
PROGRESS_ACTIONS = ("gpu_throughput_progress_info",)


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
            if facts.get("ansible_system_vendor") == "Amazon EC2" and facts.get(
                "ansible_product_name"
            ):
                # A Nitro instance's DMI product name is its instance type.
                record["instance_type"] = facts["ansible_product_name"]
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
                        # Each cause {code, gpu, message, remedy}, and per mode which kind
                        # of reference judged it and its floors, where the result has them.
                        "causes",
                        "reference_basis",
                        "floors",
                    )
                    if key in result or key not in ("causes", "reference_basis", "floors")
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
        elif record["status"] == "ok" and verdict == "not_measured":
            # Its GPUs were busy with another process: nothing was measured, nor slow.
            record["status"] = "not-measured"
        elif record["status"] == "ok" and record["throughput"] is None:
            record["status"] = "no-measurement"
        elif record["status"] == "ok" and record["health_failing"]:
            record["status"] = "unhealthy"
    apply_peers(hosts, peer_margin)
    return hosts


def measurements(hosts: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Every host's judged modes as peer_baseline measurements: one per GPU where the
    host measured every GPU (the gpu_throughput_measure module's ``gpus``), else one per host."""
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
    lines.extend(_hosts_section(hosts))
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


def _hosts_section(hosts: Dict[str, Dict[str, Any]]) -> List[str]:
    """Every host with its stack (drift from the fleet's majority in bold), then each
    cause once with the hosts it affects."""
    stack = fleet_stack(hosts)
    lines = ["## Hosts", ""]
    majority = stack["majority"]
    if majority:
        lines.append(
            "Fleet majority: "
            + ", ".join(f"{STACK_LABELS[f]} {majority[f]}" for f in STACK_FIELDS if f in majority)
            + ". A value that differs from it is in bold."
        )
        lines.append("")
    lines.append(
        "| host | status | instance type | GPU model | GPUs | driver | CUDA (driver) | torch "
        "| why |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for name in sorted(hosts):
        mine = stack["stacks"][name]
        drift = stack["drift"].get(name, [])

        def cell(field: str, mine: Dict[str, Any] = mine, drift: List[str] = drift) -> str:
            value = mine.get(field)
            text = "-" if value in (None, "") else str(value)
            return f"**{text}**" if field in drift else text

        reason = _host_reason(hosts[name]).replace("|", "\\|")
        lines.append(
            f"| {name} | {hosts[name]['status']} | {cell('instance_type')} "
            f"| {cell('gpu_model')} | {cell('gpu_count')} | {cell('driver')} | {cell('cuda')} "
            f"| {cell('torch')} | {reason} |"
        )
    lines.append("")
    causes = group_causes(hosts)
    if causes:
        lines.append("## Causes")
        lines.append("")
        for cause in causes:
            head = f"`{cause['code']}`: " if cause["code"] else ""
            lines.append(
                f"- {head}{cause['message']} ({len(cause['hosts'])} host"
                + ("" if len(cause["hosts"]) == 1 else "s")
                + f": {', '.join(cause['hosts'])})"
            )
        lines.append("")
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


def _health_codes(record: Dict[str, Any]) -> Dict[str, Any]:
    rows = record.get("health")
    failing = [r for r in rows or [] if r.get("severity") == FAILING]
    notes = [r for r in rows or [] if r.get("severity") != FAILING]
    return {
        "health_known": rows is not None,
        "health_failing": _codes(failing),
        "health_notes": _codes(notes),
    }


def _peer_of(record: Dict[str, Any], mode: str, gpu: Any = None) -> Dict[str, Any]:
    for v in record.get("peer_verdicts") or []:
        if v["mode"] == mode and v.get("gpu") == gpu:
            return v
    return {}


def html_rows(hosts: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """What index.html draws: a row per host and mode, a row per GPU and mode, and the
    hosts that need attention, each with its causes (tools/fleet_html.py renders them)."""
    host_rows, gpu_rows, attention = [], [], []
    for row in _rows(hosts):
        record = hosts[row["host"]]
        tp = record["throughput"] or {}
        peer = row["peers"]
        causes = list(tp.get("diagnosis") or []) if row["status"] == "fail" else []
        if peer.get("flag"):
            causes.append(f"{peer['flag']}: {peer['reason']}")
        for o in tp.get("gpu_outliers") or []:
            if o.get("mode") == row["mode"]:
                causes.append(
                    f"GPU {o.get('gpu')} ({o.get('bus_id') or 'bus id unknown'}) "
                    f"{_fmt(o.get('img_s'), ',.0f')} img/s is {_fmt(o.get('ratio'), '.0%')} of "
                    f"its host's other GPUs ({_fmt(o.get('host_median'), ',.0f')})"
                )
        judged = (tp.get("judgement") or {}).get(row["mode"]) or {}
        if row["status"] == "not_run" and judged.get("reason"):
            causes.append(judged["reason"])
        host_rows.append(
            dict(
                row,
                peer_median=peer.get("peer_median"),
                peer_ratio=peer.get("peer_ratio"),
                peer_count=peer.get("peer_count"),
                peer_verdict=peer.get("verdict"),
                host_status=record["status"],
                causes=causes,
                hover=f"host {record['status']}; " + (record.get("health_line") or ""),
                **_health_codes(record),
            )
        )
        for gpu in tp.get("gpus") or []:
            judged_gpu = (gpu.get("modes") or {}).get(row["mode"])
            if not isinstance(judged_gpu, dict):
                continue
            gpu_peer = _peer_of(record, row["mode"], gpu.get("index"))
            gpu_rows.append(
                {
                    "host": row["host"],
                    "gpu_index": gpu.get("index"),
                    "bus_id": gpu.get("bus_id"),
                    "mode": row["mode"],
                    "img_s": judged_gpu.get("img_s"),
                    "reference": judged_gpu.get("reference"),
                    "ratio": judged_gpu.get("ratio"),
                    "status": judged_gpu.get("status"),
                    "host_median": judged_gpu.get("host_median"),
                    "vs_host": judged_gpu.get("vs_host"),
                    "peer_median": gpu_peer.get("peer_median"),
                    "peer_ratio": gpu_peer.get("peer_ratio"),
                    "hover": f"bus {gpu.get('bus_id') or '?'}; "
                    + (judged_gpu.get("reason") or judged_gpu.get("status") or ""),
                }
            )
    # Every host is in the table and the bars: one without a judged mode (failed,
    # unreachable, not run, not measured) has one row, its status and why.
    judged = {r["host"] for r in host_rows}
    for name in sorted(set(hosts) - judged):
        record = hosts[name]
        host_rows.append(
            {
                "host": name,
                "gpu": host_stack(record)["gpu_model"] or "",
                "mode": "-",
                "batch": None,
                "img_s": None,
                "reference": None,
                "ratio": None,
                "status": record["status"],
                "source": "",
                "peers": {},
                "peer_median": None,
                "peer_ratio": None,
                "peer_count": None,
                "peer_verdict": None,
                "host_status": record["status"],
                "causes": [_host_reason(record)],
                "hover": f"host {record['status']}: {_host_reason(record)}",
                **_health_codes(record),
            }
        )
    for record in hosts.values():
        if record["status"] == "ok":
            continue
        tp = record["throughput"] or {}
        mine = [r for r in host_rows if r["host"] == record["host"]]
        ratios = [
            min(x for x in (r.get("ratio"), r.get("peer_ratio")) if isinstance(x, (int, float)))
            for r in mine
            if any(isinstance(x, (int, float)) for x in (r.get("ratio"), r.get("peer_ratio")))
        ]
        causes = list(tp.get("diagnosis") or [])
        causes += [
            f"{r['code']} ({r.get('where') or '-'}): {r.get('message') or ''}{_remedy(r)}"
            for r in record.get("health") or []
            if r.get("severity") == FAILING
        ]
        attention.append(
            {
                "host": record["host"],
                "status": record["status"],
                "why": _why(record),
                "causes": causes,
                "shortfall": min(ratios) if ratios else None,
            }
        )
    counts: Dict[str, int] = {}
    for record in hosts.values():
        counts[record["status"]] = counts.get(record["status"], 0) + 1
    peer_notes = [
        f"{g['gpu_key']} / {g['mode']}: one host of this model in the run, so no peer "
        "baseline; judged against the table only."
        for g in _peer_groups(hosts)
        if not g["baseline"]
    ]
    stack = fleet_stack(hosts)
    return {
        "host_rows": host_rows,
        "gpu_rows": gpu_rows,
        "attention": attention,
        "counts": counts,
        "peer_notes": peer_notes,
        "fleet_rows": host_table(hosts),
        "heatmap": heatmap(hosts),
        "causes": group_causes(hosts),
        "majority": stack["majority"],
    }


# --- the fleet page's host table, stack drift, grouped causes, heatmap and comparison

STACK_FIELDS = ("driver", "cuda", "torch", "gpu_model", "gpu_count")
STACK_LABELS = {
    "driver": "driver",
    "cuda": "CUDA (driver)",
    "torch": "torch",
    "gpu_model": "GPU model",
    "gpu_count": "GPUs",
}
# Hostvars that name a host's instance type, first found wins; else the DMI product name
# of an EC2 host (Nitro instances report their type there, e.g. "p4d.24xlarge").
INSTANCE_TYPE_VARS = ("kindling_instance_type", "instance_type", "ec2_instance_type")
UNMEASURED = ("failed", "unreachable", "not-run", "not-measured", "no-measurement")


def host_stack(record: Dict[str, Any]) -> Dict[str, Any]:
    """A host's driver, CUDA, torch, GPU model and count, and instance type (None where
    unknown), from its nvidia_smi and torch_cuda facts (those the report carries)."""
    smi = record.get("nvidia_smi") if isinstance(record.get("nvidia_smi"), dict) else {}
    tc = record.get("torch_cuda") if isinstance(record.get("torch_cuda"), dict) else {}
    gpus = [g for g in smi.get("gpus") or [] if isinstance(g, dict)]
    names = sorted({str(g["name"]) for g in gpus if g.get("name")})
    tp = record.get("throughput") or {}
    count = smi.get("gpu_count") if isinstance(smi.get("gpu_count"), int) else None
    if gpus and count is None:
        count = len(gpus)
    if not smi.get("present", True) and not gpus:
        count = 0 if "present" in smi else None
    return {
        "driver": smi.get("driver_version"),
        "cuda": smi.get("cuda_driver_version") or smi.get("cuda_version"),
        "torch": tc.get("torch_version") or tc.get("version"),
        "gpu_model": ", ".join(names) or tp.get("gpu_name") or None,
        "gpu_count": count,
        "instance_type": record.get("instance_type"),
    }


def fleet_stack(hosts: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The fleet's majority per stack field (among hosts where it is known), and per host
    the fields that differ from it: ``{majority: {...}, drift: {host: [field, ...]}}``.
    A field with a tie for the most hosts has no majority, and no host drifts on it."""
    stacks = {name: host_stack(record) for name, record in hosts.items()}
    majority: Dict[str, Any] = {}
    for field in STACK_FIELDS:
        counts: Dict[Any, int] = {}
        for stack in stacks.values():
            if stack[field] not in (None, ""):
                counts[stack[field]] = counts.get(stack[field], 0) + 1
        ranked = sorted(counts.items(), key=lambda kv: -kv[1])
        if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
            majority[field] = ranked[0][0]
    drift = {
        name: [
            f
            for f in STACK_FIELDS
            if f in majority and stack[f] not in (None, "") and stack[f] != majority[f]
        ]
        for name, stack in stacks.items()
    }
    return {"majority": majority, "drift": {h: d for h, d in drift.items() if d}, "stacks": stacks}


def _strip_hosts(text: str, names: Iterable[str]) -> str:
    for name in sorted(names, key=len, reverse=True):
        text = text.replace(name, "<host>")
    return " ".join(text.split())


def host_causes(record: Dict[str, Any]) -> List[Dict[str, Any]]:
    """A host's causes, each ``{code, gpu, message, remedy}``: the throughput result's
    ``causes`` where it has them, else its ``diagnosis`` lines (code None), then its
    failing health codes and its errors (failed or unreachable)."""
    tp = record.get("throughput") or {}
    out: List[Dict[str, Any]] = []
    causes = tp.get("causes")
    if isinstance(causes, list) and causes:
        for c in causes:
            if isinstance(c, dict) and (c.get("code") or c.get("message")):
                out.append(
                    {
                        "code": c.get("code"),
                        "gpu": c.get("gpu"),
                        "message": str(c.get("message") or c.get("code")),
                        "remedy": c.get("remedy"),
                    }
                )
    else:
        for line in tp.get("diagnosis") or []:
            out.append({"code": None, "gpu": None, "message": str(line), "remedy": None})
    for row in record.get("health") or []:
        if row.get("severity") == FAILING:
            out.append(
                {
                    "code": row["code"],
                    "gpu": row.get("gpu"),
                    "message": str(row.get("message") or row["code"]),
                    "remedy": row.get("remediation"),
                }
            )
    for error in record.get("errors") or []:
        code = "host-unreachable" if record.get("status") == "unreachable" else None
        out.append({"code": code, "gpu": None, "message": str(error), "remedy": None})
    return out


def group_causes(hosts: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One entry per cause with the hosts it affects, most hosts first: grouped by its
    ``code`` where it has one, else by its message with the host names taken out.
    Each ``{key, code, message, remedy, hosts, gpus: {host: [gpu, ...]}}``."""
    names = list(hosts)
    groups: Dict[str, Dict[str, Any]] = {}
    for name in sorted(hosts):
        for cause in host_causes(hosts[name]):
            message = _strip_hosts(cause["message"], names)
            key = cause["code"] or message
            group = groups.setdefault(
                key,
                {
                    "key": key,
                    "code": cause["code"],
                    "message": message,
                    "remedy": cause.get("remedy"),
                    "hosts": [],
                    "gpus": {},
                },
            )
            if name not in group["hosts"]:
                group["hosts"].append(name)
            if cause.get("gpu") is not None:
                gpus = group["gpus"].setdefault(name, [])
                if cause["gpu"] not in gpus:
                    gpus.append(cause["gpu"])
    return sorted(groups.values(), key=lambda g: (-len(g["hosts"]), g["key"]))


def _median(values: List[float]) -> Optional[float]:
    values = sorted(values)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _host_reason(record: Dict[str, Any]) -> str:
    tp = record.get("throughput") or {}
    if record["status"] in ("failed", "unreachable", "not-run") and record.get("errors"):
        return "; ".join(record["errors"])
    if record["status"] == "not-run":
        return "in the inventory, but the play never reached it"
    if record["status"] == "no-measurement":
        return "no throughput result (the check did not run on it)"
    return _why(record) if record["status"] != "ok" else (tp.get("summary") or "")


def heatmap(hosts: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """Host x GPU cells of img/s relative to the reference, or to the fleet median of the
    same GPU model and mode where the table has no reference (``basis`` says which).

    ``cells[host][gpu][mode] = {value, img_s, basis, status}``; a host measured as a whole
    (no per-GPU result) has its one value at GPU 0. ``hosts`` lists every host, worst
    first: unmeasured hosts (with their status) at the top, then by their lowest value."""
    per: List[Dict[str, Any]] = []
    for name, record in hosts.items():
        tp = record.get("throughput") or {}
        gpus = [g for g in tp.get("gpus") or [] if isinstance(g, dict) and g.get("modes")]
        if gpus:
            for gpu in gpus:
                for mode, j in gpu["modes"].items():
                    if isinstance(j, dict):
                        per.append(dict(j, host=name, gpu=gpu.get("index"), mode=mode))
        else:
            for mode, j in (tp.get("judgement") or {}).items():
                if isinstance(j, dict):
                    per.append(dict(j, host=name, gpu=0, mode=mode))
    medians: Dict[Any, Optional[float]] = {}
    for p in per:
        key = ((hosts[p["host"]].get("throughput") or {}).get("gpu_key"), p["mode"])
        if key not in medians:
            medians[key] = _median(
                [
                    float(q["img_s"])
                    for q in per
                    if q["mode"] == p["mode"]
                    and (hosts[q["host"]].get("throughput") or {}).get("gpu_key") == key[0]
                    and isinstance(q.get("img_s"), (int, float))
                ]
            )
    cells: Dict[str, Dict[int, Dict[str, Any]]] = {name: {} for name in hosts}
    modes: List[str] = []
    for p in per:
        if p["mode"] not in modes:
            modes.append(p["mode"])
        img_s = p.get("img_s") if isinstance(p.get("img_s"), (int, float)) else None
        key = ((hosts[p["host"]].get("throughput") or {}).get("gpu_key"), p["mode"])
        ref = p.get("reference") if isinstance(p.get("reference"), (int, float)) else None
        if img_s is not None and ref:
            value, basis = img_s / ref, "reference"
        elif img_s is not None and medians.get(key):
            value, basis = img_s / medians[key], "fleet median"
        else:
            value, basis = None, "not measured"
        gpu = int(p["gpu"]) if isinstance(p.get("gpu"), int) else 0
        cells[p["host"]].setdefault(gpu, {})[p["mode"]] = {
            "value": round(value, 3) if value is not None else None,
            "img_s": img_s,
            "basis": basis,
            "status": p.get("status"),
        }
    stacks = {name: host_stack(record) for name, record in hosts.items()}
    width = max(
        [len(c) for c in cells.values()]
        + [max(c) + 1 for c in cells.values() if c]
        + [s["gpu_count"] or 0 for s in stacks.values()]
        + [1]
    )

    def worst(name: str) -> Tuple[int, float, str]:
        values = [
            m["value"]
            for gpu in cells[name].values()
            for m in gpu.values()
            if m["value"] is not None
        ]
        return (0 if not values else 1, min(values) if values else 0.0, name)

    order = sorted(hosts, key=worst)
    return {
        "hosts": order,
        "status": {name: hosts[name]["status"] for name in order},
        "reason": {name: _host_reason(hosts[name]) for name in order},
        "gpu_counts": {name: stacks[name]["gpu_count"] for name in order},
        "width": width,
        "modes": modes,
        "cells": cells,
    }


def host_table(hosts: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One row per host, every host (failed, unreachable and not run too): its status and
    reason, its stack with the fields that differ from the fleet's majority, its lowest
    ratio and its cause codes."""
    stack = fleet_stack(hosts)
    cells = heatmap(hosts)["cells"]
    rows = []
    for name in sorted(hosts):
        record = hosts[name]
        values = [
            m["value"] for g in cells[name].values() for m in g.values() if m["value"] is not None
        ]
        rows.append(
            dict(
                stack["stacks"][name],
                host=name,
                status=record["status"],
                reason=_host_reason(record),
                drift=stack["drift"].get(name, []),
                worst=min(values) if values else None,
                modes=len((record.get("throughput") or {}).get("judgement") or {}),
                causes=sorted({c["code"] or c["message"][:60] for c in host_causes(record)}),
                **_health_codes(record),
            )
        )
    return rows


def _mode_rates(record: Dict[str, Any]) -> Dict[str, float]:
    out = {}
    for mode, j in ((record.get("throughput") or {}).get("judgement") or {}).items():
        if isinstance(j, dict) and isinstance(j.get("img_s"), (int, float)):
            out[mode] = float(j["img_s"])
    return out


def previous_report(reports: Path, meta: Dict[str, Any], here: Path) -> Optional[Path]:
    """The latest earlier report of the same inventory in the same reports folder."""
    best: Optional[Tuple[str, Path]] = None
    if not reports.is_dir():
        return None
    for path in reports.glob("*/results.json"):
        if path.parent.resolve() == here.resolve():
            continue
        try:
            other = json.loads(path.read_text(encoding="utf-8"))["meta"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        stamp = str(other.get("timestamp", ""))
        if other.get("inventory") != meta.get("inventory") or not stamp < meta["timestamp"]:
            continue
        if best is None or stamp > best[0]:
            best = (stamp, path)
    return best[1] if best else None


def compare(
    hosts: Dict[str, Dict[str, Any]],
    previous: Dict[str, Any],
    margin: float = DEFAULT_MARGIN,
) -> Dict[str, Any]:
    """What changed since ``previous`` (an earlier results.json): the modes more than
    ``margin`` slower (``{host, mode, before, now, ratio}``, slowest first), the hosts new
    and gone, and the hosts whose status changed (``{host, before, now}``)."""
    before = previous.get("hosts") or {}
    slower = []
    for name in sorted(set(hosts) & set(before)):
        then, now = _mode_rates(before[name]), _mode_rates(hosts[name])
        for mode in sorted(set(then) & set(now)):
            if then[mode] > 0 and now[mode] / then[mode] < 1 - margin:
                slower.append(
                    {
                        "host": name,
                        "mode": mode,
                        "before": then[mode],
                        "now": now[mode],
                        "ratio": round(now[mode] / then[mode], 3),
                    }
                )
    changed = [
        {"host": n, "before": before[n].get("status"), "now": hosts[n]["status"]}
        for n in sorted(set(hosts) & set(before))
        if before[n].get("status") != hosts[n]["status"]
    ]
    return {
        "timestamp": (previous.get("meta") or {}).get("timestamp"),
        "margin": margin,
        "slower": sorted(slower, key=lambda s: (s["ratio"], s["host"], s["mode"])),
        "new": sorted(set(hosts) - set(before)),
        "gone": sorted(set(before) - set(hosts)),
        "status": changed,
    }


def add_expected_hosts(
    hosts: Dict[str, Dict[str, Any]], expected: Dict[str, Dict[str, Any]]
) -> Dict[str, Dict[str, Any]]:
    """Every host the play targets, from the inventory (``{host: hostvars}``): a host with
    no event is ``not-run``; each gets its instance type where a hostvar names it."""
    for name, hostvars in expected.items():
        if name not in hosts:
            hosts[name] = {
                "host": name,
                "status": "not-run",
                "errors": [],
                "nvidia_smi": None,
                "torch_cuda": None,
                "throughput": None,
                "health": None,
                "health_failing": [],
                "health_line": "",
                "peers": {},
                "peer_verdicts": [],
            }
        for var in INSTANCE_TYPE_VARS:
            if hostvars.get(var) and not hosts[name].get("instance_type"):
                hosts[name]["instance_type"] = str(hostvars[var])
    return hosts


def inventory_hosts(
    inventory: Path, pattern: str, limit: Optional[str] = None
) -> Dict[str, Dict[str, Any]]:
    """The hosts ``pattern`` matches in ``inventory`` with their variables ({} when the
    inventory cannot be read here: the play's own events still name its hosts)."""
    try:
        from ansible.inventory.manager import InventoryManager
        from ansible.parsing.dataloader import DataLoader
        from ansible.vars.manager import VariableManager

        loader = DataLoader()
        manager = InventoryManager(loader=loader, sources=[str(inventory)])
        if limit:
            manager.subset(limit)
        variables = VariableManager(loader=loader, inventory=manager)
        out = {}
        for host in manager.get_hosts(pattern):
            values = variables.get_vars(host=host)
            out[host.name] = {k: values.get(k) for k in INSTANCE_TYPE_VARS if k in values}
        return out
    except Exception:  # the report goes on without it
        return {}


def render_html(
    hosts: Dict[str, Dict[str, Any]],
    meta: Dict[str, Any],
    links: Optional[Dict[str, str]] = None,
    comparison: Optional[Dict[str, Any]] = None,
) -> str:
    """index.html: the summary and heatmap on the first screen, then the tables and bars.
    ``links``: relative hrefs of plotly.js, the health codes' doc and the previous report."""
    import fleet_html  # plotly is imported there, only when the page is drawn

    margin = next((r.get("peer_margin") for r in hosts.values() if "peer_margin" in r), None)
    return fleet_html.render(
        meta,
        margin=margin if margin is not None else DEFAULT_MARGIN,
        health_doc=HEALTH_DOC,
        links=links or {},
        comparison=comparison,
        **html_rows(hosts),
    )


def write_shared(reports: Path) -> Dict[str, str]:
    """What every report of a reports folder shares, written once into it: plotly.js
    (``plotly-<version>.min.js``) and docs/HEALTH_CODES.md. Their names, relative to the
    folder; a report links them as ``../NAME``, so the folder can be copied anywhere."""
    import fleet_html

    reports.mkdir(parents=True, exist_ok=True)
    shared = {"plotly": fleet_html.plotly_file_name(), "health_doc": Path(HEALTH_DOC).name}
    plotly_path = reports / shared["plotly"]
    if not plotly_path.exists():
        tmp = plotly_path.with_name(plotly_path.name + ".tmp")
        tmp.write_text(fleet_html.plotly_js(), encoding="utf-8")
        os.replace(tmp, plotly_path)
    doc = (ROOT / HEALTH_DOC).read_text(encoding="utf-8")
    doc_path = reports / shared["health_doc"]
    if not doc_path.exists() or doc_path.read_text(encoding="utf-8") != doc:
        doc_path.write_text(doc, encoding="utf-8")
    return shared


def write_reports(
    hosts: Dict[str, Dict[str, Any]],
    out_dir: Path,
    meta: Dict[str, Any],
    change_margin: float = DEFAULT_MARGIN,
) -> Path:
    """results.json, summary.md and index.html in ``out_dir`` (a folder of the reports
    folder, its parent), compared with the previous report of the same inventory there."""
    out_dir.mkdir(parents=True, exist_ok=True)
    shared = write_shared(out_dir.parent)
    earlier = previous_report(out_dir.parent, meta, out_dir)
    comparison = None
    if earlier is not None:
        comparison = compare(hosts, json.loads(earlier.read_text(encoding="utf-8")), change_margin)
        comparison["href"] = f"../{earlier.parent.name}/index.html"
    (out_dir / "results.json").write_text(
        json.dumps(
            {"meta": meta, "hosts": hosts, "comparison": comparison}, indent=2, sort_keys=True
        )
        + "\n",
        encoding="utf-8",
    )
    health_doc = f"../{shared['health_doc']}"
    (out_dir / "summary.md").write_text(render_markdown(hosts, meta, health_doc), encoding="utf-8")
    links = {"plotly": f"../{shared['plotly']}", "health_doc": health_doc}
    (out_dir / "index.html").write_text(
        render_html(hosts, meta, links, comparison), encoding="utf-8"
    )
    return out_dir


def _events_from_artifacts(artifacts: Path) -> List[Dict[str, Any]]:
    events = []
    for path in sorted(
        (artifacts / "job_events").glob("*.json"), key=lambda p: int(p.stem.split("-")[0])
    ):
        events.append(json.loads(path.read_text()))
    return events


class ProgressPrinter:
    """ansible-runner's event handler: while the play runs, print what a person needs.

    The throughput check's progress comes from its poll events (``runner_retry`` of
    gpu_throughput_progress_info) through module_utils/throughput_progress.py's
    ``FleetProgress``, the lines the kindling_progress stdout callback prints under
    ansible-playbook: per host, or one fleet line per poll above ``threshold`` hosts.
    Besides: each play's name, and each host that fails or is unreachable, when it
    happens. Every event is kept (the handler returns True)."""

    def __init__(self, out: Any = None, threshold: int = FLEET_THRESHOLD) -> None:
        self.out = out if out is not None else sys.stdout
        self.threshold = threshold
        self.progress = FleetProgress(threshold)

    def _print(self, text: str) -> None:
        print(f"fleet report: {text}", file=self.out, flush=True)

    def __call__(self, event: Dict[str, Any]) -> bool:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        host = data.get("host")
        action = _action(data)
        res = data.get("res") or {}
        if kind == "playbook_on_play_start":
            self._print(f"play {data.get('play') or data.get('name') or ''}".rstrip())
        elif kind == "playbook_on_task_start" and action == "gpu_throughput_measure":
            self.progress = FleetProgress(self.threshold)
        elif kind == "runner_on_unreachable" and host:
            self._print(f"{host} unreachable: {res.get('msg', '')}".rstrip())
        elif kind == "runner_on_failed" and host and not data.get("ignore_errors"):
            self._print(f"{host} failed at {data.get('task', action)}: {res.get('msg', '')}")
        elif kind == "runner_on_ok" and host and action == "gpu_throughput_measure":
            self.progress.started(host)
        elif kind == "runner_retry" and host and action in PROGRESS_ACTIONS:
            text = self.progress.polled(host, res)
            if text:
                self._print(text)
        elif kind == "runner_on_ok" and host and action in PROGRESS_ACTIONS:
            text = self.progress.finished(host, res)
            if text:
                self._print(text)
        return True


def run_playbook(
    inventory: Path,
    playbook: Path,
    extravars: Dict[str, Any],
    private_dir: Path,
    limit: Optional[str],
    event_handler: Optional[Any] = None,
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
        # ansible-runner sets ANSIBLE_CALLBACK_PLUGINS to its own folder, which hides
        # ansible.cfg's callback_plugins: name ours here (runner appends its folder).
        "ANSIBLE_CALLBACK_PLUGINS": str(ROOT / "callback_plugins"),
        # Runner's stdout callback (awx_display) writes the job events and subclasses the
        # one named here (runner reads it from the environment only): kindling_progress,
        # so the artifacts' stdout has progress lines too, and no "FAILED - RETRYING".
        # The terminal gets the same lines from ProgressPrinter (quiet=True below).
        "ANSIBLE_STDOUT_CALLBACK": "kindling_progress",
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
        # quiet keeps runner's copy of the play's output off the terminal; the progress
        # comes from the events instead, as they arrive.
        event_handler=event_handler or ProgressPrinter(),
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
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--from-artifacts",
        type=Path,
        help="report an earlier ansible-runner artifacts directory instead of running",
    )
    source.add_argument(
        "--from-results",
        type=Path,
        help="draw an earlier report's results.json again (its hosts as they were judged)",
    )
    args = parser.parse_args(argv)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out_dir = args.reports / stamp
    if not 0 < args.peer_margin < 1:
        parser.error(f"--peer-margin must be between 0 and 1, got {args.peer_margin}")
    hosts: Optional[Dict[str, Dict[str, Any]]] = None
    earlier_meta: Optional[Dict[str, Any]] = None
    expected: Dict[str, Dict[str, Any]] = {}
    if args.from_results:
        try:
            earlier = json.loads(args.from_results.read_text(encoding="utf-8"))
            hosts, inventory = earlier["hosts"], earlier["meta"]["inventory"]
            earlier_meta = dict(earlier["meta"], redrawn_at=stamp)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            parser.error(
                f"--from-results {args.from_results}: not a fleet report's results.json ({exc})"
            )
        events = []
    elif args.from_artifacts:
        events = _events_from_artifacts(args.from_artifacts)
        inventory = str(args.from_artifacts)
    else:
        if not args.inventory:
            parser.error("give -i INVENTORY (or --from-artifacts DIR, or --from-results FILE)")
        if not args.inventory.exists():
            parser.error(f"inventory {args.inventory} does not exist")
        private = out_dir / "runner"
        private.mkdir(parents=True, exist_ok=True)
        extravars = _parse_extravars(args.extra_vars)
        # Every host the play targets, read before it runs: one it never reaches is
        # still a row of the report ("not-run"), with its instance type where known.
        expected = inventory_hosts(
            args.inventory.resolve(),
            str(extravars.get("kindling_target_hosts") or "gpu_hosts"),
            args.limit,
        )
        print(f"fleet report: {len(expected)} hosts in {args.inventory}", flush=True)
        events = run_playbook(
            args.inventory.resolve(), args.playbook.resolve(), extravars, private, args.limit
        )
        inventory = str(args.inventory)
    if hosts is None:
        hosts = collect(events, args.peer_margin)
        add_expected_hosts(hosts, expected)
    meta = earlier_meta or {
        "timestamp": stamp,
        "inventory": inventory,
        "playbook": os.path.relpath(args.playbook, ROOT),
    }
    write_reports(hosts, out_dir, meta, args.peer_margin)
    bad = sorted(h for h, r in hosts.items() if r["status"] not in ("ok",))
    print(
        f"fleet report: {out_dir} ({len(hosts)} hosts"
        + (f"; attention: {', '.join(bad)}" if bad else "")
        + ")"
    )
    return 1 if bad or not hosts else 0


if __name__ == "__main__":
    sys.exit(main())
