"""`datasets` inputs: save_to_disk directories and hf: specs, a missing Hub dataset refused at once."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from tests.conftest import write_jsonl
from tests.read.reader_fixtures import ROWS, read_all
from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.read.readers import iter_source
from trajectory_compressor.read.sources import InputError
from trajectory_compressor.settings import ReadConfig


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
        list(iter_source(sources[1], ReadConfig(split="validation")))


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


PNG = bytes.fromhex(  # a 1x1 grey PNG image
    "89504e470d0a1a0a0000000d49484452000000010000000108000000003a7e9b55"
    "0000000a49444154789c636000000002000148afa4710000000049454e44ae426082"
)


def _media_dataset(path: Path) -> None:
    import datasets

    rows = {"id": ["a", "b"], "img": [{"bytes": PNG, "path": "a.png"}, None]}
    stored = datasets.Dataset.from_dict(rows)  # as stored: no Pillow needed to build it
    stored.cast_column("img", datasets.Image()).save_to_disk(str(path))


def test_an_image_column_is_read_as_its_stored_bytes_not_decoded(tmp_path: Path) -> None:
    """`datasets` decodes an Image column into PIL images (not JSON: the run stopped with an
    internal error), or without Pillow refuses to read the input at all. The column is read
    as it is stored: its bytes (base64, as any binary value) and path."""
    import base64

    _media_dataset(tmp_path / "saved")
    (source,) = expand_inputs([str(tmp_path / "saved")])
    records = [item.record for item in iter_source(source)]
    assert records == [
        {"id": "a", "img": {"bytes": base64.b64encode(PNG).decode(), "path": "a.png"}},
        {"id": "b", "img": None},
    ]


def test_an_image_column_of_a_parquet_file_loaded_by_the_hf_builder_is_not_decoded(tmp_path: Path) -> None:
    import datasets

    _media_dataset(tmp_path / "saved")
    datasets.load_from_disk(str(tmp_path / "saved")).to_parquet(str(tmp_path / "m.parquet"))
    (source,) = expand_inputs(["hf:parquet"], data_files=[str(tmp_path / "m.parquet")])
    records = [record for _, record in read_all(source)]
    assert [record["img"] if record["img"] is None else sorted(record["img"]) for record in records] == [
        ["bytes", "path"],
        None,
    ]


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
