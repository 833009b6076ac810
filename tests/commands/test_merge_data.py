"""`merge` writes the dataset of shards in every format a run writes, equal to one unsharded run,
or refuses in one line before writing anything; it never ends 0 without the dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import make_trajectory, run_cli, write_jsonl

# One xdist worker runs them all: the shards (`work`, 12 runs) are made once, not once per worker.
pytestmark = pytest.mark.xdist_group("merge-data")

SETTINGS = ["--summarizer", "extractive", "--target-max-tokens", "3000", "--summary-target-tokens", "300", "-q"]
SHARDS = 3


def _records() -> list[Any]:
    """Rows whose shards see different column types: `task_id` a number in shard 0's rows and a
    string in the others' (one run stores it as text), `note` only in one row of shard 2, a row
    dropped over the limit (in no dataset) and a broken line (rejected, in no dataset)."""
    rows: list[Any] = [make_trajectory(i, steps=1 + (i * 5) % 9) for i in range(10)]
    rows.insert(4, "{broken json")
    rows.append(make_trajectory(99, steps=1, output_lines=400))
    for position, row in enumerate(rows):
        if isinstance(row, dict):  # shards take rows by position: shard 0 gets 0, 3, 6, ...
            row.update(task_id=position if position % SHARDS == 0 else f"t{position}", reward=0.5 * position)
    rows[5]["note"] = {"why": "only here", "n": 1}
    return rows


def _shard(index: int, suffix: str) -> str:
    return f"x.shard-{index:05d}-of-{SHARDS:05d}{suffix}"


def _run(root: Path, source: Path, name: str, *extra: str) -> None:
    result = run_cli("compress", str(source), "-o", str(root / name), *SETTINGS, "--over-limit", "drop", *extra)
    assert result.returncode == 0, result.stderr


def _reports(root: Path, folder: str) -> list[str]:
    return [str(root / folder / _shard(i, ".report.json")) for i in range(SHARDS)]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shards and one unsharded run of the same input, as Parquet, JSON Lines and gzipped JSON Lines."""
    root = tmp_path_factory.mktemp("merge-data")
    source = write_jsonl(root / "in.jsonl", _records())
    for folder, name in (("pq", "x.parquet"), ("gz", "x.jsonl.gz"), ("jl", "x.jsonl")):
        _run(root, source, f"single-{folder}/{name}")
        for i in range(SHARDS):
            _run(root, source, f"{folder}/{name}", "--num-shards", str(SHARDS), "--shard-index", str(i))
    return root


def _two_shards(source: Path, output: Path, *flags: str) -> list[str]:
    """`source` compressed to `output` in two shards: their reports, in shard order."""
    for i in range(2):
        result = run_cli(
            "compress", str(source), "-o", str(output), *flags, "--num-shards", "2", "--shard-index", str(i)
        )
        assert result.returncode == 0, result.stderr
    return [str(output.parent / f"{output.name.split('.')[0]}.shard-0000{i}-of-00002.report.json") for i in range(2)]


def _merge(*args: str) -> Any:
    return run_cli("merge", *args)


