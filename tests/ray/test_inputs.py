"""Parquet inputs and the Python API (`compress_dataset` on a Dataset the user built)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLE, read_jsonl, run_cli, write_jsonl
from tests.ray.conftest import assert_same_outputs, json_lines, ray_parts

pytestmark = pytest.mark.ray
ROWS = 40


@pytest.mark.ray_runs
def test_parquet_input_equals_the_local_engine(local_ray, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = tmp_path / "in" / "runs.parquet"
    source.parent.mkdir()
    pq.write_table(pa.Table.from_pylist(read_jsonl(SAMPLE)[:ROWS]), source, row_group_size=7)
    local = run_cli("compress", str(source), "-o", str(tmp_path / "local" / "x.jsonl"), "--summarizer", "extractive")
    assert local.returncode == 0, local.stderr
    on_ray = run_cli(
        "compress", str(source), "-o", str(tmp_path / "ray" / "x.jsonl"), "--summarizer", "extractive",
        "--engine", "ray", "--num-workers", "2", "-q",
    )  # fmt: skip
    assert on_ray.returncode == 0, on_ray.stderr
    assert_same_outputs(tmp_path / "local" / "x.jsonl", tmp_path / "ray" / "x.jsonl")


@pytest.mark.ray_runs
def test_bad_lines_and_a_directory_of_inputs_equal_the_local_engine(local_ray, tmp_path: Path) -> None:
    rows = read_jsonl(SAMPLE)[:ROWS]
    write_jsonl(tmp_path / "in" / "a.jsonl", [*rows[:10], "{not json", "", "[]", *rows[10:20]])
    write_jsonl(tmp_path / "in" / "sub" / "b.jsonl", [{"id": "no turns"}, *rows[20:]])
    local = run_cli(
        "compress", str(tmp_path / "in"), "-o", str(tmp_path / "local" / "x.jsonl"), "--summarizer", "extractive"
    )
    assert local.returncode == 0, local.stderr
    on_ray = run_cli(
        "compress", str(tmp_path / "in"), "-o", str(tmp_path / "ray" / "x.jsonl"), "--summarizer", "extractive",
        "--engine", "ray", "--num-workers", "2", "-q",
    )  # fmt: skip
    assert on_ray.returncode == 0, on_ray.stderr
    assert_same_outputs(tmp_path / "local" / "x.jsonl", tmp_path / "ray" / "x.jsonl")


@pytest.mark.ray_runs
def test_bad_records_are_named_on_stderr_as_the_local_engine_names_them(local_ray, tmp_path: Path) -> None:
    """`warning: FILE:LINE: error` for the first 20 bad records in input order, then one line for the rest."""
    rows = read_jsonl(SAMPLE)[:3]
    broken = [f'{{"id": "cut short {number}"' for number in range(23)]
    source = write_jsonl(tmp_path / "in.jsonl", [rows[0], *broken[:9], rows[1], "[]", *broken[9:], rows[2]])
    args = ("--summarizer", "extractive")
    local = run_cli("compress", str(source), "-o", str(tmp_path / "local" / "x.jsonl"), *args)
    on_ray = run_cli("compress", str(source), "-o", str(tmp_path / "ray" / "x.jsonl"), *args, "--engine", "ray", "-q")
    assert local.returncode == on_ray.returncode == 0, on_ray.stderr

    def warnings(stderr: str) -> list[str]:
        return [line for line in stderr.splitlines() if line.startswith("warning:")]

    assert len(warnings(local.stderr)) == 21 and warnings(local.stderr)[0].startswith(f"warning: {source}:2: ")
    assert warnings(on_ray.stderr) == warnings(local.stderr)


@pytest.mark.ray_runs
def test_compress_dataset_takes_and_returns_a_ray_dataset(local_ray, tmp_path: Path) -> None:
    import ray.data

    from trajectory_compressor.ray import compress_dataset
    from trajectory_compressor.settings import RunConfig

    rows = read_jsonl(SAMPLE)[:ROWS]
    local = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "local" / "x.jsonl"), "--summarizer", "extractive",
                    "--limit", str(ROWS))  # fmt: skip
    assert local.returncode == 0, local.stderr
    dataset = ray.data.from_items([{**row, "row_index": index} for index, row in enumerate(rows)])
    out = compress_dataset(dataset, RunConfig(summarizer="extractive"), num_workers=2).take_all()
    assert [row["row_index"] for row in out] == list(range(ROWS))
    ignored = ("source", "line")
    got = [{k: v for k, v in json.loads(row["metrics"]).items() if k not in ignored} for row in out]
    expected = [
        {k: v for k, v in m.items() if k not in ignored} for m in read_jsonl(tmp_path / "local" / "x.metrics.jsonl")
    ]
    assert got == expected
    # The conversations are the local run's; other keys went through Arrow (a struct gains the
    # keys its other rows have, as None), as every Dataset's rows do.
    conversations = [json.loads(row["record"])["conversations"] for row in out]
    assert conversations == [record["conversations"] for record in read_jsonl(tmp_path / "local" / "x.jsonl")]


@pytest.mark.ray_runs
@pytest.mark.parametrize("selection", [("--limit", "30"), ("--sample-percent", "20", "--seed", "7", "--limit", "30")])
def test_limit_and_sample_select_the_local_engines_rows(local_ray, tmp_path: Path, selection: tuple[str, ...]) -> None:
    args = ("--summarizer", "extractive", *selection)
    local = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "local" / "x.jsonl"), *args)
    assert local.returncode == 0, local.stderr
    on_ray = run_cli(
        "compress", str(SAMPLE), "-o", str(tmp_path / "ray" / "x.jsonl"), *args, "--engine", "ray", "-q"
    )  # fmt: skip
    assert on_ray.returncode == 0, on_ray.stderr
    assert_same_outputs(tmp_path / "local" / "x.jsonl", tmp_path / "ray" / "x.jsonl")


@pytest.mark.ray_runs
def test_parquet_output_parts_hold_the_local_engines_records(local_ray, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    local = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "local" / "x.jsonl"), "--summarizer", "extractive")
    assert local.returncode == 0, local.stderr
    on_ray = run_cli(
        "compress", str(SAMPLE), "-o", str(tmp_path / "ray" / "x.parquet"), "--summarizer", "extractive",
        "--engine", "ray", "-q",
    )  # fmt: skip
    assert on_ray.returncode == 0, on_ray.stderr
    parts = sorted((tmp_path / "ray" / "x.parquet").glob("part-*.parquet"))
    records = [row for part in parts for row in pq.read_table(part).to_pylist()]
    local_records = read_jsonl(tmp_path / "local" / "x.jsonl")
    assert [r["id"] for r in records] == [r["id"] for r in local_records]
    assert [r["conversations"] for r in records] == [r["conversations"] for r in local_records]


@pytest.mark.ray_runs
def test_parquet_parts_store_a_column_whose_rows_disagree_on_its_type(local_ray, tmp_path: Path) -> None:
    """Rows whose `id` is a string, a list, an object, a number: Arrow alone built the part,
    refused it and stopped the run with an internal error. A part is now stored as the local
    engine stores a Parquet output (the column as JSON text), and holds the same records."""
    from tests.conftest import make_trajectory
    from trajectory_compressor.read.expand import expand_inputs
    from trajectory_compressor.read.readers import iter_source

    ids: list[Any] = ["a", ["x"], {"k": 1}, 7, None]
    rows = [{**make_trajectory(i, steps=4, output_lines=20), "id": value} for i, value in enumerate(ids)]
    rows.append({"id": [1], "conversations": "not a list"})  # rejected
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    flags = ["--summarizer", "extractive", "--target-max-tokens", "600", "--summary-target-tokens", "100", "-q"]
    for engine in ("local", "ray"):
        result = run_cli(
            "compress", str(source), "-o", str(tmp_path / engine / "x.parquet"), *flags, "--engine", engine
        )
        assert result.returncode == 0, result.stderr
    local, on_ray = (
        [item.record for item in iter_source(*expand_inputs([str(tmp_path / engine / "x.parquet")]))]
        for engine in ("local", "ray")
    )
    assert [record["id"] for record in on_ray] == ids
    assert on_ray == local


@pytest.mark.ray_runs
def test_uris_are_read_and_written_through_pyarrow_filesystems(local_ray, tmp_path: Path) -> None:
    """`file://` goes the way `s3://` does (pyarrow.fs listing, streams, part writes, the report)."""
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = read_jsonl(SAMPLE)[:ROWS]
    folder = tmp_path / "in"
    folder.mkdir()
    with gzip.open(folder / "a.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in rows[:12])
    write_jsonl(folder / "b.jsonl", rows[12:25])
    pq.write_table(pa.Table.from_pylist(rows[25:]), folder / "c.parquet")
    local = run_cli("compress", str(folder), "-o", str(tmp_path / "local" / "x.jsonl"), "--summarizer", "extractive")
    assert local.returncode == 0, local.stderr
    out = tmp_path / "ray" / "x.jsonl"
    on_ray = run_cli(
        "compress", f"file://{folder}", "-o", f"file://{out}", "--summarizer", "extractive", "--engine", "ray", "-q"
    )  # fmt: skip
    assert on_ray.returncode == 0, on_ray.stderr
    assert ray_parts(out) == (tmp_path / "local" / "x.jsonl").read_bytes()
    local_metrics = read_jsonl(tmp_path / "local" / "x.metrics.jsonl")
    ray_metrics = json_lines(ray_parts(tmp_path / "ray" / "x.metrics"))
    assert [m.pop("source") for m in ray_metrics] == [
        f"file://{folder}/{m.pop('source').split('/')[-1]}" for m in local_metrics
    ]
    assert ray_metrics == local_metrics
    assert (
        json.loads((tmp_path / "ray" / "x.report.json").read_text())["tokens"]
        == json.loads((tmp_path / "local" / "x.report.json").read_text())["tokens"]
    )
