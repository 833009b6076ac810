"""Pieces of the HTML pages beyond the token histogram: the fidelity chart, tables, an example row.

Every text that comes from a trajectory is masked (`redact_secrets`) and escaped here, at the
last moment before it is drawn, so no page can show a credential the data carried.
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from trajectory_compressor.messages import quoted
from trajectory_compressor.summarize.llm.prompt import REDACT_MARGIN
from trajectory_compressor.summarize.redact import find_secrets, mask_spans, redact_secrets, word_end
from trajectory_compressor.summarize.toolcalls import clip
from trajectory_compressor.types import SUMMARY_PREFIX, ExampleRow

SERIES_COLORS = ("#1f8a70", "#d08c2c", "#6b5ca5", "#d1495b")
_TURN_CHARS = 600
_TURNS_SHOWN = 12
_LONG_TEXT = 40  # characters of a text cell past which it may wrap inside a word
_ROLE_LABELS = {"system": "system", "human": "user", "gpt": "assistant", "tool": "tool"}


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


@dataclass(frozen=True)
class PathCell:
    """A table cell naming a file: a short form shown (cut with an ellipsis when too wide), the
    full name in its title, so a long absolute path never stretches a table past its card."""

    shown: str
    full: str


def short_names(paths: Iterable[str]) -> dict[str, str]:
    """Each path without the folders all of them share (`a/x.jsonl`, `b/x.jsonl`), or its file
    name when it is the only one: names that tell outputs or inputs apart in little room."""
    distinct = list(dict.fromkeys(paths))
    if len(distinct) == 1:
        only = distinct[0]
        return {only: os.path.basename(only.rstrip("/")) or only}
    try:
        common = os.path.commonpath(distinct)
    except ValueError:  # absolute beside relative paths
        return {path: path for path in distinct}
    if common in distinct:  # one is a folder holding the others: keep its last name
        common = os.path.dirname(common)
    return {path: os.path.relpath(path, common) if common else path for path in distinct}


def short_label(label: str, names: dict[str, str]) -> str:
    """A row's label (`/data/runs/x.jsonl:12 window 3 of 15`) with its file's short name from `names`."""
    for full, short in names.items():
        shown = quoted(full)
        if label.startswith(shown):
            return short + label[len(shown) :]
    return label


def table_html(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, text_columns: int = 1) -> str:
    """A plain table; the first `text_columns` columns are left-aligned text, the rest numbers."""

    def cell(tag: str, index: int, value: Any) -> str:
        if isinstance(value, PathCell):
            return f'<{tag} class="text"><span class="path" title="{esc(value.full)}">{esc(value.shown)}</span></{tag}>'
        shown = (
            "–" if value is None else f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else value
        )
        if isinstance(value, float):
            shown = f"{value:.3f}"
        css = ""
        if index < text_columns:  # long text (lists of items) may wrap anywhere, short words stay whole
            css = ' class="text long"' if tag == "td" and len(str(shown)) > _LONG_TEXT else ' class="text"'
        return f"<{tag}{css}>{esc(shown)}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_ITEM_AXIS = "fidelity (mean recall of tool names, paths, errors, identifiers)"


def fidelity_svg(series: Sequence[tuple[str, Sequence[int]]], axis: str = _ITEM_AXIS, *, shares: bool = False) -> str:
    """Grouped bars of fidelity scores in ten bins from 0 to 1, one colour per series; with
    `shares`, each bar is its share of its series' rows (outputs of different sizes side by side)."""
    legend = 18 * max(0, len(series) - 1)  # the legend's lines stack above the bars
    width, height = 960, 300 + legend
    left, right, top, bottom = 60, 24, 36 + legend, 56
    plot_w, plot_h = width - left - right, height - top - bottom
    bins = len(series[0][1]) if series else 10
    totals = [max(1, sum(counts)) if shares else 1 for _, counts in series]
    peak = max([max(counts, default=0) / total for (_, counts), total in zip(series, totals, strict=True)] + [1e-9])
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
            bar_h = count / totals[s] / peak * plot_h
            share = f" ({count / totals[s]:.0%})" if shares else ""
            x = left + i * bin_w + 2 + s * bar_w
            parts.append(
                f'<rect class="bar" x="{x:.1f}" y="{top + plot_h - bar_h:.1f}" width="{bar_w:.1f}" '
                f'height="{bar_h:.1f}" fill="{color}"><title>{esc(name)}: {count:,} rows{share} with fidelity '
                f"{i / bins:.1f}–{(i + 1) / bins:.1f}</title></rect>"
            )
        parts.append(
            f'<rect x="{left + plot_w - 300}" y="{top - 26 - legend + s * 18}" width="12" height="12" fill="{color}"/>'
            f'<text x="{left + plot_w - 282}" y="{top - 15 - legend + s * 18}" class="legend">{esc(clip(name, 44))}'
            "</text>"
        )
    for i in range(bins + 1):
        x = left + i * bin_w
        parts.append(
            f'<text x="{x:.1f}" y="{top + plot_h + 18}" text-anchor="middle" class="tick">{i / bins:.1f}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 12}" text-anchor="middle" class="axis-label">{esc(axis)}</text>'
    )
    top_label = f"{peak:.0%}" if shares else f"{round(peak):,}"
    parts.append(f'<text x="{left - 8}" y="{top + 4}" text-anchor="end" class="tick">{top_label}</text>')
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
    masked = mask_spans(text, find_secrets(text[: word_end(text, head + REDACT_MARGIN)]), 0, head)
    return masked if len(masked) <= limit else masked[:limit].rstrip() + " …"
