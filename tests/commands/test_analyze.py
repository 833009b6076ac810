"""`trajectory-compressor analyze` against a `compress --dry-run` of the same data, and the HTML reports."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl

TARGET = 3000
SUMMARY_BUDGET = 300
BUDGET = ["--target-max-tokens", str(TARGET), "--summary-target-tokens", str(SUMMARY_BUDGET)]
NOTICE = "\n\nSome of your previous tool responses may be summarized to preserve context."
PROMPT_OVERHEAD_TOKENS = 600  # analyze.py's per-request allowance for the instructions around the turns


def _records() -> list[Any]:
    rows: list[Any] = [make_trajectory(i, steps=1 + (i * 5) % 9) for i in range(12)]
    rows.insert(3, "{broken json")  # rejected: not in the distribution
    rows.append(make_trajectory(50, steps=1, output_lines=400))  # over the target, nothing to compress
    return rows


def _assert_self_contained_html(page: str) -> None:
    assert page.lstrip().lower().startswith("<!doctype html")
    assert "<svg" in page
    # Nothing fetched from anywhere: no remote (or protocol-relative) src/href, stylesheet import or url().
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page, re.IGNORECASE)
    assert not re.search(r"""@import|url\(\s*["']?(?:https?:)?//""", page, re.IGNORECASE)
    assert "http://" not in page and "https://" not in page
    assert "<script src" not in page.lower() and "<link" not in page.lower()


def _cards(page: str) -> dict[str, str]:
    """The headline figures of a report page, label -> value as shown."""
    return {
        label: value
        for value, label in re.findall(r'<div class="value">([^<]*)</div><div class="label">([^<]*)</div>', page)
    }


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("analyze") / "in.jsonl", _records())


