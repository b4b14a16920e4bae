#!/usr/bin/env python3
"""Run playbooks/verify.yml over an inventory with ansible-runner and report the fleet.

    python tools/fleet_report.py -i inventories/gpu                 # run, then report
    python tools/fleet_report.py -i inventories/gpu -e gpu_check_profile=full
    python tools/fleet_report.py --from-artifacts DIR               # report an earlier run
    python tools/fleet_report.py --from-results reports/X/results.json  # draw it again

It collects each host's nvidia-smi facts, torch.cuda facts and throughput judgement
from the runner's job events, and writes reports/<timestamp>/ with:

- results.json  every host: status, facts summary, per-mode img/s, reference, ratio,
                and its GPU health codes (``health``, ``health_failing``);
- summary.md    one table row per host and mode, failures and likely causes first, a
                ``health`` column beside the verdict (failing codes in bold) and a
                "GPU health findings" section: per host, each finding with its remedy;
- index.html    drawn with Plotly, one file that works offline (tools/fleet_html.py):
                per-host and per-GPU bars of img/s against the reference and the peer
                median, slowest first, the hosts that need attention with their causes,
                and a table of hosts, modes, codes and causes that sorts on any column.

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
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional

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
    return {
        "host_rows": host_rows,
        "gpu_rows": gpu_rows,
        "attention": attention,
        "counts": counts,
        "peer_notes": peer_notes,
    }


def render_html(hosts: Dict[str, Dict[str, Any]], meta: Dict[str, Any]) -> str:
    """index.html: Plotly figures and a sortable table, one file that works offline."""
    import fleet_html  # plotly is imported there, only when the page is drawn

    margin = next((r.get("peer_margin") for r in hosts.values() if "peer_margin" in r), None)
    return fleet_html.render(
        meta,
        margin=margin if margin is not None else DEFAULT_MARGIN,
        health_doc=HEALTH_DOC,
        **html_rows(hosts),
    )


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
        # ansible-runner sets ANSIBLE_CALLBACK_PLUGINS to its own folder, which hides
        # ansible.cfg's callback_plugins: name ours here (runner appends its folder), or
        # kindling_progress is skipped and the check's progress lines are lost.
        "ANSIBLE_CALLBACK_PLUGINS": str(ROOT / "callback_plugins"),
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
        events = run_playbook(
            args.inventory.resolve(),
            args.playbook.resolve(),
            _parse_extravars(args.extra_vars),
            private,
            args.limit,
        )
        inventory = str(args.inventory)
    if hosts is None:
        hosts = collect(events, args.peer_margin)
    meta = earlier_meta or {
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
