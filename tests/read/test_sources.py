"""Input discovery and reading: every kind yields the same numbered `SourceRecord`s, errors name the input."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trajectory_compressor.read.sources import (
    InputError,
    InputSource,
    expand_inputs,
    iter_source,
    shard_filter,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

ROWS: list[dict[str, Any]] = [
    {"id": f"r{i}", "conversations": [{"from": "human", "value": f"q{i}"}, {"from": "gpt", "value": f"a{i}"}]}
    for i in range(5)
]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def read_all(source: InputSource, **kwargs: Any) -> list[tuple[int, Any]]:
    return [(item.line, item.record) for item in iter_source(source, **kwargs)]


# --- expand_inputs -----------------------------------------------------------------------------


def test_file_kinds_by_suffix(tmp_path: Path) -> None:
    files = {
        "a.jsonl": "jsonl",
        "b.ndjson": "jsonl",
        "c.jsonl.gz": "jsonl",
        "d.json": "json",
        "e.parquet": "parquet",
    }
    for name in files:
        (tmp_path / name).write_text("[]")
    sources = expand_inputs([str(tmp_path / name) for name in files])
    assert [(Path(s.name).name, s.kind) for s in sources] == list(files.items())


def test_json_suffix_holding_json_lines_is_streamed_as_jsonl(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "really_lines.json", ROWS[:2])
    (source,) = expand_inputs([str(path)])
    assert source.kind == "jsonl"
    assert [record["id"] for _, record in read_all(source)] == ["r0", "r1"]


def test_directory_is_recursive_sorted_and_skips_hidden_and_own_outputs(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "b.jsonl", ROWS[:1])
    write_jsonl(tmp_path / "a.jsonl", ROWS[:1])
    write_jsonl(tmp_path / "sub" / "c.jsonl", ROWS[:1])
    write_jsonl(tmp_path / ".hidden.jsonl", ROWS[:1])
    write_jsonl(tmp_path / ".cache" / "d.jsonl", ROWS[:1])
    for own in ("out.metrics.jsonl", "out.rejects.jsonl", "out.over_limit.jsonl", "out.report.json"):
        write_jsonl(tmp_path / own, ROWS[:1])
    (tmp_path / "notes.txt").write_text("not data")
    sources = expand_inputs([str(tmp_path)])
    assert [os.path.relpath(s.name, tmp_path) for s in sources] == [
        "a.jsonl",
        "b.jsonl",
        os.path.join("sub", "c.jsonl"),
    ]


def test_same_file_twice_is_read_once(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", ROWS[:1])
    assert len(expand_inputs([str(path), str(tmp_path), str(path)])) == 1


@pytest.mark.parametrize("make", ["missing", "empty_dir", "bad_suffix"])
def test_unusable_inputs_raise_input_error_naming_the_path(tmp_path: Path, make: str) -> None:
    target = tmp_path / "thing"
    if make == "empty_dir":
        target.mkdir()
    elif make == "bad_suffix":
        target = tmp_path / "thing.csv"
        target.write_text("a,b\n")
    with pytest.raises(InputError) as info:
        expand_inputs([str(target)])
    message = str(info.value)
    assert str(target) in message
    assert "\n" not in message


def test_input_error_is_a_value_error() -> None:
    assert issubclass(InputError, ValueError)


# --- reading each kind -------------------------------------------------------------------------


def test_jsonl_lines_are_numbered_and_bad_lines_become_error_records(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n\n{not json\n" + json.dumps(ROWS[1]) + "\n")
    (source,) = expand_inputs([str(path)])
    items = list(iter_source(source))
    assert [(i.line, i.error is None) for i in items] == [(1, True), (3, False), (4, True)]
    assert items[1].raw == b"{not json"
    assert all(i.source == str(path) for i in items)


def test_gzip_jsonl_is_read(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl.gz"
    with gzip.open(path, "wt") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in ROWS)
    (source,) = expand_inputs([str(path)])
    assert [record for _, record in read_all(source)] == ROWS


def test_truncated_gzip_raises_input_error_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl.gz"
    big_rows = [{"id": i, "text": os.urandom(2000).hex()} for i in range(50)]
    payload = gzip.compress("".join(json.dumps(r) + "\n" for r in big_rows).encode())
    path.write_bytes(payload[: len(payload) // 2])
    (source,) = expand_inputs([str(path)])
    seen: list[int] = []
    with pytest.raises(InputError) as info:
        for item in iter_source(source):
            seen.append(item.line)
    assert str(path) in str(info.value)
    assert seen, "rows before the cut are still delivered"
    assert f"after line {seen[-1]}" in str(info.value)


def test_json_array_records_are_numbered(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps(ROWS, indent=2))
    (source,) = expand_inputs([str(path)])
    assert source.kind == "json"
    assert read_all(source) == [(i + 1, row) for i, row in enumerate(ROWS)]


def test_json_single_object_is_one_record(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps(ROWS[0], indent=2))
    (source,) = expand_inputs([str(path)])
    assert read_all(source) == [(1, ROWS[0])]


def test_broken_json_array_raises_input_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[{"a": 1},\n  {"b": ')
    (source,) = expand_inputs([str(path)])
    with pytest.raises(InputError, match=r"bad\.json"):
        list(iter_source(source))


def test_parquet_rows_stream_in_batches_with_row_numbers(tmp_path: Path) -> None:
    rows = [{"id": i, "conversations": [{"from": "human", "value": str(i)}]} for i in range(700)]
    path = tmp_path / "a.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=100)
    (source,) = expand_inputs([str(path)])
    got = read_all(source)
    assert [line for line, _ in got] == list(range(1, 701))
    assert [record for _, record in got] == rows


def test_parquet_json_columns_are_decoded(tmp_path: Path) -> None:
    table = pa.table({"meta": pa.array(['{"a": [1, "x"]}', None], type=pa.json_())})
    path = tmp_path / "j.parquet"
    pq.write_table(table, path)
    (source,) = expand_inputs([str(path)])
    assert [record for _, record in read_all(source)] == [{"meta": {"a": [1, "x"]}}, {"meta": None}]


def test_corrupt_parquet_raises_input_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    path.write_bytes(b"this is not parquet at all")
    (source,) = expand_inputs([str(path)])
    with pytest.raises(InputError, match=r"bad\.parquet"):
        list(iter_source(source))


def test_save_to_disk_dataset_and_dataset_dict(tmp_path: Path) -> None:
    import datasets

    single = tmp_path / "single"
    datasets.Dataset.from_list(ROWS).save_to_disk(str(single))
    both = tmp_path / "both"
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(ROWS[:3]), "test": datasets.Dataset.from_list(ROWS[3:])}
    ).save_to_disk(str(both))

    sources = expand_inputs([str(single), str(both)])
    assert [s.kind for s in sources] == ["hf_disk", "hf_disk"]
    assert read_all(sources[0]) == [(i + 1, row) for i, row in enumerate(ROWS)]
    assert [r["id"] for _, r in read_all(sources[1])] == ["r0", "r1", "r2"]
    assert [r["id"] for _, r in read_all(sources[1], split="test")] == ["r3", "r4"]
    with pytest.raises(InputError, match=r"split 'validation' not in .*splits: test, train"):
        list(iter_source(sources[1], split="validation"))


def test_save_to_disk_directory_inside_a_directory_is_one_source(tmp_path: Path) -> None:
    import datasets

    write_jsonl(tmp_path / "a.jsonl", ROWS[:1])
    datasets.Dataset.from_list(ROWS[:2]).save_to_disk(str(tmp_path / "saved"))
    sources = expand_inputs([str(tmp_path)])
    assert [(Path(s.name).name, s.kind) for s in sources] == [("a.jsonl", "jsonl"), ("saved", "hf_disk")]


def test_hf_json_builder_with_local_data_files(tmp_path: Path) -> None:
    first = write_jsonl(tmp_path / "part1.jsonl", ROWS[:3])
    write_jsonl(tmp_path / "part2.jsonl", ROWS[3:])
    (source,) = expand_inputs(["hf:json"], data_files=[str(first), str(tmp_path / "part2*.jsonl")])
    assert (source.kind, source.dataset, source.streaming) == ("hf_load", "json", True)
    got = read_all(source)
    assert [line for line, _ in got] == [1, 2, 3, 4, 5]
    assert [record for _, record in got] == ROWS
    # any split name works with a plain file list
    assert len(read_all(source, split="validation")) == 5


def test_hf_data_files_that_match_nothing_raise(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nope"):
        expand_inputs(["hf:json"], data_files=[str(tmp_path / "nope*.jsonl")])


def test_hf_spec_parsing() -> None:
    (source,) = expand_inputs(["hf:json:config"], data_files=[__file__], streaming=False)
    assert (source.name, source.dataset, source.config, source.streaming) == ("hf:json:config", "json", "config", False)
    with pytest.raises(InputError):
        expand_inputs(["hf:"])


def test_hub_dataset_missing_offline_fails_at_start_in_one_line() -> None:
    """Offline (as every test runs) a Hub dataset not in the cache is refused when the inputs are
    expanded, not after minutes of retries as a reject at the end."""
    with pytest.raises(InputError, match="hf:someone/surely-not-a-dataset-here") as caught:
        expand_inputs(["hf:someone/surely-not-a-dataset-here"])
    assert "HF_HUB_OFFLINE" in str(caught.value) and "\n" not in str(caught.value)


def test_unreachable_hub_fails_fast_with_one_line_and_exit_2(tmp_path: Path) -> None:
    """Online but the Hub does not answer (a closed local port stands in for it): one line, exit 2."""
    import socket

    from tests.conftest import run_cli_subprocess

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0", "HF_ENDPOINT": f"http://127.0.0.1:{port}"}
    result = run_cli_subprocess("compress", "hf:org/nonexistent", "-o", str(tmp_path / "o.jsonl"), "--dry-run", env=env)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and "hf:org/nonexistent" in errors[0] and "cannot reach" in errors[0], result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) <= 2, result.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_skipped_own_output_files_are_named_once(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "in" / "a.jsonl", ROWS)
    for name in ("a.metrics.jsonl", "b.rejects.jsonl", "c.over_limit.jsonl"):
        write_jsonl(tmp_path / "in" / "sub" / name, ROWS)
    messages: list[str] = []
    sources = expand_inputs([str(tmp_path / "in")], on_message=messages.append)
    assert [Path(s.name).name for s in sources] == ["a.jsonl"]
    assert len(messages) == 1 and "skipped 3 file(s)" in messages[0] and "a.metrics.jsonl" in messages[0]
    messages.clear()
    expand_inputs([str(tmp_path / "in" / "a.jsonl")], on_message=messages.append)
    assert messages == []


# --- bad records: never the end of the run -----------------------------------------------------


def test_bad_jsonl_lines_become_records_with_errors_and_valid_json_is_marked(tmp_path: Path) -> None:
    good = json.dumps(ROWS[0])
    deep = '{"id": "deep", "x": ' + "[" * 3000 + "]" * 3000 + "}"
    lines = [
        good,
        '{"id": "a\\ud800b", "conversations": []}',
        deep,
        "null",
        "[1, 2",
        "[" * 3000 + "]" * 2999,
        good,
    ]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode())
    items = list(iter_source(InputSource(name=str(path), kind="jsonl", path=str(path))))
    assert [item.line for item in items] == list(range(1, 8))
    assert [(item.error is not None, item.raw_is_json) for item in items] == [
        (False, False),
        (True, True),  # lone surrogate: valid JSON, not writable as UTF-8 text
        (True, True),  # deeper than the parsers go, but valid JSON
        (False, False),  # null: parsed (None); the record check rejects it
        (True, False),
        (True, False),  # deep and unbalanced: not JSON
        (False, False),
    ]
    assert "surrogate" in items[1].error and "nested deeper" in items[2].error
    assert [item.raw for item in items] == [line.encode() for line in lines]


def test_bom_is_stripped_from_every_input(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    first = write_jsonl(tmp_path / "a.jsonl", ROWS[:1])
    second = tmp_path / "b.jsonl"
    second.write_bytes(bom + json.dumps(ROWS[1]).encode() + b"\r\n")
    as_json = tmp_path / "c.json"
    as_json.write_bytes(bom + json.dumps(ROWS[2:4]).encode())
    items = [item for source in expand_inputs([str(first), str(second), str(as_json)]) for item in iter_source(source)]
    assert [item.record for item in items] == ROWS[:4]
    assert [item.error for item in items] == [None] * 4
    assert items[1].raw == json.dumps(ROWS[1]).encode()  # the bytes written back carry no BOM


def test_json_array_with_a_deep_or_surrogate_element_keeps_the_others(tmp_path: Path) -> None:
    deep = "[" * 3000 + "]" * 3000
    path = tmp_path / "a.json"
    path.write_text(
        "[\n"
        + json.dumps(ROWS[0])
        + ",\n  null,\n"
        + deep
        + ",\n"
        + '{"id": "x\\udc00"}'
        + ",\n"
        + json.dumps(ROWS[1])
        + "\n]"
    )
    (source,) = expand_inputs([str(path)])
    items = list(iter_source(source))
    assert [item.line for item in items] == [1, 2, 3, 4, 5]
    assert [item.record for item in items] == [ROWS[0], None, None, {"id": "x\udc00"}, ROWS[1]]
    assert [item.error is not None for item in items] == [False, False, True, True, False]
    assert items[2].raw_is_json and items[2].raw == deep.encode()
    assert items[3].raw_is_json and items[3].raw == b'{"id": "x\\udc00"}'


def test_parquet_binary_decimal_and_time_columns_are_read_as_documented_json(tmp_path: Path) -> None:
    import datetime as dt
    from decimal import Decimal

    table = pa.table(
        {
            "id": ["a", "b"],
            "blob": pa.array([b"\x00\xff", None], pa.binary()),
            "price": pa.array([Decimal("12.30"), Decimal("-1")], pa.decimal128(6, 2)),
            "ts": pa.array([dt.datetime(2024, 5, 1, 12, 0, 0, 5), None], pa.timestamp("us", tz="UTC")),
            "day": pa.array([dt.date(2024, 5, 1)] * 2, pa.date32()),
            "took": pa.array([dt.timedelta(seconds=1.5)] * 2, pa.duration("ms")),
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    (source,) = expand_inputs([str(tmp_path / "t.parquet")])
    records = [item.record for item in iter_source(source)]
    assert records[0] == {
        "id": "a",
        "blob": "AP8=",
        "price": "12.30",
        "ts": "2024-05-01T12:00:00.000005+00:00",
        "day": "2024-05-01",
        "took": 1.5,
    }
    assert records[1]["blob"] is None and records[1]["price"] == "-1.00"


# --- sharding ----------------------------------------------------------------------------------


def test_shards_are_disjoint_complete_and_deterministic() -> None:
    rows = range(103)
    shards = [[i for i in rows if shard_filter(i, 4, s)] for s in range(4)]
    assert sorted(i for shard in shards for i in shard) == list(rows)
    assert sum(len(shard) for shard in shards) == 103  # no row in two shards
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    assert shards == [[i for i in rows if shard_filter(i, 4, s)] for s in range(4)]
    assert all(shard_filter(i, 1, 0) for i in rows)


@pytest.mark.parametrize(("num_shards", "shard_index"), [(0, 0), (2, 2), (2, -1)])
def test_bad_shard_arguments_raise(num_shards: int, shard_index: int) -> None:
    with pytest.raises(ValueError):
        shard_filter(0, num_shards, shard_index)


def test_parquet_row_with_invalid_utf8_text_is_one_error_record(tmp_path: Path) -> None:
    text = pa.array([b"r0", b"\xff\xfe", b"r2"], pa.binary()).view(pa.string())
    pq.write_table(pa.table({"id": text, "n": [0, 1, 2]}), tmp_path / "t.parquet")
    items = list(iter_source(InputSource(name="t.parquet", kind="parquet", path=str(tmp_path / "t.parquet"))))
    assert [(item.line, item.record) for item in items] == [
        (1, {"id": "r0", "n": 0}),
        (2, None),
        (3, {"id": "r2", "n": 2}),
    ]
    assert items[1].error is not None and "utf-8" in items[1].error and not items[1].raw_is_json


def test_save_to_disk_binary_and_timestamp_columns_are_read_as_json(tmp_path: Path) -> None:
    import datetime as dt

    import datasets

    table = pa.table(
        {
            "id": ["a"],
            "blob": pa.array([b"\x01"], pa.binary()),
            "ts": pa.array([dt.datetime(2024, 1, 2, 3, 4, 5)], pa.timestamp("s")),
        }
    )
    datasets.Dataset(table).save_to_disk(str(tmp_path / "saved"))
    (source,) = expand_inputs([str(tmp_path / "saved")])
    assert [item.record for item in iter_source(source)] == [{"id": "a", "blob": "AQ==", "ts": "2024-01-02T03:04:05"}]