@pytest.fixture(scope="module")
def dry_run(data: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    out = data.parent / "dry" / "x.jsonl"
    html = data.parent / "dry" / "report.html"
    result = run_cli("compress", str(data), "-o", str(out), "--dry-run", *BUDGET, "-q", "--html-report", str(html))
    assert result.returncode == 0, result.stderr
    assert not out.exists()
    return read_jsonl(out.parent / "x.metrics.jsonl"), json.loads((out.parent / "x.report.json").read_text())


def test_analyze_json_agrees_with_a_dry_run(data: Path, dry_run: tuple[list[dict[str, Any]], dict], counter) -> None:
    html = data.parent / "analysis" / "page.html"
    result = run_cli(
        "analyze", str(data), *BUDGET, "--json", "--price-in", "0.3", "--price-out", "2.5", "--html-report", str(html)
    )
    assert result.returncode == 0, result.stderr
    analysis = json.loads(result.stdout)
    metrics, report = dry_run
    valid = [m for m in metrics if not m["rejected"]]
    planned = [m for m in valid if m["compression_region"]]
    assert analysis["rows"] == len(_records()) == len(metrics)
    assert analysis["rejected"] == 1 == report["rows"]["rejected"]
    assert analysis["target_max_tokens"] == TARGET
    assert analysis["over_target"] == sum(m["original_tokens"] > TARGET for m in valid)
    assert analysis["would_compress"] == len(planned) == analysis["summary_requests"]
    assert 0 < analysis["would_compress"] < analysis["over_target"], "the data must tell the two apart"
    assert analysis["would_stay_over_limit"] == sum(m["still_over_limit"] for m in valid) >= 1
    assert analysis["tokens_total"] == sum(m["original_tokens"] for m in valid) == report["tokens"]["before"]
    assert analysis["tokens_after_estimate"] == sum(m.get("planned_tokens", m["original_tokens"]) for m in valid)
    # Exact percentiles (linear interpolation) of the per-row totals.
    import numpy as np

    totals = [m["original_tokens"] for m in valid]
    for name, value in analysis["percentiles"].items():
        assert value == round(float(np.percentile(totals, float(name[1:])))), name
    assert analysis["percentiles"]["p100"] == max(totals)
    # Requests: each region's tokens plus the prompt's overhead in, the summary budget out.
    notice = counter.count(NOTICE)
    regions = sum(m["original_tokens"] - m["planned_tokens"] + m["summary_tokens"] + notice for m in planned)
    assert analysis["summary_prompt_tokens"] == regions + PROMPT_OVERHEAD_TOKENS * len(planned)
    assert analysis["summary_completion_tokens"] == SUMMARY_BUDGET * len(planned)
    expected_cost = (analysis["summary_prompt_tokens"] * 0.3 + analysis["summary_completion_tokens"] * 2.5) / 1e6
    assert analysis["estimated_cost"] == pytest.approx(expected_cost)
    assert analysis["estimated_cost_batch"] == pytest.approx(expected_cost / 2)  # --batch-discount 0.5
    page = html.read_text(encoding="utf-8")
    _assert_self_contained_html(page)
    cards = _cards(page)
    assert cards["rows"] == str(analysis["rows"])
    assert cards["would compress"] == str(analysis["would_compress"])
    assert cards["tokens"] == f"{analysis['tokens_total']:,}"
    assert "estimated cost" in cards
    assert cards["estimated cost with --batch"] == str(round(analysis["estimated_cost_batch"], 2))


def test_analyze_prints_percentiles_and_a_histogram(data: Path, dry_run: tuple[list[dict[str, Any]], dict]) -> None:
    result = run_cli("analyze", str(data), *BUDGET)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    metrics, _ = dry_run
    valid = [m for m in metrics if not m["rejected"]]
    assert f"rows: {len(metrics)} (1 rejected)" in text
    assert re.search(r"p50 [\d,]+, p90 [\d,]+, p95 [\d,]+, p99 [\d,]+, p100 [\d,]+", text)
    assert f"p100 {max(m['original_tokens'] for m in valid):,}" in text
    assert f"summarize {sum(bool(m['compression_region']) for m in valid)} rows" in text
    assert "at the given prices" not in text, "no prices, no cost"
    bars = [line for line in text.splitlines() if "│" in line]
    assert len(bars) >= 5
    assert sum(int(line.rsplit(maxsplit=1)[-1]) for line in bars) == len(valid), "every counted row in one bar"


def test_compress_html_report_is_self_contained(data: Path, dry_run: tuple[list[dict[str, Any]], dict]) -> None:
    page = (data.parent / "dry" / "report.html").read_text(encoding="utf-8")
    _assert_self_contained_html(page)
    _, report = dry_run
    cards = _cards(page)
    assert "compress report" in page
    assert cards["rows"] == str(report["rows"]["selected"])
    assert cards["tokens before"] == f"{report['tokens']['before']:,}"
    assert cards["still over limit"] == str(report["rows"]["still_over_limit"])


def test_analyze_honours_sample_percent(data: Path) -> None:
    from trajectory_compressor.read.select import sampled

    result = run_cli("analyze", str(data), *BUDGET, "--json", "--sample-percent", "40", "--seed", "7")
    assert result.returncode == 0, result.stderr
    expected = sum(sampled(index, 40, 7) for index in range(len(_records())))
    assert 0 < expected < len(_records())
    assert json.loads(result.stdout)["rows"] == expected


def test_the_pruning_estimate_agrees_with_a_pruning_dry_run(tmp_path: Path) -> None:
    """`analyze` always says what `--prune-tool-outputs` would do; with the flag its plan is the
    pruned one. Both agree with `compress --dry-run --prune-tool-outputs` row for row."""
    from tests.run.test_pruning import cut_off
    from trajectory_compressor.run.row.finisher import FITTED_BY_PRUNING

    # Runs cut off after parallel calls: results no gpt turn answers, the ones pruning may clear;
    # one in three has a long answered part before them, which pruning cannot fit.
    rows = [cut_off(make_trajectory(i, steps=3 + (i * 7) % 30, output_lines=20 + i % 4 * 10)) for i in range(14)]
    for i in range(0, 14, 3):
        long_run = make_trajectory(i, steps=30, output_lines=30)["conversations"][:-1]  # ends on a result
        rows[i]["conversations"] = long_run + rows[i]["conversations"][5:]
    data = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "pruned" / "x.jsonl"
    budget = [*BUDGET, "--protect-last-n-turns", "0"]
    result = run_cli("compress", str(data), "-o", str(out), "--dry-run", "--prune-tool-outputs", *budget, "-q")
    assert result.returncode == 0, result.stderr
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    fitted = sum(m["reason"] == FITTED_BY_PRUNING for m in metrics)
    pruned = [m for m in metrics if m.get("pruned_turns")]
    assert 0 < fitted < len(pruned), "the data must hold rows pruning fits and rows it does not"
    plain, flagged = (
        json.loads(run_cli("analyze", str(data), *budget, "--json", *flag).stdout)
        for flag in ([], ["--prune-tool-outputs"])
    )
    for analysis in (plain, flagged):
        estimate = analysis["pruning"]
        assert estimate["rows_fitted_by_pruning"] == fitted and estimate["rows_pruned"] == len(pruned)
        assert estimate["share_of_rows_over_target"] == round(fitted / analysis["over_target"], 4)
        assert estimate["turns_pruned"] == sum(m["pruned_turns"] for m in pruned)
        assert estimate["tokens_cleared"] == sum(m["pruned_tokens"] for m in pruned)
    estimate = plain["pruning"]
    # With the flag, the plan is the pruned one, as the dry run plans it ...
    assert flagged["would_compress"] == sum(bool(m["compression_region"]) for m in metrics)
    assert flagged["tokens_after_estimate"] == sum(m.get("planned_tokens", m["compressed_tokens"]) for m in metrics)
    # ... and what it spares is the difference between the two plans.
    assert plain["would_compress"] - flagged["would_compress"] == estimate["summary_requests_saved"] == fitted
    assert plain["summary_prompt_tokens"] - flagged["summary_prompt_tokens"] == estimate["summary_prompt_tokens_saved"]
    completion_saved = plain["summary_completion_tokens"] - flagged["summary_completion_tokens"]
    assert completion_saved == estimate["summary_completion_tokens_saved"] == fitted * SUMMARY_BUDGET
    assert flagged["gpt_turns_trainable"] - plain["gpt_turns_trainable"] == estimate["gpt_turns_kept_gained"] > 0
    text = run_cli("analyze", str(data), *budget).stdout
    assert f"{fitted} of {plain['over_target']} rows over the target fit with no summary" in text
