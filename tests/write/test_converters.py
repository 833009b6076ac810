"""Final output conversion: format choice, deterministic gzip, parquet with schema drift, save_to_disk."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.read.readers import iter_source
from trajectory_compressor.write import converters
from trajectory_compressor.write.converters import ConversionError, convert_jsonl, output_format_for

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

# Rows whose shapes drift the way real trajectory files do.
DRIFTING_ROWS: list[dict[str, Any]] = [
    {
        "id": "a",
        "conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}],
        "score": 1,
    },
    {
        "id": "b",
        "conversations": [{"from": "human", "value": "q2", "weight": 0}],  # a turn key only here
        "score": None,  # sometimes null
        "meta": {"source": "x"},  # a column only in some rows
    },
    {
        "id": "c",
        "conversations": [],
        "score": 2.5,  # int, then null, then float
        "meta": {"source": "y", "tags": ["t"]},  # struct grows a field
        "mixed": "text",
    },
    {
        "id": "d",
        "conversations": [{"from": "gpt", "value": "z"}],
        "mixed": {"now": "an object"},  # a column whose type changes: stored as JSON text
        "empty": {},
    },
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def read_back(path: Path) -> list[dict[str, Any]]:
    (source,) = expand_inputs([str(path)])
    return [item.record for item in iter_source(source)]


def expected_columnar(rows: list[dict[str, Any]], numeric: dict[str, type]) -> list[dict[str, Any]]:
    """What a columnar file gives back: every column in every row (null when absent)."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    out = []
    for row in rows:
        full = {c: row.get(c) for c in columns}
        for name, kind in numeric.items():
            if full[name] is not None:
                full[name] = kind(full[name])
        out.append(full)
    return out


