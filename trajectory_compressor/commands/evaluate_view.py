"""The terminal view of an `eval` result: figures per output, the worst rows, the comparison."""

from __future__ import annotations

from typing import Any

from trajectory_compressor.messages import quoted
from trajectory_compressor.summarize.fidelity import KINDS
from trajectory_compressor.summarize.fidelity.score import KIND_LABELS

_DIFFERENCES_SHOWN = 10


def render_evaluation(result: dict[str, Any]) -> str:
    """Plain text for a person at a terminal; `--json` gives the same figures as data."""
    blocks = [_output_block(summary) for summary in result["outputs"]]
    comparison = result.get("comparison")
    if comparison is not None:
        blocks.append(_comparison_block(comparison, result["outputs"]))
    return "\n\n".join(blocks)


def _output_block(summary: dict[str, Any]) -> str:
    compression = summary["compression"]
    ratio = compression["ratio"]
    lines = [
        f"{quoted(summary['output'])}: {summary['rows']:,} rows, {summary['compressed']:,} compressed, "
        f"{summary['scored']:,} scored; tokens {compression['tokens_before']:,} -> {compression['tokens_after']:,}"
        + (f" (ratio {ratio:.3f})" if ratio is not None else ""),
        "  " + figures_line(summary),
    ]
    groups = summary["by_summarizer"]
    if len(groups) > 1:
        lines.append("  by summarizer:")
        lines.extend(f"    {name}: {figures_line(figures)}" for name, figures in groups.items())
    if summary["scored"]:
        lines.append("  fidelity histogram:")
        lines.extend("    " + line for line in fidelity_bars(summary["fidelity"]["histogram"]))
    if summary["worst"]:
        lines.append("  worst rows:")
        lines.extend("    " + worst_line(entry) for entry in summary["worst"])
    for problem in summary["problems"]:
        lines.append(f"  warning: {problem}")
    return "\n".join(lines)


def figures_line(figures: dict[str, Any]) -> str:
    """ "fidelity mean 0.71 (p10 0.52, median 0.74); recall: tool names 0.99 of 230, ...; unsupported: ..." """
    fidelity = figures["fidelity"]
    if fidelity["mean"] is None:
        head = f"{figures['scored']} rows, no salient items to score"
    else:
        head = (
            f"{figures['scored']} rows, fidelity mean {fidelity['mean']:.2f} "
            f"(p10 {fidelity['p10']:.2f}, median {fidelity['median']:.2f}, min {fidelity['min']:.2f})"
        )
    recalls = [
        f"{KIND_LABELS[kind]} {figures['recall'][kind]:.2f} of {figures['items'][kind]:,}"
        for kind in KINDS
        if figures["recall"][kind] is not None
    ]
    unsupported = figures["unsupported"]
    tail = f"; unsupported items in {unsupported['rows']} rows ({unsupported['items']})" if unsupported["rows"] else ""
    return head + ("; recall: " + ", ".join(recalls) if recalls else "") + tail


def worst_line(entry: dict[str, Any]) -> str:
    missed = "; ".join(f"{KIND_LABELS[kind]}: {', '.join(items)}" for kind, items in entry["missed"].items())
    unsupported = f"; unsupported: {', '.join(entry['unsupported'])}" if entry["unsupported"] else ""
    return f"{entry['score']:.2f} {entry['row']} ({entry['summarizer']}) missed {missed or 'nothing'}{unsupported}"


def _comparison_block(comparison: dict[str, Any], outputs: list[dict[str, Any]]) -> str:
    first, second = quoted(outputs[0]["output"]), quoted(outputs[1]["output"])
    mean = comparison["mean_difference"]
    lines = [
        f"side by side ({first} = first, {second} = second): {comparison['rows_in_both']:,} rows compressed in both",
        f"  first better: {comparison['first_better']:,}, second better: {comparison['second_better']:,}, "
        f"tied: {comparison['tied']:,}"
        + (f"; mean difference (second - first) {mean:+.3f}" if mean is not None else ""),
    ]
    largest = sorted(comparison["rows"], key=lambda row: -abs(row["difference"]))[:_DIFFERENCES_SHOWN]
    if largest:
        lines.append("  largest differences:")
        lines.extend(
            f"    {row['row']}: {row['first']:.2f} vs {row['second']:.2f} ({row['difference']:+.2f})" for row in largest
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
