"""Render the chart's Grafana dashboard (`helm/workload-map/dashboards/workload-map.json`) to a
PNG the way Grafana lays it out, from the panels' own PromQL evaluated by a real Prometheus.

Grafana's server is not installable here (no Debian, PyPI or npm package ships it), so this
script does the part of Grafana that a picture needs: panels placed by `gridPos` on the
24-column grid (rows 30 px, 8 px gaps), row headers, time series as line charts (stacking,
fill, overrides by name/regex, right-hand table legends with their calcs), stats as big numbers
with sparklines (thresholds; Grafana's default green/red-at-80 when a panel sets none), bar
gauges as bars, tables from instant "table" queries through the `merge` and `organize`
transformations and the panel's sort.  Template variables take `--var` values or All (their
`allValue`, `.*` for this dashboard); `$__interval`, `$__rate_interval`, `$__range` etc. are
computed as Grafana does (range / max data points, rounded, at least `--min-interval`).  The
page is self-contained HTML + SVG (no external resources), screenshotted by headless Chromium
through Playwright.

    python scripts/render_dashboard.py --prometheus http://127.0.0.1:9090 \
        [--dashboard helm/workload-map/dashboards/workload-map.json] \
        [--out docs/screenshots/grafana-dashboard.png] [--from now-15m] [--to now] \
        [--var namespace=team-llm] [--min-interval 15s] [--width 1600] [--html page.html]

`--from`/`--to` take Grafana's `now`, `now-6h` forms, Unix seconds or ISO 8601 times (default:
the dashboard's own time range).
"""

from __future__ import annotations

import argparse
import html
import json
import math
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "helm" / "workload-map" / "dashboards" / "workload-map.json"
OUT = ROOT / "docs" / "screenshots" / "grafana-dashboard.png"
CHROMIUM = os.environ.get("WLMAP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]

# -- Grafana's dark theme and layout constants ------------------------------------------------

GRID_COLS, ROW_PX, GAP_PX = 24, 30, 8
PAGE_PAD = 16
HEADER_PX = 32  # panel header
BG_CANVAS, BG_PANEL, BG_SECONDARY = "#111217", "#181b1f", "#22252b"
BORDER = "rgba(204, 204, 220, 0.12)"
BORDER_STRONG = "rgba(204, 204, 220, 0.2)"
TEXT, TEXT_2, TEXT_LINK = "#ccccdc", "rgba(204, 204, 220, 0.65)", "#6e9fff"
GRID_LINE = "rgba(204, 204, 220, 0.08)"
FONT = "Inter, 'Helvetica Neue', 'Liberation Sans', 'DejaVu Sans', Arial, sans-serif"

# Grafana's named colours (dark theme) and the classic palette of `palette-classic`.
NAMED = {
    "green": "#73BF69", "dark-green": "#37872D", "semi-dark-green": "#56A64B", "light-green": "#96D98D",
    "super-light-green": "#C8F2C2", "yellow": "#FADE2A", "dark-yellow": "#E0B400", "semi-dark-yellow": "#F2CC0C",
    "light-yellow": "#FFEE52", "red": "#F2495C", "dark-red": "#C4162A", "semi-dark-red": "#E02F44",
    "light-red": "#FF7383", "blue": "#5794F2", "dark-blue": "#1F60C4", "semi-dark-blue": "#3274D9",
    "light-blue": "#8AB8FF", "orange": "#FF9830", "dark-orange": "#FA6400", "semi-dark-orange": "#FF780A",
    "light-orange": "#FFB357", "purple": "#B877D9", "dark-purple": "#8F3BB8", "semi-dark-purple": "#A352CC",
    "light-purple": "#CA95E5", "super-light-purple": "#DEB6F2", "text": TEXT, "transparent": "transparent",
}
CLASSIC = ["#7EB26D", "#EAB839", "#6ED0E0", "#EF843C", "#E24D42", "#1F78C1", "#BA43A9", "#705DA0", "#508642",
           "#CCA300", "#447EBC", "#C15C17", "#890F02", "#0A437C", "#6D1F62", "#584477", "#B7DBAB", "#F4D598",
           "#70DBED", "#F9BA8F", "#F29191", "#82B5D8", "#E5A8E2", "#AEA2E0", "#629E51", "#E5AC0E", "#64B0C8",
           "#E0752D", "#BF1B00", "#0A50A1", "#962D82", "#614D93"]
# What Grafana applies to a field that sets no thresholds (the standard option's default).
DEFAULT_THRESHOLDS = {"mode": "absolute", "steps": [{"color": "green", "value": None}, {"color": "red", "value": 80}]}
CALC_NAMES = {"lastNotNull": "Last *", "last": "Last", "max": "Max", "min": "Min", "mean": "Mean",
              "sum": "Total", "firstNotNull": "First *", "first": "First", "count": "Count"}


def color(c: str | None) -> str:
    if not c:
        return CLASSIC[0]
    return NAMED.get(c, c)


def esc(s: Any) -> str:
    return html.escape(str(s), quote=True)


# -- time ranges and intervals ----------------------------------------------------------------

UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "M": 2592000, "y": 31536000}


def parse_duration(s: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w|M|y)\s*", s)
    if not m:
        raise ValueError(f"not a duration: {s!r}")
    return float(m.group(1)) * UNITS[m.group(2)]


def parse_time(s: str, now: float) -> float:
    """Grafana's `now`, `now-6h`, `now-1d/d` (rounding ignored), Unix seconds, or ISO 8601."""
    s = s.strip()
    if s.startswith("now"):
        rest = s[3:].split("/")[0]
        t = now
        for sign, amount in re.findall(r"([+-])(\d+(?:\.\d+)?(?:ms|s|m|h|d|w|M|y))", rest):
            t += (-1 if sign == "-" else 1) * parse_duration(amount)
        return t
    if re.fullmatch(r"\d+(\.\d+)?", s):
        v = float(s)
        return v / 1000 if v > 1e11 else v  # milliseconds, as in Grafana URLs
    dt = datetime.fromisoformat(s)
    if dt.tzinfo is None:
        dt = dt.astimezone()
    return dt.timestamp()


def round_interval(ms: float) -> float:
    """Grafana's kbn.roundInterval (milliseconds)."""
    steps = [(15, 10), (35, 20), (75, 50), (150, 100), (350, 200), (750, 500), (1500, 1000), (3500, 2000),
             (7500, 5000), (12500, 10000), (17500, 15000), (25000, 20000), (45000, 30000), (90000, 60000),
             (210000, 120000), (450000, 300000), (870000, 600000), (1350000, 900000), (2700000, 1800000),
             (5400000, 3600000), (9000000, 7200000), (16200000, 10800000), (32400000, 21600000),
             (86400000, 43200000), (604800000, 86400000), (1814400000, 604800000), (3628800000, 2592000000)]
    for limit, value in steps:
        if ms < limit:
            return value
    return 31536000000


