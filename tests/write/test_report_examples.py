"""The compress page's example rows, read back from the files a run wrote, and its input files."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.types import SUMMARY_PREFIX
from trajectory_compressor.write.report_examples import examples_from_files

BUDGET = ["--target-max-tokens", "2500", "--summary-target-tokens", "200", "--summarizer", "extractive", "-q"]


def _run(tmp_path: Path, *extra: str) -> tuple[list[Path], Path]:
    first = write_jsonl(tmp_path / "team_a" / "runs.jsonl", [make_trajectory(i, steps=2 + 2 * i) for i in range(4)])
    second = write_jsonl(tmp_path / "team_b" / "runs.jsonl", [make_trajectory(10 + i, steps=6) for i in range(3)])
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli("compress", str(first), str(second), "-o", str(out), *BUDGET, *extra)
    assert result.returncode == 0, result.stderr
    return [first, second], out


def test_the_first_compressed_rows_come_back_with_the_turns_kept_after_their_summary(tmp_path: Path) -> None:
    inputs, out = _run(tmp_path)
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    examples = examples_from_files(out.parent / "x.metrics.jsonl", out, expand_inputs(list(map(str, inputs))), count=3)
    compressed = [m for m in metrics if m["was_compressed"]]
    first_of_b = next(m for m in compressed if "team_b" in m["source"])  # one of each file, then the earliest
    assert [e.index for e in examples] == [compressed[0]["index"], compressed[1]["index"], first_of_b["index"]]
    compressed = [compressed[0], compressed[1], first_of_b]
    records = read_jsonl(out)
    for example, entry in zip(examples, compressed, strict=False):
        turns = records[entry["index"]]["conversations"]
        start = entry["compression_region"]["start_idx"]
        assert SUMMARY_PREFIX + " " + example.summary == turns[start]["value"]
        assert [t.value for t in example.tail] == [t["value"] for t in turns[start + 1 :]][: len(example.tail)]
        assert example.tail_turns == len(turns) - start - 1 > 0
        assert example.region_turns == entry["compression_region"]["turns_count"]
        assert example.fidelity == entry["fidelity"]["score"]


def test_windows_give_each_rows_first_compressed_window(tmp_path: Path) -> None:
    inputs, out = _run(tmp_path, "--windows")
    examples = examples_from_files(out.parent / "x.metrics.jsonl", out, expand_inputs(list(map(str, inputs))))
    assert examples and len({e.index for e in examples}) == len(examples)
    assert all(e.window is not None and e.window >= 1 for e in examples)
    assert all(" window " in e.label for e in examples if e.window)


def test_the_page_breaks_rows_down_by_input_file_and_shows_examples(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    inputs, _ = _run(tmp_path, "--html-report", str(page))
    text = page.read_text()
    assert "<h2>By input file</h2>" in text and "<h2>Example rows" in text
    for source, short in zip(inputs, ("team_a/runs.jsonl", "team_b/runs.jsonl"), strict=True):
        assert f'title="{source}">{short}</span>' in text
    assert "then the" in text and "kept turns" in text
