"""The fleet report's index.html: Plotly figures and a sortable table in one offline file.

tools/fleet_report.py folds the run into rows and calls :func:`render`. The page holds

- the hosts that need attention, slowest first, with their causes and health codes;
- "Per host": a bar per host and mode (img/s, coloured by verdict) with the table's
  reference and the median of the host's peers (same GPU model, same run) as markers;
- "Per GPU": a bar per GPU and mode, with the reference, the median of the host's other
  GPUs and the fleet's per-GPU peer median (shown where a host measured every GPU);
- a table of every host and mode that sorts on any column (click its header; again to
  reverse), slowest first to begin with.

Plotly (https://plotly.com/python/) draws the figures; its JavaScript is written into the
page, so the file opens with no network. Bars are ordered slowest first: by the lowest of
the ratios that judge them (to the reference, to the host's other GPUs, to the peers).
"""

from __future__ import annotations

import html
import json
from typing import Any, Dict, List, Optional, Sequence

try:
    import plotly
    import plotly.graph_objects as go
except ImportError as exc:  # the controller's virtualenv has it (requirements-dev.txt)
    raise SystemExit(
        "fleet_report: the HTML report needs plotly (pip install -r requirements-dev.txt, "
        f"or make venv): {exc}"
    ) from exc

STATUS_COLOURS = {
    "pass": "#2e7d32",
    "fail": "#c62828",
    "not_run": "#78909c",
    "trails": "#ef6c00",  # passes the table but trails its peers or its host's other GPUs
}
STATUS_LABELS = {
    "pass": "pass",
    "fail": "fail (below tolerance)",
    "not_run": "not run / not judged",
    "trails": "trails peers or host",
}
REFERENCE_MARKER = {
    "symbol": "line-ns-open",
    "size": 22,
    "color": "#000",
    "line": {"width": 3, "color": "#000"},
}
PEER_MARKER = {
    "symbol": "diamond",
    "size": 11,
    "color": "#6a1b9a",
    "line": {"width": 1, "color": "#fff"},
}
HOST_MEDIAN_MARKER = {
    "symbol": "circle",
    "size": 10,
    "color": "#0277bd",
    "line": {"width": 1, "color": "#fff"},
}
CONFIG = {"displaylogo": False, "responsive": True, "modeBarButtonsToRemove": ["sendDataToCloud"]}