def fmt_duration(seconds: float) -> str:
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= n and seconds % n == 0:
            return f"{int(seconds // n)}{unit}"
    return f"{int(seconds * 1000)}ms"


def describe_range(raw_from: str, raw_to: str, start: float, end: float) -> str:
    """What Grafana's time picker shows."""
    m = re.fullmatch(r"now-(\d+)([smhdwMy])", raw_from.strip())
    if m and raw_to.strip() == "now":
        n, u = int(m.group(1)), m.group(2)
        word = {"s": "second", "m": "minute", "h": "hour", "d": "day", "w": "week", "M": "month", "y": "year"}[u]
        return f"Last {n} {word}{'s' if n != 1 else ''}"
    a, b = datetime.fromtimestamp(start).astimezone(), datetime.fromtimestamp(end).astimezone()
    return f"{a:%Y-%m-%d %H:%M:%S} to {b:%Y-%m-%d %H:%M:%S}"


# -- number formatting (Grafana's display processor, the parts this dashboard uses) -----------

def _decimals_for(v: float) -> int:
    """Grafana's automatic decimals: about three significant digits, none for integers."""
    if v == int(v):
        return 0
    mag = math.floor(math.log10(abs(v))) if v else 0
    return max(0, min(3, 2 - mag))


def fmt_value(v: float | None, unit: str | None = None, decimals: int | None = None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "No data"
    suffix = ""
    if unit == "short" and abs(v) >= 1000:
        for s in (" K", " Mil", " Bil", " Tri"):
            v /= 1000
            suffix = s
            if abs(v) < 1000:
                break
    elif unit == "bytes":
        for s in (" B", " kB", " MB", " GB", " TB", " PB"):
            suffix = s
            if abs(v) < 1024:
                break
            v /= 1024
    d = decimals if decimals is not None else _decimals_for(v)
    text = f"{v:.{d}f}"
    return text + suffix


# -- Prometheus ---------------------------------------------------------------------------------

class Prometheus:
    def __init__(self, url: str, timeout: float = 30):
        self.url, self.timeout = url.rstrip("/"), timeout

    def get(self, path: str, params: dict[str, Any]) -> Any:
        q = urllib.parse.urlencode(params)
        req = urllib.request.Request(f"{self.url}{path}", data=q.encode(), method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                doc = json.loads(r.read())
        except urllib.error.HTTPError as e:
            doc = json.loads(e.read() or b"{}")
            raise RuntimeError(f"{path}: HTTP {e.code}: {doc.get('error') or doc}") from None
        if doc.get("status") != "success":
            raise RuntimeError(f"{path}: {doc.get('error')}")
        return doc["data"]

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        return self.get("/api/v1/query_range", {"query": expr, "start": start, "end": end, "step": step})["result"]

    def query(self, expr: str, at: float) -> list[dict[str, Any]]:
        data = self.get("/api/v1/query", {"query": expr, "time": at})
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        return data["result"]


# -- variables ---------------------------------------------------------------------------------

@dataclass
class Context:
    prom: Prometheus
    start: float
    end: float
    min_interval: float
    scrape_interval: float
    values: dict[str, str]
    max_points_override: int | None = None
    errors: list[str] = field(default_factory=list)

    def interval(self, max_points: int) -> float:
        ms = round_interval((self.end - self.start) * 1000 / max(1, max_points))
        return max(ms / 1000, self.min_interval)

    def interpolate(self, expr: str, interval: float) -> str:
        rng = self.end - self.start
        rate = max(interval + self.scrape_interval, 4 * self.scrape_interval)
        builtins = {
            "__interval": fmt_duration(interval), "__interval_ms": str(int(interval * 1000)),
            "__rate_interval": fmt_duration(rate), "__rate_interval_ms": str(int(rate * 1000)),
            "__range": fmt_duration(round(rng)), "__range_s": str(round(rng)), "__range_ms": str(int(rng * 1000)),
        }
        allv = {**self.values, **builtins}

        def sub(m: re.Match[str]) -> str:
            name = m.group(1) or m.group(2) or m.group(3)
            return allv.get(name, m.group(0))

        return re.sub(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)", sub, expr)


def variable_values(dash: dict[str, Any], given: dict[str, list[str]]) -> tuple[dict[str, str], dict[str, str]]:
    """Regex values for the query variables (and what their pickers show)."""
    values: dict[str, str] = {}
    shown: dict[str, str] = {}
    for v in (dash.get("templating") or {}).get("list") or []:
        name = v.get("name")
        if v.get("type") == "datasource":
            values[name] = "prometheus"
            shown[name] = "Prometheus"
            continue
        picked = given.get(name)
        if not picked:
            cur = (v.get("current") or {}).get("value")
            picked = cur if isinstance(cur, list) else [cur] if cur else ["$__all"]
        if picked in (["$__all"], ["All"]):
            values[name] = v.get("allValue") or ".*"
            shown[name] = "All"
        else:
            values[name] = regex_values(picked)
            shown[name] = " + ".join(picked)
    for name, picked in given.items():
        if name not in values:
            values[name] = regex_values(picked)
    return values, shown


def regex_values(picked: list[str]) -> str:
    """As Grafana's Prometheus data source formats a multi-value variable for `=~`: each value
    regex-escaped (backslashes doubled for the PromQL string), alternatives in a group."""
    def one(v: str) -> str:
        return re.sub(r"[$^*{}\[\]'+?.()|]", lambda m: "\\\\" + m.group(0), v.replace("\\", "\\\\\\\\"))
    return one(picked[0]) if len(picked) == 1 else "(" + "|".join(one(p) for p in picked) + ")"


# -- data frames ---------------------------------------------------------------------------------

@dataclass
class Series:
    name: str
    labels: dict[str, str]
    ref: str
    times: list[float]
    values: list[float | None]

    def calc(self, how: str) -> float | None:
        vals = [v for v in self.values if v is not None and not math.isnan(v)]
        if how in ("lastNotNull", "last"):
            return vals[-1] if vals else None
        if not vals:
            return None
        return {"max": max, "min": min, "sum": sum, "mean": lambda x: sum(x) / len(x), "count": len,
                "firstNotNull": lambda x: x[0], "first": lambda x: x[0]}[how](vals)


def legend_name(fmt: str | None, labels: dict[str, str], expr: str) -> str:
    if fmt and fmt != "__auto":
        return re.sub(r"\{\{\s*([\w.]+)\s*\}\}", lambda m: labels.get(m.group(1), ""), fmt)
    shown = {k: v for k, v in labels.items() if k != "__name__"}
    name = labels.get("__name__", "")
    if not shown:
        return name or expr
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(shown.items())) + "}"


def run_range(ctx: Context, panel: dict[str, Any], width_px: int) -> tuple[list[Series], list[float]]:
    """The panel's range queries; the common time axis (Grafana aligns start/end to the step)."""
    max_points = ctx.max_points_override or int(panel.get("maxDataPoints") or width_px)
    step = ctx.interval(max_points)
    if panel.get("interval"):
        step = max(step, parse_duration(ctx.interpolate(panel["interval"], step)))
    start = math.floor(ctx.start / step) * step
    end = math.floor(ctx.end / step) * step
    axis = [start + i * step for i in range(round((end - start) / step) + 1)]
    out: list[Series] = []
    for t in panel.get("targets") or []:
        if t.get("hide") or not t.get("expr"):
            continue
        expr = ctx.interpolate(t["expr"], step)
        try:
            res = ctx.prom.query_range(expr, start, end, step)
        except (RuntimeError, OSError) as e:
            ctx.errors.append(f"{panel.get('title')} {t.get('refId')}: {e}")
            continue
        for r in res:
            got = {float(ts): float(v) for ts, v in r.get("values") or []}
            out.append(Series(legend_name(t.get("legendFormat"), r["metric"], expr), r["metric"],
                              t.get("refId", "A"), axis, [got.get(ts) for ts in axis]))
    return out, axis


def run_instant(ctx: Context, panel: dict[str, Any]) -> list[Series]:
    out: list[Series] = []
    for t in panel.get("targets") or []:
        if t.get("hide") or not t.get("expr"):
            continue
        step = ctx.interval(int(panel.get("maxDataPoints") or 1000))
        expr = ctx.interpolate(t["expr"], step)
        try:
            res = ctx.prom.query(expr, ctx.end)
        except (RuntimeError, OSError) as e:
            ctx.errors.append(f"{panel.get('title')} {t.get('refId')}: {e}")
            continue
        res = sorted(res, key=lambda r: sorted(r["metric"].items()))
        for r in res:
            out.append(Series(legend_name(t.get("legendFormat"), r["metric"], expr), r["metric"],
                              t.get("refId", "A"), [float(r["value"][0])], [float(r["value"][1])]))
    return out


# -- field config: overrides, colours, thresholds ------------------------------------------------

def field_props(panel: dict[str, Any], name: str) -> dict[str, Any]:
    """The field config of one series: defaults, then the overrides that match its name."""
    fc = panel.get("fieldConfig") or {}
    props: dict[str, Any] = json.loads(json.dumps(fc.get("defaults") or {}))
    for o in fc.get("overrides") or []:
        m = o.get("matcher") or {}
        mid, opt = m.get("id"), m.get("options")
        hit = (mid == "byName" and opt == name) or (mid == "byRegexp" and opt is not None
                                                     and re.fullmatch(opt, name) is not None)
        if not hit:
            continue
        for p in o.get("properties") or []:
            pid, val = p.get("id"), p.get("value")
            if pid.startswith("custom."):
                props.setdefault("custom", {})[pid[7:]] = val
            else:
                props[pid] = val
    return props


def threshold_color(value: float | None, thresholds: dict[str, Any] | None) -> str:
    steps = (thresholds or DEFAULT_THRESHOLDS).get("steps") or DEFAULT_THRESHOLDS["steps"]
    c = steps[0].get("color")
    for s in steps:
        if s.get("value") is None or (value is not None and value >= float(s["value"])):
            c = s.get("color")
    return color(c)


def series_color(panel: dict[str, Any], props: dict[str, Any], index: int, value: float | None,
                 default_mode: str) -> str:
    mode = (props.get("color") or {}).get("mode") or default_mode
    if mode == "fixed":
        return color((props.get("color") or {}).get("fixedColor"))
    if mode == "thresholds":
        return threshold_color(value, props.get("thresholds"))
    return CLASSIC[index % len(CLASSIC)]


# -- SVG helpers -----------------------------------------------------------------------------------

def nice_step(span: float, target_ticks: int, integer: bool) -> float:
    raw = span / max(1, target_ticks)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 2.5, 5, 10):
        step = m * mag
        if step >= raw:
            break
    if integer:
        step = max(1, round(step))
    return step


