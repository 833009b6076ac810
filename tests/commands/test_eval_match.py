"""`eval` refuses an output, metrics and input that do not belong together (issue 20 E16).

Each mismatch is one `error:` line and exit 2, naming the file and the row, never a score; every
kind of run the tool makes (rejects, dropped and truncated rows, Parquet and gzip outputs, samples,
limits, merged shards) still evaluates.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, run_cli, write_jsonl

SETTINGS = ["--summarizer", "extractive", "-q", "--target-max-tokens", "3000", "--summary-target-tokens", "300"]


def _rows(first: int, count: int) -> list[Any]:
    return [make_trajectory(i, steps=1 + (i * 5) % 9) for i in range(first, first + count)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs on two different inputs of 8 rows: a/ from a.jsonl, b/ from b.jsonl."""
    root = tmp_path_factory.mktemp("eval-match")
    for name, first in (("a", 0), ("b", 20)):
        source = write_jsonl(root / f"{name}.jsonl", _rows(first, 8))
        result = run_cli("compress", str(source), "-o", str(root / name / "x.jsonl"), *SETTINGS)
        assert result.returncode == 0, result.stderr
    return root


def _copy(runs: Path, tmp_path: Path) -> Path:
    """Run a/ copied, to be damaged; returns its output."""
    shutil.copytree(runs / "a", tmp_path / "a")
    return tmp_path / "a" / "x.jsonl"