def _num(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def shortfall(row: Dict[str, Any]) -> Optional[float]:
    """The lowest of a row's ratios (reference, host's other GPUs, peers); None without one."""
    ratios = [_num(row.get(k)) for k in ("ratio", "vs_host", "peer_ratio")]
    ratios = [r for r in ratios if r is not None]
    return min(ratios) if ratios else None


def slowest_first(rows: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Rows by shortfall, lowest first; rows without a ratio (not measured) last."""
    return sorted(
        rows,
        key=lambda r: (
            shortfall(r) is None,
            shortfall(r) or 0.0,
            str(r.get("host")),
            str(r.get("mode")),
        ),
    )


def bar_class(row: Dict[str, Any], margin: float) -> str:
    """pass, fail, not_run, or trails (the table passed it, its peers or host did not)."""
    status = row.get("status") if row.get("status") in ("pass", "fail") else "not_run"
    if status == "pass":
        for key in ("vs_host", "peer_ratio"):
            ratio = _num(row.get(key))
            if ratio is not None and ratio < 1 - margin:
                return "trails"
    return status


def _fmt(value: Any, spec: str, none: str = "-") -> str:
    number = _num(value)
    return format(number, spec) if number is not None else none


def _bars_figure(
    rows: List[Dict[str, Any]],
    labels: List[str],
    margin: float,
    title: str,
    markers: List[Dict[str, Any]],
) -> go.Figure:
    """Horizontal bars (one trace per verdict, for the legend) plus marker traces."""
    fig = go.Figure()
    for cls in STATUS_COLOURS:
        picked = [(label, row) for label, row in zip(labels, rows) if bar_class(row, margin) == cls]
        if not picked:
            continue
        fig.add_trace(
            go.Bar(
                name=STATUS_LABELS[cls],
                orientation="h",
                y=[label for label, _ in picked],
                x=[_num(row.get("img_s")) or 0.0 for _, row in picked],
                marker_color=STATUS_COLOURS[cls],
                text=[
                    f"{_fmt(row.get('img_s'), ',.0f')} img/s"
                    + (
                        f" ({_fmt(row.get('ratio'), '.0%')} of ref)"
                        if _num(row.get("ratio"))
                        else ""
                    )
                    for _, row in picked
                ],
                textposition="outside",
                cliponaxis=False,
                customdata=[[row.get("status"), row.get("hover", "")] for _, row in picked],
                hovertemplate=(
                    "%{y}<br>%{x:,.0f} img/s, %{customdata[0]}<br>%{customdata[1]}<extra></extra>"
                ),
                meta=cls,
            )
        )
    for marker in markers:
        points = [(label, _num(row.get(marker["key"]))) for label, row in zip(labels, rows)]
        points = [(label, value) for label, value in points if value is not None]
        if not points:
            continue
        fig.add_trace(
            go.Scatter(
                name=marker["name"],
                mode="markers",
                y=[label for label, _ in points],
                x=[value for _, value in points],
                marker=marker["marker"],
                hovertemplate="%{y}<br>" + marker["name"] + ": %{x:,.0f} img/s<extra></extra>",
                meta=marker["key"],
            )
        )
    peak = max(
        [_num(r.get(k)) or 0.0 for r in rows for k in ["img_s"] + [m["key"] for m in markers]]
        + [1.0]
    )
    fig.update_layout(
        title={"text": title, "x": 0},
        barmode="overlay",
        height=140 + 30 * len(rows),
        margin={"l": 10, "r": 40, "t": 60, "b": 40},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1, "xanchor": "right"},
        xaxis={
            "title": "images/s (ResNet-50 training)",
            "range": [0, peak * 1.22],
            "rangemode": "tozero",
        },
        yaxis={
            "categoryorder": "array",
            "categoryarray": labels,
            "autorange": "reversed",  # the slowest at the top
            "automargin": True,
        },
        plot_bgcolor="#fafafa",
    )
    return fig


def hosts_figure(rows: List[Dict[str, Any]], margin: float) -> go.Figure:
    """A bar per host and mode: img/s against the reference and the peers' median."""
    ordered = slowest_first(rows)
    labels = [f"{r['host']} · {r['mode']}" for r in ordered]
    return _bars_figure(
        ordered,
        labels,
        margin,
        "Per host: img/s per mode, slowest first",
        [
            {"key": "reference", "name": "reference", "marker": REFERENCE_MARKER},
            {"key": "peer_median", "name": "peer median", "marker": PEER_MARKER},
        ],
    )


def gpus_figure(rows: List[Dict[str, Any]], margin: float) -> Optional[go.Figure]:
    """A bar per GPU and mode against the reference, the host's other GPUs and the peers."""
    if not rows:
        return None
    ordered = slowest_first(rows)
    labels = [f"{r['host']} · GPU {r['gpu_index']} · {r['mode']}" for r in ordered]
    return _bars_figure(
        ordered,
        labels,
        margin,
        "Per GPU: every GPU of each host, slowest first",
        [
            {"key": "reference", "name": "reference", "marker": REFERENCE_MARKER},
            {
                "key": "host_median",
                "name": "host's other GPUs (median)",
                "marker": HOST_MEDIAN_MARKER,
            },
            {"key": "peer_median", "name": "peer median", "marker": PEER_MARKER},
        ],
    )


def _figure_div(fig: Optional[go.Figure], div_id: str, empty: str) -> str:
    if fig is None:
        return f'<p id="{div_id}" class="empty">{html.escape(empty)}</p>'
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id, config=CONFIG)


# One column per entry: (key, header, kind). kind "num" sorts numerically (data-sort).
TABLE_COLUMNS = [
    ("host", "host", "text"),
    ("gpu", "GPU", "text"),
    ("mode", "mode", "text"),
    ("batch", "batch", "num"),
    ("img_s", "img/s", "num"),
    ("reference", "reference", "num"),
    ("ratio", "ratio", "num"),
    ("status", "verdict", "text"),
    ("peer_ratio", "vs peers", "num"),
    ("host_status", "host status", "text"),
    ("health", "health codes", "text"),
    ("causes", "likely causes", "text"),
]


def _cell(row: Dict[str, Any], key: str, kind: str) -> str:
    if key == "peer_ratio":
        ratio = _num(row.get("peer_ratio"))
        text = (
            f"{ratio:.2f} of {_fmt(row.get('peer_median'), ',.0f')} (n={row.get('peer_count')})"
            if ratio is not None
            else ("no peers" if row.get("peer_verdict") == "no-peers" else "-")
        )
        return f'<td data-sort="{ratio if ratio is not None else ""}">{html.escape(text)}</td>'
    if key == "health":
        failing = [f"<b>{html.escape(c)}</b>" for c in row.get("health_failing") or []]
        notes = [html.escape(c) for c in row.get("health_notes") or []]
        text = ", ".join(failing + notes) or ("ok" if row.get("health_known") else "-")
        return (
            f'<td data-sort="{html.escape(",".join(row.get("health_failing") or []))}">{text}</td>'
        )
    if key == "causes":
        causes = row.get("causes") or []
        return "<td>" + "<br>".join(html.escape(c) for c in causes) + "</td>"
    value = row.get(key)
    if kind == "num":
        number = _num(value)
        shown = _fmt(number, {"ratio": ".2f", "batch": ".0f"}.get(key, ",.0f"))
        return f'<td class="num" data-sort="{number if number is not None else ""}">{shown}</td>'
    return f"<td>{html.escape(str(value if value is not None else '-'))}</td>"


def table_html(rows: List[Dict[str, Any]]) -> str:
    head = "".join(
        f'<th data-key="{key}" data-kind="{kind}" aria-sort="none" tabindex="0">'
        f"{html.escape(label)}</th>"
        for key, label, kind in TABLE_COLUMNS
    )
    body = "".join(
        f'<tr class="{html.escape(str(r.get("status")))}">'
        + "".join(_cell(r, key, kind) for key, _, kind in TABLE_COLUMNS)
        + "</tr>"
        for r in slowest_first(rows)
    )
    return f'<table id="hosts-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


SORT_SCRIPT = """
(function () {
  var table = document.getElementById('hosts-table');
  if (!table) { return; }
  var headers = table.tHead.rows[0].cells;
  function value(row, index, kind) {
    var cell = row.cells[index];
    var raw = cell.hasAttribute('data-sort') ? cell.getAttribute('data-sort') : cell.textContent;
    if (kind === 'num') { return raw === '' ? null : parseFloat(raw); }
    return raw.toLowerCase();
  }
  function sortBy(index) {
    var th = headers[index];
    var kind = th.getAttribute('data-kind');
    var ascending = th.getAttribute('aria-sort') !== 'ascending';
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    rows.sort(function (a, b) {
      var x = value(a, index, kind), y = value(b, index, kind);
      if (x === null && y === null) { return 0; }
      if (x === null) { return 1; }   /* rows without a value stay last either way */
      if (y === null) { return -1; }
      var order = x < y ? -1 : (x > y ? 1 : 0);
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { table.tBodies[0].appendChild(row); });
    for (var i = 0; i < headers.length; i++) { headers[i].setAttribute('aria-sort', 'none'); }
    th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
  }
  Array.prototype.forEach.call(headers, function (th, index) {
    th.addEventListener('click', function () { sortBy(index); });
    th.addEventListener('keydown', function (e) { if (e.key === 'Enter') { sortBy(index); } });
  });
})();
"""

STYLE = """
body{font-family:"Liberation Sans",Arial,sans-serif;margin:1.5em 2em;color:#212121}
h1{margin-bottom:0}.meta{color:#555}
table{border-collapse:collapse;font-size:13px;margin-top:.5em}
td,th{border:1px solid #ddd;padding:3px 8px;vertical-align:top}
th{background:#eceff1;cursor:pointer;user-select:none;white-space:nowrap}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.fail td:nth-child(8){color:#c62828;font-weight:bold}tr.pass td:nth-child(8){color:#2e7d32}
#attention li{margin-bottom:.3em}.status{font-weight:bold}
.status.ok{color:#2e7d32}.status.slow,.status.failed,.status.unreachable{color:#c62828}
.status.outlier,.status.unhealthy,.status.no-measurement{color:#ef6c00}
.counts span{margin-right:1em}
"""


def render(
    meta: Dict[str, Any],
    host_rows: List[Dict[str, Any]],
    gpu_rows: List[Dict[str, Any]],
    attention: List[Dict[str, Any]],
    counts: Dict[str, int],
    margin: float,
    health_doc: str,
    peer_notes: Sequence[str] = (),
) -> str:
    """The whole page. ``host_rows``: one per host and mode; ``gpu_rows``: one per GPU and
    mode; ``attention``: hosts not ok, each ``{host, status, why, causes, shortfall}``;
    ``peer_notes``: the groups without a peer baseline."""
    items = []
    for item in sorted(
        attention, key=lambda a: (a.get("shortfall") is None, a.get("shortfall") or 0.0, a["host"])
    ):
        causes = "".join(f"<li>{html.escape(c)}</li>" for c in item.get("causes") or [])
        items.append(
            f'<li data-host="{html.escape(item["host"])}"><b>{html.escape(item["host"])}</b> '
            f'<span class="status {html.escape(item["status"])}">'
            f"{html.escape(item['status'])}</span>: "
            f"{html.escape(item.get('why') or '')}"
            + (f"<ul>{causes}</ul>" if causes else "")
            + "</li>"
        )
    count_line = "".join(
        f'<span class="status {html.escape(k)}">{html.escape(k)} {v}</span>'
        for k, v in sorted(counts.items())
    )
    plotly_js = plotly.offline.get_plotlyjs()
    total = sum(counts.values())
    hosts_text = f"{total} host" + ("" if total == 1 else "s")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in peer_notes)
    # Inside <script> nothing is unescaped: keep "</" out of the JSON instead.
    payload = json.dumps({"meta": meta, "margin": margin}, sort_keys=True).replace("</", "<\\/")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Kindling fleet report {html.escape(meta["timestamp"])}</title>