def time_ticks(start: float, end: float, width: float) -> tuple[list[float], str]:
    span = end - start
    target = max(3, int(width / 70))
    for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
              172800, 604800):
        if span / s <= target:
            break
    utc_offset = datetime.fromtimestamp(start).astimezone().utcoffset()
    off = utc_offset.total_seconds() if utc_offset else 0
    first = math.ceil((start + off) / s) * s - off
    ticks = []
    t = first
    while t <= end:
        ticks.append(t)
        t += s
    fmt = "%H:%M:%S" if s < 60 else "%H:%M" if s < 86400 else "%m/%d"
    return ticks, fmt


def text_width(s: str, size: float) -> float:
    """A fair estimate of Inter's advance widths (no layout engine in Python)."""
    narrow, wide = set("il.,:;|!'()[]{}/ tfjr"), set("mwMW%@")
    w = 0.0
    for ch in s:
        w += 0.32 if ch in narrow else 0.88 if ch in wide else 0.68 if ch.isupper() else 0.56
    return w * size


def svg_path(points: list[tuple[float, float] | None]) -> str:
    d, pen = [], False
    for p in points:
        if p is None:
            pen = False
            continue
        d.append(f"{'L' if pen else 'M'}{p[0]:.1f},{p[1]:.1f}")
        pen = True
    return "".join(d)


# -- panels ------------------------------------------------------------------------------------------

@dataclass
class Box:
    x: float
    y: float
    w: float
    h: float


def panel_chrome(panel: dict[str, Any], box: Box, body: str, pad: int = 8) -> str:
    title = esc(panel.get("title") or "")
    info = ""
    if panel.get("description"):
        info = ('<svg class="info" viewBox="0 0 24 24" width="14" height="14"><circle cx="12" cy="12" r="9" '
                f'fill="none" stroke="{TEXT_2}" stroke-width="2"/><rect x="11" y="10" width="2" height="7" '
                f'fill="{TEXT_2}"/><rect x="11" y="6.5" width="2" height="2" fill="{TEXT_2}"/></svg>')
    inner_h = box.h - HEADER_PX - pad
    return (f'<div class="panel" style="left:{box.x:.0f}px;top:{box.y:.0f}px;width:{box.w:.0f}px;'
            f'height:{box.h:.0f}px"><div class="ph"><span class="pt">{title}</span>{info}</div>'
            f'<div class="pc" style="left:{pad}px;right:{pad}px;top:{HEADER_PX}px;height:{inner_h:.0f}px">'
            f"{body}</div></div>")


def inner_size(box: Box, pad: int = 8) -> tuple[float, float]:
    return box.w - 2 * pad, box.h - HEADER_PX - pad


