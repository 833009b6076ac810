"""Resume: stop the real process (SIGKILL, SIGINT, SIGTERM) mid-run, re-run, compare bytes.

Every stop happens at a known point (the `faults` hooks: the run kills itself at a given
durable-write boundary, or stands still there until released), never after a sleep.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import CliResult, make_trajectory, read_jsonl, run_cli, write_jsonl

BUDGET = ["--target-max-tokens", "2500", "--summary-target-tokens", "200", "--summarizer", "extractive"]
SMALL = [*BUDGET, "-q"]
ROWS = 150
SIDE_FILES = ("x.jsonl", "x.metrics.jsonl", "x.over_limit.jsonl", "x.rejects.jsonl")


def _input(tmp_path: Path, rows: int = ROWS) -> Path:
    lines: list = [make_trajectory(i, steps=3 + i % 9, output_lines=20 + i % 50) for i in range(rows)]
    lines[7] = "{broken"  # a reject, so every side file has content
    return write_jsonl(tmp_path / "in.jsonl", lines)


def _start(source: Path, out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    full_env = {**os.environ, "TC_CHECKPOINT_ROWS": "25", "TC_CHECKPOINT_SECONDS": "1e9", **(env or {})}
    return subprocess.Popen(
        # A small window commits rows a few at a time: checkpoints every 25 rows all along the run.
        [
            sys.executable,
            "-m",
            "trajectory_compressor",
            "compress",
            str(source),
            "-o",
            str(out),
            *SMALL,
            "--window",
            "8",
            *extra,
        ],
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill_at(
    source: Path, out: Path, point: str = "checkpoint-renamed:3", *extra: str, env: dict[str, str] | None = None
) -> None:
    """Run until the durable-write boundary `point`, where the run SIGKILLs itself."""
    process = _start(source, out, *extra, env={"TC_CRASH_AT": point, **(env or {})})
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == -signal.SIGKILL, stderr


def _start_paused(source: Path, out: Path, tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], Path]:
    """Start a run and wait until it stands still just after its second checkpoint.

    Rows are left to process (150 rows, checkpoints every 25, a window of 8), so a signal sent now lands
    mid-run whatever the machine's speed. Create the returned marker's `.release` file to let
    the run go on.
    """
    marker = tmp_path / "paused"
    env = {"TC_PAUSE_AT": "checkpoint-renamed:2", "TC_PAUSE_FILE": str(marker)}
    process = _start(source, out, *extra, env=env)
    deadline = time.monotonic() + 300
    while not marker.exists():
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "the run never reached its second checkpoint"
        time.sleep(0.01)
    return process, marker.with_name(marker.name + ".release")


def _assert_same_outputs(reference: Path, resumed: Path) -> None:
    for name in SIDE_FILES:
        assert (resumed / name).read_bytes() == (reference / name).read_bytes(), name


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The input and the outputs of an uninterrupted run of it, shared by the tests here."""
    root = tmp_path_factory.mktemp("resume")
    source = _input(root)
    reference = root / "ref"
    assert run_cli("compress", str(source), "-o", str(reference / "x.jsonl"), *SMALL).returncode == 0
    return source, reference


def test_sigkill_then_rerun_is_byte_identical(case: tuple[Path, Path], tmp_path: Path) -> None:
    source, reference = case
    out = tmp_path / "out" / "x.jsonl"
    _kill_at(source, out)
    state = json.loads((out.parent / ".x.jsonl.work" / "state.json").read_text())
    assert 0 < state["rows_committed"] < ROWS
    assert not out.exists(), "a killed run must not leave an output that looks complete"
    result = run_cli("compress", str(source), "-o", str(out), *BUDGET)
    assert result.returncode == 0, result.stderr
    assert "resuming" in result.stderr
    _assert_same_outputs(reference, out.parent)
    report = json.loads((out.parent / "x.report.json").read_text())
    assert report["rows"]["selected"] == len(read_jsonl(out.parent / "x.metrics.jsonl")) == ROWS
    assert not (out.parent / ".x.jsonl.work").exists()
    assert not (out.parent / ".x.jsonl.lock").exists()


