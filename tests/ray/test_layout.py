"""Which files of a Ray output folder are this tool's own: the rules, without Ray."""

from __future__ import annotations

from pathlib import Path

import pytest

from trajectory_compressor.ray.layout import (
    MARKER,
    OutputFolderError,
    RayOutputLayout,
    check_output_folders,
    claim_output_folders,
    foreign_file,
)


def test_a_folder_without_the_marker_proves_nothing_even_with_this_tools_names(tmp_path: Path) -> None:
    folder = tmp_path / "x.jsonl"
    assert foreign_file(str(folder)) is None  # missing
    folder.mkdir()
    assert foreign_file(str(folder)) is None  # empty
    (folder / "part-000000000000.jsonl").write_text("{}\n")
    assert foreign_file(str(folder)) == str(folder / "part-000000000000.jsonl")


def test_in_a_marked_folder_only_parts_and_their_temporary_files_are_its_own(tmp_path: Path) -> None:
    folder = tmp_path / "x.jsonl"
    folder.mkdir()
    (folder / MARKER).write_text("")
    for name in ("part-000000000000.jsonl", "part-000000000512.parquet", ".part-000000001024.jsonl.tmp"):
        (folder / name).write_text("")
    assert foreign_file(str(folder)) is None
    for foreign in ("part-00000-c000.snappy.parquet", "part-0.jsonl", "notes.txt", "part-000000002048.jsonl.gz"):
        (folder / foreign).write_text("")
        assert foreign_file(str(folder)) == str(folder / foreign)
        (folder / foreign).unlink()
    (folder / "part-000000004096.jsonl").mkdir()  # a folder with a part's name is not a part
    assert foreign_file(str(folder)) == str(folder / "part-000000004096.jsonl")


def test_claiming_marks_new_folders_and_deletes_only_the_earlier_runs_parts(tmp_path: Path) -> None:
    layout = RayOutputLayout.beside(str(tmp_path / "out" / "x.jsonl"))
    claim_output_folders(layout)
    for folder in layout.folders().values():
        assert sorted(path.name for path in Path(folder).iterdir()) == [MARKER]
    data = Path(layout.data)
    (data / "part-000000000000.jsonl").write_text("{}\n")
    (data / ".part-000000000512.jsonl.tmp").write_text("{")
    claim_output_folders(layout)
    assert sorted(path.name for path in data.iterdir()) == [MARKER]
    (Path(layout.rejects) / "kept.txt").write_text("mine")
    with pytest.raises(OutputFolderError, match=r"kept\.txt, which this tool did not write"):
        claim_output_folders(layout)
    assert (Path(layout.rejects) / "kept.txt").read_text() == "mine"


def test_an_output_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text("{}\n")  # a local run's dataset
    with pytest.raises(OutputFolderError, match=r"x\.jsonl is a file"):
        check_output_folders(RayOutputLayout.beside(str(tmp_path / "x.jsonl")))
    assert (tmp_path / "x.jsonl").read_text() == "{}\n"


def test_the_runs_record_is_its_own_only_in_the_records_folder(tmp_path: Path) -> None:
    """`run.json` (the run's fingerprint and what it hashed) sits beside the parts' records; in a
    part folder a file of that name is somebody else's."""
    layout = RayOutputLayout.beside(str(tmp_path / "x.jsonl"))
    claim_output_folders(layout)
    for name in ("run.json", ".run.json.tmp"):
        (Path(layout.records) / name).write_text("{}")
    check_output_folders(layout)
    claim_output_folders(layout)  # an earlier run's record goes, as its parts do
    assert sorted(path.name for path in Path(layout.records).iterdir()) == [MARKER]
    (Path(layout.data) / "run.json").write_text("{}")
    with pytest.raises(OutputFolderError, match=r"run\.json, which this tool did not write"):
        check_output_folders(layout)


PROBE = ".trajectory-compressor-probe-" + "0123456789abcdef" * 2


@pytest.mark.parametrize("marked", [True, False], ids=["marked-folder", "unmarked-folder"])
def test_a_probe_a_killed_driver_left_is_deleted_by_the_next_run_not_refused(tmp_path: Path, marked: bool) -> None:
    """A driver killed during the multinode storage check leaves its probe file in an output folder
    that existed (marked by an earlier run, or not yet); the next run was refused over it, a file
    this tool did not write. It is ours by its name: accepted, then deleted when the run claims."""
    layout = RayOutputLayout.beside(str(tmp_path / "out" / "x.jsonl"))
    data = Path(layout.data)
    data.mkdir(parents=True)
    if marked:
        (data / MARKER).write_text("")
        (data / "part-000000000000.jsonl").write_text("{}\n")
    (data / PROBE).write_text("token")
    assert foreign_file(str(data)) is None
    check_output_folders(layout)
    claim_output_folders(layout)
    assert sorted(path.name for path in data.iterdir()) == [MARKER]


@pytest.mark.parametrize(
    "name",
    [".trajectory-compressor-probe-abc", ".trajectory-compressor-probe-" + "G" * 32, "trajectory-compressor-probe-"],
    ids=["short-token", "not-hex", "no-dot"],
)
def test_only_the_probes_own_name_is_taken_for_ours(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "x.jsonl"
    folder.mkdir()
    (folder / MARKER).write_text("")
    (folder / name).write_text("token")
    assert foreign_file(str(folder)) == str(folder / name)