def render_timeseries(ctx: Context, panel: dict[str, Any], box: Box) -> str:
    w, h = inner_size(box)
    series, axis = run_range(ctx, panel, int(box.w))
    opts = panel.get("options") or {}
    leg = opts.get("legend") or {}
    defaults = (panel.get("fieldConfig") or {}).get("defaults") or {}
    unit, decimals = defaults.get("unit"), defaults.get("decimals")
    if not series:
        return panel_chrome(panel, box, '<div class="nodata">No data</div>')
    props = [field_props(panel, s.name) for s in series]
    colors = [series_color(panel, p, i, None, "palette-classic") for i, p in enumerate(props)]
    calcs = [c for c in leg.get("calcs") or []]

    # legend (table, right) ---------------------------------------------------------------
    legend_html, legend_w, legend_h = "", 0.0, 0.0
    if leg.get("showLegend", True) and leg.get("displayMode") != "hidden":
        rows = []
        for s, c in zip(series, colors, strict=True):
            vals = "".join(f'<td class="num">{esc(fmt_value(s.calc(k), unit, decimals))}</td>' for k in calcs)
            rows.append(f'<tr><td class="lname"><i style="background:{c}"></i>{esc(s.name)}</td>{vals}</tr>')
        head = "".join(f'<th class="num">{esc(CALC_NAMES.get(k, k))}</th>' for k in calcs)
        table_mode = leg.get("displayMode") == "table"
        name_w = max(text_width(s.name, 12) for s in series) + 26
        num_w = [max([text_width(CALC_NAMES.get(k, k), 12)] +
                     [text_width(fmt_value(s.calc(k), unit, decimals), 12) for s in series]) + 18 for k in calcs]
        if leg.get("placement") == "right":
            legend_w = min(name_w + sum(num_w) + 8, w * 0.5)
            legend_html = (f'<div class="legend right" style="width:{legend_w:.0f}px;height:{h:.0f}px">'
                           f'<table class="lt">{"<tr><th></th>" + head + "</tr>" if table_mode else ""}'
                           f'{"".join(rows)}</table></div>')
        else:
            n = len(series) + (1 if table_mode else 0)
            legend_h = min(h * 0.4, 22 * n + 6)
            legend_html = (f'<div class="legend bottom" style="height:{legend_h:.0f}px;top:{h - legend_h:.0f}px">'
                           f'<table class="lt">{"<tr><th></th>" + head + "</tr>" if table_mode else ""}'
                           f'{"".join(rows)}</table></div>')
    pw, ph = w - legend_w - (8 if legend_w else 0), h - legend_h

    # stacking --------------------------------------------------------------------------------
    stacked = ((defaults.get("custom") or {}).get("stacking") or {}).get("mode") in ("normal", "percent")
    n = len(axis)
    tops: list[list[float | None]] = []
    bottoms: list[list[float]] = []
    acc = [0.0] * n
    for s in series:
        if stacked:
            bottoms.append(list(acc))
            top: list[float | None] = []
            for i, v in enumerate(s.values):
                acc[i] += v or 0.0
                top.append(acc[i] if v is not None else None)
            tops.append(top)
        else:
            bottoms.append([0.0] * n)
            tops.append(list(s.values))
    finite = [v for t in tops for v in t if v is not None]
    y_min = defaults.get("min", min(finite + [0.0]))
    y_max = defaults.get("max")
    data_max = max(finite + [y_min + 1])
    integer = decimals == 0
    label_size = 12
    x0_guess = 40
    target = max(2, int((ph - 20) / 38))
    step = nice_step((y_max if y_max is not None else data_max) - y_min, target, integer)
    top_val = y_max if y_max is not None else math.ceil(data_max / step) * step
    if top_val <= y_min:
        top_val = y_min + step
    ticks_y = []
    v = y_min
    while v <= top_val + step * 1e-9:
        ticks_y.append(v)
        v += step
    tick_dec = 0 if (integer or step >= 1) else max(0, -math.floor(math.log10(step)))
    ylabels = [fmt_value(t, unit, tick_dec if unit != "short" or t < 1000 else None) for t in ticks_y]
    x0 = max([text_width(lbl, label_size) for lbl in ylabels] + [x0_guess - 16]) + 14
    x1, y0, y1 = pw - 4, 6, ph - 22

    def sx(t: float) -> float:
        return x0 + (t - axis[0]) / ((axis[-1] - axis[0]) or 1) * (x1 - x0)

    def sy(val: float) -> float:
        return y1 - (val - y_min) / ((top_val - y_min) or 1) * (y1 - y0)

    parts = []
    for t, lbl in zip(ticks_y, ylabels, strict=True):
        yy = sy(t)
        parts.append(f'<line x1="{x0}" x2="{x1}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="{GRID_LINE}"/>')
        parts.append(f'<text x="{x0 - 8}" y="{yy + 4:.1f}" text-anchor="end" class="ax">{esc(lbl)}</text>')
    tt, tfmt = time_ticks(axis[0], axis[-1], x1 - x0)
    for t in tt:
        xx = sx(t)
        parts.append(f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{y0}" y2="{y1}" stroke="{GRID_LINE}"/>')
        parts.append(f'<text x="{xx:.1f}" y="{y1 + 16}" text-anchor="middle" class="ax">'
                     f'{datetime.fromtimestamp(t).astimezone():{tfmt}}</text>')
    fills, lines = [], []
    for s, top, bot, p, c in zip(series, tops, bottoms, props, colors, strict=True):
        custom = p.get("custom") or {}
        lw = custom.get("lineWidth", 1)
        fo = custom.get("fillOpacity", 0) / 100
        pts = [(sx(t), sy(v)) if v is not None else None for t, v in zip(axis, top, strict=True)]
        if fo > 0:
            # one polygon per run of values, down to the series below (stacked) or to zero
            run: list[int] = []
            for i in range(n + 1):
                if i < n and top[i] is not None:
                    run.append(i)
                    continue
                if run:
                    up = [f"{sx(axis[k]):.1f},{sy(top[k] or 0):.1f}" for k in run]
                    down = [f"{sx(axis[k]):.1f},{sy(bot[k] if stacked else max(y_min, 0)):.1f}" for k in reversed(run)]
                    fills.append(f'<polygon points="{" ".join(up + down)}" fill="{c}" fill-opacity="{fo:.2f}"/>')
                    run = []
        style = custom.get("lineStyle") or {}
        dash = ""
        if style.get("fill") == "dash":
            dash = f' stroke-dasharray="{",".join(str(x) for x in style.get("dash") or [10, 10])}"'
        elif style.get("fill") == "dot":
            dash = ' stroke-dasharray="0,8" stroke-linecap="round"'
        lines.append(f'<path d="{svg_path(pts)}" fill="none" stroke="{c}" stroke-width="{lw}"{dash} '
                     f'stroke-linejoin="round"/>')
    svg = (f'<svg class="plot" width="{pw:.0f}" height="{ph:.0f}" viewBox="0 0 {pw:.0f} {ph:.0f}">'
           f'{"".join(parts)}{"".join(fills)}{"".join(lines)}</svg>')
    return panel_chrome(panel, box, svg + legend_html)


def render_stat(ctx: Context, panel: dict[str, Any], box: Box) -> str:
    w, h = inner_size(box)
    series, axis = run_range(ctx, panel, int(box.w))
    opts = panel.get("options") or {}
    defaults = (panel.get("fieldConfig") or {}).get("defaults") or {}
    calc = ((opts.get("reduceOptions") or {}).get("calcs") or ["lastNotNull"])[0]
    text_mode = opts.get("textMode", "auto")
    color_mode = opts.get("colorMode", "value")
    graph = opts.get("graphMode", "area") == "area"
    if not series:
        nv = defaults.get("noValue")
        series = [Series("", {}, "A", axis, [None] * len(axis))]
        no_value = nv if nv is not None else "No data"
    else:
        no_value = None
    show_name = text_mode in ("value_and_name", "name") or (text_mode == "auto" and len(series) > 1)
    cells = []
    count = len(series)
    horizontal = w >= h  # orientation auto
    cw, ch = (w / count, h) if horizontal else (w, h / count)
    for i, s in enumerate(series):
        props = field_props(panel, s.name)
        val = s.calc(calc)
        c = series_color(panel, props, i, val, "thresholds")
        text = no_value if no_value is not None and val is None else fmt_value(
            val, props.get("unit"), props.get("decimals"))
        if val is None and no_value is not None:
            c = threshold_color(None, props.get("thresholds"))
        name_px = min(16.0, ch * 0.16) if show_name else 0
        val_px = min(ch * (0.42 if show_name else 0.55), cw / max(2.5, len(text) * 0.62))
        spark = ""
        if graph and any(v is not None for v in s.values):
            vals = [v for v in s.values if v is not None]
            lo, hi = min(vals), max(vals)
            if hi == lo:
                lo, hi = (lo - 1, hi + 1) if lo else (0, 1)
            gh = ch * 0.5
            pts = []
            for k, v in enumerate(s.values):
                if v is None:
                    pts.append(None)
                    continue
                pts.append((k / max(1, len(s.values) - 1) * cw, ch - 2 - (v - lo) / (hi - lo) * (gh - 4)))
            line = svg_path(pts)
            real = [p for p in pts if p is not None]
            area = (line + f"L{real[-1][0]:.1f},{ch:.1f}L{real[0][0]:.1f},{ch:.1f}Z") if real else ""
            gid = f"g{panel.get('id', 0)}_{i}"
            spark = (f'<svg class="spark" width="{cw:.0f}" height="{ch:.0f}"><defs><linearGradient id="{gid}" '
                     f'x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="{c}" stop-opacity="0.28"/>'
                     f'<stop offset="1" stop-color="{c}" stop-opacity="0.04"/></linearGradient></defs>'
                     f'<path d="{area}" fill="url(#{gid})"/><path d="{line}" fill="none" stroke="{c}" '
                     f'stroke-width="1.5"/></svg>')
        bg = ""
        txt_color = c if color_mode == "value" else TEXT
        if color_mode == "background":
            bg = f"background:{c};"
            txt_color = "#fff"
        name_html = (f'<div class="sname" style="font-size:{name_px:.0f}px">{esc(s.name)}</div>'
                     if show_name else "")
        cells.append(f'<div class="scell" style="left:{(i * cw) if horizontal else 0:.0f}px;'
                     f'top:{0 if horizontal else i * ch:.0f}px;width:{cw:.0f}px;height:{ch:.0f}px;{bg}">{spark}'
                     f'<div class="stext" style="height:{ch * (0.62 if graph else 1):.0f}px">{name_html}'
                     f'<div class="sval" style="font-size:{val_px:.0f}px;color:{txt_color}">{esc(text)}</div>'
                     f"</div></div>")
    return panel_chrome(panel, box, "".join(cells))


def render_bargauge(ctx: Context, panel: dict[str, Any], box: Box) -> str:
    w, h = inner_size(box)
    opts = panel.get("options") or {}
    defaults = (panel.get("fieldConfig") or {}).get("defaults") or {}
    instant = all(t.get("instant") for t in panel.get("targets") or [])
    calc = ((opts.get("reduceOptions") or {}).get("calcs") or ["lastNotNull"])[0]
    series = run_instant(ctx, panel) if instant else run_range(ctx, panel, int(box.w))[0]
    if not series:
        return panel_chrome(panel, box, '<div class="nodata">No data</div>')
    vals = [s.calc(calc) for s in series]
    lo = defaults.get("min", min([v for v in vals if v is not None] + [0]))
    hi = defaults.get("max", max([v for v in vals if v is not None] + [lo + 1]))
    if hi <= lo:
        hi = lo + 1
    spacing = 8
    n = len(series)
    bar_h = (h - spacing * (n - 1)) / n
    title_px = max(bar_h * 0.6, 10) / 1.2 if bar_h <= 40 else min(bar_h * 0.35, 16) / 1.2
    name_w = max(text_width(s.name, title_px) for s in series) + 15 if bar_h <= 40 else 0
    texts = [fmt_value(v, defaults.get("unit"), defaults.get("decimals")) for v in vals]
    value_px = min(bar_h * 0.7, 24)
    value_w = max(text_width(t, value_px) for t in texts) + 10
    rows = []
    for i, (s, v, t) in enumerate(zip(series, vals, texts, strict=True)):
        props = field_props(panel, s.name)
        c = series_color(panel, props, i, v, "thresholds")
        y = i * (bar_h + spacing)
        bw = w - name_w - value_w
        frac = 0 if v is None else max(0.0, min(1.0, (v - lo) / (hi - lo)))
        unfilled = (f'<div class="bu" style="left:{name_w:.0f}px;width:{bw:.0f}px"></div>'
                    if opts.get("showUnfilled", True) else "")
        vc = c if opts.get("valueMode", "color") == "color" else TEXT
        rows.append(f'<div class="brow" style="top:{y:.0f}px;height:{bar_h:.0f}px">'
                    f'<div class="bname" style="width:{name_w:.0f}px;font-size:{title_px:.1f}px;'
                    f'line-height:{bar_h:.0f}px">{esc(s.name)}</div>{unfilled}'
                    f'<div class="bf" style="left:{name_w:.0f}px;width:{bw * frac:.0f}px;background:{c}"></div>'
                    f'<div class="bv" style="left:{name_w + bw:.0f}px;width:{value_w:.0f}px;font-size:{value_px:.0f}px;'
                    f'line-height:{bar_h:.0f}px;color:{vc}">{esc(t)}</div></div>')
    return panel_chrome(panel, box, "".join(rows))


def table_frames(ctx: Context, panel: dict[str, Any]) -> list[tuple[list[str], list[list[Any]]]]:
    """Instant table queries as Grafana's Prometheus data source returns them: Time, the labels
    (sorted), then `Value` (`Value #<refId>` when the panel has several queries)."""
    targets = [t for t in panel.get("targets") or [] if not t.get("hide") and t.get("expr")]
    frames = []
    for t in targets:
        expr = ctx.interpolate(t["expr"], ctx.interval(1000))
        try:
            res = ctx.prom.query(expr, ctx.end)
        except (RuntimeError, OSError) as e:
            ctx.errors.append(f"{panel.get('title')} {t.get('refId')}: {e}")
            continue
        labels = sorted({k for r in res for k in r["metric"]})
        value_col = f"Value #{t.get('refId', 'A')}" if len(targets) > 1 else "Value"
        cols = ["Time", *labels, value_col]
        rows = [[float(r["value"][0]), *[r["metric"].get(k, "") for k in labels], float(r["value"][1])] for r in res]
        frames.append((cols, rows))
    return frames


def transform(frames: list[tuple[list[str], list[list[Any]]]], transformations: list[dict[str, Any]]
              ) -> tuple[list[str], list[list[Any]]]:
    cols: list[str] = []
    rows: list[list[Any]] = []
    if frames:
        cols, rows = frames[0]
    for tr in transformations or []:
        if tr.get("disabled"):
            continue
        tid, opt = tr.get("id"), tr.get("options") or {}
        if tid == "merge":
            # rows whose common (non-value) fields are equal become one row
            all_cols: list[str] = []
            for c, _ in frames:
                all_cols += [x for x in c if x not in all_cols]
            value_cols = [c for c in all_cols if c.startswith("Value")]
            key_cols = [c for c in all_cols if c not in value_cols]
            merged: dict[tuple[Any, ...], dict[str, Any]] = {}
            for c, rs in frames:
                for r in rs:
                    d = dict(zip(c, r, strict=True))
                    key = tuple(d.get(k, "") for k in key_cols)
                    merged.setdefault(key, {}).update(d)
            cols = key_cols + value_cols
            rows = [[d.get(c) for c in cols] for d in merged.values()]
        elif tid == "organize":
            excl = {k for k, v in (opt.get("excludeByName") or {}).items() if v}
            index = opt.get("indexByName") or {}
            keep = [c for c in cols if c not in excl]
            order = sorted(keep, key=lambda c: (index.get(c, len(cols) + keep.index(c)),))
            rename = opt.get("renameByName") or {}
            pos = [cols.index(c) for c in order]
            rows = [[r[p] for p in pos] for r in rows]
            cols = [rename.get(c) or c for c in order]
    return cols, rows


def render_table(ctx: Context, panel: dict[str, Any], box: Box) -> str:
    w, h = inner_size(box, pad=0)
    cols, rows = transform(table_frames(ctx, panel), panel.get("transformations") or [])
    opts = panel.get("options") or {}
    sort = (opts.get("sortBy") or [None])[0]
    sorted_col = None
    if sort and sort.get("displayName") in cols:
        sorted_col = cols.index(sort["displayName"])
        rows.sort(key=lambda r: (r[sorted_col] is None, -(r[sorted_col] or 0) if sort.get("desc") else
                                 (r[sorted_col] or 0)))
    if not rows:
        return panel_chrome(panel, box, '<div class="nodata">No data</div>', pad=0)
    numeric = [all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) for i in range(len(cols))]
    cell_h = {"sm": 36, "md": 42, "lg": 48}.get(opts.get("cellHeight", "sm"), 36)
    head = "".join(
        f'<div class="th{" num" if numeric[i] else ""}">{esc(c)}'
        f'{(" ↓" if sort.get("desc") else " ↑") if sorted_col == i and sort else ""}</div>'
        for i, c in enumerate(cols))
    body = []
    for r in rows:
        cells = "".join(f'<div class="td{" num" if numeric[i] else ""}">'
                        f'{esc(fmt_value(v) if isinstance(v, float) else v if v is not None else "")}</div>'
                        for i, v in enumerate(r))
        body.append(f'<div class="tr">{cells}</div>')
    # Column widths from their contents (Grafana's auto widths would scroll sideways at this size):
    # natural widths, the widest capped so that the columns fill the panel.
    texts = [[c] + [fmt_value(r[i]) if isinstance(r[i], float) else str(r[i] or "") for r in rows]
             for i, c in enumerate(cols)]
    natural = [max(text_width(t, 14) for t in col) + 24 + (12 if sorted_col == i else 0)
               for i, col in enumerate(texts)]
    widths = fit_widths(natural, w - 2)
    grid = " ".join(f"{x:.0f}px" for x in widths)
    return panel_chrome(panel, box, f'<div class="table" style="height:{h:.0f}px;--ch:{cell_h}px;--grid:{grid}">'
                                    f'<div class="tr thead">{head}</div>'
                                    f'<div class="tbody">{"".join(body)}</div></div>', pad=0)