def _one_line_refusal(result: Any, message: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and message in result.stderr, result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_parquet_shards_merge_into_the_table_of_one_run(work: Path) -> None:
    """Defect: `merge` of Parquet shards wrote no dataset and ended 0."""
    shard_types = {str(pq.read_schema(work / "pq" / _shard(i, ".parquet")).field("task_id").type) for i in range(3)}
    assert shard_types == {"int64", "string"}, "the shards disagree on task_id's type: the merge must reconcile it"
    out = work / "merged-pq" / "x.parquet"
    result = _merge(*_reports(work, "pq"), "-o", str(out), "--json")
    assert result.returncode == 0, result.stderr
    merged, single = pq.read_table(out), pq.read_table(work / "single-pq" / "x.parquet")
    assert merged.schema == single.schema
    assert merged.equals(single)
    assert merged.num_rows == len([r for r in _records() if isinstance(r, dict)]) - 1  # the dropped row
    assert merged.column("task_id").to_pylist()[:4] == ["0", "t1", "t2", "3"]  # numbers as their JSON text
    report = json.loads(result.stdout)
    assert report["outputs"]["data"] == str(out) and report["files"]["data"]["path"] == str(out)
    assert (work / "merged-pq" / "x.metrics.jsonl").read_bytes() == (
        work / "single-pq" / "x.metrics.jsonl"
    ).read_bytes()


def test_parquet_shards_merge_equal_to_one_run_read_with_datasets(work: Path) -> None:
    datasets = pytest.importorskip("datasets")
    out = work / "merged-pq-ds" / "x.parquet"
    assert _merge(*_reports(work, "pq"), "-o", str(out)).returncode == 0
    merged = datasets.Dataset.from_parquet(str(out), cache_dir=str(work / "hf-cache"))
    single = datasets.Dataset.from_parquet(str(work / "single-pq" / "x.parquet"), cache_dir=str(work / "hf-cache"))
    assert merged.features == single.features and merged.to_list() == single.to_list()


@pytest.mark.parametrize("name", ["x.jsonl.gz", "x.jsonl"])
def test_gzipped_jsonl_shards_merge_byte_for_byte(work: Path, name: str) -> None:
    out = work / f"merged-gz-{name}" / name
    result = _merge(*_reports(work, "gz"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    single = work / ("single-gz/x.jsonl.gz" if name.endswith(".gz") else "single-jl/x.jsonl")
    assert out.read_bytes() == single.read_bytes()


def test_jsonl_shards_merge_into_parquet_as_one_run_converts(work: Path) -> None:
    out = work / "merged-jl-pq" / "x.parquet"
    result = _merge(*_reports(work, "jl"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert pq.read_table(out).equals(pq.read_table(work / "single-pq" / "x.parquet"))


@pytest.mark.parametrize("name", ["x.jsonl", "x.jsonl.gz", "x_hf/"])
def test_parquet_shards_into_another_format_are_refused_before_writing(work: Path, name: str) -> None:
    out = work / f"refused-{name.strip('/')}" / name
    _one_line_refusal(_merge(*_reports(work, "pq"), "-o", str(out)), "merge into a .parquet output only")
    assert not out.parent.exists()


def test_a_parquet_shard_changed_or_unrecorded_is_refused(work: Path, tmp_path: Path) -> None:
    shard = work / "pq" / _shard(1, ".parquet")
    original = shard.read_bytes()
    try:
        pq.write_table(pq.read_table(shard).slice(1), shard)
        result = _merge(*_reports(work, "pq"), "-o", str(tmp_path / "m" / "x.parquet"))
        _one_line_refusal(result, "changed since its run wrote it")
    finally:
        shard.write_bytes(original)
    report = json.loads(Path(_reports(work, "pq")[1]).read_text())
    del report["files"]["data"]  # a shard report written before datasets in other formats were recorded
    old = tmp_path / "old.report.json"
    old.write_text(json.dumps(report))
    reports = _reports(work, "pq")
    result = _merge(reports[0], str(old), reports[2], "-o", str(tmp_path / "m" / "x.parquet"))
    _one_line_refusal(result, "has no record of its data file")
    assert not (tmp_path / "m").exists()


def test_parquet_shards_with_a_column_of_no_common_type_are_refused(tmp_path: Path) -> None:
    """A column stored as JSON text in one shard (its values of several kinds there) and as a
    struct in another has no merge that keeps both: refused, nothing written."""
    rows = [make_trajectory(i, steps=1, extra={"meta": {"a": i}}) for i in range(4)]
    rows[2]["meta"] = [1, 2]  # shard 0 holds an object and a list: JSON text there
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    reports = _two_shards(source, tmp_path / "s" / "x.parquet", *SETTINGS)
    assert pa.types.is_struct(pq.read_schema(tmp_path / "s" / "x.shard-00001-of-00002.parquet").field("meta").type)
    out = tmp_path / "m" / "x.parquet"
    _one_line_refusal(_merge(*reports, "-o", str(out)), "stores column meta as")
    assert not out.parent.exists()


def test_jsonl_shards_merge_into_a_datasets_folder(work: Path) -> None:
    datasets = pytest.importorskip("datasets")
    out = work / "merged-jl-hf" / "x"
    result = _merge(*_reports(work, "jl"), "-o", f"{out}/", "--json")
    assert result.returncode == 0, result.stderr
    merged = datasets.load_from_disk(str(out))
    single = datasets.Dataset.from_parquet(str(work / "single-pq" / "x.parquet"), cache_dir=str(work / "hf-cache"))
    assert merged.to_list() == single.to_list()
    assert "data" not in json.loads(result.stdout)["files"], "a folder has no file record"


def test_hf_shard_folders_are_refused_by_their_format(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(i, steps=1) for i in range(3)])
    reports = _two_shards(source, tmp_path / "s" / "x", "--output-format", "hf", *SETTINGS)
    out = tmp_path / "m" / "x.parquet"
    _one_line_refusal(_merge(*reports, "-o", str(out)), "merge cannot merge hf shard datasets")
    assert not out.parent.exists()


def test_jsonl_shards_of_a_parquet_input_merge_into_its_column_types(tmp_path: Path) -> None:
    """JSON Lines shards hold a timestamp as text and an int8 as a number; a run's Parquet output
    restores their types from the input's schema, and so does the merge, or refuses without it."""
    import datetime

    rows = [make_trajectory(i, steps=2 + i) for i in range(5)]
    table = pa.table({
        "id": [row["id"] for row in rows],
        "conversations": [row["conversations"] for row in rows],
        "ts": pa.array([datetime.datetime(2024, 1, i + 1) for i in range(5)], pa.timestamp("ms")),
        "small": pa.array(range(5), pa.int8()),
    })  # fmt: skip
    source = tmp_path / "in.parquet"
    pq.write_table(table, source)
    settings = ["--summarizer", "extractive", "--target-max-tokens", "800", "-q"]
    single = run_cli("compress", str(source), "-o", str(tmp_path / "single" / "x.parquet"), *settings)
    assert single.returncode == 0, single.stderr
    reports = _two_shards(source, tmp_path / "s" / "x.jsonl", *settings)
    merged = _merge(*reports, "-o", str(tmp_path / "m" / "x.parquet"))
    assert merged.returncode == 0, merged.stderr
    out = pq.read_table(tmp_path / "m" / "x.parquet")
    assert out.equals(pq.read_table(tmp_path / "single" / "x.parquet"))
    assert out.schema.field("ts").type == pa.timestamp("ms") and out.schema.field("small").type == pa.int8()
    source.rename(tmp_path / "moved.parquet")
    _one_line_refusal(_merge(*reports, "-o", str(tmp_path / "m2" / "x.parquet")), "is gone or its size changed")
    assert not (tmp_path / "m2").exists()