def _refused(result: Any, *needles: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_the_runs_own_files_evaluate(runs: Path) -> None:
    result = run_cli("eval", str(runs / "a" / "x.jsonl"), "--input", str(runs / "a.jsonl"), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["outputs"][0]["rows"] == 8


def test_another_runs_input_is_refused_by_the_report(runs: Path) -> None:
    result = run_cli("eval", str(runs / "a" / "x.jsonl"), "--input", str(runs / "b.jsonl"))
    _refused(result, f"the input {runs / 'b.jsonl'} is not the file the run read", "x.report.json", "a.jsonl")


def test_another_runs_input_is_refused_row_by_row_without_a_report(runs: Path, tmp_path: Path) -> None:
    output = _copy(runs, tmp_path)
    (output.parent / "x.report.json").unlink()
    result = run_cli("eval", str(output), "--input", str(runs / "b.jsonl"))
    _refused(result, f"{output.parent / 'x.metrics.jsonl'}:1 ", "input row 0", "b.jsonl:1")


def test_another_runs_metrics_are_refused(runs: Path) -> None:
    result = run_cli(
        "eval", str(runs / "a" / "x.jsonl"), "--input", str(runs / "a.jsonl"),
        "--metrics", str(runs / "b" / "x.metrics.jsonl"),
    )  # fmt: skip
    _refused(result, f"{runs / 'b' / 'x.metrics.jsonl'}:1 ", "row-0020", "row-0000")


def test_an_output_cut_to_3_of_8_rows_is_refused(runs: Path, tmp_path: Path) -> None:
    output = _copy(runs, tmp_path)
    output.write_bytes(b"".join(output.read_bytes().splitlines(keepends=True)[:3]))
    result = run_cli("eval", str(output), "--input", str(runs / "a.jsonl"))
    _refused(result, f"{output} has 3 rows", "say 8 were written")


def test_an_output_with_rows_added_is_refused(runs: Path, tmp_path: Path) -> None:
    output = _copy(runs, tmp_path)
    output.write_bytes(output.read_bytes() * 2)
    result = run_cli("eval", str(output), "--input", str(runs / "a.jsonl"))
    _refused(result, f"{output} has more rows than the 8")


def test_an_input_with_the_same_ids_but_other_turns_is_refused_row_by_row(runs: Path, tmp_path: Path) -> None:
    output = _copy(runs, tmp_path)
    (output.parent / "x.report.json").unlink()
    rows = _rows(0, 8)
    rows[5]["conversations"] = rows[5]["conversations"][:3]
    edited = write_jsonl(tmp_path / "edited.jsonl", rows)
    result = run_cli("eval", str(output), "--input", str(edited))
    _refused(result, f"{output.parent / 'x.metrics.jsonl'}:6 says", "turns", "input row 5", "has 3")


def test_an_output_row_swapped_for_another_is_refused(runs: Path, tmp_path: Path) -> None:
    output = _copy(runs, tmp_path)
    (output.parent / "x.report.json").unlink()
    lines = output.read_bytes().splitlines(keepends=True)
    lines[1], lines[2] = lines[2], lines[1]
    output.write_bytes(b"".join(lines))
    result = run_cli("eval", str(output), "--input", str(runs / "a.jsonl"))
    _refused(result, f"{output.parent / 'x.metrics.jsonl'}:2 says", "output row 2")


def test_an_input_with_more_rows_than_the_run_read_is_refused(runs: Path, tmp_path: Path) -> None:
    output = _copy(runs, tmp_path)
    report = json.loads((output.parent / "x.report.json").read_text())
    report["inputs"] = None  # a report from before inputs were recorded: the counts still hold
    (output.parent / "x.report.json").write_text(json.dumps(report))
    longer = write_jsonl(tmp_path / "longer.jsonl", _rows(0, 9))
    result = run_cli("eval", str(output), "--input", str(longer))
    _refused(result, "--input has 9 rows", "records 8 read")


@pytest.mark.parametrize(
    ("output", "extra"),
    [
        ("x.jsonl", ["--over-limit", "drop"]),
        ("x.jsonl", ["--over-limit", "truncate", "--target-max-tokens", "1500"]),
        ("x.parquet", []),
        ("x.jsonl.gz", ["--sample-percent", "50"]),
        ("x.jsonl", ["--limit", "5"]),
    ],
    ids=["drop", "truncate", "parquet", "sample", "limit"],
)
def test_every_kind_of_run_still_evaluates(tmp_path: Path, output: str, extra: list[str]) -> None:
    rows: list[Any] = _rows(0, 10)
    rows.insert(4, "{broken json")  # rejected, in no dataset
    rows.insert(8, {"id": "no-turns", "conversations": "nope"})  # rejected, written unchanged to JSONL
    rows.append(make_trajectory(99, steps=1, output_lines=400))  # still over the limit
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out" / output
    assert run_cli("compress", str(source), "-o", str(out), *SETTINGS, *extra).returncode == 0
    result = run_cli("eval", str(out), "--input", str(source), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["outputs"][0]["compressed"] > 0


def test_merged_shards_evaluate_and_merge_guards_their_input(runs: Path, tmp_path: Path) -> None:
    source = runs / "a.jsonl"
    for index in range(2):
        shard = ["-o", str(tmp_path / "s" / "x.jsonl"), "--num-shards", "2", "--shard-index", str(index)]
        assert run_cli("compress", str(source), *shard, *SETTINGS).returncode == 0
    reports = sorted(str(p) for p in (tmp_path / "s").glob("*.report.json"))
    assert run_cli("merge", *reports, "-o", str(tmp_path / "m" / "x.jsonl")).returncode == 0
    assert run_cli("eval", str(tmp_path / "m" / "x.jsonl"), "--input", str(source)).returncode == 0
    refused = run_cli("eval", str(tmp_path / "m" / "x.jsonl"), "--input", str(runs / "b.jsonl"))
    _refused(refused, "is not the file the run read")
    before = source.read_bytes()
    onto_input = run_cli("merge", *reports, "-o", str(source))
    _refused(onto_input, "would overwrite the shards' input")
    assert source.read_bytes() == before


def test_a_metrics_line_that_is_not_one_is_refused(runs: Path, tmp_path: Path) -> None:
    output = _copy(runs, tmp_path)
    metrics = output.parent / "x.metrics.jsonl"
    lines = metrics.read_bytes().splitlines(keepends=True)
    lines[3] = b'{"not": "a metrics line"}\n'
    metrics.write_bytes(b"".join(lines))
    result = run_cli("eval", str(output), "--input", str(runs / "a.jsonl"))
    _refused(result, f"{metrics}:4 is not a metrics line of this tool")


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("original_tokens", "x", "'original_tokens' is not an integer"),
        ("compressed_tokens", [1], "'compressed_tokens' is not an integer"),
        ("compressed_tokens", 1.5, "'compressed_tokens' is not an integer"),
        ("window", 3, "'window' is not an object"),
        ("window", {"index": 0, "count": "2"}, "'window.count' is not an integer"),
        ("window", {"index": None, "count": 2}, "'window.index' is not an integer"),
        ("compression_region", [0, 3], "'compression_region' is not an object"),
    ],
)
def test_a_metrics_field_of_another_type_is_refused_by_name(
    runs: Path, tmp_path: Path, field: str, value: Any, named: str
) -> None:
    """An edited metrics line whose counts are not integers once stopped `eval` with a traceback
    (`int()` of a list, a window index compared with 0)."""
    output = _copy(runs, tmp_path)
    metrics = output.parent / "x.metrics.jsonl"
    lines = metrics.read_bytes().splitlines(keepends=True)
    lines[2] = json.dumps({**json.loads(lines[2]), field: value}).encode() + b"\n"
    metrics.write_bytes(b"".join(lines))
    result = run_cli("eval", str(output), "--input", str(runs / "a.jsonl"))
    _refused(result, f"{metrics}:3 is not a metrics line of this tool ({named})")