def fit_widths(natural: list[float], avail: float) -> list[float]:
    """Natural widths plus an equal share of the room left, or the widest capped to fit."""
    total = sum(natural)
    if total <= avail:
        extra = (avail - total) / len(natural)
        return [x + extra for x in natural]
    lo, hi = 0.0, max(natural)
    for _ in range(40):
        cap = (lo + hi) / 2
        if sum(min(x, cap) for x in natural) > avail:
            hi = cap
        else:
            lo = cap
    return [min(x, lo) for x in natural]


def render_row(panel: dict[str, Any], box: Box) -> str:
    collapsed = panel.get("collapsed")
    chevron = "M9 6l6 6-6 6" if collapsed else "M6 9l6 6 6-6"
    extra = ""
    if collapsed and panel.get("panels"):
        n = len(panel["panels"])
        extra = f'<span class="rowcount">({n} panel{"s" if n != 1 else ""})</span>'
    return (f'<div class="row" style="left:{box.x:.0f}px;top:{box.y:.0f}px;width:{box.w:.0f}px;height:{box.h:.0f}px">'
            f'<svg viewBox="0 0 24 24" width="18" height="18"><path d="{chevron}" fill="none" stroke="{TEXT}" '
            f'stroke-width="2" stroke-linecap="round" stroke-linejoin="round"/></svg>'
            f'<span>{esc(panel.get("title") or "")}</span>{extra}</div>')