def normalize_turns(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop nulls that columnar storage adds to nested objects, to compare contents."""

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if v is not None}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return [clean(row) for row in rows]


# --- output_format_for -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("out.jsonl", "jsonl"),
        ("out.ndjson", "jsonl"),
        ("out.jsonl.gz", "jsonl.gz"),
        ("OUT.JSONL.GZ", "jsonl.gz"),
        ("out.parquet", "parquet"),
        ("out_dataset", "hf"),
        ("some/dir/", "hf"),
    ],
)
def test_output_format_by_suffix(path: str, expected: str) -> None:
    assert output_format_for(path) == expected


def test_output_format_explicit_and_errors(tmp_path: Path) -> None:
    assert output_format_for("whatever.bin", "parquet") == "parquet"
    assert output_format_for(str(tmp_path), None) == "hf"  # an existing directory
    with pytest.raises(ConversionError, match="unknown output format"):
        output_format_for("x.jsonl", "csv")
    with pytest.raises(ConversionError, match="suffix"):
        output_format_for("x.csv")


# --- jsonl / jsonl.gz --------------------------------------------------------------------------


def test_jsonl_gz_is_byte_identical_across_runs_and_names(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "run.jsonl", DRIFTING_ROWS)
    first = convert_jsonl(source, tmp_path / "one.jsonl.gz", "jsonl.gz")
    os.utime(source, (1, 1))  # a different mtime must not leak into the header
    convert_jsonl(source, tmp_path / "two.jsonl.gz", "jsonl.gz")
    one, two = (tmp_path / "one.jsonl.gz").read_bytes(), (tmp_path / "two.jsonl.gz").read_bytes()
    assert one == two
    assert one[4:8] == b"\0\0\0\0"  # mtime field
    assert not one[3] & 0x08  # no FNAME flag: no file name stored
    assert gzip.decompress(one) == source.read_bytes()
    assert first.rows == 4 and first.fmt == "jsonl.gz"
    assert read_back(tmp_path / "one.jsonl.gz") == DRIFTING_ROWS


def test_jsonl_copy_and_no_temp_files_left(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "run.jsonl", DRIFTING_ROWS)
    out = tmp_path / "out" / "final.jsonl"
    result = convert_jsonl(source, out, "jsonl")
    assert out.read_bytes() == source.read_bytes()
    assert result.rows == 4
    assert sorted(p.name for p in out.parent.iterdir()) == ["final.jsonl"]


# --- parquet -----------------------------------------------------------------------------------


def test_parquet_handles_schema_drift(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "run.jsonl", DRIFTING_ROWS)
    out = tmp_path / "final.parquet"
    result = convert_jsonl(source, out, "parquet")
    assert result.rows == 4
    assert set(result.json_columns) == {"mixed", "empty"}

    schema = pq.read_schema(out)
    assert schema.field("score").type == pa.float64()  # int and float widen to float
    assert pa.types.is_struct(schema.field("meta").type)
    assert {f.name for f in schema.field("meta").type} == {"source", "tags"}
    assert isinstance(schema.field("mixed").type, pa.JsonType)

    back = read_back(out)
    assert [row["mixed"] for row in back] == [None, None, "text", {"now": "an object"}]
    assert [row["empty"] for row in back] == [None, None, None, {}]
    assert normalize_turns(back) == normalize_turns(expected_columnar(DRIFTING_ROWS, {"score": float}))


def test_parquet_mixed_openai_content_round_trips(tmp_path: Path) -> None:
    rows = [
        {"messages": [{"role": "user", "content": "plain"}]},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "parts"}]}]},
        {"messages": [{"role": "assistant", "content": None, "tool_calls": [{"id": "1", "function": {"name": "f"}}]}]},
    ]
    source = write_jsonl(tmp_path / "run.jsonl", rows)
    result = convert_jsonl(source, tmp_path / "o.parquet", "parquet")
    assert result.json_columns == ("messages",)
    assert read_back(tmp_path / "o.parquet") == rows  # JSON text columns come back exactly


def test_parquet_is_written_in_row_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(converters, "CHUNK_MAX_ROWS", 10)
    rows = [{"id": i, "conversations": [{"from": "human", "value": "x" * i}]} for i in range(35)]
    rows[-1]["late"] = "only here"  # a key first seen in the last chunk still makes the schema
    source = write_jsonl(tmp_path / "run.jsonl", rows)
    convert_jsonl(source, tmp_path / "o.parquet", "parquet")
    parquet_file = pq.ParquetFile(tmp_path / "o.parquet")
    assert parquet_file.num_row_groups == 4
    back = read_back(tmp_path / "o.parquet")
    assert [row["id"] for row in back] == list(range(35))
    assert back[0]["late"] is None and back[-1]["late"] == "only here"


def test_integers_beyond_int64_survive_as_json(tmp_path: Path) -> None:
    big = 2**63 + 5  # valid JSON, parsed exactly, but no Arrow integer type holds it
    source = tmp_path / "run.jsonl"
    source.write_text(f'{{"id": 1, "big": {big}}}\n{{"id": 2, "big": -1}}\n')
    result = convert_jsonl(source, tmp_path / "o.parquet", "parquet")
    assert result.json_columns == ("big",)
    assert read_back(tmp_path / "o.parquet") == [{"id": 1, "big": big}, {"id": 2, "big": -1}]


def test_bad_rows_raise_conversion_error_and_leave_no_output(tmp_path: Path) -> None:
    source = tmp_path / "run.jsonl"
    source.write_text('{"a": 1}\n[1, 2]\n')
    out = tmp_path / "o.parquet"
    with pytest.raises(ConversionError, match=r"run\.jsonl:2"):
        convert_jsonl(source, out, "parquet")
    assert list(tmp_path.iterdir()) == [source]
    with pytest.raises(ConversionError, match="not found"):
        convert_jsonl(tmp_path / "missing.jsonl", out, "parquet")


def test_existing_output_is_replaced(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "run.jsonl", DRIFTING_ROWS[:1])
    out = tmp_path / "o.parquet"
    out.write_text("old")
    convert_jsonl(source, out, "parquet")
    assert read_back(out)[0]["id"] == "a"


# --- datasets save_to_disk ---------------------------------------------------------------------


def test_hf_save_to_disk_output_loads_back(tmp_path: Path) -> None:
    import datasets

    source = write_jsonl(tmp_path / "run.jsonl", DRIFTING_ROWS)
    out = tmp_path / "final_dataset"
    result = convert_jsonl(source, out, "hf")
    assert result.rows == 4 and result.fmt == "hf"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["final_dataset", "run.jsonl"]  # scratch removed

    loaded = datasets.load_from_disk(str(out))
    assert len(loaded) == 4
    assert loaded[3]["mixed"] == {"now": "an object"}  # JSON text column is a `Json` feature
    back = read_back(out)  # and it is an input kind of its own
    assert normalize_turns(back) == normalize_turns(expected_columnar(DRIFTING_ROWS, {"score": float}))


def test_hf_output_is_the_same_bytes_for_the_same_rows(tmp_path: Path) -> None:
    """`datasets` would fingerprint the rows by their random scratch path, writing a new
    `_fingerprint` into `state.json` on every run: the same rows must give the same folder."""
    source = write_jsonl(tmp_path / "run.jsonl", DRIFTING_ROWS)
    first, second = tmp_path / "first", tmp_path / "second"
    convert_jsonl(source, first, "hf")
    convert_jsonl(source, second, "hf")
    files = sorted(path.name for path in first.iterdir())
    assert "state.json" in files and files == sorted(path.name for path in second.iterdir())
    assert all((first / name).read_bytes() == (second / name).read_bytes() for name in files)
    other = tmp_path / "other"
    convert_jsonl(write_jsonl(tmp_path / "fewer.jsonl", DRIFTING_ROWS[:2]), other, "hf")
    fingerprint = json.loads((first / "state.json").read_text())["_fingerprint"]
    assert fingerprint != json.loads((other / "state.json").read_text())["_fingerprint"]


def test_hf_output_replaces_an_existing_dataset(tmp_path: Path) -> None:
    import datasets

    out = tmp_path / "ds"
    convert_jsonl(write_jsonl(tmp_path / "one.jsonl", DRIFTING_ROWS), out, "hf")
    convert_jsonl(write_jsonl(tmp_path / "two.jsonl", DRIFTING_ROWS[:2]), out, "hf")
    assert len(datasets.load_from_disk(str(out))) == 2
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_original_arrow_types_are_restored_and_a_value_that_does_not_fit_falls_back(tmp_path: Path) -> None:
    """`column_types` restores encoded columns; a column whose values are not all of that type
    (here a JSONL row's plain text under a binary column's name) is inferred instead, not lost."""
    import datetime as dt
    from decimal import Decimal

    rows = [
        {"id": "a", "blob": "AP8=", "price": "1.50", "ts": "2024-05-01T12:00:00.000001+00:00", "day": "2024-05-01"},
        {"id": "b", "blob": None, "price": None, "ts": None, "day": None},
    ]
    types = {
        "blob": pa.binary(),
        "price": pa.decimal128(5, 2),
        "ts": pa.timestamp("us", tz="UTC"),
        "day": pa.date32(),
    }
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    convert_jsonl(source, tmp_path / "out.parquet", "parquet", types)
    table = pq.read_table(tmp_path / "out.parquet")
    assert {name: table.schema.field(name).type for name in types} == types
    assert table.to_pylist()[0] == {
        "id": "a",
        "blob": b"\x00\xff",
        "price": Decimal("1.50"),
        "ts": dt.datetime(2024, 5, 1, 12, 0, 0, 1, tzinfo=dt.timezone.utc),
        "day": dt.date(2024, 5, 1),
    }
    source.write_text("".join(json.dumps(row) + "\n" for row in [*rows, {"id": "c", "blob": "not base64!"}]))
    convert_jsonl(source, tmp_path / "mixed.parquet", "parquet", types)
    mixed = pq.read_table(tmp_path / "mixed.parquet")
    assert mixed.schema.field("blob").type == pa.string() and mixed.schema.field("price").type == pa.decimal128(5, 2)
    assert mixed.column("blob").to_pylist() == ["AP8=", None, "not base64!"]


def test_a_map_column_keeps_its_type_in_parquet_and_is_inferred_for_hf_which_has_no_map(tmp_path: Path) -> None:
    """A Parquet input's map column once stopped an ``hf`` output with an internal error
    (`datasets` has no feature for Arrow maps): there it is inferred from its JSON values."""
    import datasets

    rows = [{"id": "a", "meta": [["k", "v"], ["k2", "v2"]]}, {"id": "b", "meta": None}, {"id": "c", "meta": []}]
    types = {"meta": pa.map_(pa.string(), pa.string()), "nested": pa.list_(pa.map_(pa.string(), pa.int64()))}
    source = write_jsonl(tmp_path / "run.jsonl", [{**row, "nested": [[["n", 1]]]} for row in rows])
    convert_jsonl(source, tmp_path / "out.parquet", "parquet", types)
    table = pq.read_table(tmp_path / "out.parquet")
    assert table.schema.field("meta").type == types["meta"] and table.schema.field("nested").type == types["nested"]
    assert table.column("meta").to_pylist() == [[("k", "v"), ("k2", "v2")], None, []]
    convert_jsonl(source, tmp_path / "out_hf", "hf", types)
    loaded = datasets.load_from_disk(str(tmp_path / "out_hf"))
    assert [row["meta"] for row in loaded] == [[["k", "v"], ["k2", "v2"]], None, []]
    assert [row["nested"] for row in loaded] == [[[["n", 1]]]] * 3


@pytest.fixture
def umask_027():
    """A umask that differs from the usual 022, so a mode that ignores it shows."""
    previous = os.umask(0o027)
    try:
        yield 0o027
    finally:
        os.umask(previous)


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.gz", "parquet", "hf"])
def test_outputs_get_the_mode_the_umask_gives_like_any_new_file(tmp_path: Path, umask_027: int, fmt: str) -> None:
    """Issue 20 F17: a Parquet output was 0600 (tempfile's mode, kept by the rename) beside 0644 side files."""
    source = write_jsonl(tmp_path / "run.jsonl", DRIFTING_ROWS)
    out = tmp_path / {"jsonl": "o.jsonl", "jsonl.gz": "o.jsonl.gz", "parquet": "o.parquet", "hf": "o_hf"}[fmt]
    convert_jsonl(source, out, fmt)
    files = [out] if out.is_file() else [p for p in out.iterdir()]
    for path in files:
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask_027, path
    if out.is_dir():
        assert out.stat().st_mode & 0o777 == 0o777 & ~umask_027


# --- columns of mixed scalars (issue 20 F19) --------------------------------------------------

TAU_ROWS: list[dict[str, Any]] = [  # tau-bench's task_id: an int in one file, a string in the next
    {"task_id": 0, "trial": 1, "conversations": []},
    {"task_id": 7, "trial": 2, "conversations": []},
    {"task_id": "48", "trial": 3, "conversations": []},
    {"task_id": None, "trial": 4, "conversations": []},
    {"task_id": 2.5, "trial": 5, "conversations": [], "flag": True},
    {"task_id": "x", "trial": 6, "conversations": [], "flag": "maybe"},
]


@pytest.mark.parametrize("chunk_rows", [10_000, 2], ids=["one-chunk", "across-chunks"])
def test_a_column_of_numbers_and_strings_becomes_a_string_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_rows: int
) -> None:
    """Not Arrow JSON text, which pandas reads as '"48"' and '0': numbers become their decimal text."""
    monkeypatch.setattr(converters, "CHUNK_MAX_ROWS", chunk_rows)
    source = write_jsonl(tmp_path / "run.jsonl", TAU_ROWS)
    out = tmp_path / "o.parquet"
    result = convert_jsonl(source, out, "parquet")
    assert result.text_columns == ("task_id", "flag") and result.json_columns == ()
    table = pq.read_table(out)
    assert table.schema.field("task_id").type == pa.string() and table.schema.field("trial").type == pa.int64()
    assert table.column("task_id").to_pylist() == ["0", "7", "48", None, "2.5", "x"]
    assert table.column("flag").to_pylist() == [None, None, None, None, "true", "maybe"]
    pandas = pytest.importorskip("pandas")
    assert pandas.read_parquet(out)["task_id"].tolist()[:3] == ["0", "7", "48"]
    assert result.changed_columns_note() == (
        f"warning: columns stored with another type in {out}: task_id, flag as text (numbers and strings mixed)"
    )


def test_a_column_mixing_strings_and_objects_stays_json_text_and_is_named(tmp_path: Path) -> None:
    rows = [{"meta": "plain"}, {"meta": {"k": 1}}, {"id": 5}, {"id": "a", "meta": None}]
    out = tmp_path / "o.parquet"
    result = convert_jsonl(write_jsonl(tmp_path / "run.jsonl", rows), out, "parquet")
    assert (result.text_columns, result.json_columns) == (("id",), ("meta",))
    assert read_back(out) == [
        {"meta": "plain", "id": None}, {"meta": {"k": 1}, "id": None}, {"meta": None, "id": "5"},
        {"meta": None, "id": "a"},
    ]  # fmt: skip
    assert result.changed_columns_note() == (
        f"warning: columns stored with another type in {out}: id as text (numbers and strings mixed); "
        "meta as JSON text (values of several kinds)"
    )
    unchanged = convert_jsonl(write_jsonl(tmp_path / "plain.jsonl", [{"id": 1}]), tmp_path / "p.parquet", "parquet")
    assert unchanged.changed_columns_note() is None
