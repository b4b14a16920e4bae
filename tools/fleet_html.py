"""The fleet report's index.html: Plotly figures and sortable tables.

tools/fleet_report.py folds the run into rows and calls :func:`render`. The page, laid out
for a 1920x1080 screen at 50 hosts x 8 GPUs:

- first screen: the title and host counts; on the left the host x GPU heatmap (img/s
  relative to the reference, or to the fleet median of the same GPU model and mode
  where there is none; worst host first; failed, unreachable and not-run hosts are grey
  rows named with their status; a button per mode, the worst mode by default); on the
  right the causes, each once with the hosts it affects, what changed since the previous
  report of the same inventory, and the stack most hosts run;
- then every host in a table (status and why, instance type, GPU model and count,
  driver, CUDA, torch; a value that differs from the fleet's majority is marked), the
  hosts that need attention, a bar per host and mode (img/s against the reference and
  the peers' median), and a table of every host and mode. Tables sort on a click.

Plotly (https://plotly.com/python/) draws the figures. Its JavaScript is one file per
reports folder, ``plotly-<version>.min.js`` (tools/fleet_report.py writes it once), which
the page loads as ``../plotly-<version>.min.js``: every link is relative, so the folder
opens anywhere, offline.
"""

from __future__ import annotations

import html
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

try:
    import plotly
    import plotly.graph_objects as go
