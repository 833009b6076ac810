"""Resume: kill the real process (SIGKILL and SIGINT) mid-run, re-run, compare bytes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl

BUDGET = ["--target-max-tokens", "2500", "--summary-target-tokens", "200", "--summarizer", "extractive"]
SMALL = [*BUDGET, "-q"]
SIDE_FILES = ("x.jsonl", "x.metrics.jsonl", "x.over_limit.jsonl", "x.rejects.jsonl")


def _input(tmp_path: Path, rows: int = 600) -> Path:
    lines: list = [make_trajectory(i, steps=3 + i % 9, output_lines=20 + i % 50) for i in range(rows)]
    lines[7] = "{broken"  # a reject, so every side file has content
    return write_jsonl(tmp_path / "in.jsonl", lines)


def _start(source: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TC_CHECKPOINT_ROWS": "25", "TC_CHECKPOINT_SECONDS": "0.2"}
    return subprocess.Popen(
        [sys.executable, "-m", "trajectory_compressor", "compress", str(source), "-o", str(out), *SMALL, *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_checkpoint(out: Path, process: subprocess.Popen[str], minimum: int = 50) -> int:
    state = out.parent / f".{out.name}.work" / "state.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, "the run finished before it could be interrupted; make the input larger"
        try:
            committed = json.loads(state.read_text())["rows_committed"]
        except (OSError, ValueError, KeyError):
            committed = 0
        if committed >= minimum:
            return committed
        time.sleep(0.02)
    raise AssertionError("no checkpoint appeared")


def _assert_same_outputs(reference: Path, resumed: Path) -> None:
    for name in SIDE_FILES:
        assert (resumed / name).read_bytes() == (reference / name).read_bytes(), name


def _reference(tmp_path: Path, source: Path) -> Path:
    reference = tmp_path / "ref"
    assert run_cli("compress", str(source), "-o", str(reference / "x.jsonl"), *SMALL).returncode == 0
    return reference


def test_sigkill_then_rerun_is_byte_identical(tmp_path: Path) -> None:
    source = _input(tmp_path)
    reference = _reference(tmp_path, source)
    out = tmp_path / "out" / "x.jsonl"
    process = _start(source, out)
    committed = _wait_for_checkpoint(out, process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not out.exists(), "a killed run must not leave an output that looks complete"
    result = run_cli("compress", str(source), "-o", str(out), *BUDGET)
    assert result.returncode == 0, result.stderr
    assert "resuming" in result.stderr
    _assert_same_outputs(reference, out.parent)
    report = json.loads((out.parent / "x.report.json").read_text())
    assert report["rows"]["selected"] == len(read_jsonl(out.parent / "x.metrics.jsonl")) == 600
    assert committed < 600
    assert not (out.parent / ".x.jsonl.work").exists()


def test_ctrl_c_stops_cleanly_with_exit_130_and_resumes(tmp_path: Path) -> None:
    source = _input(tmp_path)
    reference = _reference(tmp_path, source)
    out = tmp_path / "out" / "x.jsonl"
    process = _start(source, out)
    _wait_for_checkpoint(out, process)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    report = json.loads((out.parent / "x.report.json").read_text())
    assert report["status"] == "interrupted"
    assert not out.exists()
    assert run_cli("compress", str(source), "-o", str(out), *SMALL).returncode == 0
    _assert_same_outputs(reference, out.parent)
    assert json.loads((out.parent / "x.report.json").read_text())["status"] == "completed"


def test_no_resume_starts_over_and_changed_settings_are_refused(tmp_path: Path) -> None:
    source = _input(tmp_path)
    out = tmp_path / "out" / "x.jsonl"
    process = _start(source, out)
    _wait_for_checkpoint(out, process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    changed = run_cli("compress", str(source), "-o", str(out), *SMALL, "--target-max-tokens", "3000")
    assert changed.returncode == 2
    assert "--no-resume" in changed.stderr
    fresh = run_cli("compress", str(source), "-o", str(out), *SMALL, "--no-resume")
    assert fresh.returncode == 0, fresh.stderr
    assert "resuming" not in fresh.stderr
    assert len(read_jsonl(out.parent / "x.metrics.jsonl")) == 600
