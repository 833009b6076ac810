"""`--num-shards N --shard-index I` runs and `trajectory-compressor merge`, against one unsharded run."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl

SETTINGS = ["--summarizer", "extractive", "--target-max-tokens", "3000", "--summary-target-tokens", "300", "-q"]
SHARDS = 3
SIDE_FILES = ("x.jsonl", "x.metrics.jsonl", "x.over_limit.jsonl", "x.rejects.jsonl")


def _records() -> list[Any]:
    rows: list[Any] = [make_trajectory(i, steps=1 + (i * 5) % 9) for i in range(10)]
    rows.insert(4, "{broken json")  # rejected, in no dataset
    rows.insert(8, {"id": "no-turns", "conversations": "nope"})  # rejected, written unchanged
    rows.append(make_trajectory(99, steps=1, output_lines=400))  # still over the limit
    return rows


def _shard_name(index: int, suffix: str) -> str:
    return f"x.shard-{index:05d}-of-{SHARDS:05d}{suffix}"


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three shard runs, one unsharded run with the same settings, and a merge of the shards."""
    root = tmp_path_factory.mktemp("shards")
    source = write_jsonl(root / "in.jsonl", _records())
    commands = [
        [str(source), "-o", str(root / "shards" / "x.jsonl"), "--num-shards", str(SHARDS), "--shard-index", str(i)]
        for i in range(SHARDS)
    ]
    commands.append([str(source), "-o", str(root / "single" / "x.jsonl")])
    with ThreadPoolExecutor(max_workers=len(commands)) as pool:  # as a job array would: side by side
        results = list(pool.map(lambda args: run_cli("compress", *args, *SETTINGS), commands))
    for result in results:
        assert result.returncode == 0, result.stderr
    reports = [str(root / "shards" / _shard_name(i, ".report.json")) for i in range(SHARDS)]
    merged = run_cli("merge", *reports, "-o", str(root / "merged" / "x.jsonl"), "--json")
    assert merged.returncode == 0, merged.stderr
    (root / "merge-stdout.json").write_text(merged.stdout)
    return root


def test_each_shard_writes_its_own_files_and_shards_partition_the_rows(work: Path) -> None:
    shard_dir = work / "shards"
    expected = {
        _shard_name(i, suffix)
        for i in range(SHARDS)
        for suffix in (".jsonl", ".metrics.jsonl", ".over_limit.jsonl", ".rejects.jsonl", ".report.json")
    }
    assert {p.name for p in shard_dir.iterdir()} == expected, "no work folders or stray files left"
    records = _records()
    indices: list[int] = []
    ids: list[str] = []
    for i in range(SHARDS):
        metrics = read_jsonl(shard_dir / _shard_name(i, ".metrics.jsonl"))
        shard_indices = [m["index"] for m in metrics]
        assert shard_indices == sorted(shard_indices)
        indices += shard_indices
        rows = read_jsonl(shard_dir / _shard_name(i, ".jsonl"))
        assert len(rows) == sum(m["written"] for m in metrics)
        ids += [row["id"] for row in rows]
        report = json.loads((shard_dir / _shard_name(i, ".report.json")).read_text())
        assert report["status"] == "completed" and report["rows"]["selected"] == len(metrics)
        assert report["settings"]["shard_index"] == i and report["settings"]["num_shards"] == SHARDS
    assert sorted(indices) == list(range(len(records))), "every row in exactly one shard"
    assert sorted(ids) == sorted(r["id"] for r in records if isinstance(r, dict))
    sizes = [len(read_jsonl(shard_dir / _shard_name(i, ".metrics.jsonl"))) for i in range(SHARDS)]
    assert max(sizes) - min(sizes) <= 1


def test_merge_equals_the_unsharded_run_byte_for_byte(work: Path) -> None:
    for name in SIDE_FILES:
        merged, single = (work / "merged" / name).read_bytes(), (work / "single" / name).read_bytes()
        assert merged == single, name
        assert merged, f"{name} is empty: the input must exercise every side file"
    stdout_report = json.loads((work / "merge-stdout.json").read_text())
    assert stdout_report == json.loads((work / "merged" / "x.report.json").read_text())


def _report_parts(path: Path, parts: tuple[str, ...]) -> dict[str, Any]:
    report = json.loads(path.read_text())
    return {part: report[part] for part in parts}


