"""A re-run of a Ray run that did not complete keeps the parts that verify and computes only the rest.

A lost driver leaves its parts and their records, and no report: the state is made here as it
is left (a full run, then its report and its last parts taken away, a write cut mid-part), so
the point the run stopped at is known without killing anything. The multi-node module kills a
real driver (`test_multinode.py`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SAMPLE, read_jsonl, run_cli, write_jsonl
from tests.ray.conftest import assert_same_outputs
from trajectory_compressor.ray import write

# Killed, signalled and resumed runs: each starts Ray two or three times (a slow suite).
pytestmark = [pytest.mark.ray, pytest.mark.ray_faults]
RAY = ("--engine", "ray", "--num-workers", "2", "-q")
ROWS = 120


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts of at least 16 rows (blocks are 64): several parts from a small input."""
    monkeypatch.setattr(write, "ROWS_PER_PART", 16)


def stopped_after(out: Path, kept: int) -> list[str]:
    """The output as a driver lost after `kept` parts leaves it: no report, the later parts gone
    (one of them cut mid-write, as a temporary file); returns the kept parts' names."""
    stem = out.parent / out.name.removesuffix(".jsonl")
    Path(f"{stem}.report.json").unlink()
    records = sorted(Path(f"{stem}.part_records").glob("part-*.json"))
    assert len(records) > kept + 1
    for record in records[kept:]:
        name = record.name.removesuffix(".json")
        record.unlink()
        for folder in (out, *(Path(f"{stem}.{side}") for side in ("metrics", "over_limit", "rejects"))):
            for part in folder.glob(f"{name}.*"):
                part.unlink()
    cut = records[kept].name.removesuffix(".json")
    (out / f"{cut}.jsonl").write_bytes(b'{"half a part": ')  # written, never recorded: not kept
    return [record.name.removesuffix(".json") for record in records[:kept]]


def test_a_rerun_keeps_the_parts_that_verify_and_computes_only_the_missing_rows(
    local_ray, small_parts, tmp_path: Path
) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", read_jsonl(SAMPLE)[:ROWS])
    args = ("--summarizer", "extractive")
    local = run_cli("compress", str(source), "-o", str(tmp_path / "local" / "x.jsonl"), *args)
    assert local.returncode == 0, local.stderr
    out = tmp_path / "ray" / "x.jsonl"
    first = run_cli("compress", str(source), "-o", str(out), *args, *RAY)
    assert first.returncode == 0, first.stderr
    parts = json.loads((tmp_path / "ray" / "x.report.json").read_text())["files"]["data"]["parts"]
    kept = stopped_after(out, 2)
    damaged = out / f"{kept[1]}.jsonl"
    damaged.write_bytes(damaged.read_bytes().replace(b'"', b"'", 1))  # changed after it was recorded: redone
    mtime = (out / f"{kept[0]}.jsonl").stat().st_mtime_ns
    record = json.loads((tmp_path / "ray" / "x.part_records" / f"{kept[0]}.json").read_text())
    rows_kept = sum(end - start for start, end in record["rows"])
    again = run_cli("compress", str(source), "-o", str(out), *args, *RAY)
    assert again.returncode == 0, again.stderr
    report = json.loads((tmp_path / "ray" / "x.report.json").read_text())
    assert report["resume"]["parts_kept"] == 1  # the damaged one is not kept
    assert report["resume"]["parts_written"] <= parts - 1 + 1
    assert report["resume"]["rows_kept"] == rows_kept > 0
    assert (out / f"{kept[0]}.jsonl").stat().st_mtime_ns == mtime  # not written again
    assert_same_outputs(tmp_path / "local" / "x.jsonl", out)  # the report's totals too: kept parts' and new ones'
    assert report["files"]["data"]["parts"] == len(list(out.glob("part-*.jsonl")))
    assert not list(out.glob(".*.tmp"))


def test_an_unfinished_run_with_other_settings_is_refused_unless_no_resume(
    local_ray, small_parts, tmp_path: Path
) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", read_jsonl(SAMPLE)[:ROWS])
    out = tmp_path / "ray" / "x.jsonl"
    first = run_cli("compress", str(source), "-o", str(out), "--summarizer", "extractive", *RAY)
    assert first.returncode == 0, first.stderr
    stopped_after(out, 1)
    other = ("--summarizer", "extractive", "--target-max-tokens", "9000")
    refused = run_cli("compress", str(source), "-o", str(out), *other, *RAY)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"error: {out} holds the parts of an unfinished run with other inputs or settings "
        "(settings differ: target_max_tokens 15250 -> 9000); "
        "re-run with the same command to resume it, or pass --no-resume to start over"
    ]
    added = write_jsonl(tmp_path / "b.jsonl", read_jsonl(SAMPLE)[:2])
    refused = run_cli("compress", str(source), str(added), "-o", str(out), "--summarizer", "extractive", *RAY)
    assert f"(inputs differ: '{added}' added); re-run" in refused.stderr
    # Parts an earlier version left (no run.json beside their records): refused as then.
    (tmp_path / "ray" / "x.part_records" / "run.json").unlink()
    refused = run_cli("compress", str(source), "-o", str(out), *other, *RAY)
    assert refused.stderr.strip().splitlines() == [
        f"error: {out} holds the parts of an unfinished run with other inputs or settings; "
        "re-run with the same command to resume it, or pass --no-resume to start over"
    ]
    fresh = run_cli("compress", str(source), "-o", str(out), *other, "--no-resume", *RAY)
    assert fresh.returncode == 0, fresh.stderr
    local = run_cli("compress", str(source), "-o", str(tmp_path / "local" / "x.jsonl"), *other)
    assert local.returncode == 0, local.stderr
    assert_same_outputs(tmp_path / "local" / "x.jsonl", out)
    assert json.loads((tmp_path / "ray" / "x.report.json").read_text())["resume"]["parts_kept"] == 0


def test_a_save_to_disk_input_saved_again_with_other_rows_is_not_resumed_from_the_old_parts(
    local_ray, small_parts, tmp_path: Path
) -> None:
    """A `save_to_disk` directory has no sha256 of its own, and the run's fingerprint held only its
    record count: saved again with as many other rows, the re-run of an unfinished run kept every
    old part, computed nothing and said `completed` with the old rows. Its files' bytes are in the
    fingerprint now: the same directory resumes, another is refused naming it."""
    datasets = pytest.importorskip("datasets")
    rows = read_jsonl(SAMPLE)
    dataset = tmp_path / "runs"
    datasets.Dataset.from_list(rows[:40]).save_to_disk(str(dataset))
    out = tmp_path / "ray" / "x.jsonl"
    first = run_cli("compress", str(dataset), "-o", str(out), "--summarizer", "extractive", *RAY)
    assert first.returncode == 0, first.stderr
    kept = stopped_after(out, 1)
    again = run_cli("compress", str(dataset), "-o", str(out), "--summarizer", "extractive", *RAY, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["resume"]["parts_kept"] == len(kept) == 1  # the same files: resumed
    stopped_after(out, 1)
    saved_again = tmp_path / "saved-again"
    datasets.Dataset.from_list(rows[40:80]).save_to_disk(str(saved_again))
    for path in dataset.iterdir():
        path.unlink()
    for path in saved_again.iterdir():
        path.rename(dataset / path.name)
    refused = run_cli("compress", str(dataset), "-o", str(out), "--summarizer", "extractive", *RAY)
    assert refused.returncode == 2, refused.stderr
    assert f"(inputs differ: '{dataset}' changed (its files' bytes)); re-run" in refused.stderr