<style>{STYLE}</style>
<script>{plotly_js}</script>
</head><body>
<h1>Kindling fleet report</h1>
<p class="meta">{html.escape(meta["timestamp"])} · inventory <code>{
        html.escape(meta["inventory"])
    }</code>
· playbook <code>{html.escape(meta.get("playbook", ""))}</code> · {hosts_text} ·
drawn with Plotly {html.escape(plotly.__version__)}</p>
<p class="counts" id="counts">{count_line}</p>
<p>Each bar is judged against the reference table (black mark) and against its peers, the
other hosts and GPUs of its model in this run (purple diamond); a GPU also against the
median of its host's other GPUs (blue dot). More than {margin:.0%} below peers or host is
flagged even where the table passes. Health codes are explained in
<code>{html.escape(health_doc)}</code> of the Kindling repository.</p>
<h2>Hosts that need attention</h2>
<ul id="attention">{"".join(items) or "<li>none</li>"}</ul>
{f'<ul id="peer-notes">{notes}</ul>' if notes else ""}
{
        _figure_div(
            hosts_figure(host_rows, margin) if host_rows else None,
            "hosts-figure",
            "No host reported a measurement in this run.",
        )
    }
{_figure_div(gpus_figure(gpu_rows, margin), "gpus-figure", "No per-GPU measurements in this run.")}
<h2>Hosts, modes, codes and causes</h2>
<p>Click a column's header to sort by it; click again to reverse.</p>
{table_html(host_rows)}
<script type="application/json" id="report-meta">{payload}</script>
<script>{SORT_SCRIPT}</script>
</body></html>
"""