def test_merged_report_totals_equal_the_unsharded_run(work: Path) -> None:
    parts = ("tokens", "turns", "histogram")
    assert _report_parts(work / "merged" / "x.report.json", parts) == _report_parts(
        work / "single" / "x.report.json", parts
    )
    merged = json.loads((work / "merged" / "x.report.json").read_text())
    single = json.loads((work / "single" / "x.report.json").read_text())
    for key in ("selected", "written", "compressed", "still_over_limit", "rejected", "by_summarizer"):
        assert merged["rows"][key] == single["rows"][key], key
    assert merged["settings"]["plan"] == single["settings"]["plan"]


def test_merged_report_rows_read_is_the_input_size(work: Path) -> None:
    merged = json.loads((work / "merged" / "x.report.json").read_text())
    single = json.loads((work / "single" / "x.report.json").read_text())
    assert merged["rows"]["read"] == single["rows"]["read"] == len(_records())


def test_merged_report_keeps_summarizer_usage(work: Path) -> None:
    merged = json.loads((work / "merged" / "x.report.json").read_text())
    single = json.loads((work / "single" / "x.report.json").read_text())
    assert single["summaries"]["endpoint"], "the unsharded run reports its summarizer usage"
    assert merged["summaries"] == single["summaries"]


def _one_line_usage_error(result: Any, message: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert result.stderr.strip().count("\n") == 0


def _edited_report(work: Path, index: int, name: str, edit: dict[str, Any]) -> str:
    report = json.loads((work / "shards" / _shard_name(index, ".report.json")).read_text())
    for dotted, value in edit.items():
        *path, last = dotted.split(".")
        target = report
        for key in path:
            target = target[key]
        target[last] = value
    copy = work / "edited" / name
    copy.parent.mkdir(exist_ok=True)
    copy.write_text(json.dumps(report))
    return str(copy)


def test_merge_refuses_other_settings_and_unfinished_runs(work: Path) -> None:
    reports = [str(work / "shards" / _shard_name(i, ".report.json")) for i in range(SHARDS)]
    other = _edited_report(work, 2, "other.report.json", {"settings.plan.target_max_tokens": 4000})
    stopped = _edited_report(work, 2, "stopped.report.json", {"status": "interrupted"})
    cases = [
        (
            [*reports[:2], other],
            "different settings (" + f"{reports[0]} against {other}: settings differ: target_max_tokens ",
        ),
        ([*reports[:2], stopped], "not from a completed run"),
        ([*reports[:2], str(work / "shards" / "missing.report.json")], "cannot read shard report"),
    ]
    for arguments, message in cases:
        out = work / "refused" / "x.jsonl"
        _one_line_usage_error(run_cli("merge", *arguments, "-o", str(out)), message)
        assert not out.parent.exists() or not any(out.parent.iterdir()), "a refused merge writes nothing"


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        ({"settings.shard_index": "2"}, "'settings.shard_index' is not an integer"),
        ({"settings.num_shards": None}, "'settings.num_shards' is not an integer"),
        ({"settings": [1]}, "'settings' is not an object"),
        ({"outputs.metrics": ["x"]}, "'outputs' holds a path that is not a string"),
        ({"outputs": {"data": "x.jsonl"}}, "'outputs' does not name the"),
        ({"inputs": [{"path": 3}]}, "'inputs' is not a list of objects with a path"),
        ({"counters.rows_read": "12"}, "'counters' has no integer rows_read"),
        ({"counters.tokens_after": [1]}, "'counters.tokens_after' is not of the type a run writes"),
        ({"counters.histogram_before": {"a": 1}}, "'counters.histogram_before' is not of the type a run writes"),
        ({"timings_seconds.total": None}, "'timings_seconds.total' is not a number"),
        ({"summaries": "x"}, "'summaries.endpoint' is not an object"),
    ],
)
def test_merge_refuses_a_report_field_of_another_type_by_name(work: Path, edit: dict[str, Any], named: str) -> None:
    """An edited shard report once stopped `merge` with a traceback (a string shard index sorted
    with ints, counters added to lists), some after the merged files were written."""
    reports = [str(work / "shards" / _shard_name(i, ".report.json")) for i in range(SHARDS)]
    edited = _edited_report(work, 2, "typed.report.json", edit)
    out = work / "refused-typed" / "x.jsonl"
    _one_line_usage_error(run_cli("merge", *reports[:2], edited, "-o", str(out)), named)
    assert not out.parent.exists() or not any(out.parent.iterdir()), "a refused merge writes nothing"


