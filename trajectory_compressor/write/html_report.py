"""The run report as one self-contained HTML page, and the histogram helpers behind it.

The page has headline figures, a before/after histogram of tokens per trajectory drawn as inline
SVG (shared bins, a line at the target), and a percentile table. It loads nothing from the
network and runs no script, so it can be attached to a ticket or opened from an air-gapped box.

The helpers are pure and also serve the ``analyze`` command's terminal histogram. Memory: pass
token counts as a list or, better, an ``array("q")`` (8 bytes a row: 8 MB for a million rows).
Each helper sorts one copy; histogram counts then come from binary search on the sorted values,
so a million rows take well under a second.
"""

from __future__ import annotations

import html
import math
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence

Histogram = list[tuple[float, float, int]]  # (low edge, high edge, count); the last bin includes its high edge

DEFAULT_BINS = 40
DEFAULT_PERCENTILES: tuple[float, ...] = (50, 90, 99)
_LOG_SPAN = 30  # use log-spaced bins when the largest value is this many times the smallest
_BLOCKS = " ▏▎▍▌▋▊▉█"
_BEFORE_COLOR = "#9fb3d1"
_AFTER_COLOR = "#1f8a70"
_TARGET_COLOR = "#d1495b"


def histogram_edges(
    low: float,
    high: float,
    bins: int = DEFAULT_BINS,
    log: bool | None = None,
    anchor: float | None = None,
) -> list[float]:
    """About `bins` equal (linear or log) bins covering [low, high], as strictly increasing integers.

    `log=None` picks log spacing when the range spans more than `_LOG_SPAN`x: token lengths of a
    dataset often run from hundreds to hundreds of thousands, and linear bins would put almost
    every row into the first one. With an `anchor` inside the range (the report passes
    ``target + 1``) the spacing is adjusted so that the anchor is an edge: then no bin straddles
    the target and "at most the target" and "over" never share a bar. Without one, inner edges
    are rounded to two significant digits so that labels read well.
    """
    if bins < 1:
        raise ValueError("bins must be >= 1")
    low, high = float(low), float(high)
    if high <= low:
        high = low + 1
    if log is None:
        log = low > 0 and high / low > _LOG_SPAN
    inner_anchor = anchor if anchor is not None and low < anchor < high else None
    if log:
        low = max(low, 1.0)
        ratio = (high / low) ** (1 / bins)
        if inner_anchor is not None:
            below = max(1, round(math.log(inner_anchor / low) / math.log(ratio)))
            ratio = (inner_anchor / low) ** (1 / below)
        raw = [low]
        while raw[-1] < high:
            raw.append(low * ratio ** len(raw))
    else:
        step = (high - low) / bins
        if inner_anchor is not None:
            step = (inner_anchor - low) / max(1, round((inner_anchor - low) / step))
        raw = [low]
        while raw[-1] < high:
            raw.append(low + step * len(raw))
    if inner_anchor is not None:  # exact steps, so the bins stay equal around the anchor
        edges = [math.floor(low), *(round(x) for x in raw[1:-1]), math.ceil(raw[-1])]
    else:
        edges = [_round_sig(low, math.floor), *map(_round_sig, raw[1:-1]), _round_sig(raw[-1], math.ceil)]
    out: list[float] = []
    for edge in edges:
        if not out or edge > out[-1]:
            out.append(edge)
    if len(out) == 1:
        out.append(out[0] + 1)
    return out


def token_histogram(values: Iterable[float], bins: int | Sequence[float] = DEFAULT_BINS) -> Histogram:
    """Count `values` into bins: `bins` edges as given, or that many bins over the values' range.

    Values outside explicit edges are counted in the first or last bin, so counts always add up
    to the number of values.
    """
    ordered = sorted(values)
    if isinstance(bins, int):
        if not ordered:
            return []
        edges: Sequence[float] = histogram_edges(ordered[0], ordered[-1], bins)
    else:
        edges = bins
    return _histogram_sorted(ordered, edges)


