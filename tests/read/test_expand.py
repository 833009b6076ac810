"""Which inputs a run reads: suffixes, directory walks, own outputs skipped, errors naming the path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import write_jsonl
from tests.read.reader_fixtures import ROWS, read_all
from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.read.sources import InputError


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


def test_save_to_disk_directory_inside_a_directory_is_one_source(tmp_path: Path) -> None:
    import datasets

    write_jsonl(tmp_path / "a.jsonl", ROWS[:1])
    datasets.Dataset.from_list(ROWS[:2]).save_to_disk(str(tmp_path / "saved"))
    sources = expand_inputs([str(tmp_path)])
    assert [(Path(s.name).name, s.kind) for s in sources] == [("a.jsonl", "jsonl"), ("saved", "hf_disk")]


def _runs(tmp_path: Path) -> Path:
    """`runs/a/x.jsonl` and `runs/b/y.jsonl`: the user's rows in two folders."""
    runs = tmp_path / "runs"
    write_jsonl(runs / "a" / "x.jsonl", ROWS[:1])
    write_jsonl(runs / "b" / "y.jsonl", ROWS[:1])
    return runs


def _ours(path: Path) -> bool:
    return path.with_suffix(".report.json").is_file()


def test_an_output_folder_inside_the_input_holding_the_users_files_is_refused(tmp_path: Path) -> None:
    """`compress runs -o runs/b/`: the output folder is left out of the walk (so a re-run does not
    read its outputs back), and with it the user's `runs/b/y.jsonl`, which no run wrote. It was
    left unread, with a note calling `runs/b` a file named like this tool's outputs."""
    runs = _runs(tmp_path)
    notes: list[str] = []
    with pytest.raises(
        InputError, match=r"output folder .*runs/b.* holds input files this tool did not write .*y\.jsonl"
    ):
        expand_inputs([str(runs)], exclude=[str(runs / "b")], written_by_us=_ours, on_message=notes.append)
    # Once the run wrote it (its report beside it), the file in the output folder is an output: left out.
    (runs / "b" / "y.report.json").write_text("{}")
    sources = expand_inputs([str(runs)], exclude=[str(runs / "b")], written_by_us=_ours, on_message=notes.append)
    assert [Path(s.name).name for s in sources] == ["x.jsonl"]
    assert notes == [f"note: not read as input: this run's output {runs / 'b'}, inside an input folder"]


def test_an_output_folder_that_is_the_input_folder_is_refused_and_one_holding_it_reads_it(tmp_path: Path) -> None:
    """`compress runs -o runs/` would make each input its own output: refused, naming the folder (it
    said "no input files in directory"). `compress runs/a -o runs/` writes beside the input folder,
    not in it: its files are read (they were all left out, as if inside the output)."""
    runs = _runs(tmp_path)
    with pytest.raises(InputError, match=r"the output is the input folder .*runs.* itself"):
        expand_inputs([str(runs)], exclude=[str(runs)], written_by_us=_ours)
    sources = expand_inputs([str(runs / "a")], exclude=[str(runs)], written_by_us=_ours)
    assert [Path(s.name).name for s in sources] == ["x.jsonl"]