@pytest.mark.parametrize("report", ["[]", "null", '"completed"'])
def test_merge_refuses_a_report_that_is_not_an_object(work: Path, tmp_path: Path, report: str) -> None:
    path = tmp_path / "odd.report.json"
    path.write_text(report)
    reports = [str(work / "shards" / _shard_name(i, ".report.json")) for i in range(2)]
    _one_line_usage_error(
        run_cli("merge", *reports, str(path), "-o", str(tmp_path / "m" / "x.jsonl")), "not a JSON object"
    )


@pytest.mark.parametrize("indices", [(0, 1), (0, 1, 1, 2)], ids=["missing", "twice"])
def test_merge_refuses_an_incomplete_shard_set(work: Path, indices: tuple[int, ...]) -> None:
    reports = [str(work / "shards" / _shard_name(i, ".report.json")) for i in indices]
    out = work / f"partial-{len(indices)}" / "x.jsonl"
    _one_line_usage_error(run_cli("merge", *reports, "-o", str(out)), "shard")


@pytest.mark.parametrize(
    ("suffix", "edit"),
    [
        (".jsonl", lambda lines: lines[:1] + lines[2:]),  # issue 10 A5: one dataset line deleted
        (".metrics.jsonl", lambda lines: lines[:-1]),
        (".jsonl", lambda lines: [*lines, b""]),  # a blank line appended
    ],
    ids=["dataset-line-deleted", "metrics-line-deleted", "blank-line-added"],
)
def test_merge_refuses_a_shard_file_changed_since_its_run(work: Path, suffix: str, edit: Any) -> None:
    reports = [str(work / "shards" / _shard_name(i, ".report.json")) for i in range(SHARDS)]
    shard_file = work / "shards" / _shard_name(1, suffix)
    original = shard_file.read_bytes()
    lines = original.split(b"\n")[:-1]
    try:
        shard_file.write_bytes(b"".join(line + b"\n" for line in edit(lines)))
        out = work / "tampered" / "x.jsonl"
        result = run_cli("merge", *reports, "-o", str(out))
        _one_line_usage_error(result, str(shard_file))
        assert "changed since its run wrote it" in result.stderr
        assert not out.exists()
    finally:
        shard_file.write_bytes(original)


def test_merge_refuses_to_overwrite_a_shard_file_and_reports_unwritable_places_in_one_line(work: Path) -> None:
    reports = [str(work / "shards" / _shard_name(i, ".report.json")) for i in range(SHARDS)]
    onto_shard = run_cli("merge", *reports, "-o", str(work / "shards" / _shard_name(0, ".jsonl")))
    _one_line_usage_error(onto_shard, "would overwrite a shard's file")
    blocker = work / "blocker"
    blocker.write_text("a file where a folder should be")
    _one_line_usage_error(run_cli("merge", *reports, "-o", str(blocker / "x.jsonl")), "cannot merge into")


def test_merge_never_replaces_a_file_this_tool_did_not_write(work: Path, tmp_path: Path) -> None:
    reports = [str(work / "shards" / _shard_name(i, ".report.json")) for i in range(SHARDS)]
    target = tmp_path / "merged" / "x.jsonl"
    write_jsonl(target, [{"id": f"theirs-{i}"} for i in range(250)])
    theirs = target.read_bytes()

    refused = run_cli("merge", *reports, "-o", str(target))
    _one_line_usage_error(refused, "not written by this tool")
    assert "--overwrite" in refused.stderr and target.read_bytes() == theirs
    assert sorted(p.name for p in target.parent.iterdir()) == ["x.jsonl"]  # nothing written beside it

    allowed = run_cli("merge", *reports, "-o", str(target), "--overwrite")
    assert allowed.returncode == 0, allowed.stderr
    assert target.read_bytes() == (work / "merged" / "x.jsonl").read_bytes()
    again = run_cli("merge", *reports, "-o", str(target))  # the merged run's own files now: replaced
    assert again.returncode == 0, again.stderr
