"""The `eval --html-report` page: fidelity of one output, or of two side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trajectory_compressor.summarize.fidelity import KINDS
from trajectory_compressor.summarize.fidelity.score import KIND_LABELS
from trajectory_compressor.write.html_parts import fidelity_svg, table_html
from trajectory_compressor.write.html_report import render_page
from trajectory_compressor.write.run_files import OutputError

_ROWS_SHOWN = 20


def evaluation_page(result: dict[str, Any]) -> str:
    outputs = result["outputs"]
    headline: dict[str, str | int | float] = {}
    for number, summary in enumerate(outputs, start=1):
        label = f" ({number})" if len(outputs) > 1 else ""
        headline[f"scored rows{label}"] = summary["scored"]
        mean = summary["fidelity"]["mean"]
        headline[f"mean fidelity{label}"] = "–" if mean is None else mean
        ratio = summary["compression"]["ratio"]
        headline[f"token ratio{label}"] = "–" if ratio is None else ratio
    series = [(f"{n}: {Path(s['output']).name}", s["fidelity"]["histogram"]) for n, s in enumerate(outputs, 1)]
    sections = [
        ("Summary fidelity", fidelity_svg(series)),
        ("Recall by kind and summarizer", _figures_table(outputs)),
    ]
    comparison = result.get("comparison")
    if comparison is not None:
        sections.append(("Row by row (largest differences)", _comparison_table(comparison)))
    for summary in outputs:
        sections.append((f"Worst rows of {summary['output']}", _worst_table(summary["worst"])))
    return render_page("trajectory_compressor: summary fidelity", headline, sections)


def write_evaluation_html(path: Path, result: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(evaluation_page(result), encoding="utf-8")
    except OSError as exc:
        raise OutputError(f"cannot write the HTML report {path}: {exc.strerror or exc}") from None


def _figures_table(outputs: list[dict[str, Any]]) -> str:
    rows = []
    for number, summary in enumerate(outputs, start=1):
        for name, figures in [("all", summary), *summary["by_summarizer"].items()]:
            rows.append(
                [
                    f"{number}: {name}",
                    figures["scored"],
                    figures["fidelity"]["mean"],
                    *(figures["recall"][kind] for kind in KINDS),
                    figures["unsupported"]["rows"],
                ]
            )
    headers = ["output: summarizer", "rows", "mean", *(KIND_LABELS[k] for k in KINDS), "rows w/ unsupported"]
    return table_html(headers, rows)


def _comparison_table(comparison: dict[str, Any]) -> str:
    largest = sorted(comparison["rows"], key=lambda row: -abs(row["difference"]))[:_ROWS_SHOWN]
    intro = (
        f"<p>{comparison['rows_in_both']:,} rows compressed in both: first better in "
        f"{comparison['first_better']:,}, second better in {comparison['second_better']:,}, "
        f"tied in {comparison['tied']:,}.</p>"
    )
    rows = [[row["row"], row["first"], row["second"], row["difference"]] for row in largest]
    return intro + table_html(["row", "first", "second", "difference"], rows)


def _worst_table(worst: list[dict[str, Any]]) -> str:
    if not worst:
        return "<p>No scored rows.</p>"
    rows = [
        [
            entry["row"],
            entry["summarizer"],
            "; ".join(f"{KIND_LABELS[k]}: {', '.join(v)}" for k, v in entry["missed"].items()) or "nothing",
            ", ".join(entry["unsupported"]) or "",
            entry["score"],
        ]
        for entry in worst
    ]
    return table_html(["row", "summarizer", "missed", "unsupported", "fidelity"], rows, text_columns=4)
