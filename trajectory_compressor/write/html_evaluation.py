"""The `eval --html-report` page: every output of the same input compared, then each in detail.

Future-grounded fidelity is the headline (cards and the first histogram), item recall beside it;
one table puts tokens kept, trainable gpt turns, both fidelities and cost side by side; then the
input files, the largest row-by-row differences (two outputs), one row's summaries side by side,
example rows behind a picker, the worst rows, and the probes when they were asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trajectory_compressor.messages import quoted
from trajectory_compressor.summarize.fidelity import KINDS
from trajectory_compressor.summarize.fidelity.score import KIND_LABELS
from trajectory_compressor.write.html_examples import RowExample, example_picker, summaries_side_by_side
from trajectory_compressor.write.html_parts import PathCell, esc, fidelity_svg, short_label, short_names, table_html
from trajectory_compressor.write.html_report import render_page
from trajectory_compressor.write.run_files import OutputError

_ROWS_SHOWN = 20
_FUTURE_AXIS = "future-grounded fidelity (share of the anchors the kept turns need that the summary holds)"
_ITEM_AXIS = "item recall (mean recall of tool names, paths, errors, identifiers)"


def evaluation_page(figures: dict[str, Any], examples: list[list[RowExample]]) -> str:
    """The page for `eval`'s figures and each output's example rows."""
    outputs = figures["outputs"]
    names = short_names([summary["output"] for summary in outputs])
    sources = short_names([entry["source"] for summary in outputs for entry in summary["by_source"]])
    tags = [f"{n}: {names[summary['output']]}" for n, summary in enumerate(outputs, start=1)]
    headline: dict[str, str | int | float] = {"input rows": outputs[0]["rows"] if outputs else 0}
    for tag, summary in zip(tags, outputs, strict=True):
        future = summary["future"]["score"]
        headline[f"{tag}: future-grounded fidelity"] = "–" if future is None else future
    for tag, summary in zip(tags, outputs, strict=True):
        mean = summary["fidelity"]["mean"]
        headline[f"{tag}: item recall (mean)"] = "–" if mean is None else mean
    shares = len(outputs) > 1  # outputs of different sizes: each bar a share of its output's rows
    sections = [
        ("Outputs compared", _outputs_table(figures["table"], tags, names)),
        ("Future-grounded fidelity", fidelity_svg(_series(tags, outputs, "future"), _FUTURE_AXIS, shares=shares)),
        ("Item recall", fidelity_svg(_series(tags, outputs, "fidelity"), _ITEM_AXIS, shares=shares)),
        ("Recall by kind and summarizer", _figures_table(outputs)),
        ("By input file", _sources_table(outputs, sources)),
    ]
    comparison = figures.get("comparison")
    if comparison is not None and comparison["rows_in_both"]:  # none: single rows against windows
        sections.append(("Row by row (largest differences)", _comparison_table(comparison, tags, sources)))
    side = _side_by_side(tags, examples, sources)
    if side:
        sections.append(("Summaries side by side", side))
    picked = [(f"{n}: {short_label(e.label, sources)}", e) for n, group in enumerate(examples, 1) for e in group]
    sections.append(("Example rows: the replaced turns, the summary, the kept turns", example_picker("ex", picked)))
    for tag, summary in zip(tags, outputs, strict=True):
        sections.append((f"Worst rows of {tag}", _worst_table(summary["worst"], sources)))
    if figures.get("probes"):
        probes = _probes_html(figures["probes"], outputs, tags, sources)
        sections.append(("Probes: recall questions answered by a model", probes))
    return render_page("trajectory_compressor: summary fidelity", headline, sections)


def write_evaluation_html(path: Path, figures: dict[str, Any], examples: list[list[RowExample]]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(evaluation_page(figures, examples), encoding="utf-8")
    except OSError as exc:
        raise OutputError(f"cannot write the HTML report {path}: {exc.strerror or exc}") from None


def _series(tags: list[str], outputs: list[dict[str, Any]], key: str) -> list[tuple[str, list[int]]]:
    return [(tag, summary[key]["histogram"]) for tag, summary in zip(tags, outputs, strict=True)]


def money(amount: float | None, currency: str) -> str:
    if amount is None:
        return "no prices given"
    return f"0 {currency}" if amount == 0 else f"{amount:,.4f} {currency}"


def _outputs_table(table: list[dict[str, Any]], tags: list[str], names: dict[str, str]) -> str:
    probes = any("probe_recall" in row for row in table)
    headers = ["output", "records", "tokens written / in", "gpt turns trained", "future-grounded fidelity"]
    headers += ["item recall", "cost", "requests"] + (["probe recall (ceiling)"] if probes else [])
    rows = []
    for tag, row in zip(tags, table, strict=True):
        kept = row["tokens_kept"]
        trained = f"{row['gpt_turns_trained']:,} of {row['gpt_turns']:,}" + (
            f" ({row['trainable_share']:.0%})" if row["trainable_share"] is not None else ""
        )
        future = "–" if row["future_fidelity"] is None else f"{row['future_fidelity']:.3f} of {row['future_anchors']:,}"
        cells: list[Any] = [
            PathCell(tag, quoted(row["output"])),
            row["records"],
            f"{row['tokens_written']:,} / {row['tokens_in']:,}" + ("" if kept is None else f" ({kept:.2f})"),
            trained,
            future,
            row["item_fidelity"],
            money(row["cost"], row["currency"]),
            row["requests"],
        ]
        if probes:
            recall, ceiling = row.get("probe_recall"), row.get("probe_ceiling_recall")
            cells.append(f"{_num(recall)} ({_num(ceiling)})")
        rows.append(cells)
    note = (
        "<p>Future-grounded fidelity: of the anchors (paths, ids, names, numbers) the kept turns after a summary "
        "use and only the replaced turns showed, the share the summary holds (pooled, of that many). Item recall: "
        "mean recall of the replaced turns' tool names, paths, errors and identifiers. Costs are the runs' own "
        "(their reports), in the currency given to <code>--currency</code>.</p>"
    )
    return table_html(headers, rows) + note


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _figures_table(outputs: list[dict[str, Any]]) -> str:
    rows = []
    for number, summary in enumerate(outputs, start=1):
        for name, figures in [("all", summary), *summary["by_summarizer"].items()]:
            rows.append(
                [
                    f"{number}: {name}",
                    figures["scored"],
                    figures["future"]["score"],
                    figures["fidelity"]["mean"],
                    *(figures["recall"][kind] for kind in KINDS),
                    figures["unsupported"]["rows"],
                ]
            )
    headers = ["output: summarizer", "rows", "future", "item mean", *(KIND_LABELS[k] for k in KINDS)]
    return table_html([*headers, "rows w/ unsupported"], rows)


def _sources_table(outputs: list[dict[str, Any]], sources: dict[str, str]) -> str:
    rows = []
    for number, summary in enumerate(outputs, start=1):
        for entry in summary["by_source"]:
            share = entry["trainable_share"]
            rows.append(
                [
                    str(number),
                    PathCell(sources[entry["source"]], entry["source"]),
                    entry["rows"],
                    entry["compressed"],
                    entry["future"],
                    entry["fidelity"],
                    f"{entry['trained']:,} of {entry['gpt_turns']:,}" + ("" if share is None else f" ({share:.0%})"),
                ]
            )
    headers = ["output", "input file", "rows", "summaries", "future-grounded", "item recall", "gpt turns trained"]
    return table_html(headers, rows, text_columns=2)


def _comparison_table(comparison: dict[str, Any], tags: list[str], sources: dict[str, str]) -> str:
    largest = sorted(comparison["rows"], key=lambda row: -abs(row["difference"]))[:_ROWS_SHOWN]
    intro = (
        f"<p>{comparison['rows_in_both']:,} rows compressed in both ({esc(tags[0])} first, {esc(tags[1])} second); "
        f"item recall better in the first for {comparison['first_better']:,}, in the second for "
        f"{comparison['second_better']:,}, tied in {comparison['tied']:,}.</p>"
    )
    rows = [
        [
            PathCell(short_label(row["row"], sources), row["row"]),
            row["first"],
            row["second"],
            row["difference"],
            row["future_first"],
            row["future_second"],
        ]
        for row in largest
    ]
    headers = ["row", "item recall, first", "second", "difference", "future-grounded, first", "second"]
    return intro + table_html(headers, rows)


def _side_by_side(tags: list[str], examples: list[list[RowExample]], sources: dict[str, str]) -> str:
    """The first example row that two or more outputs compressed, each output's summary of it."""
    for index in dict.fromkeys(example.index for group in examples for example in group):
        columns = [
            (tag, short_label(example.label, sources), example)
            for tag, group in zip(tags, examples, strict=True)
            for example in [next((example for example in group if example.index == index), None)]
            if example is not None
        ]
        if len(columns) >= 2:
            intro = f"<p>Input row {index:,}, as each output summarized it (its first compressed window).</p>"
            return intro + summaries_side_by_side(columns)
    return ""


