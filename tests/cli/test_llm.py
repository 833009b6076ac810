"""The CLI against a real OpenAI-compatible HTTP server on 127.0.0.1 (the fault-injecting fake).

The CLI runs in a subprocess, as users run it; the server runs in a thread of the test process
so the test can read what it received.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from tests.fake_openai_server import FakeServerThread, prompt_text

SECRET = "sk-test-DO-NOT-LEAK-4f9c2a7e1b3d5f60"
BUDGET = ["--target-max-tokens", "2500", "--summary-target-tokens", "200"]


def _llm_args(base_url: str, cache: Path, *extra: str) -> list[str]:
    return [
        *BUDGET, "--summarizer", "llm", "--base-url", base_url, "--model", "test-model",
        "--cache", str(cache), "--retry-delay", "0.01", "--request-timeout", "5", *extra,
    ]  # fmt: skip


def _input(tmp_path: Path, rows: int = 12) -> Path:
    lines: list = [make_trajectory(i, steps=2 + i % 8, output_lines=40) for i in range(rows)]
    return write_jsonl(tmp_path / "in.jsonl", lines)


def _all_written_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_llm_run_end_to_end_and_the_key_never_leaks(tmp_path: Path) -> None:
    source = _input(tmp_path)
    cache = tmp_path / "cache" / "s.sqlite3"
    out = tmp_path / "out" / "x.jsonl"
    env = {"OPENAI_API_KEY": SECRET}
    with FakeServerThread(latency=0.05) as server:
        result = run_cli("compress", str(source), "-o", str(out), *_llm_args(server.base_url, cache), env=env)
        assert result.returncode == 0, result.stderr
        sent = len(server.requests)
        assert all(r.authorization == f"Bearer {SECRET}" for r in server.requests)
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    compressed = [m for m in metrics if m["was_compressed"]]
    assert compressed and sent == len(compressed)
    assert all(m["summarizer"] == "llm" and m["summary_calls"] == 1 for m in compressed)
    report = json.loads((out.parent / "x.report.json").read_text())
    endpoint = report["summaries"]["endpoint"]
    assert endpoint["requests"] == sent and endpoint["prompt_tokens"] > 0 and endpoint["completion_tokens"] > 0
    rows = read_jsonl(out)
    for m in compressed:
        summary = rows[m["index"]]["conversations"][m["compression_region"]["start_idx"]]["value"]
        assert summary.startswith("[CONTEXT SUMMARY]: ") and summary.count("[CONTEXT SUMMARY]:") == 1
    secret = SECRET.encode()
    assert secret not in _all_written_bytes(out.parent)
    assert secret not in cache.read_bytes()
    assert SECRET not in result.stderr + result.stdout

    # A re-run with the same inputs makes zero requests and writes the same bytes.
    again = tmp_path / "again" / "x.jsonl"
    with FakeServerThread(default="500") as server:
        rerun = run_cli("compress", str(source), "-o", str(again), *_llm_args(server.base_url, cache), env=env)
        assert rerun.returncode == 0, rerun.stderr
        assert len(server.requests) == 0
    for name in ("x.jsonl", "x.metrics.jsonl", "x.over_limit.jsonl"):
        assert (again.parent / name).read_bytes() == (out.parent / name).read_bytes()
    assert json.loads((again.parent / "x.report.json").read_text())["summaries"]["endpoint"]["cache_hits"] == sent


def test_failure_policies(tmp_path: Path) -> None:
    source = _input(tmp_path, rows=6)
    args = ["--max-retries", "1", "--no-cache"]
    with FakeServerThread(default="500") as server:
        out = tmp_path / "ext" / "x.jsonl"
        result = run_cli("compress", str(source), "-o", str(out), *_llm_args(server.base_url, tmp_path / "c", *args))
        assert result.returncode == 0, result.stderr
        metrics = [m for m in read_jsonl(out.parent / "x.metrics.jsonl") if m["compression_region"]]
        assert metrics and all(m["summarizer"] == "extractive" and m["was_compressed"] for m in metrics)
        assert all(m["summary_calls"] == 2 and m["summary_errors"] == 2 and "500" in m["last_error"] for m in metrics)
        report = json.loads((out.parent / "x.report.json").read_text())
        assert report["rows"]["summary_failed"] == len(metrics)
        assert report["summaries"]["endpoint"]["retries_by_cause"]["5xx"] == len(metrics)

        keep = tmp_path / "keep" / "x.jsonl"
        policy = ["--on-summary-failure", "keep"]
        result = run_cli(
            "compress", str(source), "-o", str(keep), *_llm_args(server.base_url, tmp_path / "c", *args, *policy)
        )
        assert result.returncode == 0, result.stderr
        metrics = read_jsonl(keep.parent / "x.metrics.jsonl")
        failed = [m for m in metrics if m["reason"] and m["reason"].startswith("summary failed")]
        assert failed and all(not m["was_compressed"] and m["still_over_limit"] for m in failed)
        assert all(m["summary_calls"] == 2 and m["summary_errors"] == 2 for m in failed), "the attempts still count"
        assert keep.read_bytes() == source.read_bytes(), "kept rows are written unchanged"

        stop = tmp_path / "fail" / "x.jsonl"
        policy = ["--on-summary-failure", "fail"]
        result = run_cli(
            "compress", str(source), "-o", str(stop), *_llm_args(server.base_url, tmp_path / "c", *args, *policy)
        )
        assert result.returncode == 1
        assert "summary failed" in result.stderr and "Traceback" not in result.stderr
        assert not stop.exists()


def test_refused_key_aborts_with_exit_2_and_few_requests(tmp_path: Path) -> None:
    source = _input(tmp_path, rows=30)
    out = tmp_path / "out" / "x.jsonl"
    with FakeServerThread(default="401") as server:
        result = run_cli(
            "compress", str(source), "-o", str(out), *_llm_args(server.base_url, tmp_path / "c", "--no-cache"),
            env={"OPENAI_API_KEY": SECRET},
        )  # fmt: skip
        assert result.returncode == 2
        assert len(server.requests) <= 32, "no retry storm: every request after the first 401 is refused locally"
    assert "refused the credentials" in result.stderr
    assert SECRET not in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def _stored_summaries(cache: Path) -> int:
    """Summaries in the cache file so far (read while the run writes it; none before it exists)."""
    if not cache.exists():  # not created here: the run makes it
        return 0
    try:
        with contextlib.closing(sqlite3.connect(cache, timeout=5)) as connection:
            return int(connection.execute("SELECT COUNT(*) FROM summaries_v2").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_killed_llm_run_resumes_without_paying_twice(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(i, steps=8, output_lines=40) for i in range(80)])
    cache = tmp_path / "cache.sqlite3"
    out = tmp_path / "out" / "x.jsonl"
    answered = 12  # rows 0-11 get their summaries; the server holds the requests of every later row

    def schedule(number: int, body: Any) -> str:
        row = int(re.search(r"test_mod(\d+)\.py", prompt_text(body)).group(1))  # type: ignore[union-attr]
        return "ok" if row < answered else "hold"

    with FakeServerThread(faults=schedule) as server:
        # Held until the kill, however long the run takes to get there: a timeout would retry them.
        extra = ["--max-concurrency", "2", "--request-timeout", "300"]
        args = ["compress", str(source), "-o", str(out), *_llm_args(server.base_url, cache, *extra)]
        env = {**os.environ, "TC_CHECKPOINT_ROWS": "5", "TC_CHECKPOINT_SECONDS": "0.1"}
        process = subprocess.Popen([sys.executable, "-m", "trajectory_compressor", *args], env=env)
        state = out.parent / ".x.jsonl.work" / "state.json"
        # A known point, not a moment of a run racing on: a checkpoint written, the twelve answers
        # stored, and both slots taken by requests the server holds. Killed now, the run has paid
        # for twelve summaries, all in the cache; the two held are the only ones in flight (a
        # kill at a moment of its own could catch an answer on its way to the cache). How many
        # rows the last checkpoint holds depends on timing (every 5 rows or 0.1 s): only >= 5.
        deadline = time.monotonic() + 300  # as `tests/run/test_resume.py` waits for its paused run
        while not (
            state.exists()
            and json.loads(state.read_text())["rows_committed"] >= 5
            and server.held == 2
            and _stored_summaries(cache) == answered
        ):
            assert process.poll() is None, "the run ended before the known point"
            assert time.monotonic() < deadline, "the run never reached the known point"
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait()
        before = len(server.requests)
        server.release()  # hold no more: the re-run is answered
        result = run_cli(*args)
        assert result.returncode == 0, result.stderr
        total = len(server.requests)
    compressed = sum(m["was_compressed"] for m in read_jsonl(out.parent / "x.metrics.jsonl"))
    assert before == answered + 2 < compressed
    # Summaries paid for before the kill are not requested again: only the 2 in flight are.
    assert total == compressed + 2
    # And the outputs equal an uninterrupted run's (all from the cache now).
    reference = tmp_path / "ref" / "x.jsonl"
    with FakeServerThread(default="500") as server:
        ref_args = ["compress", str(source), "-o", str(reference), *_llm_args(server.base_url, cache)]
        assert run_cli(*ref_args).returncode == 0
        assert len(server.requests) == 0
    for name in ("x.jsonl", "x.metrics.jsonl", "x.over_limit.jsonl", "x.rejects.jsonl"):
        assert (out.parent / name).read_bytes() == (reference.parent / name).read_bytes(), name


def test_rows_cut_by_the_row_timeout_count_the_requests_they_sent(tmp_path: Path) -> None:
    # The endpoint never answers; each row's summary is cut by --row-timeout mid-request.
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(i, steps=8, output_lines=40) for i in range(2)])
    out = tmp_path / "out" / "x.jsonl"
    with FakeServerThread(default="hang") as server:
        args = [*_llm_args(server.base_url, tmp_path / "c", "--no-cache", "--request-timeout", "60")]
        result = run_cli("compress", str(source), "-o", str(out), *args, "--row-timeout", "2", "-q")
        sent = len(server.requests)
    assert result.returncode == 0, result.stderr
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    timed_out = [m for m in metrics if "deadline" in (m["last_error"] or "")]
    assert len(timed_out) == 2 and sent == 2
    assert all(m["summary_calls"] == 1 and m["summarizer"] == "extractive" for m in timed_out)
    report = json.loads((out.parent / "x.report.json").read_text())
    assert report["summaries"]["endpoint"]["requests"] == sent


def test_a_row_cut_by_the_row_timeout_after_a_retry_counts_both_requests(tmp_path: Path) -> None:
    # The first request fails (500), the retry hangs: the deadline cuts the second mid-request.
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(0, steps=8, output_lines=40)])
    out = tmp_path / "out" / "x.jsonl"
    with FakeServerThread(faults=["500"], default="hang") as server:
        args = [*_llm_args(server.base_url, tmp_path / "c", "--no-cache", "--request-timeout", "60")]
        result = run_cli("compress", str(source), "-o", str(out), *args, "--row-timeout", "2", "-q")
        assert server.server.actions() == ["500", "hang"]
    assert result.returncode == 0, result.stderr
    [m] = read_jsonl(out.parent / "x.metrics.jsonl")
    assert "deadline" in m["last_error"] and m["summarizer"] == "extractive" and m["summary_failed"]
    assert (m["summary_calls"], m["summary_errors"]) == (2, 1)


def test_a_cached_summary_reports_the_requests_it_took_when_made(tmp_path: Path) -> None:
    # Made after one failed attempt (2 calls, 1 error); a re-run from the cache sends nothing
    # and writes the same metrics line, those counts included.
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(0, steps=8, output_lines=40)])
    cache = tmp_path / "cache.sqlite3"
    first, again = tmp_path / "first" / "x.jsonl", tmp_path / "again" / "x.jsonl"
    with FakeServerThread(faults=["500"]) as server:
        assert run_cli("compress", str(source), "-o", str(first), *_llm_args(server.base_url, cache)).returncode == 0
        assert len(server.requests) == 2
    with FakeServerThread(default="500") as server:
        assert run_cli("compress", str(source), "-o", str(again), *_llm_args(server.base_url, cache)).returncode == 0
        assert len(server.requests) == 0
    [made] = read_jsonl(first.parent / "x.metrics.jsonl")
    assert made["summarizer"] == "llm" and (made["summary_calls"], made["summary_errors"]) == (2, 1)
    assert (again.parent / "x.metrics.jsonl").read_bytes() == (first.parent / "x.metrics.jsonl").read_bytes()


def test_a_prompt_too_long_then_another_failure_counts_both_requests(tmp_path: Path) -> None:
    # The endpoint refuses the prompt as too long (a shorter one is sent), then fails with a 400.
    too_long = {"status": 400, "json": {"error": {"message": "This model's maximum context length is 4096 tokens"}}}
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(0, steps=8, output_lines=40)])
    out = tmp_path / "out" / "x.jsonl"
    with FakeServerThread(faults=[too_long, "400"]) as server:
        args = _llm_args(server.base_url, tmp_path / "c", "--no-cache")
        result = run_cli("compress", str(source), "-o", str(out), *args, "-q")
        assert len(server.requests) == 2
    assert result.returncode == 0, result.stderr
    [m] = read_jsonl(out.parent / "x.metrics.jsonl")
    assert m["summarizer"] == "extractive" and m["summary_failed"] is True
    assert (m["summary_calls"], m["summary_errors"]) == (2, 2)
    report = json.loads((out.parent / "x.report.json").read_text())
    assert report["summaries"]["calls"] == report["summaries"]["endpoint"]["requests"] == 2
    assert report["summaries"]["errors"] == 2


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_an_endpoint_that_never_answers_stops_the_run_with_exit_2_and_the_same_command_later_proceeds(
    tmp_path: Path,
) -> None:
    source = _input(tmp_path, rows=30)
    out = tmp_path / "out" / "x.jsonl"
    with FakeServerThread(default="drop") as server:  # connections accepted, then closed: no HTTP answer
        limits = ["--max-retries", "3", "--max-concurrency", "4"]
        args = ["compress", str(source), "-o", str(out), *_llm_args(server.base_url, tmp_path / "c.sqlite3", *limits)]
        dead = run_cli(*args)
        assert not out.exists()
        sent = len(server.requests)
        status = json.loads((out.parent / "x.report.json").read_text())["status"]
        server.server.default = "ok"  # the server is up now
        again = run_cli(*args)
    assert dead.returncode == 2, dead.stderr
    # The first wave, the first request's retries alone, then (the server's model list answers:
    # it is up) a second request's, while the first waits for its verdict.
    assert sent <= 4 + 3 + 4, sent
    [error] = _error_lines(dead.stderr)
    assert f"the endpoint {server.base_url} never answered" in error and "--base-url" in error
    assert status == "aborted"
    assert again.returncode == 0, again.stderr  # resumed: no summary was written by the fallback meanwhile
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert [m["index"] for m in metrics] == list(range(30))
    compressed = [m for m in metrics if m["was_compressed"]]
    assert compressed and {m["summarizer"] for m in compressed} == {"llm"}


@pytest.mark.parametrize("batch", [False, True])
def test_a_closed_port_is_one_line_naming_the_endpoint_without_its_credentials(tmp_path: Path, batch: bool) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://tc-user:pa55-never-shown@127.0.0.1:{port}/v1"
    extra = ["--batch"] if batch else []
    result = run_cli("compress", str(_input(tmp_path)), "-o", str(tmp_path / "out" / "x.jsonl"),
                     *_llm_args(url, tmp_path / "c.sqlite3", "--max-retries", "2", *extra))  # fmt: skip
    assert result.returncode == 2, result.stderr
    [error] = _error_lines(result.stderr)
    assert f"the endpoint http://127.0.0.1:{port}/v1 never answered" in error
    assert "pa55-never-shown" not in result.stderr and "tc-user" not in result.stderr


def test_an_endpoint_silent_past_the_row_deadline_stops_the_run(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(i, steps=8, output_lines=40) for i in range(3)])
    with FakeServerThread(default="hang") as server:  # every request times out: no answer at all
        result = run_cli("compress", str(source), "-o", str(tmp_path / "out" / "x.jsonl"),
                         *_llm_args(server.base_url, tmp_path / "c", "--no-cache", "--request-timeout", "0.2",
                                    "--max-retries", "1000", "--row-timeout", "3"))  # fmt: skip
    assert result.returncode == 2, result.stderr
    [error] = _error_lines(result.stderr)
    assert "never answered" in error and "no reply within 0.2s" in error


def test_an_endpoint_that_answered_once_fails_its_rows_one_by_one(tmp_path: Path) -> None:
    limits = ["--max-retries", "1", "--max-concurrency", "1"]
    with FakeServerThread(faults=["ok"], default="drop") as server:
        result = run_cli("compress", str(_input(tmp_path)), "-o", str(tmp_path / "out" / "x.jsonl"),
                         *_llm_args(server.base_url, tmp_path / "c", *limits))  # fmt: skip
    assert result.returncode == 0, result.stderr
    metrics = [m for m in read_jsonl(tmp_path / "out" / "x.metrics.jsonl") if m["was_compressed"]]
    assert [m["summarizer"] for m in metrics].count("llm") == 1
    assert all("Server disconnected" in m["last_error"] for m in metrics if m["summarizer"] == "extractive")


def test_many_near_zero_fidelity_summaries_are_said_once_at_the_end(tmp_path: Path) -> None:
    source = _input(tmp_path, rows=50)
    # A weak local model's off-topic answer (a decline, "I'm sorry, but I can't...", is refused
    # outright: tests/summarize/llm/test_hostile_replies.py).
    off_topic = {"content": "The weather was pleasant and the meeting went well."}
    with FakeServerThread(default=off_topic) as server:
        result = run_cli("compress", str(source), "-o", str(tmp_path / "out" / "x.jsonl"),
                         *_llm_args(server.base_url, tmp_path / "c.sqlite3", "-q"))  # fmt: skip
        asked = len(server.requests)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "have fidelity under 0.1" in line]
    assert len(warnings) == 1 and asked >= 20
    assert warnings[0].startswith(f"warning: {asked} of {asked} LLM summaries (100%) have fidelity under 0.1")
    assert "--min-fidelity" in warnings[0] and result.stderr.strip().splitlines()[-1] == warnings[0]
    report = json.loads((tmp_path / "out" / "x.report.json").read_text())
    assert report["warnings"] == warnings


# -- settings and the endpoint checked before the tokenizer loads -------------------------------
# A tokenizer path that does not exist stands for the tokenizer: had it been loaded first, the
# run would stop on it. Each error is the one line of stderr.
NO_TOKENIZER = ["--tokenizer", "/nonexistent/tokenizer-never-loaded"]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--summarizer", "llm"], "--summarizer llm needs an endpoint"),
        (["--summarizer", "llm", "--base-url", "http://127.0.0.1:9/v1"], "no model: pass --model"),
    ],
)
def test_llm_settings_missing_are_one_line_before_the_tokenizer_loads(
    tmp_path: Path, flags: list[str], said: str
) -> None:
    env = {"OPENAI_BASE_URL": None, "OPENAI_API_KEY": None}  # type: ignore[dict-item]  # unset
    result = run_cli("compress", str(_input(tmp_path, 2)), "-o", str(tmp_path / "o.jsonl"), *flags, *NO_TOKENIZER,
                     env=env)  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and said in result.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_a_refused_or_missing_key_is_one_line_before_the_tokenizer_loads(tmp_path: Path) -> None:
    with FakeServerThread(server=None, models_status=401) as server:
        args = ["compress", str(_input(tmp_path, 2)), "-o", str(tmp_path / "o.jsonl"), *NO_TOKENIZER,
                *_llm_args(server.base_url, tmp_path / "c")]  # fmt: skip
        missing = run_cli(*args, env={"OPENAI_API_KEY": None})  # type: ignore[dict-item]  # unset
        wrong = run_cli(*args, env={"OPENAI_API_KEY": SECRET})
        assert server.server.model_lists == 2 and not server.requests  # no summary asked
    assert missing.returncode == wrong.returncode == 2
    [line] = missing.stderr.strip().splitlines()
    assert line.startswith(f"error: HTTP 401 from {server.base_url}: the endpoint refused the credentials")
    assert line.count("$OPENAI_API_KEY") == 1 and "no API key was found in $OPENAI_API_KEY" in line
    assert "--api-key-env" in line
    [line] = wrong.stderr.strip().splitlines()
    assert "refused the credentials" in line and "check the key in $OPENAI_API_KEY" in line and SECRET not in line
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("inside", ["\n", "\r\n", "\x1b"])
def test_a_key_with_a_line_break_inside_is_one_line_naming_its_variable_before_any_request(
    tmp_path: Path, inside: str
) -> None:
    """aiohttp refuses such a header on the first request, which the run took for an endpoint
    that never answered ("check --base-url and that the server is up")."""
    first, second = SECRET[:18], SECRET[18:]
    with FakeServerThread() as server:
        result = run_cli(
            "compress", str(_input(tmp_path, 2)), "-o", str(tmp_path / "o.jsonl"), *NO_TOKENIZER,
            *_llm_args(server.base_url, tmp_path / "c"), env={"OPENAI_API_KEY": f"{first}{inside}{second}\n"},
        )  # fmt: skip
        assert not server.requests and not server.server.model_lists
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: $OPENAI_API_KEY holds a line break") and "server is up" not in line
    assert first not in result.stderr and second not in result.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_a_key_refused_mid_run_is_said_once(tmp_path: Path) -> None:
    """The preflight passes (a server without a model list); the first summary is refused."""
    with FakeServerThread(default="401", models_status=404) as server:
        result = run_cli("compress", str(_input(tmp_path)), "-o", str(tmp_path / "o.jsonl"),
                         *_llm_args(server.base_url, tmp_path / "c", "-q"), env={"OPENAI_API_KEY": SECRET})  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("refused the credentials") == 1, result.stderr