# -- the page ------------------------------------------------------------------------------------------

CSS = f"""
* {{ box-sizing: border-box; }}
html, body {{ margin: 0; background: {BG_CANVAS}; color: {TEXT}; font-family: {FONT}; font-size: 14px;
  -webkit-font-smoothing: antialiased; }}
.topbar {{ height: 40px; display: flex; align-items: center; padding: 0 16px; gap: 12px; background: {BG_PANEL};
  border-bottom: 1px solid {BORDER}; }}
.crumbs {{ display: flex; gap: 8px; align-items: center; color: {TEXT_2}; font-size: 14px; }}
.crumbs b {{ color: {TEXT}; font-weight: 500; }}
.search {{ margin-left: auto; width: 360px; height: 32px; border: 1px solid {BORDER_STRONG}; border-radius: 2px;
  background: {BG_CANVAS}; color: {TEXT_2}; display: flex; align-items: center; padding: 0 8px; gap: 8px;
  font-size: 14px; }}
.kbd {{ margin-left: auto; font-size: 12px; border: 1px solid {BORDER}; border-radius: 2px; padding: 0 4px; }}
.controls {{ display: flex; align-items: center; gap: 8px; padding: 16px 16px 0 16px; flex-wrap: wrap; }}
.var {{ display: flex; height: 32px; }}
.var .l {{ background: {BG_SECONDARY}; border: 1px solid {BORDER_STRONG}; border-right: none; padding: 0 8px;
  display: flex; align-items: center; font-weight: 500; font-size: 14px; border-radius: 2px 0 0 2px; }}
.var .v {{ background: {BG_CANVAS}; border: 1px solid {BORDER_STRONG}; padding: 0 8px; display: flex;
  align-items: center; gap: 16px; border-radius: 0 2px 2px 0; min-width: 110px; justify-content: space-between; }}
.btn {{ height: 32px; border: 1px solid {BORDER_STRONG}; background: {BG_SECONDARY}; border-radius: 2px;
  display: flex; align-items: center; gap: 8px; padding: 0 10px; font-weight: 500; font-size: 14px; }}
.spacer {{ flex: 1; }}
.grid {{ position: relative; margin: 16px {PAGE_PAD}px {PAGE_PAD}px {PAGE_PAD}px; }}
.panel {{ position: absolute; background: {BG_PANEL}; border: 1px solid {BORDER}; border-radius: 2px;
  overflow: hidden; }}
.ph {{ height: {HEADER_PX}px; display: flex; align-items: center; gap: 6px; padding: 0 8px; }}
.pt {{ font-size: 14px; font-weight: 500; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }}
.info {{ flex: none; }}
.pc {{ position: absolute; }}
.row {{ position: absolute; display: flex; align-items: center; gap: 6px; font-size: 16px; font-weight: 500; }}
.rowcount {{ color: {TEXT_2}; font-size: 12px; font-weight: 400; }}
.nodata {{ display: flex; align-items: center; justify-content: center; height: 100%; color: {TEXT_2}; }}
.plot {{ position: absolute; left: 0; top: 0; overflow: visible; }}
.ax {{ font-size: 12px; fill: {TEXT_2}; font-family: {FONT}; }}
.legend {{ position: absolute; overflow: hidden; font-size: 12px; }}
.legend.right {{ right: 0; top: 0; }}
.legend.bottom {{ left: 0; right: 0; }}
.lt {{ border-collapse: collapse; width: 100%; }}
.lt th {{ color: {TEXT_LINK}; font-weight: 500; text-align: right; padding: 2px 6px; white-space: nowrap;
  border-bottom: 1px solid {BORDER}; }}
.lt td {{ padding: 3px 6px; white-space: nowrap; border-bottom: 1px solid rgba(204,204,220,0.05); }}
.lt td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
.lt td.lname {{ max-width: 220px; overflow: hidden; text-overflow: ellipsis; }}
.lt td.lname i {{ display: inline-block; width: 14px; height: 4px; border-radius: 1px; margin-right: 6px;
  vertical-align: middle; }}
.scell {{ position: absolute; overflow: hidden; }}
.spark {{ position: absolute; left: 0; top: 0; }}
.stext {{ position: relative; display: flex; flex-direction: column; align-items: center; justify-content: center; }}
.sname {{ color: {TEXT}; font-weight: 500; }}
.sval {{ font-weight: 500; line-height: 1.1; letter-spacing: -0.5px; font-variant-numeric: tabular-nums; }}
.brow {{ position: absolute; left: 0; right: 0; }}
.bname {{ position: absolute; left: 0; top: 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis;
  color: {TEXT}; }}
.bu {{ position: absolute; top: 0; bottom: 0; background: rgba(204, 204, 220, 0.07); border-radius: 2px; }}
.bf {{ position: absolute; top: 0; bottom: 0; border-radius: 2px; }}
.bv {{ position: absolute; top: 0; text-align: right; font-weight: 500; font-variant-numeric: tabular-nums; }}
.table {{ overflow: hidden; font-size: 14px; }}
.table .tr {{ display: grid; grid-template-columns: var(--grid); height: var(--ch); border-bottom: 1px solid {BORDER};
  align-items: center; }}
.table .thead {{ height: var(--ch); }}
.th {{ color: {TEXT_LINK}; font-weight: 500; padding: 0 8px; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; }}
.td {{ padding: 0 8px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }}
.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
.foot {{ color: {TEXT_2}; font-size: 12px; padding: 0 {PAGE_PAD}px 12px; }}
.errors {{ color: #F2495C; font-size: 12px; padding: 0 {PAGE_PAD}px 12px; white-space: pre-wrap; }}
"""

