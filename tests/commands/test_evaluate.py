"""`eval` on one output and on two outputs of the same input, and the HTML pages in a real browser."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl

BUDGET = ["--target-max-tokens", "2500", "--summary-target-tokens", "200"]
SECRET = "ghp_" + "Qw3rTy5uI7oP" * 3


def _compressed(tmp_path: Path, name: str, *extra: str) -> tuple[Path, Path]:
    rows = [make_trajectory(i, steps=3 + i % 6, output_lines=40) for i in range(10)]
    for row in rows:  # in a middle tool turn: summarized, and shown in the report's example row
        row["conversations"][4]["value"] = f"export GITHUB_TOKEN={SECRET}\n" + row["conversations"][4]["value"]
    source = tmp_path / "in.jsonl"
    if not source.exists():
        write_jsonl(source, rows)
    out = tmp_path / name / "out.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--summarizer", "extractive", "-q", *BUDGET, *extra)
    assert result.returncode == 0, result.stderr
    return source, out


def test_eval_scores_every_compressed_row_as_the_run_did(tmp_path: Path) -> None:
    source, out = _compressed(tmp_path, "a")
    result = run_cli("eval", str(out), "--input", str(source), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["outputs"][0]
    metrics = read_jsonl(out.parent / "out.metrics.jsonl")
    compressed = [m for m in metrics if m["was_compressed"]]
    assert summary["rows"] == 10 and summary["compressed"] == summary["scored"] == len(compressed) > 0
    scores = sorted(m["fidelity"]["score"] for m in compressed)
    assert summary["fidelity"]["min"] == scores[0] and sum(summary["fidelity"]["histogram"]) == len(scores)
    assert abs(summary["fidelity"]["mean"] - sum(scores) / len(scores)) < 1e-3
    assert list(summary["by_summarizer"]) == ["extractive"]
    assert summary["compression"]["tokens_after"] < summary["compression"]["tokens_before"]
    assert summary["worst"][0]["score"] == scores[0]
    text = run_cli("eval", str(out), "--input", str(source))
    assert "fidelity mean" in text.stdout and "worst rows:" in text.stdout
    assert SECRET not in text.stdout + result.stdout


def test_eval_side_by_side_compares_row_by_row(tmp_path: Path) -> None:
    source, first = _compressed(tmp_path, "a")
    _, second = _compressed(tmp_path, "b", "--summary-target-tokens", "60")
    result = run_cli("eval", str(first), str(second), "--input", str(source), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    comparison = data["comparison"]
    both = comparison["rows_in_both"]
    assert both > 0 and comparison["first_better"] + comparison["second_better"] + comparison["tied"] == both
    firsts = {
        m["index"]: m["fidelity"]["score"] for m in read_jsonl(first.parent / "out.metrics.jsonl") if m.get("fidelity")
    }
    seconds = {
        m["index"]: m["fidelity"]["score"] for m in read_jsonl(second.parent / "out.metrics.jsonl") if m.get("fidelity")
    }
    # Each column is that output's own score of the row, as its run measured it.
    assert [row["index"] for row in comparison["rows"]] == sorted(set(firsts) & set(seconds))
    for row in comparison["rows"]:
        assert (row["first"], row["second"]) == (firsts[row["index"]], seconds[row["index"]])
        assert row["difference"] == round(row["second"] - row["first"], 4)
    assert [o["output"] for o in data["outputs"]] == [str(first), str(second)]


def test_eval_errors_are_one_line(tmp_path: Path) -> None:
    source, out = _compressed(tmp_path, "a")
    (out.parent / "out.metrics.jsonl").unlink()
    result = run_cli("eval", str(out), "--input", str(source))
    assert result.returncode == 2 and "no metrics file" in result.stderr and "Traceback" not in result.stderr
    three = run_cli("eval", str(out), str(out), str(out), "--input", str(source))
    assert three.returncode == 2 and "at most two outputs" in three.stderr


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(_chromium() is None, reason="no headless browser installed (.ci/run installs chromium)")
def test_reports_render_in_a_real_browser(tmp_path: Path) -> None:
    source, out = _compressed(tmp_path, "a", "--html-report", str(tmp_path / "compress.html"))
    _, second = _compressed(tmp_path, "b", "--summary-target-tokens", "60")
    page = tmp_path / "eval.html"
    assert run_cli("eval", str(out), str(second), "--input", str(source), "--html-report", str(page)).returncode == 0
    browser = _chromium()
    for html_file, sections in (
        (tmp_path / "compress.html", ["Summary fidelity", "Summaries by summarizer", "Why rows", "One row before"]),
        (page, ["Summary fidelity", "Recall by kind", "Row by row", "Worst rows"]),
    ):
        raw = html_file.read_text()
        assert SECRET not in raw
        common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
        dom = subprocess.run(
            [*common, "--dump-dom", html_file.as_uri()], capture_output=True, text=True, timeout=120, check=True
        ).stdout
        for heading in sections:
            assert f"<h2>{heading}" in dom, heading
        assert dom.count('class="bar"') >= 1  # the fidelity histogram has bars
        shot = tmp_path / (html_file.stem + ".png")
        subprocess.run(
            [*common, f"--screenshot={shot}", "--window-size=1200,2400", html_file.as_uri()],
            capture_output=True, timeout=120, check=True,
        )  # fmt: skip
        png = shot.read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 1200
        assert len(png) > 20_000  # a drawn page, not a blank one
    assert "[REDACTED]" in (tmp_path / "compress.html").read_text()  # the example row had the token, masked