def test_a_resumed_run_counts_the_summaries_made_before_it_stopped(case: tuple[Path, Path], tmp_path: Path) -> None:
    """The summarizer's counters (`summaries.endpoint`: summaries, and with an endpoint its
    requests, tokens and cost) are checkpointed with the totals: the resumed run's report counts
    what the stopped run had made by its last checkpoint, not only its own."""
    source, reference = case
    made = json.loads((reference / "x.report.json").read_text())["summaries"]["endpoint"]["summaries"]
    out = tmp_path / "out" / "x.jsonl"
    _kill_at(source, out)
    state = json.loads((out.parent / ".x.jsonl.work" / "state.json").read_text())
    before = state["summarizer_usage"]["summaries"]
    assert before >= state["totals"]["rows_compressed"] > 0  # a row is summarized before it is committed
    result = run_cli("compress", str(source), "-o", str(out), *BUDGET)
    assert result.returncode == 0, result.stderr
    report = json.loads((out.parent / "x.report.json").read_text())
    assert report["summaries"]["endpoint"]["summaries"] >= made == report["rows"]["compressed"]


@pytest.mark.parametrize(
    "stop",
    [pytest.param(signal.SIGINT, id="ctrl-c"), pytest.param(signal.SIGTERM, id="sigterm", marks=pytest.mark.variants)],
)
def test_ctrl_c_and_sigterm_stop_cleanly_with_exit_130_and_resume(
    case: tuple[Path, Path], tmp_path: Path, stop: signal.Signals
) -> None:
    source, reference = case
    out = tmp_path / "out" / "x.jsonl"
    process, release = _start_paused(source, out, tmp_path)
    process.send_signal(stop)
    release.touch()
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    report = json.loads((out.parent / "x.report.json").read_text())
    assert report["status"] == "interrupted"
    assert not out.exists()
    state = json.loads((out.parent / ".x.jsonl.work" / "state.json").read_text())
    assert state["rows_committed"] < ROWS
    resumed = run_cli("compress", str(source), "-o", str(out), *BUDGET)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stderr
    _assert_same_outputs(reference, out.parent)
    assert json.loads((out.parent / "x.report.json").read_text())["status"] == "completed"


def test_a_second_run_on_the_same_output_is_refused_while_the_first_runs(
    case: tuple[Path, Path], tmp_path: Path
) -> None:
    source, reference = case
    out = tmp_path / "out" / "x.jsonl"
    first, release = _start_paused(source, out, tmp_path)
    try:
        second = run_cli("compress", str(source), "-o", str(out), *SMALL, "--target-max-tokens", "3000")
        assert second.returncode == 2, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: another run is writing"), second.stderr
        assert str(out) in lines[0]
    finally:
        release.touch()
    _, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    _assert_same_outputs(reference, out.parent)
    assert not (out.parent / ".x.jsonl.lock").exists()


def test_a_crash_after_the_dataset_was_moved_into_place_never_clobbers_it(
    case: tuple[Path, Path], tmp_path: Path
) -> None:
    """Issue 10 A1: killed right after the finished dataset was renamed, then the same command."""
    source, reference = case
    out = tmp_path / "out" / "x.jsonl"
    _kill_at(source, out, "finalize-move:2")
    assert out.read_bytes() == (reference / "x.jsonl").read_bytes()
    result = run_cli("compress", str(source), "-o", str(out), *BUDGET)
    assert result.returncode == 0, result.stderr
    _assert_same_outputs(reference, out.parent)
    assert json.loads((out.parent / "x.report.json").read_text())["rows"]["selected"] == ROWS