ICON_CLOCK = (f'<svg viewBox="0 0 24 24" width="16" height="16"><circle cx="12" cy="12" r="9" fill="none" '
              f'stroke="{TEXT}" stroke-width="2"/><path d="M12 7v5l3 2" fill="none" stroke="{TEXT}" '
              f'stroke-width="2" stroke-linecap="round"/></svg>')
ICON_CARET = (f'<svg viewBox="0 0 24 24" width="14" height="14"><path d="M6 9l6 6 6-6" fill="none" '
              f'stroke="{TEXT}" stroke-width="2" stroke-linecap="round"/></svg>')
ICON_REFRESH = (f'<svg viewBox="0 0 24 24" width="16" height="16"><path d="M20 12a8 8 0 1 1-2.3-5.7M20 4v5h-5" '
                f'fill="none" stroke="{TEXT}" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"/>'
                f"</svg>")
ICON_SEARCH = (f'<svg viewBox="0 0 24 24" width="16" height="16"><circle cx="11" cy="11" r="6" fill="none" '
               f'stroke="{TEXT_2}" stroke-width="2"/><path d="M16 16l4 4" stroke="{TEXT_2}" stroke-width="2" '
               f'stroke-linecap="round"/></svg>')
ICON_MENU = (f'<svg viewBox="0 0 24 24" width="18" height="18"><path d="M4 7h16M4 12h16M4 17h16" '
             f'stroke="{TEXT}" stroke-width="2" stroke-linecap="round"/></svg>')
ICON_LOGO = ('<svg viewBox="0 0 24 24" width="22" height="22"><defs><linearGradient id="lg" x1="0" y1="1" x2="0" '
             'y2="0"><stop offset="0" stop-color="#F05A28"/><stop offset="1" stop-color="#FBCA0A"/></linearGradient>'
             '</defs><circle cx="12" cy="12" r="9.5" fill="none" stroke="url(#lg)" stroke-width="3"/>'
             '<circle cx="12" cy="12" r="3.5" fill="url(#lg)"/></svg>')


