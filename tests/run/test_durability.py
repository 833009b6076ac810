"""Durability: a run killed at every durable-write boundary, then re-run, gives the same bytes.

The crash points are the `faults.boundary` calls (each checkpoint before and after its rename,
each truncate on resume, each move of a finished file, the report, the clean-up). The run is
a forked child of the test process (the tokenizer is loaded once, so each run takes a fraction
of a second) that SIGKILLs itself at the chosen boundary: a real process death, at a known
point, on any machine speed.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, write_jsonl

SIDE_FILES = ("x.jsonl", "x.metrics.jsonl", "x.over_limit.jsonl", "x.rejects.jsonl")
CHECKPOINT_ROWS = 4
ROWS = 22


def _input(tmp_path: Path) -> Path:
    rows: list[Any] = [make_trajectory(i, steps=2 + i % 7, output_lines=20 + (i * 7) % 40) for i in range(ROWS)]
    rows[5] = "{broken"  # a reject, so every side file has content
    rows.append(make_trajectory(99, steps=1, output_lines=400))  # still over the limit
    return write_jsonl(tmp_path / "in.jsonl", rows)


def _run(
    source: Path,
    out: Path,
    counter: Any,
    *,
    dry_run: bool = False,
    windows: bool = False,
    prune: bool = False,
    env: dict[str, str] | None = None,
) -> int:
    """Run compress in a forked child; its exit code, or minus the signal that killed it."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            from trajectory_compressor import faults
            from trajectory_compressor.api import compress
            from trajectory_compressor.settings import PlanConfig, RunConfig

            faults.reset()
            os.environ.update(env or {})
            os.environ.update(TC_CHECKPOINT_ROWS=str(CHECKPOINT_ROWS), TC_CHECKPOINT_SECONDS="1e9")
            config = RunConfig(
                plan=PlanConfig(
                    target_max_tokens=2500,
                    summary_target_tokens=200,
                    windows=windows,
                    prune_tool_outputs=prune,
                    tail_ratio=0.5 if prune else PlanConfig.tail_ratio,  # tails of several groups: some to clear
                ),
                summarizer="extractive",
                dry_run=dry_run,
                quiet=True,
                window=2,  # rows commit a few at a time, so there are checkpoints all along
            )
            code = compress([str(source)], out, config, counter=counter)[0].exit_code
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _outputs(folder: Path, *, dry_run: bool) -> dict[str, bytes]:
    names = SIDE_FILES[1:] if dry_run else SIDE_FILES
    return {name: (folder / name).read_bytes() for name in names}


def _outputs_present(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in SIDE_FILES if (folder / name).exists()}


def _boundaries(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def _assert_complete(folder: Path, reference: dict[str, bytes], *, dry_run: bool) -> None:
    assert _outputs(folder, dry_run=dry_run) == reference
    report = json.loads((folder / "x.report.json").read_text())
    assert report["status"] == "completed"
    assert report["rows"]["selected"] == ROWS + 1
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == [], "work folder or lock left"


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("durability")


def _reference(
    root: Path, source: Path, counter: Any, dry_run: bool, windows: bool = False, prune: bool = False
) -> tuple[dict[str, bytes], list[str]]:
    """The uninterrupted run's bytes and the boundaries it passes (recorded by the hook)."""
    out = root / f"reference-{dry_run}" / "x.jsonl"
    log = root / f"boundaries-{dry_run}.txt"
    env = {"TC_CRASH_LOG": str(log)}
    assert _run(source, out, counter, dry_run=dry_run, windows=windows, prune=prune, env=env) == 0
    return _outputs(out.parent, dry_run=dry_run), _boundaries(log)


@pytest.mark.parametrize(
    ("dry_run", "windows", "prune"),
    [
        pytest.param(False, False, False, id="compress"),
        pytest.param(True, False, False, id="dry-run", marks=pytest.mark.kills),
        pytest.param(False, True, False, id="windows", marks=pytest.mark.kills),
        pytest.param(False, True, True, id="windows-pruned", marks=pytest.mark.kills),
    ],
)
def test_a_kill_at_every_boundary_then_a_rerun_gives_the_uninterrupted_bytes(
    tmp_path: Path, counter: Any, dry_run: bool, windows: bool, prune: bool
) -> None:
    source = _input(tmp_path)
    reference, boundaries = _reference(tmp_path, source, counter, dry_run, windows, prune)
    if windows:  # the windows mode writes several records for some rows
        assert reference["x.jsonl"].count(b"\n") > ROWS + 5
    if prune:  # --prune-tool-outputs: some windows show cleared results
        assert reference["x.metrics.jsonl"].count(b'"pruned_turns"') >= 2
    names = {point.rpartition(":")[0] for point in boundaries}
    assert {"checkpoint-write", "checkpoint-renamed", "finalize-move", "finalize-done", "cleanup"} <= names
    assert sum(point.startswith("checkpoint-renamed") for point in boundaries) >= 4, "several checkpoints"
    for point in boundaries:
        out = tmp_path / f"crash-{point.replace(':', '-')}" / "x.jsonl"
        crash = {"TC_CRASH_AT": point}
        assert _run(source, out, counter, dry_run=dry_run, windows=windows, prune=prune, env=crash) == -9, point
        for name, content in _outputs_present(out.parent).items():  # what exists is whole, never partial
            assert content == reference[name], (point, name)
        assert _run(source, out, counter, dry_run=dry_run, windows=windows, prune=prune) == 0, point
        _assert_complete(out.parent, reference, dry_run=dry_run)


@pytest.mark.parametrize("first", [pytest.param("checkpoint-renamed:3", marks=pytest.mark.kills), "finalize-move:2"])
def test_two_crashes_in_a_row_at_every_boundary_of_the_second_run(tmp_path: Path, counter: Any, first: str) -> None:
    """The second run (a resume: truncates, or a finish) is itself killed at each of its boundaries."""
    source = _input(tmp_path)
    reference, _ = _reference(tmp_path, source, counter, False)
    probe = tmp_path / "probe" / "x.jsonl"
    assert _run(source, probe, counter, env={"TC_CRASH_AT": first}) == -9
    log = tmp_path / "second.txt"
    assert _run(source, probe, counter, env={"TC_CRASH_LOG": str(log)}) == 0
    second = _boundaries(log)
    if first.startswith("checkpoint"):
        assert [p for p in second if p.startswith("truncate")] == [f"truncate:{i}" for i in range(1, 5)]
    for point in second:
        out = tmp_path / f"crash-{point.replace(':', '-')}" / "x.jsonl"
        assert _run(source, out, counter, env={"TC_CRASH_AT": first}) == -9
        assert _run(source, out, counter, env={"TC_CRASH_AT": point}) == -9, point
        assert _run(source, out, counter) == 0, point
        _assert_complete(out.parent, reference, dry_run=False)