except ImportError as exc:  # the controller's virtualenv has it (requirements.txt)
    raise SystemExit(
        "fleet_report: the HTML report needs plotly (pip install -r requirements.txt, "
        f"or make controller): {exc}"
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
# The heatmap's colours: value = img/s over the reference (or the fleet median); the
# tolerance (0.8) sits at orange, 1.0 at green.
HEATMAP_MIN, HEATMAP_MAX = 0.6, 1.1
HEATMAP_COLOURS = [
    [0.0, "#7f0000"],
    [0.4, "#e65100"],
    [0.6, "#fdd835"],
    [0.8, "#43a047"],
    [1.0, "#1b5e20"],
]
# Rows of the heatmap: the height it may take on a 1080-pixel screen below the header.
HEATMAP_ROWS_PX = 760


def plotly_file_name() -> str:
    """plotly.js's file name in a reports folder: ``plotly-<plotly.js version>.min.js``."""
    return f"plotly-{plotly.offline.get_plotlyjs_version()}.min.js"


def plotly_js() -> str:
    return plotly.offline.get_plotlyjs()


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
                    (
                        f"{_fmt(row.get('img_s'), ',.0f')} img/s"
                        if _num(row.get("img_s")) is not None
                        else str(row.get("status") or "not measured")
                    )
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
        height=120 + 18 * len(rows),
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
    return (
        f'<table id="hosts-table" class="sortable"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def _heat_cell(cell: Dict[str, Any], mode: Optional[str]) -> Tuple[Optional[float], str, str]:
    """A heatmap cell's value, text and hover: one mode, or the worst of its modes."""
    measured = {m: c for m, c in cell.items() if _num(c.get("value")) is not None}
    if mode is not None:
        measured = {m: c for m, c in measured.items() if m == mode}
    hover = "<br>".join(
        f"{m}: {_fmt(c.get('value'), '.2f')} of the {c.get('basis')} "
        f"({_fmt(c.get('img_s'), ',.0f')} img/s, {c.get('status') or '-'})"
        for m, c in cell.items()
        if mode is None or m == mode
    )
    if not measured:
        return None, "", hover or "not measured"
    _, worst = min(measured.items(), key=lambda mc: mc[1]["value"])
    return float(worst["value"]), f"{worst['value']:.2f}", hover


def heatmap_height(hosts: int) -> Tuple[int, int]:
    """(row height, figure height) in pixels: rows share HEATMAP_ROWS_PX, 12 to 28 each."""
    row = max(12, min(28, HEATMAP_ROWS_PX // max(hosts, 1)))
    return row, max(220, 110 + row * hosts)


def heatmap_figure(heat: Dict[str, Any]) -> Optional[go.Figure]:
    """Host x GPU: img/s relative to the reference (or the fleet median), the worst of the
    modes by default, a button per mode. Every host is a row, worst first; one with no
    measurement is a grey row whose label says why (unreachable, failed, not run)."""
    hosts = heat.get("hosts") or []
    if not hosts:
        return None
    width = int(heat.get("width") or 1)
    labels = [
        h
        if heat["status"].get(h) in ("ok", "slow", "outlier", "unhealthy")
        else f"{h} ({heat['status'].get(h)})"
        for h in hosts
    ]
    columns = [f"GPU {i}" for i in range(width)]

    def layer(mode: Optional[str]) -> Tuple[list, list, list]:
        z, text, hover = [], [], []
        for h in hosts:
            zr, tr, hr = [], [], []
            count = heat["gpu_counts"].get(h)
            for g in range(width):
                cell = heat["cells"].get(h, {}).get(g) or heat["cells"].get(h, {}).get(str(g))
                if cell:
                    value, label, tip = _heat_cell(cell, mode)
                elif isinstance(count, int) and g >= count:
                    value, label, tip = None, "", "no such GPU on this host"
                else:
                    reason = heat["reason"].get(h) or ""
                    value, label = None, ""
                    tip = f"{heat['status'].get(h)}: {reason}"[:300]
                zr.append(value)
                tr.append(label)
                hr.append(tip)
            z.append(zr)
            text.append(tr)
            hover.append(hr)
        return z, text, hover

    z, text, hover = layer(None)
    row, height = heatmap_height(len(hosts))
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=columns,
            y=labels,
            text=text,
            texttemplate="%{text}",
            textfont={"size": max(8, min(12, row - 4))},
            customdata=hover,
            hovertemplate="%{y} · %{x}<br>%{customdata}<extra></extra>",
            zmin=HEATMAP_MIN,
            zmax=HEATMAP_MAX,
            colorscale=HEATMAP_COLOURS,
            colorbar={"title": {"text": "of ref."}, "thickness": 12, "len": 0.9},
            xgap=1,
            ygap=1,
            hoverongaps=True,
        )
    )
    buttons = [
        {
            "label": "worst mode",
            "method": "restyle",
            "args": [{"z": [z], "text": [text], "customdata": [hover]}],
        }
    ]
    for mode in heat.get("modes") or []:
        mz, mt, mh = layer(mode)
        buttons.append(
            {
                "label": mode,
                "method": "restyle",
                "args": [{"z": [mz], "text": [mt], "customdata": [mh]}],
            }
        )
    fig.update_layout(
        title={
            "text": "img/s per GPU relative to the reference (or the fleet median)",
            "x": 0,
            "font": {"size": 15},
        },
        height=height,
        margin={"l": 10, "r": 10, "t": 64, "b": 30},
        xaxis={"side": "top", "tickfont": {"size": 11}},
        yaxis={
            "categoryorder": "array",
            "categoryarray": labels,
            "autorange": "reversed",  # the worst host at the top
            "automargin": True,
            "tickfont": {"size": max(9, min(12, row - 3))},
        },
        plot_bgcolor="#cfd8dc",  # a cell with no value: not measured
        updatemenus=[
            {
                "type": "buttons",
                "direction": "right",
                "buttons": buttons,
                "x": 1,
                "xanchor": "right",
                "y": 1,
                "yanchor": "bottom",
                "pad": {"b": 22},
                "showactive": True,
                "font": {"size": 11},
            }
        ],
    )
    return fig


FLEET_COLUMNS = [
    ("host", "host", "text"),
    ("status", "status", "text"),
    ("worst", "lowest", "num"),
    ("instance_type", "instance type", "text"),
    ("gpu_model", "GPU model", "text"),
    ("gpu_count", "GPUs", "num"),
    ("driver", "driver", "text"),
    ("cuda", "CUDA (driver)", "text"),
    ("torch", "torch", "text"),
    ("health", "health codes", "text"),
    ("reason", "why", "text"),
]
STACK_KEYS = ("driver", "cuda", "torch", "gpu_model", "gpu_count")


def _fleet_cell(row: Dict[str, Any], key: str, kind: str, majority: Dict[str, Any]) -> str:
    if key == "health":
        return _cell(row, "health", "text")
    if key == "status":
        status = html.escape(str(row.get("status")))
        return f'<td><span class="status {status}">{status}</span></td>'
    value = row.get(key)
    if kind == "num":
        number = _num(value)
        shown = _fmt(number, ".2f" if key == "worst" else ".0f")
        attrs = f' data-sort="{number if number is not None else ""}"'
    else:
        shown = html.escape(str(value)) if value not in (None, "") else "-"
        attrs = ""
    classes = ["num"] if kind == "num" else []
    if key in STACK_KEYS and key in (row.get("drift") or []):
        classes.append("drift")
        attrs += f' title="the fleet\'s majority: {html.escape(str(majority.get(key)))}"'
        shown = f"{shown} &#9888;"
    cls = f' class="{" ".join(classes)}"' if classes else ""
    return f"<td{cls}{attrs}>{shown}</td>"


def fleet_table_html(rows: List[Dict[str, Any]], majority: Dict[str, Any]) -> str:
    """Every host, one row each, worst first; drift from the majority stack marked."""
    head = "".join(
        f'<th data-key="{key}" data-kind="{kind}" aria-sort="none" tabindex="0">'
        f"{html.escape(label)}</th>"
        for key, label, kind in FLEET_COLUMNS
    )
    ordered = sorted(
        rows,
        key=lambda r: (r.get("status") == "ok", _num(r.get("worst")) or 0.0, r["host"]),
    )
    body = "".join(
        f'<tr data-host="{html.escape(r["host"])}" class="{html.escape(str(r.get("status")))}'
        + (" drifted" if r.get("drift") else "")
        + '">'
        + "".join(_fleet_cell(r, key, kind, majority) for key, _, kind in FLEET_COLUMNS)
        + "</tr>"
        for r in ordered
    )
    return (
        f'<table id="fleet-table" class="sortable"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def causes_html(causes: Sequence[Dict[str, Any]]) -> str:
    """Each cause once, most hosts first, with the hosts it affects."""
    items = []
    for cause in causes:
        hosts = cause.get("hosts") or []
        gpus = cause.get("gpus") or {}
        named = ", ".join(
            html.escape(h) + (f" (GPU {', '.join(str(g) for g in gpus[h])})" if gpus.get(h) else "")
            for h in hosts
        )
        code = f"<code>{html.escape(cause['code'])}</code> " if cause.get("code") else ""
        remedy = (
            f'<div class="remedy">{html.escape(str(cause["remedy"]))}</div>'
            if cause.get("remedy")
            else ""
        )
        items.append(
            f'<li data-key="{html.escape(str(cause.get("key")))}" data-count="{len(hosts)}">'
            f'<b class="count">{len(hosts)}</b> {code}{html.escape(str(cause.get("message")))}'
            f'{remedy}<div class="hosts">{named}</div></li>'
        )
    return f'<ul id="causes">{"".join(items) or "<li>none</li>"}</ul>'


def comparison_html(comparison: Optional[Dict[str, Any]]) -> str:
    if not comparison:
        return (
            '<div id="changes"><p>No earlier report of this inventory in this reports '
            "folder.</p></div>"
        )
    href = html.escape(comparison.get("href") or "")
    stamp = html.escape(str(comparison.get("timestamp")))
    parts = [
        f'<p>Against <a id="previous-link" href="{href}">{stamp}</a>: more than '
        f"{_fmt(comparison.get('margin'), '.0%')} slower is listed.</p><ul>"
    ]
    slower = comparison.get("slower") or []
    parts.append(
        f'<li id="slower">slower: {len(slower)}'
        + (
            "<ul>"
            + "".join(
                f"<li>{html.escape(s['host'])} {html.escape(s['mode'])}: "
                f"{_fmt(s['before'], ',.0f')} &rarr; {_fmt(s['now'], ',.0f')} img/s "
                f"({_fmt(s['ratio'], '.0%')})</li>"
                for s in slower
            )
            + "</ul>"
            if slower
            else ""
        )
        + "</li>"
    )
    for key, label in (("new", "new hosts"), ("gone", "hosts gone")):
        names = comparison.get(key) or []
        parts.append(
            f'<li id="{key}-hosts">{label}: {len(names)}'
            + (f" ({html.escape(', '.join(names))})" if names else "")
            + "</li>"
        )
    status = comparison.get("status") or []
    if status:
        parts.append(
            '<li id="status-changes">status changed: '
            + ", ".join(
                f"{html.escape(c['host'])} {html.escape(str(c['before']))} &rarr; "
                f"{html.escape(str(c['now']))}"
                for c in status
            )
            + "</li>"
        )
    parts.append("</ul>")
    return f'<div id="changes">{"".join(parts)}</div>'


SORT_SCRIPT = """
(function () {
  function sortable(table) {
    var headers = table.tHead.rows[0].cells;
    function value(row, index, kind) {
      var cell = row.cells[index];
      var raw = cell.hasAttribute('data-sort') ? cell.getAttribute('data-sort') : cell.textContent;
      if (kind === 'num') { return raw === '' || raw === '-' ? null : parseFloat(raw); }
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
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), sortable);
})();
"""

STYLE = """
body{font-family:"Liberation Sans",Arial,sans-serif;margin:10px 16px;color:#212121}
h1{font-size:21px;margin:0 1em 0 0;display:inline}.meta{color:#555;display:inline;font-size:13px}
h2{font-size:16px;margin:.6em 0 .3em}
header{margin-bottom:6px}
#first-screen{display:grid;grid-template-columns:minmax(0,1fr) 36%;gap:14px;align-items:start}
#summary{overflow:auto;font-size:13px;border-left:1px solid #ddd;padding-left:12px}
#summary h2{margin-top:.2em}
#causes{padding-left:1.2em;margin:0}#causes li{margin-bottom:.35em}
#causes .count{display:inline-block;min-width:1.6em;color:#c62828}
#causes .hosts{color:#555;font-size:12px}#causes .remedy{font-size:12px;color:#1b5e20}
#changes ul{margin:0;padding-left:1.2em}
table{border-collapse:collapse;font-size:13px;margin-top:.5em}
td,th{border:1px solid #ddd;padding:3px 8px;vertical-align:top}
th{background:#eceff1;cursor:pointer;user-select:none;white-space:nowrap}
th[aria-sort=ascending]::after{content:" \\25B2"}
th[aria-sort=descending]::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.drift{background:#fff3e0;color:#e65100;font-weight:bold}
#hosts-table tr.fail td:nth-child(8){color:#c62828;font-weight:bold}
#hosts-table tr.pass td:nth-child(8){color:#2e7d32}
#attention li{margin-bottom:.3em}.status{font-weight:bold}
.status.ok{color:#2e7d32}.status.slow,.status.failed,.status.unreachable{color:#c62828}
.status.outlier,.status.unhealthy,.status.no-measurement,.status.not-measured,.status.not-run{color:#ef6c00}
.counts{display:inline;margin-left:1em;font-size:14px}.counts span{margin-right:1em}
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
    fleet_rows: Sequence[Dict[str, Any]] = (),
    heatmap: Optional[Dict[str, Any]] = None,
    causes: Sequence[Dict[str, Any]] = (),
    majority: Optional[Dict[str, Any]] = None,
    comparison: Optional[Dict[str, Any]] = None,
    links: Optional[Dict[str, str]] = None,
) -> str:
    """The whole page. ``host_rows``: one per host and mode (a host with none has one
    row, its status); ``gpu_rows``: one per GPU and mode (kept in results, drawn by the
    heatmap); ``attention``: hosts not ok, each ``{host, status, why, causes,
    shortfall}``; ``fleet_rows``: one per host (fleet_report.host_table); ``heatmap``:
    fleet_report.heatmap; ``causes``: fleet_report.group_causes; ``majority``: the
    fleet's stack; ``comparison``: fleet_report.compare with the previous report's
    ``href``; ``links``: relative hrefs of ``plotly`` (plotly.js) and ``health_doc``."""
    links = links or {}
    majority = majority or {}
    items = []
    for item in sorted(
        attention, key=lambda a: (a.get("shortfall") is None, a.get("shortfall") or 0.0, a["host"])
    ):
        causes_li = "".join(f"<li>{html.escape(c)}</li>" for c in item.get("causes") or [])
        items.append(
            f'<li data-host="{html.escape(item["host"])}"><b>{html.escape(item["host"])}</b> '
            f'<span class="status {html.escape(item["status"])}">'
            f"{html.escape(item['status'])}</span>: "
            f"{html.escape(item.get('why') or '')}"
            + (f"<ul>{causes_li}</ul>" if causes_li else "")
            + "</li>"
        )
    count_line = "".join(
        f'<span class="status {html.escape(k)}">{html.escape(k)} {v}</span>'
        for k, v in sorted(counts.items())
    )
    total = sum(counts.values())
    hosts_text = f"{total} host" + ("" if total == 1 else "s")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in peer_notes)
    # Inside <script> nothing is unescaped: keep "</" out of the JSON instead.
    payload = json.dumps({"meta": meta, "margin": margin}, sort_keys=True).replace("</", "<\\/")
    if links.get("plotly"):
        plotly_tag = f'<script src="{html.escape(links["plotly"])}"></script>'
    else:  # no reports folder to share it: the page carries it
        plotly_tag = f"<script>{plotly_js()}</script>"
    doc = (
        f'<a id="health-doc" href="{html.escape(links["health_doc"])}">'
        f"{html.escape(health_doc)}</a>"
        if links.get("health_doc")
        else f"<code>{html.escape(health_doc)}</code>"
    )
    heat = heatmap_figure(heatmap or {})
    _, heat_height = heatmap_height(len((heatmap or {}).get("hosts") or []))
    stack_line = ", ".join(
        f"{html.escape(label)} <b>{html.escape(str(majority[key]))}</b>"
        for key, label in (
            ("gpu_model", "GPU"),
            ("gpu_count", "GPUs"),
            ("driver", "driver"),
            ("cuda", "CUDA"),
            ("torch", "torch"),
        )
        if key in majority
    )
    drifted = sum(1 for r in fleet_rows if r.get("drift"))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Kindling fleet report {html.escape(meta["timestamp"])}</title>
<style>{STYLE}</style>
{plotly_tag}
</head><body>
<header id="header"><h1>Kindling fleet report</h1>
<p class="meta">{html.escape(meta["timestamp"])} · inventory <code>{
        html.escape(meta["inventory"])
    }</code> · {hosts_text} · <a href="summary.md">summary.md</a> ·
<a href="results.json">results.json</a></p>
<p class="counts" id="counts">{count_line}</p></header>
<div id="first-screen">
<section id="heatmap-section">{
        _figure_div(heat, "heatmap-figure", "No host in this run.")
    }</section>
<aside id="summary" style="max-height:{heat_height}px">
<h2>Causes, each with the hosts it affects</h2>
{causes_html(causes)}
<h2>Since the previous report</h2>
{comparison_html(comparison)}
<h2>Stack</h2>
<p id="stack">Most hosts: {stack_line or "unknown"}. {drifted} host{
        "" if drifted == 1 else "s"
    } differ (marked &#9888; in the table below).</p>
</aside>
</div>
<h2>Every host</h2>
<p>Click a column's header to sort by it; click again to reverse. "lowest" is the host's
lowest img/s relative to the reference (or the fleet median). Health codes are explained
in {doc}.</p>
{fleet_table_html(list(fleet_rows), majority)}
<h2>Hosts that need attention</h2>
<ul id="attention">{"".join(items) or "<li>none</li>"}</ul>
{f'<ul id="peer-notes">{notes}</ul>' if notes else ""}
<p>Each bar is judged against the reference table (black mark) and against its peers, the
other hosts and GPUs of its model in this run (purple diamond). More than {margin:.0%}
below peers or host is flagged even where the table passes.</p>
{
        _figure_div(
            hosts_figure(host_rows, margin) if host_rows else None,
            "hosts-figure",
            "No host reported a measurement in this run.",
        )
    }
<h2>Hosts, modes, codes and causes</h2>
{table_html(host_rows)}
<script type="application/json" id="report-meta">{payload}</script>
<script>{SORT_SCRIPT}</script>
</body></html>
"""
