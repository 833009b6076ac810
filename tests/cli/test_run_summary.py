"""The end-of-run summary `compress` prints: the budget named, its figures said in words, the engine's
internals only with -v, and a time that counts from the command's start (start-up included).

In-process (`run_cli`); the start-up is made measurable by a tokenizer loader that waits a known
delay, so the assertions compare with that delay rather than with a clock's guess.
"""

from __future__ import annotations

import json
import re
import signal
import sys
import time
from pathlib import Path

import pytest

import trajectory_compressor.api as api
import trajectory_compressor.cli as cli
from tests.conftest import SAMPLE, run_cli

IMPORTED = time.monotonic()  # after this process started, before any test of this module ran
DELAY = 0.6  # seconds the tokenizer's load is made to take
ROWS = ["--limit", "12", "--summarizer", "extractive"]
_TIME = re.compile(
    r"time: ([\d.]+)s since start \(([\d.]+)s start-up: imports, tokenizer load, checks; ([\d.]+)s on the rows"
)


def _compress(tmp_path: Path, *extra: str):
    result = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "out.jsonl"), *ROWS, *extra)
    assert result.returncode == 0, result.stderr
    return result


def _lines(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


def test_the_summary_names_the_budget_and_says_what_its_figures_mean(tmp_path: Path) -> None:
    stderr = _compress(tmp_path, "--target-max-tokens", "12000", "--summary-target-tokens", "600").stderr
    assert _lines(stderr, "budget: ") == [
        "budget: 12,000 tokens per row (--target-max-tokens), 600 per summary (--summary-target-tokens)"
    ]
    lines = stderr.splitlines()
    [fidelity] = [number for number, line in enumerate(lines) if line.startswith("future-grounded fidelity: ")]
    assert re.match(
        r"future-grounded fidelity: [\d.]+: the summaries keep [\d,]+ of the [\d,]+ anchors", lines[fidelity]
    )
    assert lines[fidelity + 1].strip().startswith("(anchors: the exact ids, paths, names and numbers")
    assert lines.index(_lines(stderr, "budget: ")[0]) < lines.index(_lines(stderr, "rows: ")[0])


def test_the_engine_internals_are_shown_with_v_only(tmp_path: Path) -> None:
    plain = _compress(tmp_path / "plain").stderr
    assert not _lines(plain, "counting:") and not _lines(plain, "endpoint:")
    assert not re.search(r"CPU|probe texts|fastokens|gigatoken", plain)
    assert _lines(plain, "more: -v")
    verbose = _compress(tmp_path / "verbose", "-v").stderr
    [counting] = _lines(verbose, "counting: ")
    assert counting.split()[1] in ("hf", "fastokens", "gigatoken")
    assert "CPU" in _lines(verbose, "time: ")[0] and not _lines(verbose, "more: ")
    # The rest is the same summary.
    kept = ("status:", "budget:", "rows:", "tokens:", "training:", "future-grounded", "summaries by:")
    assert [line for line in plain.splitlines() if line.startswith(kept)] == [
        line for line in verbose.splitlines() if line.startswith(kept)
    ]


def test_json_stays_complete_and_adds_the_time_since_start(tmp_path: Path) -> None:
    """What --json printed before is all still there, the engine's internals included; one key is added."""
    result = _compress(tmp_path, "--json")
    printed = json.loads(result.stdout)
    report = json.loads((tmp_path / "out.report.json").read_text())
    assert printed["counting"] == report["counting"] and printed["counting"]["guard"]["probes"] >= 0
    timings = printed.pop("timings_seconds")
    assert {key: timings[key] for key in report["timings_seconds"]} == report["timings_seconds"]
    assert set(timings) == {*report["timings_seconds"], "since_start"}
    assert timings["since_start"] >= report["timings_seconds"]["total"]
    assert printed == {"exit_code": 0, **{key: value for key, value in report.items() if key != "timings_seconds"}}


def test_the_time_includes_the_start_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tokenizer's load comes before the run's own clock: the printed time holds it."""
    load = api.counter_for

    def slow_load(config):  # a tokenizer fetched from the Hub, a cold disk
        time.sleep(DELAY)
        return load(config)

    monkeypatch.setattr(api, "counter_for", slow_load)
    result = _compress(tmp_path, "--json")
    [line] = _lines(result.stderr, "time: ")
    since_start, start_up, _ = (float(figure) for figure in _TIME.match(line).groups())
    assert since_start >= DELAY and start_up >= DELAY  # printed to a tenth: rounding keeps them >= DELAY
    timings = json.loads(result.stdout)["timings_seconds"]
    assert timings["since_start"] >= DELAY + timings["total"]


def test_a_program_run_counts_from_the_process_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """Run as the program (no arguments given: sys.argv read), the clock starts when the process did:
    the interpreter and the imports before the CLI's first line are start-up too."""
    monkeypatch.setattr(cli, "process_started", lambda: time.monotonic() - 100.0)
    argv = ["trajectory-compressor", "compress", str(SAMPLE), "-o", str(tmp_path / "out.jsonl"), *ROWS]
    monkeypatch.setattr(sys, "argv", argv)
    handler = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as stopped:
            cli.main.main()
    finally:
        signal.signal(signal.SIGTERM, handler)
    stderr = capsys.readouterr().err
    assert stopped.value.code == 0, stderr
    [line] = _lines(stderr, "time: ")
    since_start, start_up, _ = (float(figure) for figure in _TIME.match(line).groups())
    assert since_start >= 100.0 and start_up >= 100.0


def test_the_process_start_is_read_from_the_system() -> None:
    started = cli.process_started()
    assert started <= IMPORTED, "the process started before this module was imported"
    assert time.monotonic() - started < 30 * 24 * 3600


def test_several_outputs_each_say_their_rows_time_then_the_commands(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / "in" / name).write_bytes(b"".join(SAMPLE.read_bytes().splitlines(keepends=True)[:3]))
    result = run_cli("compress", str(tmp_path / "in"), "-o", str(tmp_path / "out") + "/", "--summarizer", "extractive")
    assert result.returncode == 0, result.stderr
    times = _lines(result.stderr, "time: ")
    assert len(times) == 3 and all(re.fullmatch(r"time: [\d.]+s", line) for line in times[:2])
    assert re.fullmatch(r"time: [\d.]+s since start, 2 outputs", times[2])
