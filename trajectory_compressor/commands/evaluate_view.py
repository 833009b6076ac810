"""The terminal view of an `eval` result: one table of every output, then each output's details."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trajectory_compressor.messages import quoted
from trajectory_compressor.summarize.fidelity import KINDS
from trajectory_compressor.summarize.fidelity.score import KIND_LABELS
from trajectory_compressor.write.html_parts import short_names

_DIFFERENCES_SHOWN = 10
_SOURCES_SHOWN = 20


def render_evaluation(result: dict[str, Any]) -> str:
    """Plain text for a person at a terminal; `--json` gives the same figures as data."""
    outputs = result["outputs"]
    names = short_names([summary["output"] for summary in outputs])
    blocks = [comparison_table(result["table"], names)]
    blocks += [_output_block(n, summary, names) for n, summary in enumerate(outputs, start=1)]
    comparison = result.get("comparison")
    if comparison is not None:
        blocks.append(_comparison_block(comparison, outputs))
    if result.get("probes"):
        blocks.append(_probes_block(result["probes"], outputs))
    return "\n\n".join(blocks)


def comparison_table(table: Sequence[dict[str, Any]], names: dict[str, str]) -> str:
    """Every output on one line: what it keeps, trains, remembers and costs."""
    probes = any("probe_recall" in row for row in table)
    headers = ["", "output", "records", "tokens kept", "gpt turns trained", "future fidelity", "item fidelity", "cost"]
    headers += ["requests"] + (["probe recall (ceiling)"] if probes else [])
    lines = []
    for n, row in enumerate(table, start=1):
        cells = [
            f"{n}",
            names.get(row["output"], row["output"]),
            f"{row['records']:,}",
            _ratio(row["tokens_kept"]),
            _share(row["gpt_turns_trained"], row["gpt_turns"]),
            "-" if row["future_fidelity"] is None else f"{row['future_fidelity']:.2f} of {row['future_anchors']:,}",
            _ratio(row["item_fidelity"], 2),
            money(row["cost"], row["currency"]),
            "-" if row["requests"] is None else f"{row['requests']:,}",
        ]
        if probes:
            cells.append(f"{_ratio(row.get('probe_recall'), 2)} ({_ratio(row.get('probe_ceiling_recall'), 2)})")
        lines.append(cells)
    widths = [max(len(str(cells[i])) for cells in [headers, *lines]) for i in range(len(headers))]
    text = [
        "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
        for cells in [headers, *lines]
    ]
    text.append(
        "future fidelity: share of the anchors the kept turns after a summary need that it holds (pooled, "
        "of that many); item fidelity: mean recall of the replaced turns' tool names, paths, errors, identifiers"
    )
    return "\n".join(line.rstrip() for line in text)


def money(amount: float | None, currency: str) -> str:
    """`0.42 USD`, or `-` without prices."""
    if amount is None:
        return "-"
    if amount == 0:
        return f"0 {currency}"
    return f"{amount:,.4f} {currency}" if amount < 1 else f"{amount:,.2f} {currency}"


def _ratio(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _share(part: int, whole: int) -> str:
    return f"{part:,} of {whole:,} ({part / whole:.0%})" if whole else "-"


def _output_block(number: int, summary: dict[str, Any], names: dict[str, str]) -> str:
    compression, future = summary["compression"], summary["future"]
    ratio = compression["ratio"]
    windows = summary.get("windows")
    split = f", {windows['rows_split']:,} split into {windows['windows']:,} windows" if windows else ""
    lines = [
        f"{number}: {quoted(summary['output'])}: {summary['rows']:,} rows{split}, {summary['compressed']:,} "
        f"{'windows' if windows else 'rows'} compressed, {summary['scored']:,} scored; tokens "
        f"{compression['tokens_before']:,} -> {compression['tokens_after']:,}"
        + (f" (ratio {ratio:.3f})" if ratio is not None else ""),
        "  " + future_line(future),
        "  " + figures_line(summary),
    ]
    groups = summary["by_summarizer"]
    if len(groups) > 1:
        lines.append("  by summarizer:")
        lines.extend(
            f"    {name}: {future_line(figures['future'])}; {figures_line(figures)}" for name, figures in groups.items()
        )
    sources = summary["by_source"]
    if len(sources) > 1:
        shown = short_names([entry["source"] for entry in sources])
        lines.append("  by input file:")
        lines.extend("    " + _source_line(entry, shown) for entry in sources[:_SOURCES_SHOWN])
    if future["rows"]:
        lines.append("  future-grounded fidelity histogram (rows whose kept turns needed anchors):")
        lines.extend("    " + line for line in fidelity_bars(future["histogram"]))
    if summary["worst"]:
        lines.append("  worst rows:")
        lines.extend("    " + worst_line(entry) for entry in summary["worst"])
    for problem in summary["problems"]:
        lines.append(f"  warning: {problem}")
    return "\n".join(lines)


def future_line(future: dict[str, Any]) -> str:
    """ "future-grounded fidelity 0.21: 503 of 2,345 anchors the kept turns need, over 45 rows" """
    if future["score"] is None:
        return "future-grounded fidelity: no kept turn needed anything the summaries replaced"
    return (
        f"future-grounded fidelity {future['score']:.2f}: {future['kept']:,} of {future['anchors']:,} anchors the "
        f"kept turns need, over {future['rows']:,} summaries"
    )


def figures_line(figures: dict[str, Any]) -> str:
    """ "item fidelity mean 0.71 (p10 0.52, median 0.74); recall: tool names 0.99 of 230, ...; unsupported: ..." """
    fidelity = figures["fidelity"]
    if fidelity["mean"] is None:
        head = f"{figures['scored']} rows, no salient items to score"
    else:
        head = (
            f"item fidelity mean {fidelity['mean']:.2f} (p10 {fidelity['p10']:.2f}, median {fidelity['median']:.2f}, "
            f"min {fidelity['min']:.2f})"
        )
    recalls = [
        f"{KIND_LABELS[kind]} {figures['recall'][kind]:.2f} of {figures['items'][kind]:,}"
        for kind in KINDS
        if figures["recall"][kind] is not None
    ]
    unsupported = figures["unsupported"]
    tail = f"; unsupported items in {unsupported['rows']} rows ({unsupported['items']})" if unsupported["rows"] else ""
    return head + ("; recall: " + ", ".join(recalls) if recalls else "") + tail


def _source_line(entry: dict[str, Any], names: dict[str, str]) -> str:
    future = "-" if entry["future"] is None else f"{entry['future']:.2f}"
    fidelity = "-" if entry["fidelity"] is None else f"{entry['fidelity']:.2f}"
    return (
        f"{names[entry['source']]}: {entry['rows']:,} rows, {entry['compressed']:,} summaries, future fidelity "
        f"{future}, item fidelity {fidelity}, gpt turns trained {_share(entry['trained'], entry['gpt_turns'])}"
    )


def worst_line(entry: dict[str, Any]) -> str:
    future = "-" if entry["future"] is None else f"{entry['future']:.2f}"
    score = "-" if entry["score"] is None else f"{entry['score']:.2f}"
    needed = f" needed later but lost: {', '.join(entry['needed_missed'])};" if entry["needed_missed"] else ""
    missed = "; ".join(f"{KIND_LABELS[kind]}: {', '.join(items)}" for kind, items in entry["missed"].items())
    unsupported = f"; unsupported: {', '.join(entry['unsupported'])}" if entry["unsupported"] else ""
    return (
        f"future {future}, items {score} {entry['row']} ({entry['summarizer']}){needed} "
        f"missed {missed or 'nothing'}{unsupported}"
    )


def _comparison_block(comparison: dict[str, Any], outputs: list[dict[str, Any]]) -> str:
    first, second = quoted(outputs[0]["output"]), quoted(outputs[1]["output"])
    mean = comparison["mean_difference"]
    lines = [
        f"side by side ({first} = first, {second} = second): {comparison['rows_in_both']:,} rows compressed in both",
        f"  item fidelity: first better: {comparison['first_better']:,}, second better: "
        f"{comparison['second_better']:,}, tied: {comparison['tied']:,}"
        + (f"; mean difference (second - first) {mean:+.3f}" if mean is not None else ""),
    ]
    largest = sorted(comparison["rows"], key=lambda row: -abs(row["difference"]))[:_DIFFERENCES_SHOWN]
    if largest:
        lines.append("  largest differences:")
        lines.extend(
            f"    {row['row']}: {row['first']:.2f} vs {row['second']:.2f} ({row['difference']:+.2f})" for row in largest
        )
    return "\n".join(lines)


def _probes_block(probes: dict[str, Any], outputs: list[dict[str, Any]]) -> str:
    endpoint = probes["endpoint"]
    cost = money(endpoint.get("cost_usd"), probes["currency"])
    lines = [
        f"probes ({endpoint.get('model')}, up to {probes['questions_per_row']} questions a row; "
        f"{endpoint.get('requests', 0):,} requests, {endpoint.get('cache_hits', 0):,} answers from the cache, "
        f"cost {cost}):"
    ]
    for n, summary in enumerate(outputs, start=1):
        asked = summary["probes"]
        recall, ceiling = _ratio(asked["recall"], 2), _ratio(asked["ceiling_recall"], 2)
        lines.append(
            f"  {n}: recall {recall} from the compressed rows, {ceiling} from the uncompressed ones (the ceiling); "
            f"{asked['questions']:,} questions about {asked['rows']:,} rows, {asked['not_in_context']:,} answered "
            f"NOT IN CONTEXT ({asked['ceiling_not_in_context']:,} with the whole row), {asked['failed']:,} failed"
        )
    return "\n".join(lines)


def fidelity_bars(counts: list[int], width: int = 40) -> list[str]:
    """ "0.7-0.8 │██████▌ 12": one line per tenth of the score."""
    peak = max(counts, default=0) or 1
    lines = []
    for i, count in enumerate(counts):
        bar = "█" * round(count / peak * width) or ("▏" if count else "")
        lines.append(f"{i / len(counts):.1f}-{(i + 1) / len(counts):.1f} │{bar:<{width}} {count:,}")
    return lines