def _damage(work: Path, how: str) -> None:
    from trajectory_compressor.write import run_files

    state_path = work / "state.json"
    state = json.loads(state_path.read_text())
    if how == "data file deleted":
        (work / "data.jsonl").unlink()
        return
    if how == "data file cut short":
        data = work / "data.jsonl"
        committed = state["parts"]["data"]["bytes"] if "parts" in state else state["offsets"]["data"]
        data.write_bytes(data.read_bytes()[: committed // 2])
        return
    if how == "data file bytes changed":
        data = work / "data.jsonl"
        content = bytearray(data.read_bytes())
        content[10] = ord("#")
        data.write_bytes(bytes(content))
        return
    field, value, resign = {
        "rows_committed 100000": ("rows_committed", 100000, False),
        "rows_committed -5": ("rows_committed", -5, True),
        "rows_committed string": ("rows_committed", "x", True),
        "parts a list": ("parts" if "parts" in state else "offsets", [1, 2, 3], True),
        "parts missing": ("parts" if "parts" in state else "offsets", None, True),
        "state not json": (None, None, False),
    }[how]
    if field is None:
        state_path.write_text("{not json")
        return
    if value is None:
        del state[field]
    else:
        state[field] = value
    if resign and hasattr(run_files, "_state_checksum"):  # as if our own writer had a bug:
        state["checksum"] = run_files._state_checksum(state)  # the checks behind the checksum must hold
    state_path.write_text(json.dumps(state))


@pytest.mark.parametrize(
    "how",
    [
        pytest.param("data file deleted", marks=pytest.mark.variants),
        pytest.param("data file cut short", marks=pytest.mark.variants),
        "data file bytes changed",
        pytest.param("rows_committed 100000", marks=pytest.mark.variants),
        pytest.param("rows_committed -5", marks=pytest.mark.variants),
        pytest.param("rows_committed string", marks=pytest.mark.variants),
        pytest.param("parts a list", marks=pytest.mark.variants),
        pytest.param("parts missing", marks=pytest.mark.variants),
        "state not json",
    ],
)
def test_a_damaged_work_folder_starts_over_with_a_warning_never_garbage(
    case: tuple[Path, Path], tmp_path: Path, how: str
) -> None:
    source, reference = case
    out = tmp_path / "out" / "x.jsonl"
    _kill_at(source, out)
    _damage(out.parent / ".x.jsonl.work", how)
    result = run_cli("compress", str(source), "-o", str(out), *BUDGET)
    assert result.returncode == 0, result.stderr
    _assert_same_outputs(reference, out.parent)
    warnings = [line for line in result.stderr.splitlines() if " is damaged (" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning: the work folder"), result.stderr
    assert "resuming" not in result.stderr


def test_no_resume_starts_over_and_changed_settings_are_refused(case: tuple[Path, Path], tmp_path: Path) -> None:
    source, _ = case
    out = tmp_path / "out" / "x.jsonl"
    _kill_at(source, out)
    changed = run_cli("compress", str(source), "-o", str(out), *SMALL, "--target-max-tokens", "3000")
    assert changed.returncode == 2
    assert "--no-resume" in changed.stderr
    fresh = run_cli("compress", str(source), "-o", str(out), *SMALL, "--no-resume")
    assert fresh.returncode == 0, fresh.stderr
    assert "resuming" not in fresh.stderr
    assert len(read_jsonl(out.parent / "x.metrics.jsonl")) == ROWS


def _refusal(result: CliResult) -> str:
    """The one line that refuses a resume (exit 2), as the user reads it."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "--no-resume" in lines[0], result.stderr
    return lines[0]


def test_a_refused_resume_names_the_settings_that_differ(case: tuple[Path, Path], tmp_path: Path) -> None:
    source, _ = case
    out = tmp_path / "out" / "x.jsonl"
    _kill_at(source, out)
    changed = run_cli("compress", str(source), "-o", str(out), *SMALL, "--target-max-tokens", "3000",
                      "--protect-last-n-turns", "2")  # fmt: skip
    assert _refusal(changed) == (
        f"error: {out.parent / '.x.jsonl.work'} holds an unfinished run with other inputs or settings "
        "(settings differ: target_max_tokens 2500 -> 3000, protect_last_n_turns 4 -> 2); "
        "re-run with the same command to resume it, or pass --no-resume to start over"
    )
    resumed = run_cli("compress", str(source), "-o", str(out), *BUDGET)  # refused: nothing was touched
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stderr


def test_a_refused_resume_names_the_input_that_changed_or_was_added(case: tuple[Path, Path], tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(case[0].read_bytes())
    out = tmp_path / "out" / "x.jsonl"
    _kill_at(source, out)
    other = write_jsonl(tmp_path / "b.jsonl", [make_trajectory(0, steps=2)])
    added = run_cli("compress", str(source), str(other), "-o", str(out), *SMALL)
    assert f"(inputs differ: '{other}' added); re-run" in _refusal(added)
    with source.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(make_trajectory(ROWS, steps=2)) + "\n")
    edited = run_cli("compress", str(source), "-o", str(out), *SMALL, "--seed", "7")
    assert f"(settings differ: seed 42 -> 7; inputs differ: '{source}' changed (size or sha256)); re-run" in _refusal(
        edited
    )


def test_a_state_written_before_the_fingerprint_parts_were_kept_resumes_or_is_refused_as_before(
    case: tuple[Path, Path], tmp_path: Path
) -> None:
    """`state.json` as the version before `fingerprint_parts` wrote it (the same version number,
    no parts): the same command resumes it, other settings are refused with the message of then."""
    from trajectory_compressor.write import run_files

    source, reference = case
    out = tmp_path / "out" / "x.jsonl"
    _kill_at(source, out)
    state_path = out.parent / ".x.jsonl.work" / "state.json"
    state = json.loads(state_path.read_text())
    del state["fingerprint_parts"]
    state["checksum"] = run_files._state_checksum(state)
    state_path.write_text(json.dumps(state))
    changed = run_cli("compress", str(source), "-o", str(out), *SMALL, "--target-max-tokens", "3000")
    assert _refusal(changed) == (
        f"error: {state_path.parent} holds an unfinished run with other inputs or settings; "
        "re-run with the same command to resume it, or pass --no-resume to start over"
    )
    resumed = run_cli("compress", str(source), "-o", str(out), *BUDGET)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stderr and "damaged" not in resumed.stderr
    _assert_same_outputs(reference, out.parent)


def test_a_refused_resume_never_shows_a_credential(case: tuple[Path, Path], tmp_path: Path) -> None:
    """The endpoint's URL credentials, a header in --extra-body and the API key all change between
    the runs; the refusal names what it may (the host) and shows none of them, nor does the
    checkpoint hold them."""
    source, _ = case
    out = tmp_path / "out" / "x.jsonl"
    secrets = ["s3cret-first", "s3cret-second", "tok-AAAA1111", "tok-BBBB2222", "first-api-key", "second-api-key"]

    def endpoint(n: int) -> list[str]:
        header = {"headers": {"Authorization": f"Bearer {secrets[2 + n]}"}}
        return ["--base-url", f"http://alice:{secrets[n]}@127.0.0.{n + 1}:9/v1", "--extra-body", json.dumps(header)]

    _kill_at(source, out, "checkpoint-renamed:3", *endpoint(0), env={"OPENAI_API_KEY": secrets[4]})
    state = (out.parent / ".x.jsonl.work" / "state.json").read_text()
    assert not [secret for secret in secrets if secret in state]
    changed = run_cli("compress", str(source), "-o", str(out), *SMALL, *endpoint(1), env={"OPENAI_API_KEY": secrets[5]})
    line = _refusal(changed)
    # The header's token is masked in the settings record (`settings_record`), so the two bodies
    # record alike: a credential decides no output byte.
    assert "(settings differ: base_url 'http://127.0.0.1:9/v1' -> 'http://127.0.0.2:9/v1')" in line
    assert not [secret for secret in secrets if secret in changed.stderr + changed.stdout]
