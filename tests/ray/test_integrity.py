"""Every input row comes out exactly once, in order, or the run fails in one line naming what is missing.

Attacks on that promise that need no cluster of three: an input that changes between being
counted and being read (a producer still appending, or a node whose NFS cache shows another
version of it), a `file://` input folder holding the run's own output, and the driver's check
of the rows the parts hold (`ray.coverage`), which stands behind every other check.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLE, read_jsonl, run_cli, write_jsonl
from tests.ray.conftest import json_lines, ray_parts
from trajectory_compressor.ray import write
from trajectory_compressor.ray.coverage import coverage_problem, where
from trajectory_compressor.ray.parts import PartRecord, row_runs
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.settings import SelectConfig

pytestmark = pytest.mark.ray  # the runs are marked ray_faults too (the slow suite); the checks alone are fast
RAY = ("--engine", "ray", "--num-workers", "2", "-q")


def changed_after_counting(monkeypatch: pytest.MonkeyPatch, path: Path, data: bytes) -> None:
    """Hold the run at a known point, its inputs counted and not yet read, and rewrite `path` there
    (its modification time a minute later: a rewrite within the clock's tick would keep it)."""
    import os

    import trajectory_compressor.ray.run as ray_run

    counted = ray_run.count_inputs

    def count_then_change(*args: Any) -> Any:
        counts = counted(*args)
        before = path.stat().st_mtime_ns
        path.write_bytes(data)
        os.utime(path, ns=(before + 60 * 10**9, before + 60 * 10**9))
        return counts

    monkeypatch.setattr(ray_run, "count_inputs", count_then_change)


@pytest.mark.ray_faults
@pytest.mark.parametrize("change", ["shrinks", "grows", "same size"])
def test_an_input_changed_between_counting_and_reading_stops_the_run(
    local_ray, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, change: str
) -> None:
    """Before: exit 0, `completed`, with 10 rows missing (shrinks), 5 rows twice and out of order
    (grows), or rows the report's `inputs` sha256 does not name (same size, other bytes)."""
    from trajectory_compressor.ray.run import run_on_ray
    from trajectory_compressor.settings import RunConfig

    monkeypatch.setattr(write, "ROWS_PER_PART", 16)
    rows = read_jsonl(SAMPLE)[:40]
    first = write_jsonl(tmp_path / "in" / "a.jsonl", rows)
    second = write_jsonl(tmp_path / "in" / "b.jsonl", rows[:10])
    data = first.read_bytes()
    lines = data.splitlines(keepends=True)
    changed = {"shrinks": b"".join(lines[:30]), "grows": data + b"".join(lines[:5]), "same size": data[::-1]}[change]
    changed_after_counting(monkeypatch, first, changed)
    out = tmp_path / "ray" / "x.jsonl"
    config = RunConfig(summarizer="extractive", engine="ray", num_workers=1, quiet=True)
    result = run_on_ray([str(first), str(second)], str(out), config, on_message=lambda _: None)
    assert result.exit_code == 1, (result.message, result.report["rows"])
    size = len(data)
    now = f"{len(changed)} when read" if change != "same size" else "as many but modified since when read"
    assert result.message == (
        f"the input {first} changed while the run read it ({size} bytes when counted, {now}); "
        "re-run once it no longer changes, with --no-resume (the parts written so far are of the version counted)"
    )
    report = json.loads((tmp_path / "ray" / "x.report.json").read_text())
    assert report["status"] == "aborted"
    indexes = [line["index"] for line in json_lines(ray_parts(tmp_path / "ray" / "x.metrics"))]
    assert indexes == sorted(set(indexes))  # whatever was written before the stop: once each, in order


@pytest.mark.ray_faults
def test_a_file_uri_input_folder_holding_the_output_is_rerun_and_resumed_reading_none_of_it(
    local_ray, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Before: the second run read its own parts as inputs (rows read 3x, 2 rejects, exit 0), and a
    resume of an unfinished run was refused (`inputs differ: ... added`), so it could never finish."""
    monkeypatch.setattr(write, "ROWS_PER_PART", 16)  # several parts
    folder = tmp_path / "in"
    write_jsonl(folder / "a.jsonl", read_jsonl(SAMPLE)[:40])
    out = folder / "out" / "x.jsonl"
    command = ("compress", f"file://{folder}", "-o", f"file://{out}", "--summarizer", "extractive", *RAY)
    report_path = folder / "out" / "x.report.json"
    for _ in range(2):  # a run, then the same command again over its completed output
        result = run_cli(*command)
        assert result.returncode == 0, result.stderr
        report = json.loads(report_path.read_text())
        assert [entry["name"] for entry in report["inputs"]] == [f"file://{folder}/a.jsonl"]
        assert (report["rows"]["read"], report["rows"]["rejected"]) == (40, 0)
    complete = ray_parts(out)
    records = sorted((folder / "out" / "x.part_records").glob("part-*.json"))
    assert len(records) > 1
    report_path.unlink()  # the driver lost before its report: an unfinished run
    last = records[-1].name.removesuffix(".json")
    records[-1].unlink()
    (out / f"{last}.jsonl").unlink()
    resumed = run_cli(*command)
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(report_path.read_text())
    assert report["resume"]["parts_kept"] == len(records) - 1
    assert ray_parts(out) == complete


def part(first: int, *indexes: int) -> PartRecord:
    return PartRecord(first, row_runs(indexes or (first,)), {}, {}, (), "f")


SOURCES = [InputSource(name="a.jsonl", kind="jsonl", path="a.jsonl"), InputSource(name="b.jsonl", kind="jsonl")]


def test_the_driver_names_a_row_in_no_part_twice_or_out_of_order_by_file_and_record() -> None:
    every = SelectConfig()
    counts = [5, 5]
    whole = [part(0, 0, 1, 2, 3), part(4, 4, 5, 6), part(7, 7, 8, 9)]
    assert coverage_problem(whole, 10, every, SOURCES, counts) is None
    assert coverage_problem(whole[:2], 10, every, SOURCES, counts) == (
        "row 7 (b.jsonl record 3) is in no part, nor are the 2 rows after it"
    )
    assert coverage_problem([whole[0], whole[2]], 10, every, SOURCES, counts) == (
        "row 4 (a.jsonl record 5) is in no part, nor are the 2 rows after it"
    )
    twice = [whole[0], part(3, 3, 4, 5, 6), whole[2]]
    assert coverage_problem(twice, 10, every, SOURCES, counts) == (
        "row 3 (a.jsonl record 4) is in two parts or out of input order (part part-000000000003.json)"
    )
    unordered = [whole[0], part(4, 4, 6, 5), whole[2]]
    assert "row 5 (b.jsonl record 1) is in two parts or out of input order" in str(
        coverage_problem(unordered, 10, every, SOURCES, counts)
    )
    assert "row 10 is past the rows the run read" in str(
        coverage_problem([*whole[:2], part(7, 7, 8, 9, 10)], 10, every, SOURCES, counts)
    )
    assert coverage_problem([part(0, 0, 1, 2, 3, 5, 6), whole[2]], 10, every, SOURCES, counts) == (
        "row 4 (a.jsonl record 5) is in no part"
    )
    assert coverage_problem(whole[:2], 7, every, SOURCES, counts) is None  # --limit: the rows below its end
    sample = SelectConfig(sample_percent=50, seed=1)
    from trajectory_compressor.read.select import sampled

    chosen = [index for index in range(10) if sampled(index, 50, 1)]
    assert coverage_problem([part(chosen[0], *chosen)], 10, sample, SOURCES, counts) is None
    assert coverage_problem([part(chosen[0], *chosen[:-1])], 10, sample, SOURCES, counts) == (
        f"{where(chosen[-1], SOURCES, counts)} is in no part"
    )
    # As many rows as the sample takes, one of them a row it skips: a count alone passed it.
    skipped = next(index for index in range(chosen[-1]) if index not in chosen)
    swapped = sorted([*chosen[:-1], skipped])
    assert coverage_problem([part(swapped[0], *swapped)], 10, sample, SOURCES, counts) == (
        f"{where(skipped, SOURCES, counts)} is in part {part(swapped[0]).name}, but the sample does not take it"
    )


@pytest.mark.ray_faults
def test_a_second_run_on_the_same_output_is_refused_while_the_first_runs(local_ray, tmp_path: Path) -> None:
    """One run per output, as the local engine's. Before: the second run (here `--no-resume`, other
    settings) deleted the first run's parts and records and wrote its own in their place, exit 0,
    while the first went on writing into the same folders."""
    import contextlib
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.fake_openai_server import FakeServerThread
    from tests.ray.conftest import assert_same_outputs

    holding = {"on": False, "from": 0}

    def schedule(number: int, body: Any) -> str:
        return "hold" if holding["on"] and number >= holding["from"] else "ok"

    out = tmp_path / "ray" / "x.jsonl"
    with FakeServerThread(faults=schedule) as server:
        llm = ["--summarizer", "llm", "--base-url", server.base_url, "--model", "test-model", "--retry-delay", "0.01",
               "--request-timeout", "300"]  # fmt: skip
        local = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "local" / "x.jsonl"), *llm,
                        "--cache", str(tmp_path / "local.sqlite3"))  # fmt: skip
        assert local.returncode == 0, local.stderr
        holding.update(on=True, **{"from": len(server.requests)})
        first = subprocess.Popen(
            [sys.executable, "-m", "trajectory_compressor", "compress", str(SAMPLE), "-o", str(out), *llm,
             "--cache", str(tmp_path / "cache" / "s.sqlite3"), "--engine", "ray", "--num-workers", "1", "-q"],
            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 240
            while server.held == 0 and first.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)  # a known point: the first run holds a request, its folders claimed
            assert server.held > 0 and first.poll() is None, first.communicate()[1]
            second = run_cli("compress", str(SAMPLE), "-o", str(out), "--summarizer", "extractive", "--no-resume", *RAY)
            holding["on"] = False
            server.release(None)
            _, stderr = first.communicate(timeout=300)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(first.pid, signal.SIGKILL)  # whatever is left of its local Ray
            first.wait()
    assert second.returncode == 2, second.stderr
    assert second.stderr.strip().splitlines() == [
        f"error: another run is writing {out} or a file beside it (it holds {out.parent / '.x.jsonl.lock'}); "
        "wait for it to finish or choose another -o"
    ]
    assert first.returncode == 0, stderr
    assert_same_outputs(tmp_path / "local" / "x.jsonl", out)
    assert not list(out.parent.glob(".*.lock"))  # removed at the end, as the local engine's


@pytest.mark.ray_faults
def test_a_file_named_twice_is_read_once_as_the_local_engine_reads_it(local_ray, tmp_path: Path) -> None:
    """`a.jsonl`, `./a.jsonl`, a link to it, its `file://` URI: one file. Before: read once per name
    (every record three or four times in the dataset, exit 0) where the local engine reads it once."""
    from tests.ray.conftest import assert_same_outputs

    source = write_jsonl(tmp_path / "in" / "a.jsonl", read_jsonl(SAMPLE)[:12])
    (tmp_path / "in" / "link.jsonl").symlink_to(source)
    names = [str(source), f"{tmp_path}/in/./a.jsonl", str(tmp_path / "in" / "link.jsonl")]
    local = run_cli("compress", *names, "-o", str(tmp_path / "local" / "x.jsonl"), "--summarizer", "extractive")
    assert local.returncode == 0, local.stderr
    out = tmp_path / "ray" / "x.jsonl"
    on_ray = run_cli("compress", *names, f"file://{source}", "-o", str(out), "--summarizer", "extractive", *RAY)
    assert on_ray.returncode == 0, on_ray.stderr
    report = json.loads((tmp_path / "ray" / "x.report.json").read_text())
    assert [entry["name"] for entry in report["inputs"]] == [str(source)]
    assert report["rows"]["read"] == 12
    assert_same_outputs(tmp_path / "local" / "x.jsonl", out)


@pytest.mark.parametrize(("counted", "said"), [(7, "7 records when counted, 5 when read"),
                                               (3, "3 records when counted, more when read")])  # fmt: skip
def test_a_file_read_with_other_records_than_counted_stops_the_run(tmp_path: Path, counted: int, said: str) -> None:
    """Same bytes and time as counted (as this node sees them), other records: still stopped, never
    numbered as another file's rows."""
    import pyarrow as pa

    from trajectory_compressor.errors import RunAborted
    from trajectory_compressor.ray.read import read_files
    from trajectory_compressor.settings import ReadConfig

    source = write_jsonl(tmp_path / "a.jsonl", read_jsonl(SAMPLE)[:5])
    batch = pa.Table.from_pylist([{"ordinal": 0, "offset": 0, "count": counted, "stat": [-1, -1]}])
    sources = [InputSource(name=str(source), kind="jsonl", path=str(source))]
    with pytest.raises(RunAborted, match=f"changed while the run read it \\({said}\\)"):
        list(read_files(batch, sources=sources, read=ReadConfig(), percent=None, seed=0, end=100, skip=[]))
