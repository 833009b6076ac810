"""The command line end to end: outputs, accounting, bad input, exit codes, config files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.conftest import SAMPLE, make_trajectory, read_jsonl, run_cli, write_jsonl

SMALL = ["--target-max-tokens", "2500", "--summary-target-tokens", "200", "-q"]


def _rows(tmp_path: Path, count: int = 8) -> Path:
    rows = [make_trajectory(i, steps=4 + i * 2) for i in range(count)]
    return write_jsonl(tmp_path / "in.jsonl", rows)


def test_sample_data_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli("compress", str(SAMPLE), "-o", str(out), "--summarizer", "extractive", "-q")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    inputs = read_jsonl(SAMPLE)
    outputs = read_jsonl(out)
    metrics = read_jsonl(tmp_path / "out" / "x.metrics.jsonl")
    report = json.loads((tmp_path / "out" / "x.report.json").read_text())
    over = read_jsonl(tmp_path / "out" / "x.over_limit.jsonl")
    # Every record exactly once, in order, other keys unchanged.
    assert [row["id"] for row in outputs] == [row["id"] for row in inputs]
    for before, after in zip(inputs, outputs, strict=False):
        assert {k: v for k, v in before.items() if k != "conversations"} == {
            k: v for k, v in after.items() if k != "conversations"
        }
    assert [m["index"] for m in metrics] == list(range(len(inputs)))
    assert report["status"] == "completed"
    assert report["rows"]["selected"] == len(inputs) == report["rows"]["written"]
    compressed = [m for m in metrics if m["was_compressed"]]
    assert compressed, "the sample data must have rows over the default budget"
    assert report["rows"]["compressed"] == len(compressed)
    assert report["tokens"]["before"] == sum(m["original_tokens"] for m in metrics)
    assert report["tokens"]["after"] == sum(m["compressed_tokens"] for m in metrics)
    assert [o["index"] for o in over] == [m["index"] for m in metrics if m["still_over_limit"]]
    for m in compressed:
        row = outputs[m["index"]]
        turns = row["conversations"]
        region = m["compression_region"]
        summary = turns[region["start_idx"]]
        assert summary["from"] == "human" and summary["value"].startswith("[CONTEXT SUMMARY]:")
        assert summary["value"].count("[CONTEXT SUMMARY]:") == 1
        assert m["summarizer"] == "extractive"
        assert m["summary_tokens"] <= 750
        assert len(turns) == m["compressed_turns"]
        assert m["tokens_saved"] == m["original_tokens"] - m["compressed_tokens"] > 0
        # The protected tail is verbatim.
        assert turns[-4:] == inputs[m["index"]]["conversations"][-4:]
        if not m["still_over_limit"]:
            assert m["compressed_tokens"] <= 15250


def test_compressed_sizes_are_exact_with_the_real_tokenizer(tmp_path: Path, counter) -> None:
    source = _rows(tmp_path)
    out = tmp_path / "o.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--summarizer", "extractive", *SMALL)
    assert result.returncode == 0, result.stderr
    metrics = read_jsonl(tmp_path / "o.metrics.jsonl")
    for row, m in zip(read_jsonl(out), metrics, strict=False):
        values = [turn["value"] for turn in row["conversations"]]
        assert sum(counter.count_many(values)) == m["compressed_tokens"]
    assert any(m["was_compressed"] for m in metrics)


def test_unchanged_rows_are_written_byte_for_byte(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1,   "conversations": [{"from": "human", "value": "hi \\u00e9"}], "z": 1.50}\n')
    out = tmp_path / "o.jsonl"
    assert run_cli("compress", str(source), "-o", str(out), "-q").returncode == 0
    assert out.read_bytes() == source.read_bytes()


def test_bad_input_is_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    good = make_trajectory(0, steps=2)
    lines = [
        good,
        "{not json",
        {"id": "no-conv"},
        {"conversations": [{"value": "missing from"}]},
        {"conversations": [{"from": "robot", "value": "x"}]},
        {"conversations": [{"from": "human", "value": 42}]},
        "[1, 2]",
        make_trajectory(1, steps=2),
    ]
    source = write_jsonl(tmp_path / "bad.jsonl", lines)
    out = tmp_path / "o.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--summarizer", "extractive")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    for line in range(2, 8):
        assert f"bad.jsonl:{line}:" in result.stderr
    rejects = read_jsonl(tmp_path / "o.rejects.jsonl")
    assert [r["line"] for r in rejects] == [2, 3, 4, 5, 6, 7]
    assert all(r["file"].endswith("bad.jsonl") and r["error"] for r in rejects)
    assert rejects[0]["raw"] == "{not json"
    assert "unknown role 'robot'" in rejects[3]["error"]
    assert "turn 0" in rejects[4]["error"]
    report = json.loads((tmp_path / "o.report.json").read_text())
    assert report["rows"]["rejected"] == 6
    metrics = read_jsonl(tmp_path / "o.metrics.jsonl")
    assert len(metrics) == len(lines)
    assert [m["rejected"] for m in metrics] == [False, True, True, True, True, True, True, False]
    # Valid JSON goes out unchanged (flagged in metrics and rejects); invalid JSON cannot.
    outputs = read_jsonl(out)
    assert outputs[0]["id"] == "row-0000" and outputs[-1]["id"] == "row-0001"
    assert len(outputs) == len(lines) - 1


def test_strict_stops_at_the_first_bad_record(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "bad.jsonl", [make_trajectory(0, steps=1), "{oops", make_trajectory(1)])
    result = run_cli("compress", str(source), "-o", str(tmp_path / "o.jsonl"), "--strict", "-q")
    assert result.returncode == 1
    assert result.stderr.count("bad.jsonl:2") == 1, result.stderr  # said once, as the error, not a warning too
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "o.jsonl").exists(), "a stopped run never leaves an output that looks complete"
    # The message says how to go on: with the record fixed, the input differs from the run that stopped.
    assert "fix the record, then re-run with --no-resume" in result.stderr
    source.write_text(source.read_text().replace("{oops\n", ""))
    fixed = run_cli("compress", str(source), "-o", str(tmp_path / "o.jsonl"), "--strict", "-q", "--no-resume")
    assert fixed.returncode == 0, fixed.stderr
    assert len(read_jsonl(tmp_path / "o.jsonl")) == 2


def test_quiet_still_reports_bad_records_with_file_and_line(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "bad.jsonl", [make_trajectory(0, steps=1), "{oops", make_trajectory(1)])
    result = run_cli("compress", str(source), "-o", str(tmp_path / "o.jsonl"), "-q")
    assert result.returncode == 0
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: {source}:2: ")
    assert "status:" not in result.stderr, "-q leaves out the run summary"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.jsonl"], "input not found"),
        (["IN", "--tokenizer", "/nonexistent/tokenizer.json"], "cannot load tokenizer"),
        (["IN", "--target-max-tokens", "100", "--summary-target-tokens", "200"], "summary_target_tokens"),
        (["IN", "--summarizer", "llm"], "needs an endpoint"),
        (["IN", "--config", "CONFIG"], "unknown key"),
        (["IN", "--extra-body", "[1]"], "JSON object"),
    ],
)
def test_usage_errors_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    source = _rows(tmp_path, 1)
    config = tmp_path / "c.yaml"
    config.write_text("compression:\n  target_max_tokenz: 5\n")
    args = [str(source) if a == "IN" else str(config) if a == "CONFIG" else a for a in args]
    result = run_cli("compress", *args, "-o", str(tmp_path / "o.jsonl"), env={"OPENAI_BASE_URL": ""})
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert message in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_fail_on_over_limit_exits_3(tmp_path: Path) -> None:
    # Protected turns alone are over the budget: the row stays over the limit.
    row = make_trajectory(0, steps=1, output_lines=400)
    source = write_jsonl(tmp_path / "in.jsonl", [row])
    out = tmp_path / "o.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--fail-on-over-limit", *SMALL)
    assert result.returncode == 3
    over = read_jsonl(tmp_path / "o.over_limit.jsonl")
    assert over[0]["reason"] == "protected turns alone exceed the budget"
    assert out.exists(), "rows over the limit are still written (kept by default)"


def test_dry_run_writes_metrics_and_report_but_no_dataset(tmp_path: Path) -> None:
    source = _rows(tmp_path)
    out = tmp_path / "o.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--dry-run", *SMALL)
    assert result.returncode == 0, result.stderr
    assert not out.exists()
    metrics = read_jsonl(tmp_path / "o.metrics.jsonl")
    assert len(metrics) == 8
    planned = [m for m in metrics if m["compression_region"]]
    assert planned and all(not m["was_compressed"] and m["summarizer"] is None for m in planned)
    assert all(m["planned_tokens"] <= 2500 or m["still_over_limit"] for m in planned)


def test_a_dry_run_onto_a_finished_runs_dataset_is_refused_and_with_overwrite_keeps_the_dataset(tmp_path: Path) -> None:
    """A dry run writes no dataset, but it replaced the metrics and report of the finished run
    beside it: the dataset was left described by a plan's report. Refused (exit 2, nothing
    touched) unless --overwrite, which replaces the metrics and report and keeps the dataset."""
    source = _rows(tmp_path)
    out = tmp_path / "o.jsonl"
    assert run_cli("compress", str(source), "-o", str(out), *SMALL).returncode == 0
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir() if path.is_file()}
    refused = run_cli("compress", str(source), "-o", str(out), "--dry-run", *SMALL)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.strip().splitlines() == [
        f"error: {out} holds a dataset: a dry run writes none, and its metrics and report would replace the ones "
        "describing it; choose another -o for the dry run, or pass --overwrite (the dataset is kept)"
    ]
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir() if path.is_file()} == before
    again = run_cli("compress", str(source), "-o", str(out), "--dry-run", "--overwrite", *SMALL)
    assert again.returncode == 0, again.stderr
    assert out.read_bytes() == before["o.jsonl"]
    report = json.loads((tmp_path / "o.report.json").read_text())
    assert report["settings"]["dry_run"] and "data" not in report["outputs"]


def test_dry_run_summary_labels_planned_figures_and_names_only_files_written(tmp_path: Path) -> None:
    """Issue 20 F18: it printed `data: o.jsonl` (never written) and `tokens -> N (saved ...)` as if done."""
    source = _rows(tmp_path)
    out = tmp_path / "o.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--dry-run", *SMALL[:-1])  # not quiet
    assert result.returncode == 0, result.stderr
    metrics = read_jsonl(tmp_path / "o.metrics.jsonl")
    planned = sum(1 for m in metrics if m["compression_region"])
    lines = result.stderr.splitlines()
    assert "status: completed (dry run: planned only, no summaries asked for, no dataset written)" in lines
    assert any(line.startswith("rows: 8 processed, ") and f"{planned} planned to compress" in line for line in lines)
    (tokens,) = [line for line in lines if line.startswith("tokens")]
    assert tokens.startswith("tokens (planned): ") and "would save" in tokens
    named = [
        line.split(": ", 1)[1]
        for line in lines
        if line.split(":")[0] in ("data", "metrics", "report", "over_limit", "rejects")
    ]
    assert named and all(Path(path).exists() for path in named), named
    report = json.loads((tmp_path / "o.report.json").read_text())
    assert "data" not in report["outputs"] and report["rows"]["planned"] == planned
    assert report["rows"]["unchanged_over_target"] == sum(
        1 for m in metrics if not m["compression_region"] and not m["skipped_under_target"] and not m["rejected"]
    )


def test_reference_yaml_config_and_flag_override(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "tokenizer:\n  name: null\ncompression:\n  target_max_tokens: 2500\n  summary_target_tokens: 200\n"
        "protected_turns:\n  last_n_turns: 2\nsummarization:\n  model: google/gemini-3-flash-preview\n"
        "  base_url: null\n  retry_delay: 2\noutput:\n  summary_notice_text: ' [NOTE]'\n"
        "processing:\n  max_concurrent_requests: 8\nmetrics:\n  enabled: true\n"
    )
    source = _rows(tmp_path)
    out = tmp_path / "o.jsonl"
    result = run_cli(
        "compress", str(source), "-o", str(out), "--config", str(config), "--summarizer", "extractive",
        "--protect-last-n-turns", "3", "-q",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "o.report.json").read_text())
    assert report["settings"]["plan"]["target_max_tokens"] == 2500
    assert report["settings"]["plan"]["protect_last_n_turns"] == 3
    rows = read_jsonl(out)
    compressed = [r for r in rows if any(t["value"].startswith("[CONTEXT SUMMARY]") for t in r["conversations"])]
    assert compressed and all(r["conversations"][0]["value"].endswith(" [NOTE]") for r in compressed)


def test_several_inputs_into_one_file_and_into_a_mirrored_directory(tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "in" / "a.jsonl", [make_trajectory(i) for i in range(3)])
    sub = tmp_path / "in" / "sub"
    sub.mkdir()
    with gzip.open(sub / "b.jsonl.gz", "wt") as handle:
        for i in range(3, 5):
            handle.write(json.dumps(make_trajectory(i)) + "\n")
    joined = tmp_path / "all.jsonl"
    assert run_cli("compress", str(a), str(sub / "b.jsonl.gz"), "-o", str(joined), *SMALL).returncode == 0
    assert [r["id"] for r in read_jsonl(joined)] == [f"row-{i:04d}" for i in range(5)]
    mirror = tmp_path / "mirror"
    result = run_cli("compress", str(tmp_path / "in"), "-o", f"{mirror}/", *SMALL)
    assert result.returncode == 0, result.stderr
    assert [r["id"] for r in read_jsonl(mirror / "a.jsonl")] == [f"row-{i:04d}" for i in range(3)]
    with gzip.open(mirror / "sub" / "b.jsonl.gz", "rt") as handle:
        assert [json.loads(line)["id"] for line in handle] == ["row-0003", "row-0004"]
    assert (mirror / "sub" / "b.metrics.jsonl").exists()


def test_sample_and_limit_select_rows_deterministically(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(i, steps=1) for i in range(40)])
    ids = []
    for name in ("a", "b"):
        out = tmp_path / f"{name}.jsonl"
        args = ["--sample-percent", "50", "--seed", "3", "-q"]
        assert run_cli("compress", str(source), "-o", str(out), *args).returncode == 0
        ids.append([r["id"] for r in read_jsonl(out)])
    assert ids[0] == ids[1] and 5 < len(ids[0]) < 35
    out = tmp_path / "limit.jsonl"
    assert run_cli("compress", str(source), "-o", str(out), "--limit", "7", "-q").returncode == 0
    assert [r["id"] for r in read_jsonl(out)] == [f"row-{i:04d}" for i in range(7)]


def test_json_summary_on_stdout(tmp_path: Path) -> None:
    source = _rows(tmp_path, 3)
    result = run_cli("compress", str(source), "-o", str(tmp_path / "o.jsonl"), "--json", *SMALL)
    assert result.returncode == 0
    payload = json.loads(result.stdout)
    assert payload["exit_code"] == 0 and payload["rows"]["selected"] == 3


def test_a_truncated_gzip_keeps_its_readable_rows_and_the_run_goes_on(tmp_path: Path) -> None:
    whole = b"".join(json.dumps(make_trajectory(i, steps=1)).encode() + b"\n" for i in range(300))
    packed = gzip.compress(whole)
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(packed[: len(packed) // 2])
    after = write_jsonl(tmp_path / "after.jsonl", [make_trajectory(1000, steps=1)])
    out = tmp_path / "o.jsonl"
    result = run_cli("compress", str(broken), str(after), "-o", str(out), "-q")
    assert result.returncode == 0, result.stderr
    rows = read_jsonl(out)
    rejects = read_jsonl(tmp_path / "o.rejects.jsonl")
    assert len(rejects) == 1 and "broken.jsonl.gz" in rejects[0]["file"]
    assert "truncated or corrupt gzip" in rejects[0]["error"]
    readable = rejects[0]["line"] - 1
    assert 0 < readable < 300
    assert [r["id"] for r in rows] == [f"row-{i:04d}" for i in range(readable)] + ["row-1000"]


def test_a_line_appended_to_a_gzip_costs_no_record_before_it(tmp_path: Path) -> None:
    """`echo '{...}' >> runs.jsonl.gz` after a gzip whose last record has no line end: every
    record of the gzip data is written, and the appended bytes are one reject after them."""
    rows = [make_trajectory(i, steps=1) for i in range(3)]
    source = tmp_path / "runs.jsonl.gz"
    source.write_bytes(gzip.compress("\n".join(json.dumps(r) for r in rows).encode()) + b'{"id": "appended"}\n')
    out = tmp_path / "o.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "-q")
    assert result.returncode == 0, result.stderr
    assert [r["id"] for r in read_jsonl(out)] == [r["id"] for r in rows]
    [reject] = read_jsonl(tmp_path / "o.rejects.jsonl")
    assert reject["line"] == 4 and "19 bytes after the end of its gzip data are not gzip" in reject["error"]


def test_a_row_too_large_to_count_is_written_unchanged_and_flagged_and_the_run_goes_on(tmp_path: Path) -> None:
    """A value with no place to cut it within the largest piece the tokenizer is given (1M
    characters of one digit run) cannot be counted exactly in bounded memory: a reject with the
    reason, the row written back byte for byte, never a crash or a guess."""
    huge = make_trajectory(1, steps=4)
    huge["conversations"][5]["value"] = "9" * 1_100_000
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(0, steps=4), huge, make_trajectory(2, steps=4)])
    out = tmp_path / "o.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--summarizer", "extractive")
    assert result.returncode == 0, result.stderr
    warning = next(line for line in result.stderr.splitlines() if "in.jsonl:2:" in line)
    assert "too large to count: a text of 1,100,000 characters has no place to cut it" in warning
    assert out.read_bytes().splitlines() == source.read_bytes().splitlines(), "every row, the huge one unchanged"
    [reject] = read_jsonl(tmp_path / "o.rejects.jsonl")
    assert reject["line"] == 2 and reject["error"].startswith("too large to count")
    metrics = read_jsonl(tmp_path / "o.metrics.jsonl")
    assert [m["rejected"] for m in metrics] == [False, True, False]
    assert metrics[1]["reason"].startswith("too large to count") and metrics[1]["written"]
