"""The Python API: the same job as the CLI, without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import make_trajectory, read_jsonl, write_jsonl
from trajectory_compressor import OutputConfig, PlanConfig, RunConfig, SelectConfig, compress
from trajectory_compressor.read.sources import InputError
from trajectory_compressor.settings import ConfigError


def test_compress_from_python(tmp_path: Path, counter) -> None:
    source = write_jsonl(
        tmp_path / "in.jsonl", [make_trajectory(i, steps=3 + 4 * i, output_lines=20) for i in range(5)]
    )
    messages: list[str] = []
    config = RunConfig(
        plan=PlanConfig(target_max_tokens=2500, summary_target_tokens=200),
        output=OutputConfig(over_limit="truncate"),
        quiet=True,
    )
    [result] = compress(
        [str(source)],
        tmp_path / "out.jsonl",
        config,
        counter=counter,
        on_message=messages.append,
    )
    assert result.exit_code == 0
    assert result.report["rows"]["selected"] == 5
    assert result.report["rows"]["compressed"] >= 1
    # auto without an endpoint says once that the extractive summarizer is used.
    assert sum("summarizer: extractive" in m for m in messages) == 1
    rows = read_jsonl(tmp_path / "out.jsonl")
    assert [r["id"] for r in rows] == [f"row-{i:04d}" for i in range(5)]
    metrics = read_jsonl(tmp_path / "out.metrics.jsonl")
    assert all(m["compressed_tokens"] <= 2500 for m in metrics)


@pytest.mark.parametrize("given", [str, Path, lambda path: [Path(path)]])
def test_one_input_may_be_given_as_a_path_not_a_list(tmp_path: Path, counter, given) -> None:
    """`compress("in.jsonl", ...)` reads that file: a string is not a list of one-letter paths."""
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(i) for i in range(3)])
    [result] = compress(given(source), tmp_path / "out.jsonl", RunConfig(quiet=True), counter=counter)
    assert result.exit_code == 0 and result.report["rows"]["written"] == 3
    assert read_jsonl(tmp_path / "out.jsonl") == read_jsonl(source)


def test_user_errors_raise_clear_exceptions(tmp_path: Path, counter) -> None:
    with pytest.raises(InputError, match="input not found"):
        compress([str(tmp_path / "nope.jsonl")], tmp_path / "o.jsonl", counter=counter)
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(0)])
    with pytest.raises(ConfigError, match="shard"):
        compress(
            [str(source)],
            tmp_path / "o.jsonl",
            RunConfig(select=SelectConfig(num_shards=2, shard_index=2)),
            counter=counter,
        )
    with pytest.raises(ConfigError, match="summary_target_tokens"):
        compress([str(source)], tmp_path / "o.jsonl", RunConfig(plan=PlanConfig(target_max_tokens=10)), counter=counter)


def test_a_jsonl_run_never_imports_pyarrow_or_datasets(tmp_path: Path) -> None:
    """Startup time and memory: the columnar libraries are loaded only for columnar inputs or outputs."""
    import subprocess
    import sys

    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(0, steps=2)])
    script = (
        "import sys\n"
        "from trajectory_compressor import RunConfig, compress\n"
        f"compress([{str(source)!r}], {str(tmp_path / 'x.jsonl')!r}, RunConfig(quiet=True, summarizer='extractive'))\n"
        "print(sorted(m for m in ('pyarrow', 'datasets', 'pandas') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_each_output_of_a_folder_reports_its_own_summaries(tmp_path: Path, counter) -> None:
    """The outputs of one call share a summarizer; each report counts what its own run used
    (before, the second report held the first's summaries too: a folder's costs added up twice)."""
    folder = tmp_path / "in"
    folder.mkdir()
    for name, rows in (("a.jsonl", 5), ("b.jsonl", 3)):
        write_jsonl(folder / name, [make_trajectory(i, steps=12, output_lines=60) for i in range(rows)])
    config = RunConfig(summarizer="extractive", plan=PlanConfig(target_max_tokens=2500))
    results = compress([str(folder)], f"{tmp_path / 'out'}/", config, counter=counter)
    compressed = [result.report["counters"]["rows_compressed"] for result in results]
    assert compressed == [5, 3]
    assert [result.report["summaries"]["endpoint"]["summaries"] for result in results] == compressed
