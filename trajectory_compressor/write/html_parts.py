"""Pieces of the HTML pages beyond the token histogram: the fidelity chart, tables, an example row.

Every text that comes from a trajectory is masked (`redact_secrets`) and escaped here, at the
last moment before it is drawn, so no page can show a credential the data carried.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from trajectory_compressor.summarize.llm.prompt import REDACT_MARGIN
from trajectory_compressor.summarize.redact import find_secrets, mask_spans, redact_secrets
from trajectory_compressor.summarize.toolcalls import clip
from trajectory_compressor.types import SUMMARY_PREFIX, ExampleRow

SERIES_COLORS = ("#1f8a70", "#d08c2c", "#6b5ca5", "#d1495b")
_TURN_CHARS = 600
_TURNS_SHOWN = 12
_ROLE_LABELS = {"system": "system", "human": "user", "gpt": "assistant", "tool": "tool"}


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def table_html(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, text_columns: int = 1) -> str:
    """A plain table; the first `text_columns` columns are left-aligned text, the rest numbers."""

    def cell(tag: str, index: int, value: Any) -> str:
        shown = (
            "–" if value is None else f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else value
        )
        if isinstance(value, float):
            shown = f"{value:.3f}"
        css = ' class="text"' if index < text_columns else ""
        return f"<{tag}{css}>{esc(shown)}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def fidelity_svg(series: Sequence[tuple[str, Sequence[int]]]) -> str:
    """Grouped bars of fidelity scores in ten bins from 0 to 1, one colour per series."""
    width, height = 960, 300
    left, right, top, bottom = 60, 24, 36, 56
    plot_w, plot_h = width - left - right, height - top - bottom
    bins = len(series[0][1]) if series else 10
    peak = max([max(counts, default=0) for _, counts in series] + [1])
    bin_w = plot_w / bins
    bar_w = (bin_w - 4) / max(1, len(series))
    parts = [
        f'<svg viewBox="0 0 {width} {height}" width="100%" role="img" aria-label="Histogram of summary fidelity">',
        f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}" class="axis"/>',
    ]
    for s, (name, counts) in enumerate(series):
        color = SERIES_COLORS[s % len(SERIES_COLORS)]
        for i, count in enumerate(counts):
            if not count:
                continue
            bar_h = count / peak * plot_h
            x = left + i * bin_w + 2 + s * bar_w
            parts.append(
                f'<rect class="bar" x="{x:.1f}" y="{top + plot_h - bar_h:.1f}" width="{bar_w:.1f}" '
                f'height="{bar_h:.1f}" fill="{color}"><title>{esc(name)}: {count:,} rows with fidelity '
                f"{i / bins:.1f}–{(i + 1) / bins:.1f}</title></rect>"
            )
        parts.append(
            f'<rect x="{left + plot_w - 220}" y="{top - 26 + s * 18}" width="12" height="12" fill="{color}"/>'
            f'<text x="{left + plot_w - 202}" y="{top - 15 + s * 18}" class="legend">{esc(clip(name, 30))}</text>'
        )
    for i in range(bins + 1):
        x = left + i * bin_w
        parts.append(
            f'<text x="{x:.1f}" y="{top + plot_h + 18}" text-anchor="middle" class="tick">{i / bins:.1f}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 12}" text-anchor="middle" class="axis-label">'
        f"fidelity (mean recall of tool names, paths, errors, identifiers)</text>"
    )
    parts.append(f'<text x="{left - 8}" y="{top + 4}" text-anchor="end" class="tick">{peak:,}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def example_html(example: ExampleRow) -> str:
    """The replaced turns beside the summary that replaced them, masked and cut to a page."""
    shown = example.region[:_TURNS_SHOWN]
    turns = "".join(
        f'<div class="turn"><b>{esc(_ROLE_LABELS.get(t.role, t.role))}</b><pre>{esc(clip_text(t.value))}</pre></div>'
        for t in shown
    )
    if len(example.region) > len(shown):
        turns += f'<div class="turn"><b>… {len(example.region) - len(shown)} more turns</b></div>'
    score = (example.fidelity or {}).get("score")
    summary = redact_secrets(f"{SUMMARY_PREFIX} {example.summary}")
    return (
        f"<p>{esc(example.where)} (row {example.index:,})"
        + (f", fidelity {score:.2f}" if isinstance(score, (int, float)) else "")
        + "</p>"
        + '<div class="turns"><div><h2>before: the replaced turns</h2>'
        + turns
        + '</div><div><h2>after: one summary turn</h2><div class="turn summary"><b>user</b>'
        + f"<pre>{esc(summary)}</pre></div></div></div>"
    )


def clip_text(text: str, limit: int = _TURN_CHARS) -> str:
    """Head of a turn's text, credentials masked before the cut, with an ellipsis when cut.

    Secrets are looked for beyond the first cut too, so that one it falls into is masked whole:
    masking a long one before it (a PEM block) can bring a few unmatched characters into view.
    """
    head = min(len(text), limit * 4)
    masked = mask_spans(text, find_secrets(text[: head + REDACT_MARGIN]), 0, head)
    return masked if len(masked) <= limit else masked[:limit].rstrip() + " …"