def percentiles(values: Iterable[float], ps: Sequence[float] = DEFAULT_PERCENTILES) -> dict[float, float]:
    """The `ps` percentiles (0-100) of `values`, linearly interpolated; `{}` when there are none."""
    return _percentiles_sorted(sorted(values), ps)


def render_terminal_histogram(hist: Histogram, width: int = 50) -> str:
    """The histogram as text lines ``low – high │████▌ count``, bars scaled to `width` columns."""
    if not hist:
        return "(no data)"
    peak = max(count for _, _, count in hist) or 1
    lows = [_compact(lo) for lo, _, _ in hist]
    highs = [_compact(hi) for _, hi, _ in hist]
    lo_width, hi_width = max(map(len, lows)), max(map(len, highs))
    lines = []
    for (_, _, count), lo, hi in zip(hist, lows, highs, strict=True):
        eighths = round(count / peak * width * 8)
        bar = "█" * (eighths // 8) + (_BLOCKS[eighths % 8] if eighths % 8 else "")
        if count and not bar:
            bar = _BLOCKS[1]  # a bin with rows never looks empty
        lines.append(f"{lo:>{lo_width}} – {hi:>{hi_width}} │{bar:<{width}} {count:,}")
    return "\n".join(lines)


def render_html_report(
    title: str,
    headline: Mapping[str, str | int | float],
    before_tokens: Sequence[int],
    after_tokens: Sequence[int] | None,
    target: int,
    *,
    bins: int = DEFAULT_BINS,
    sections: Sequence[tuple[str, str]] = (),
) -> str:
    """A complete HTML page: headline figures, the before/after histogram, percentiles, then `sections`."""
    before = sorted(before_tokens)
    after = sorted(after_tokens) if after_tokens is not None else None
    present = [values for values in (before, after) if values]
    low = min([values[0] for values in present] + [target])
    high = max([values[-1] for values in present] + [target])
    # Rows at or under the target sit left of the line: `target + 1` is a bin edge.
    edges = histogram_edges(low, high + 1, bins, anchor=target + 1)
    before_hist = _histogram_sorted(before, edges)
    after_hist = _histogram_sorted(after, edges) if after is not None else None
    svg = _svg_histogram(before_hist, after_hist, edges, target, len(before), None if after is None else len(after))
    table = _percentile_table(before, after, target)
    charts = [(f"Tokens per trajectory (target {target:,})", svg), ("Percentiles", table)]
    return render_page(title, headline, [*charts, *sections])


def render_page(title: str, headline: Mapping[str, str | int | float], sections: Sequence[tuple[str, str]]) -> str:
    """A self-contained page: a row of headline cards, then one panel per (heading, HTML) section."""
    cards = "\n".join(
        f'<div class="card"><div class="value">{_esc(_format_value(value))}</div>'
        f'<div class="label">{_esc(label)}</div></div>'
        for label, value in headline.items()
    )
    panels = "\n".join(f"<section>\n<h2>{_esc(heading)}</h2>\n{body}\n</section>" for heading, body in sections)
    return _PAGE.format(generator=PAGE_MARK, title=_esc(title), cards=cards, sections=panels)


# --- internals ---------------------------------------------------------------------------------


def _histogram_sorted(ordered: Sequence[float], edges: Sequence[float]) -> Histogram:
    if len(edges) < 2:
        raise ValueError("a histogram needs at least two edges")
    # Cut points between bins: inner edges only, so outliers land in the first / last bin.
    cuts = [bisect_left(ordered, edge) for edge in edges[1:-1]]
    bounds = [0, *cuts, len(ordered)]
    return [(edges[i], edges[i + 1], bounds[i + 1] - bounds[i]) for i in range(len(edges) - 1)]


def _percentiles_sorted(ordered: Sequence[float], ps: Sequence[float]) -> dict[float, float]:
    if not ordered:
        return {}
    out = {}
    for p in ps:
        if not 0 <= p <= 100:
            raise ValueError(f"percentile must be in [0, 100], got {p}")
        position = (len(ordered) - 1) * p / 100
        below = math.floor(position)
        above = min(below + 1, len(ordered) - 1)
        fraction = position - below
        out[p] = float(ordered[below] + (ordered[above] - ordered[below]) * fraction)
    return out


def _round_sig(x: float, how: Callable[[float], float] = round) -> int:
    """`x` to two significant digits (rounded, or floored / ceiled for the outer edges), as an int."""
    if x < 100:
        return int(how(x))
    magnitude = 10 ** (math.floor(math.log10(x)) - 1)
    return int(how(x / magnitude) * magnitude)


def _compact(x: float) -> str:
    """1234 → '1.2k', 15250 → '15k', 2_000_000 → '2M': short axis and terminal labels."""
    x = float(x)
    for size, unit in ((1e6, "M"), (1e3, "k")):
        if abs(x) >= size:
            scaled = x / size
            return f"{scaled:.1f}".rstrip("0").rstrip(".") + unit if scaled < 10 else f"{scaled:.0f}{unit}"
    return f"{x:.0f}"


def _format_value(value: str | int | float) -> str:
    if isinstance(value, (bool, str)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if math.isfinite(value) and value == int(value) and abs(value) >= 1000:
        return f"{int(value):,}"
    return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"


def _esc(text: str) -> str:
    return html.escape(str(text), quote=True)


def _nice_ticks(peak: int, count: int = 5) -> list[int]:
    """Round y-axis ticks from 0 to at least `peak` (1, 2 or 5 times a power of ten apart)."""
    if peak <= 0:
        return [0, 1]
    raw = peak / (count - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    step = max(1, int(step))
    return list(range(0, math.ceil(peak / step) * step + 1, step))


def _is_log(edges: Sequence[float]) -> bool:
    """Whether `histogram_edges` chose log spacing for these edges (same rule, seen from the edges)."""
    return edges[0] > 0 and edges[-1] / edges[0] > _LOG_SPAN


def _target_x(edges: Sequence[float], target: float, x0: float, bin_width: float) -> float:
    """Where `target` falls on an axis of equal-width bins (log-interpolated inside its bin)."""
    if target <= edges[0]:
        return x0
    for i in range(len(edges) - 1):
        lo, hi = edges[i], edges[i + 1]
        if target <= hi:
            if _is_log(edges) and lo > 0:
                fraction = math.log(target / lo) / math.log(hi / lo)
            else:
                fraction = (target - lo) / (hi - lo)
            return x0 + (i + fraction) * bin_width
    return x0 + (len(edges) - 1) * bin_width


def _svg_histogram(
    before: Histogram,
    after: Histogram | None,
    edges: Sequence[float],
    target: int,
    before_rows: int,
    after_rows: int | None,
) -> str:
    width, height = 960, 380
    left, right, top, bottom = 70, 24, 44, 62
    plot_w, plot_h = width - left - right, height - top - bottom
    n_bins = len(edges) - 1
    bin_w = plot_w / n_bins
    peak = max([c for _, _, c in before] + [c for _, _, c in (after or [])] + [0])
    ticks = _nice_ticks(peak)
    y_max = ticks[-1] or 1

    def y(count: float) -> float:
        return top + plot_h - count / y_max * plot_h

    parts = [
        f'<svg viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="Histogram of tokens per trajectory before and after compression">'
    ]
    for tick in ticks:
        ty = y(tick)
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{ty:.1f}" y2="{ty:.1f}" class="grid"/>')
        parts.append(f'<text x="{left - 8}" y="{ty + 4:.1f}" text-anchor="end" class="tick">{tick:,}</text>')
    series = [(before, _BEFORE_COLOR, "before")] + ([(after, _AFTER_COLOR, "after")] if after is not None else [])
    gap = min(2.0, bin_w * 0.15)
    bar_w = (bin_w - gap) / len(series)
    for s, (hist, color, name) in enumerate(series):
        for i, (lo, hi, count) in enumerate(hist):
            if not count:
                continue
            bx = left + i * bin_w + gap / 2 + s * bar_w
            by = y(count)
            parts.append(
                f'<rect x="{bx:.1f}" y="{by:.1f}" width="{max(bar_w, 0.5):.1f}" height="{top + plot_h - by:.1f}" '
                f'fill="{color}"><title>{name}: {count:,} rows with {lo:,.0f}–{hi:,.0f} tokens</title></rect>'
            )
    # x axis: a label every few edges, so that they do not collide
    step = max(1, math.ceil(n_bins / 10))
    for i in range(0, n_bins + 1, step):
        tx = left + i * bin_w
        parts.append(f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{top + plot_h}" y2="{top + plot_h + 5}" class="axis"/>')
        parts.append(
            f'<text x="{tx:.1f}" y="{top + plot_h + 19}" text-anchor="middle" class="tick">{_compact(edges[i])}</text>'
        )
    parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}" class="axis"/>')
    parts.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" class="axis"/>')
    scale = "log scale" if _is_log(edges) else "linear scale"
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 14}" text-anchor="middle" class="axis-label">'
        f"tokens per trajectory ({scale})</text>"
    )
    parts.append(
        f'<text transform="translate(18 {top + plot_h / 2}) rotate(-90)" text-anchor="middle" '
        f'class="axis-label">trajectories</text>'
    )
    tx = _target_x(edges, target + 1, left, bin_w)  # the edge between "at most target" and "over"
    parts.append(
        f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{top - 8}" y2="{top + plot_h}" stroke="{_TARGET_COLOR}" '
        f'stroke-width="2" stroke-dasharray="6 4"/>'
    )
    anchor = "end" if tx > left + plot_w * 0.8 else "start"
    offset = -6 if anchor == "end" else 6
    parts.append(
        f'<text x="{tx + offset:.1f}" y="{top - 12}" text-anchor="{anchor}" class="target">target {target:,}</text>'
    )
    # legend, top right
    legend = [("before", _BEFORE_COLOR, before_rows)]
    if after_rows is not None:
        legend.append(("after", _AFTER_COLOR, after_rows))
    lx = left + plot_w - 190
    parts.append(
        f'<rect x="{lx - 8}" y="{top}" width="196" height="{len(legend) * 20 + 8}" rx="4" '
        f'fill="#fff" fill-opacity="0.85"/>'
    )
    for k, (name, color, rows) in enumerate(legend):
        ly = top + 6 + k * 20
        parts.append(f'<rect x="{lx}" y="{ly}" width="12" height="12" rx="2" fill="{color}"/>')
        parts.append(f'<text x="{lx + 18}" y="{ly + 11}" class="legend">{name} ({rows:,} rows)</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _percentile_table(before: Sequence[int], after: Sequence[int] | None, target: int) -> str:
    ps = (50, 90, 99, 100)
    columns = [("before", _percentiles_sorted(before, ps), before)]
    if after is not None:
        columns.append(("after", _percentiles_sorted(after, ps), after))
    head = "".join(f"<th>{name}</th>" for name, _, _ in columns)
    rows = []
    for p in ps:
        label = "max" if p == 100 else f"p{p}"
        cells = "".join(f"<td>{values[p]:,.0f}</td>" if values else "<td>–</td>" for _, values, _ in columns)
        rows.append(f"<tr><th>{label}</th>{cells}</tr>")
    over = "".join(f"<td>{_over(values, target)}</td>" for _, _, values in columns)
    rows.append(f"<tr><th>over target</th>{over}</tr>")
    return f"<table><thead><tr><th>tokens</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _over(ordered: Sequence[int], target: int) -> str:
    if not ordered:
        return "–"
    count = len(ordered) - bisect_left(ordered, target + 1)
    return f"{count:,} ({count / len(ordered):.1%})"


# What every page carries in its head, so a later run knows it as its own (`write/collisions.py`).
PAGE_MARK = '<meta name="generator" content="trajectory-compressor">'

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{generator}
<title>{title}</title>
<style>
  body {{ font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2433;
         background: #f6f7f9; margin: 0; }}
  main {{ max-width: 1040px; margin: 0 auto; padding: 28px 32px 40px; }}
  h1 {{ font-size: 22px; font-weight: 600; margin: 0 0 18px; }}
  h2 {{ font-size: 15px; font-weight: 600; margin: 0 0 10px; color: #3b4457; }}
  .cards {{ display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 12px;
            margin-bottom: 20px; }}
  .card, section {{ background: #fff; border: 1px solid #e1e4ea; border-radius: 8px; }}
  .card {{ padding: 12px 14px; }}
  .card .value {{ font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }}
  .card .label {{ font-size: 12px; color: #5d677a; margin-top: 2px; }}
  section {{ padding: 16px 18px; margin-bottom: 20px; }}
  svg text {{ font-family: inherit; }}
  .grid {{ stroke: #eceef2; }}
  .axis {{ stroke: #8d96a8; }}
  .tick {{ font-size: 11px; fill: #5d677a; }}
  .axis-label {{ font-size: 12px; fill: #3b4457; }}
  .legend {{ font-size: 12px; fill: #3b4457; }}
  .target {{ font-size: 12px; font-weight: 600; fill: {target_color}; }}
  table {{ border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: 13px; }}
  th, td {{ padding: 6px 18px 6px 0; text-align: right; border-bottom: 1px solid #eceef2; }}
  th:first-child {{ text-align: left; }}
  thead th {{ color: #5d677a; font-weight: 600; }}
  td.text, th.text {{ text-align: left; }}
  .turns {{ display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }}
  .turn {{ font-size: 12px; border-left: 3px solid #d5dae3; padding: 2px 8px; margin-bottom: 8px; }}
  .turn b {{ color: #5d677a; }}
  .turn pre {{ white-space: pre-wrap; word-break: break-word; margin: 2px 0 0; font-size: 12px; }}
  .summary {{ border-left-color: {after_color}; }}
  section {{ overflow-x: auto; }}
  h3 {{ font-size: 13px; font-weight: 600; margin: 10px 0 6px; color: #5d677a; }}
  table {{ max-width: 100%; }}
  td:not(.text) {{ white-space: nowrap; }}
  td.long {{ overflow-wrap: anywhere; min-width: 10em; }}
  section p {{ font-size: 13px; }}
  .cols pre {{ max-height: 520px; overflow: auto; }}
  .path {{ display: inline-block; max-width: 30em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap;
           vertical-align: bottom; }}
  .turns > div, .cols > div {{ min-width: 0; }}
  .cols {{ display: grid; gap: 16px; }}
  .note {{ font-size: 12px; color: #8a4b00; }}
  mark {{ background: #ffe08a; }}
  .picker > input {{ position: absolute; opacity: 0; pointer-events: none; }}
  .picker > label {{ display: inline-block; max-width: 30em; overflow: hidden; text-overflow: ellipsis;
                     white-space: nowrap; vertical-align: bottom; padding: 4px 10px; margin: 0 6px 6px 0;
                     border: 1px solid #d5dae3; border-radius: 14px; font-size: 12px; cursor: pointer; }}
  .picker > input:checked + label {{ background: {after_color}; border-color: {after_color}; color: #fff; }}
  .picked {{ display: none; border-top: 1px solid #eceef2; margin-top: 6px; padding-top: 8px; }}
</style>
</head>
<body>
<main>
<h1>{title}</h1>
<div class="cards">
{cards}
</div>
{sections}
</main>
</body>
</html>
""".replace("{target_color}", _TARGET_COLOR).replace("{after_color}", _AFTER_COLOR)