def grid_box(gp: dict[str, Any], width: float) -> Box:
    col = (width - GAP_PX * (GRID_COLS - 1)) / GRID_COLS
    x, y, w, h = gp.get("x", 0), gp.get("y", 0), gp.get("w", 12), gp.get("h", 8)
    return Box(round(col * x + GAP_PX * x), round(ROW_PX * y + GAP_PX * y),
               round(col * w + GAP_PX * (w - 1)), round(ROW_PX * h + GAP_PX * (h - 1)))


def panels_in_order(dash: dict[str, Any]) -> list[dict[str, Any]]:
    """Top-level panels; the panels of collapsed rows stay hidden (as in Grafana)."""
    return list(dash.get("panels") or [])


def render_page(dash: dict[str, Any], ctx: Context, shown_vars: dict[str, str], range_text: str,
                width: int, footer: str) -> tuple[str, int]:
    grid_w = width - 2 * PAGE_PAD
    parts, bottom = [], 0
    for p in panels_in_order(dash):
        box = grid_box(p.get("gridPos") or {}, grid_w)
        bottom = max(bottom, box.y + box.h)
        kind = p.get("type")
        if kind == "row":
            parts.append(render_row(p, box))
        elif kind == "timeseries":
            parts.append(render_timeseries(ctx, p, box))
        elif kind == "stat":
            parts.append(render_stat(ctx, p, box))
        elif kind == "bargauge":
            parts.append(render_bargauge(ctx, p, box))
        elif kind == "table":
            parts.append(render_table(ctx, p, box))
        else:
            parts.append(panel_chrome(p, box, f'<div class="nodata">Panel type {esc(kind)} is not drawn by '
                                              f"this renderer</div>"))
    variables = []
    for v in (dash.get("templating") or {}).get("list") or []:
        if v.get("hide") == 2:
            continue
        label = v.get("label") or v.get("name")
        variables.append(f'<div class="var"><div class="l">{esc(label)}</div><div class="v">'
                         f'<span>{esc(shown_vars.get(v.get("name"), ""))}</span>{ICON_CARET}</div></div>')
    refresh = esc(dash.get("refresh") or "")
    top = (f'<div class="topbar">{ICON_MENU}{ICON_LOGO}<div class="crumbs"><span>Home</span><span>›</span>'
           f'<span>Dashboards</span><span>›</span><b>{esc(dash.get("title") or "")}</b></div>'
           f'<div class="search">{ICON_SEARCH}<span>Search or jump to...</span><span class="kbd">ctrl+k</span>'
           f'</div></div>'
           f'<div class="controls">{"".join(variables)}<div class="spacer"></div>'
           f'<div class="btn">{ICON_CLOCK}<span>{esc(range_text)}</span>{ICON_CARET}</div>'
           f'<div class="btn">{ICON_REFRESH}{f"<span>{refresh}</span>{ICON_CARET}" if refresh else ""}</div></div>')
    errs = f'<div class="errors">{esc(chr(10).join(ctx.errors))}</div>' if ctx.errors else ""
    foot = f'<div class="foot">{esc(footer)}</div>' if footer else ""
    page = (f'<!doctype html><html><head><meta charset="utf-8"><title>{esc(dash.get("title") or "")}</title>'
            f"<style>{CSS}</style></head><body>{top}"
            f'<div class="grid" style="height:{bottom}px">{"".join(parts)}</div>{errs}{foot}</body></html>')
    height = 40 + 16 + 32 + 16 + bottom + PAGE_PAD + (30 if footer else 0) + (16 * len(ctx.errors) + 12 if ctx.errors else 0)
    return page, height


def screenshot(page_html: str, out: Path, width: int, height: int, scale: float, chromium: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            ctx = b.new_context(viewport={"width": width, "height": height}, device_scale_factor=scale)
            page = ctx.new_page()
            page.set_content(page_html, wait_until="load")
            page.evaluate("document.fonts.ready.then(() => true)")
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out), full_page=True)
        finally:
            b.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prometheus", "-p", required=True, help="Prometheus base URL, e.g. http://127.0.0.1:9090")
    ap.add_argument("--dashboard", type=Path, default=DASHBOARD, help="dashboard JSON (default: the chart's)")
    ap.add_argument("--out", "-o", type=Path, default=OUT, help="PNG to write (default: %(default)s)")
    ap.add_argument("--html", type=Path, help="also write the page here")
    ap.add_argument("--from", dest="time_from", help="range start (default: the dashboard's, e.g. now-6h)")
    ap.add_argument("--to", dest="time_to", help="range end (default: the dashboard's, e.g. now)")
    ap.add_argument("--var", action="append", default=[], metavar="NAME=VALUE[,VALUE]",
                    help="a template variable's value(s); unset ones are All (their allValue)")
    ap.add_argument("--min-interval", default="15s",
                    help="the data source's scrape interval / min step, as in Grafana (default %(default)s)")
    ap.add_argument("--max-data-points", type=int, help="override Grafana's max data points (default: panel width)")
    ap.add_argument("--width", type=int, default=1600, help="browser viewport width in px (default %(default)s)")
    ap.add_argument("--scale", type=float, default=1.0, help="device scale factor (default %(default)s)")
    ap.add_argument("--footer", default="", help="a line of text under the dashboard")
    ap.add_argument("--chromium", default=CHROMIUM, help="browser binary (default %(default)s)")
    a = ap.parse_args()

    dash = json.loads(a.dashboard.read_text())
    given: dict[str, list[str]] = {}
    for item in a.var:
        k, _, v = item.partition("=")
        given[k] = [x for x in v.split(",") if x]
    values, shown = variable_values(dash, given)
    now = time.time()
    raw_from = a.time_from or (dash.get("time") or {}).get("from") or "now-6h"
    raw_to = a.time_to or (dash.get("time") or {}).get("to") or "now"
    start, end = parse_time(raw_from, now), parse_time(raw_to, now)
    if end <= start:
        raise SystemExit("--from must be before --to")
    min_interval = parse_duration(a.min_interval)
    ctx = Context(Prometheus(a.prometheus), start, end, min_interval, min_interval, values, a.max_data_points)
    page, height = render_page(dash, ctx, shown, describe_range(raw_from, raw_to, start, end), a.width, a.footer)
    if a.html:
        a.html.write_text(page)
    screenshot(page, a.out, a.width, height, a.scale, a.chromium)
    print(f"{a.out}: {a.width}x{height} px, {datetime.fromtimestamp(start, UTC):%Y-%m-%d %H:%M:%S} - "
          f"{datetime.fromtimestamp(end, UTC):%H:%M:%S} UTC")
    for e in ctx.errors:
        print(f"query error: {e}", file=sys.stderr)
    return 1 if ctx.errors else 0


if __name__ == "__main__":
    sys.exit(main())