def _worst_table(worst: list[dict[str, Any]], sources: dict[str, str]) -> str:
    if not worst:
        return "<p>No scored rows.</p>"
    rows = [
        [
            PathCell(short_label(entry["row"], sources), entry["row"]),
            entry["summarizer"],
            ", ".join(entry["needed_missed"]),
            "; ".join(f"{KIND_LABELS[k]}: {', '.join(v)}" for k, v in entry["missed"].items()) or "nothing",
            ", ".join(entry["unsupported"]) or "",
            entry["future"],
            entry["score"],
        ]
        for entry in worst
    ]
    headers = ["row", "summarizer", "needed later, lost", "items missed", "unsupported", "future", "items"]
    return table_html(headers, rows, text_columns=5)


def _probes_html(
    probes: dict[str, Any], outputs: list[dict[str, Any]], tags: list[str], sources: dict[str, str]
) -> str:
    endpoint = probes["endpoint"]
    rows = []
    for tag, summary in zip(tags, outputs, strict=True):
        asked = summary["probes"]
        rows.append(
            [
                tag,
                asked["rows"],
                asked["questions"],
                asked["recall"],
                asked["ceiling_recall"],
                asked["not_in_context"],
                asked["ceiling_not_in_context"],
                asked["failed"] + asked["ceiling_failed"],
            ]
        )
    headers = ["output", "rows asked", "questions", "recall", "ceiling", "not in context", "(ceiling)", "failed"]
    intro = (
        f"<p>Up to {probes['questions_per_row']} questions a compressed row about values the kept turns use and "
        f"only the replaced turns showed, asked of {esc(endpoint.get('model'))} from the compressed row and from the "
        f"uncompressed one (the ceiling): {endpoint.get('requests', 0):,} requests, "
        f"{endpoint.get('cache_hits', 0):,} answers from the cache, cost "
        f"{esc(money(endpoint.get('cost_usd'), probes['currency']))}. A small model's answers measure the model as "
        "much as the summaries.</p>"
    )
    examples = [
        [
            PathCell(f"{tag}: {short_label(e['row'], sources)}", e["row"]),
            e["question"],
            e["expected"],
            e["answer"],
            e["ceiling_answer"],
        ]
        for tag, summary in zip(tags, outputs, strict=True)
        for e in summary["probes"]["examples"][:3]
    ]
    columns = ["row", "question", "answer", "from the summary", "from the whole row"]
    table = table_html(columns, examples, text_columns=5)
    return intro + table_html(headers, rows) + "<h3>Some questions</h3>" + table
