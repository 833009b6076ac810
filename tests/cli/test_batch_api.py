"""`compress --batch` against a real Files + Batches server on 127.0.0.1 (`tests/fake_batch_api.py`).

The promises: a batch run writes exactly the bytes a live run writes, with no live call for an
answered row; failed, expired and refused requests go to a follow-up batch or live, then to the
failure policy; `--no-wait` exits 75 and a re-run reattaches; a run killed at any step and run
again never submits a request twice and never loses an answer (for OpenAI's Files + Batches and
Anthropic's Message Batches alike); the API key is in no file.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, run_cli_subprocess, write_jsonl
from tests.fake_anthropic_api import FakeAnthropicBatchServer
from tests.fake_batch_api import FakeBatchServer
from tests.fake_openai_server import FakeServerThread
from tests.providers import BUDGET, OUTPUTS, no_secret_anywhere, twelve_runs

SECRET = "sk-test-BATCH-never-written-5f1e2d3c"
KEY_ENV = {"OPENAI_API_KEY": SECRET}


def _flags(base_url: str, cache: Path, *extra: str) -> list[str]:
    return [*BUDGET, "--base-url", base_url, "--model", "batch-model", "--cache", str(cache),
            "--retry-delay", "0.01", "--retry-max-delay", "0.05", "--max-retries", "3",
            "--batch-poll-interval", "0.01", "--batch-poll-max", "0.02", *extra]  # fmt: skip


def _batch(source: Path, out: Path, base_url: str, cache: Path, *extra: str):  # type: ignore[no-untyped-def]
    return run_cli("compress", str(source), "-o", str(out), *_flags(base_url, cache, "--batch", *extra), env=KEY_ENV)


@dataclass(frozen=True)
class Live:
    source: Path  # metrics name their source: batch runs read this very file
    out: Path


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Live:
    """The live run's outputs, for byte comparisons (the fake answers batch and live alike)."""
    tmp = tmp_path_factory.mktemp("live")
    source = twelve_runs(tmp)
    with FakeServerThread() as server:
        result = run_cli("compress", str(source), "-o", str(tmp / "out" / "x.jsonl"),
                         *_flags(server.base_url, tmp / "c.sqlite3"), env=KEY_ENV)  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert len(server.requests) == 6  # the rows over the target
    return Live(source, tmp / "out")


def _same_as_live(out: Path, live: Live | Path) -> None:
    expected = live.out if isinstance(live, Live) else live
    for name in OUTPUTS:
        assert (out / name).read_bytes() == (expected / name).read_bytes(), name


def _paid_once(server: FakeBatchServer) -> None:
    counts = Counter(line["custom_id"] for line in server.batch_lines())
    assert counts and max(counts.values()) == 1, counts


def test_a_batch_run_writes_the_live_bytes_with_no_live_call_at_the_batch_price(tmp_path: Path, live: Live) -> None:
    source = live.source
    server = FakeBatchServer()
    with FakeServerThread(server=server):
        result = _batch(source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3",
                        "--price-in", "2", "--price-out", "8")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert len(server.requests) == 0  # not one live chat call
    assert server.created() == 1 and len(server.batch_lines()) == 6
    _paid_once(server)
    batch = next(iter(server.batches.values()))
    assert batch["completion_window"] == "24h" and batch["endpoint"] == "/v1/chat/completions"
    assert all(auth == f"Bearer {SECRET}" for _, _, auth in server.api_calls)
    _same_as_live(tmp_path / "out", live)
    endpoint = json.loads((tmp_path / "out" / "x.report.json").read_text())["summaries"]["endpoint"]
    assert endpoint["requests"] == 0 and endpoint["cache_hits"] == 6 and endpoint["batches_submitted"] == 1
    assert endpoint["prompt_tokens"] == 0 and endpoint["batch_prompt_tokens"] > 0
    full_price = (endpoint["batch_prompt_tokens"] * 2 + endpoint["batch_completion_tokens"] * 8) / 1e6
    assert endpoint["cost_batch_usd"] == pytest.approx(full_price / 2, abs=1e-6)
    assert endpoint["cost_usd"] == endpoint["cost_batch_usd"] and endpoint["cost_live_usd"] == 0
    assert not (tmp_path / "out" / ".x.jsonl.batches").exists()  # done with once the run is written
    no_secret_anywhere(SECRET, tmp_path, result.stderr, result.stdout)


def test_request_files_are_split_by_count_and_by_bytes(tmp_path: Path, live: Live) -> None:
    source = live.source
    # Request lines here are 4.9 to 11.4 kB: 12,000 bytes takes two of the smallest, one of the others.
    for flag, value, files in (("--batch-max-requests", "4", 2), ("--batch-max-bytes", "12000", 5)):
        server = FakeBatchServer()
        out = tmp_path / flag / "x.jsonl"
        with FakeServerThread(server=server):
            result = _batch(source, out, server.base_url, tmp_path / f"{flag}.sqlite3", flag, value)
        assert result.returncode == 0, result.stderr
        assert server.created() == files, flag
        assert sorted(len(f["content"].splitlines()) for f in server.files.values() if f["purpose"] == "batch") == (
            [2, 4] if files == 2 else [1, 1, 1, 1, 2]
        )
        _paid_once(server)
        _same_as_live(out.parent, live)


@pytest.mark.parametrize("fallback", ["batch", "live"])
def test_failed_cut_and_expired_requests_go_to_the_fallback(tmp_path: Path, live: Live, fallback: str) -> None:
    source = live.source

    def faults(batch: int, index: int, line: dict) -> str | None:  # the first batch fails one line, cuts one
        return {0: "500", 1: "length"}.get(index) if batch == 1 else None

    server = FakeBatchServer(line_faults=faults, outcomes=["expired"])
    with FakeServerThread(server=server) as thread:
        result = _batch(source, tmp_path / "out" / "x.jsonl", thread.base_url, tmp_path / "c.sqlite3",
                        "--batch-fallback", fallback)  # fmt: skip
    assert result.returncode == 0, result.stderr
    # 6 requests: 2 failed, 3 expired (the second half), 1 answered.
    if fallback == "batch":
        assert server.created() == 2 and len(server.requests) == 0
        assert len(server.batch_lines()) == 6 + 5
    else:
        assert server.created() == 1 and len(server.requests) == 5
    assert "round-01-part-0001.errors.jsonl:1: no usable answer: HTTP 500 from the batch: fake line error 500" in (
        result.stderr
    )
    assert "reply was cut at max_tokens" in result.stderr
    _same_as_live(tmp_path / "out", live)


def test_a_request_failed_in_every_batch_takes_the_failure_policy_without_a_live_call(tmp_path: Path) -> None:
    source = twelve_runs(tmp_path)
    server = FakeBatchServer(line_faults=lambda batch, index, line: "500" if index == 0 else None)
    with FakeServerThread(server=server):
        result = _batch(source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3")
    assert result.returncode == 0, result.stderr
    assert server.created() == 2 and len(server.requests) == 0  # the follow-up batch, then no more
    metrics = read_jsonl(tmp_path / "out" / "x.metrics.jsonl")
    failed = [m for m in metrics if m.get("last_error")]
    assert len(failed) == 1 and failed[0]["summarizer"] == "extractive"
    assert "no answer from the batch API: HTTP 500 from the batch: fake line error 500" in failed[0]["last_error"]
    assert len(read_jsonl(tmp_path / "out" / "x.jsonl")) == 12  # every row once, in order
    assert [m["index"] for m in metrics] == list(range(12))


def test_a_batch_the_provider_refuses_goes_to_the_fallback(tmp_path: Path, live: Live) -> None:
    source = live.source
    server = FakeBatchServer(outcomes=["failed", "failed"])
    with FakeServerThread(server=server):
        result = _batch(source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3",
                        "--on-summary-failure", "keep")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert server.created() == 2 and len(server.requests) == 0
    metrics = read_jsonl(tmp_path / "out" / "x.metrics.jsonl")
    assert sum(1 for m in metrics if "the input file was refused" in (m.get("last_error") or "")) == 6
    assert not any(m["was_compressed"] for m in metrics)
    server = FakeBatchServer(outcomes=["failed"])
    with FakeServerThread(server=server):
        result = _batch(source, tmp_path / "live" / "x.jsonl", server.base_url, tmp_path / "c2.sqlite3",
                        "--batch-fallback", "live")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert server.created() == 1 and len(server.requests) == 6
    _same_as_live(tmp_path / "live", live)


def test_429_on_create_and_lost_replies_never_make_a_second_batch(tmp_path: Path, live: Live) -> None:
    source = live.source
    server = FakeBatchServer(create_faults=["429", "lost", "429"], upload_faults=["lost", "500"])
    with FakeServerThread(server=server):
        result = _batch(source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3")
    assert result.returncode == 0, result.stderr
    assert sum(1 for f in server.files.values() if f["purpose"] == "batch") == 1
    assert server.created() == 1
    _paid_once(server)
    _same_as_live(tmp_path / "out", live)


def test_fidelity_retries_are_a_second_round(tmp_path: Path) -> None:
    source = twelve_runs(tmp_path)
    gate = ["--min-fidelity", "0.99"]
    with FakeServerThread() as plain:
        result = run_cli("compress", str(source), "-o", str(tmp_path / "live" / "x.jsonl"),
                         *_flags(plain.base_url, tmp_path / "l.sqlite3", *gate))  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert len(plain.requests) == 12  # each summary asked again with what it missed
    server = FakeBatchServer()
    with FakeServerThread(server=server):
        result = _batch(source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3", *gate)
    assert result.returncode == 0, result.stderr
    assert "batch round 2: 6 requests for 6 rows" in result.stderr
    assert server.created() == 2 and len(server.requests) == 0
    _paid_once(server)
    _same_as_live(tmp_path / "out", tmp_path / "live")


def test_no_wait_exits_pending_and_the_same_command_reattaches(tmp_path: Path, live: Live) -> None:
    source = live.source
    out = tmp_path / "out" / "x.jsonl"
    server = FakeBatchServer(hold=True)
    with FakeServerThread(server=server):
        for _ in range(2):
            pending = _batch(source, out, server.base_url, tmp_path / "c.sqlite3", "--no-wait")
            assert pending.returncode == 75, pending.stderr
            assert "1 batch(es) pending with the provider" in pending.stderr
            assert "run the same command again later" in pending.stderr and "error:" not in pending.stderr
        assert server.created() == 1 and not out.exists()
        no_secret_anywhere(SECRET, tmp_path, pending.stderr)  # the batch folder, mid-run, included
        status = run_cli("batches", "status", str(out), "--base-url", server.base_url, "--json", env=KEY_ENV)
        assert status.returncode == 0, status.stderr
        [run] = json.loads(status.stdout)
        assert run["batches"][0]["status"] == "in_progress" and run["batches"][0]["requests"] == 6
        server.hold = False  # each look moves a batch one step: finalizing, then completed
        codes = [_batch(source, out, server.base_url, tmp_path / "c.sqlite3", "--no-wait").returncode for _ in "12"]
        assert codes == [75, 0]
    assert server.created() == 1 and len(server.requests) == 0
    _same_as_live(out.parent, live)
    gone = run_cli("batches", "status", str(out))
    assert gone.returncode == 2 and "no batches are recorded" in gone.stderr


def test_cancel_then_resubmit_keeps_what_was_answered_and_sends_the_rest_to_the_fallback(
    tmp_path: Path, live: Live
) -> None:
    source = live.source
    out = tmp_path / "out" / "x.jsonl"
    server = FakeBatchServer(hold=True)
    with FakeServerThread(server=server):
        assert _batch(source, out, server.base_url, tmp_path / "c.sqlite3", "--no-wait").returncode == 75
        cancel = run_cli("batches", "cancel", str(out), "--base-url", server.base_url, env=KEY_ENV)
        assert cancel.returncode == 0, cancel.stderr
        assert "asked to cancel 1 batch(es): batch_0001" in cancel.stderr
        result = _batch(source, out, server.base_url, tmp_path / "c.sqlite3", "--batch-fallback", "live",
                        "--batch-resubmit-cancelled")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "batch batch_0001 cancelled: 3 answers stored, 3 requests without an answer" in result.stderr
    assert len(server.requests) == 3 and server.created() == 1
    _same_as_live(out.parent, live)


@dataclass(frozen=True)
class Provider:
    """A batch API to run the same promises against: its fake, its key's variable, its flags."""

    name: str
    server: type[FakeBatchServer]
    key_env: str
    flags: tuple[str, ...]
    steps: tuple[str, ...]  # its durable boundaries, in order

    def __str__(self) -> str:
        return self.name


STEPS = ("batch-written", "batch-uploaded", "batch-create-sent", "batch-created", "batch-polled", "batch-downloaded",
         "batch-stored")  # fmt: skip
OPENAI = Provider("openai", FakeBatchServer, "OPENAI_API_KEY", (), STEPS)
# No upload: Anthropic takes the requests in the create call.
ANTHROPIC = Provider("anthropic", FakeAnthropicBatchServer, "ANTHROPIC_API_KEY", ("--api", "anthropic"),
                     tuple(step for step in STEPS if step != "batch-uploaded"))  # fmt: skip
CRASH_POINTS = [(p, f"{step}:{2 if step == 'batch-polled' else 1}") for p in (OPENAI, ANTHROPIC) for step in p.steps]
# The test command keeps one boundary of each provider (the two that decide whether a batch was
# paid for); the others, ~13 s each, run in the slow suite (`kills`).
FAST_CRASH_POINTS = {"openai-batch-created:1", "anthropic-batch-create-sent:1"}


@pytest.mark.parametrize(
    ("provider", "point"),
    [
        pytest.param(
            p, point, id=f"{p}-{point}", marks=() if f"{p}-{point}" in FAST_CRASH_POINTS else pytest.mark.kills
        )
        for p, point in CRASH_POINTS
    ],
)
def test_killed_at_any_step_a_re_run_pays_nothing_twice_and_loses_nothing(
    tmp_path: Path, live: Live, provider: Provider, point: str
) -> None:
    """The Anthropic fake answers as the OpenAI one does: its outputs are the live run's bytes too."""
    source = live.source
    out = tmp_path / "out" / "x.jsonl"
    server = provider.server()
    env = {provider.key_env: SECRET}
    with FakeServerThread(server=server):
        flags = _flags(server.base_url, tmp_path / "c.sqlite3", "--batch", *provider.flags)
        args = ["compress", str(source), "-o", str(out), *flags]
        killed = run_cli_subprocess(*args, env={**env, "TC_CRASH_AT": point})
        assert killed.returncode == -9, killed.stderr
        again = run_cli_subprocess(*args, env=env)
        assert again.returncode == 0, again.stderr
    assert server.created() == 1 and len(server.requests) == 0
    _paid_once(server)
    _same_as_live(out.parent, live)
    no_secret_anywhere(SECRET, tmp_path, killed.stderr, again.stderr)


def test_what_batch_mode_needs_is_one_line(tmp_path: Path) -> None:
    source = twelve_runs(tmp_path)
    out = str(tmp_path / "o.jsonl")
    extractive = run_cli("compress", str(source), "-o", out, "--batch", "--summarizer", "extractive")
    assert extractive.returncode == 2 and "--batch needs the llm summarizer" in extractive.stderr
    flags = _flags("http://127.0.0.1:9/v1", tmp_path / "c.sqlite3", "--batch")
    no_cache = run_cli("compress", str(source), "-o", out, *flags, "--no-cache")
    assert no_cache.returncode == 2 and "--batch needs the summary cache" in no_cache.stderr
    dry = run_cli("compress", str(source), "-o", out, *flags, "--dry-run")
    assert dry.returncode == 2 and "--dry-run" in dry.stderr
    if importlib.util.find_spec("ray") is not None:  # refused before Ray starts
        on_ray = run_cli("compress", str(source), "-o", out, *flags, "--engine", "ray")
        assert on_ray.returncode == 2 and "--batch (the batch rounds run on the local engine)" in on_ray.stderr


def test_refused_credentials_a_wrong_endpoint_and_a_damaged_record_are_one_line(tmp_path: Path) -> None:
    source = twelve_runs(tmp_path)
    out = tmp_path / "out" / "x.jsonl"
    server = FakeBatchServer(upload_faults=["401"])
    with FakeServerThread(server=server):
        refused = _batch(source, out, server.base_url, tmp_path / "c.sqlite3")
        wrong = _batch(source, out, server.base_url.replace("/v1", "/nope"), tmp_path / "c.sqlite3")
    assert refused.returncode == 2 and "refused the credentials" in refused.stderr
    assert "fake batch error 401: Bearer [REDACTED]" in refused.stderr
    assert wrong.returncode == 2 and "HTTP 404" in wrong.stderr
    for result in (refused, wrong):
        assert SECRET not in result.stderr and "Traceback" not in result.stderr
    record = out.parent / ".x.jsonl.batches" / "batches.json"
    record.write_text(record.read_text().replace('"answers": 0', '"answers": 5'))
    damaged = _batch(source, out, "http://127.0.0.1:9/v1", tmp_path / "c.sqlite3")
    assert damaged.returncode == 2 and "cannot be trusted (its checksum does not match)" in damaged.stderr


def test_a_second_run_on_the_output_is_refused_and_sigterm_while_polling_resumes(tmp_path: Path, live: Live) -> None:
    source = live.source
    out = tmp_path / "out" / "x.jsonl"
    pause = tmp_path / "pause"
    server = FakeBatchServer(hold=True)
    with FakeServerThread(server=server):
        args = ["compress", str(source), "-o", str(out), *_flags(server.base_url, tmp_path / "c.sqlite3", "--batch")]
        env = {**os.environ, **KEY_ENV, "TC_PAUSE_AT": "batch-polled:1", "TC_PAUSE_FILE": str(pause)}
        first = subprocess.Popen([sys.executable, "-m", "trajectory_compressor", *args], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            while not pause.exists():  # held right after its first look at the batch, lock taken
                if first.poll() is not None:
                    raise AssertionError(first.communicate())
                time.sleep(0.01)
            second = _batch(source, out, server.base_url, tmp_path / "c.sqlite3")
            first.send_signal(signal.SIGTERM)  # handled at the run's next await, once the hook lets go
            pause.with_name(pause.name + ".release").touch()
            _, stderr = first.communicate(timeout=60)
        finally:
            if first.poll() is None:
                first.kill()
        assert second.returncode == 2 and "another run is writing" in second.stderr
        assert first.returncode == 130, stderr
        assert "re-run the same command: it picks up the same batches" in stderr
        server.hold = False
        again = run_cli_subprocess(*args, env=KEY_ENV)
        assert again.returncode == 0, again.stderr
    assert server.created() == 1 and len(server.requests) == 0
    _same_as_live(out.parent, live)


def test_hostile_lines_in_an_output_file_are_reported_and_change_nothing(tmp_path: Path, live: Live) -> None:
    source = live.source
    deep = b'{"custom_id": "' + b"a" * 64 + b'", "response": ' + b"[" * 3000 + b"]" * 3000 + b"}"
    foreign = json.dumps({"custom_id": "f" * 64, "response": {"status_code": 200, "body": {"choices": []}}})
    leak = json.dumps({"custom_id": "e" * 64, "response": None, "error": {"message": f"key {SECRET} refused"}})
    hostile = [deep, b'{"custom_id": "\\ud800", "response": null}', b"\xff\xfe not utf-8", foreign.encode(),
               leak.encode(), b"[]"]  # fmt: skip

    def quoting(batch: int, index: int, line: dict) -> str | None:  # one error quotes the key; its follow-up answers
        return "echo_auth" if (batch, index) == (1, 0) else None

    server = FakeBatchServer(output_extra=hostile, line_faults=quoting)
    with FakeServerThread(server=server):
        result = _batch(source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3")
    assert result.returncode == 0, result.stderr
    assert server.created() == 2 and len(server.requests) == 0
    assert "no usable answer: refused Bearer [REDACTED]" in result.stderr
    name = "round-01-part-0001.output.jsonl"
    for line in range(6, 12):  # after the 5 answers, each hostile line, reported where it is
        assert f"warning: {name}:{line}: " in result.stderr, line
    assert "answers a request this batch did not ask" in result.stderr
    _same_as_live(tmp_path / "out", live)
    no_secret_anywhere(SECRET, tmp_path, result.stderr)


def test_a_summary_over_its_budget_gets_its_second_pass_in_the_next_round(tmp_path: Path) -> None:
    # Many small tool groups: a summary far over its budget leaves the row over the target.
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(i, steps=40, output_lines=4) for i in range(3)])
    long_summary = " ".join(f"step{k} done." for k in range(100))

    def overshoot(batch: int, index: int, line: dict) -> str | None:
        return f"text:{long_summary}" if batch == 1 else None

    server = FakeBatchServer(line_faults=overshoot)
    with FakeServerThread(server=server):
        result = _batch(source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3")
    assert result.returncode == 0, result.stderr
    assert "batch round 2: 3 requests for 3 rows" in result.stderr
    assert server.created() == 2 and len(server.requests) == 0
    metrics = read_jsonl(tmp_path / "out" / "x.metrics.jsonl")
    assert [(m["passes"], m["still_over_limit"]) for m in metrics] == [(2, False)] * 3
    assert long_summary not in (tmp_path / "out" / "x.jsonl").read_text()


def test_windows_summaries_come_in_one_round_per_window_and_equal_the_live_run(tmp_path: Path) -> None:
    """--windows: window k's summary updates window k-1's, so each window is a round of its own."""
    source = write_jsonl(
        tmp_path / "in.jsonl", [make_trajectory(i, steps=6 + 3 * i, output_lines=30) for i in range(3)]
    )
    windows = ["--windows", "--target-max-tokens", "2000"]
    with FakeServerThread() as server:
        result = run_cli("compress", str(source), "-o", str(tmp_path / "live" / "x.jsonl"),
                         *_flags(server.base_url, tmp_path / "live.sqlite3"), *windows, env=KEY_ENV)  # fmt: skip
        assert result.returncode == 0, result.stderr
        live_requests = len(server.requests)
    batch_server = FakeBatchServer()
    with FakeServerThread(server=batch_server):
        result = _batch(source, tmp_path / "out" / "x.jsonl", batch_server.base_url, tmp_path / "c.sqlite3", *windows)
    assert result.returncode == 0, result.stderr
    assert len(batch_server.requests) == 0 and len(batch_server.batch_lines()) == live_requests
    metrics = read_jsonl(tmp_path / "out" / "x.metrics.jsonl")
    longest = max(m["window"]["count"] for m in metrics)
    assert longest >= 6 and batch_server.created() == longest - 1  # one round per later window (more than 4)
    _paid_once(batch_server)
    _same_as_live(tmp_path / "out", tmp_path / "live")


@pytest.mark.parametrize(
    "windows", [[], ["--windows", "--target-max-tokens", "2000", "--tail-ratio", "0.5"]], ids=["single", "windows"]
)
def test_pruned_rows_need_no_request_and_a_pruning_batch_run_equals_the_live_run(
    tmp_path: Path, windows: list[str]
) -> None:
    """--prune-tool-outputs: pruning is local, so a row it fits asks nothing; the others are asked
    on the pruned row, in batches, and the outputs are the live run's bytes. A single row prunes
    only results no gpt turn answers (runs cut off after parallel calls, no protected tail); a
    window, its context's results (a tail of several groups)."""
    from tests.run.test_pruning import cut_off

    if windows:
        rows = [make_trajectory(i, steps=2 + i % 8, output_lines=40) for i in range(10)]
        prune = ["--prune-tool-outputs", *windows]
    else:
        rows = [cut_off(make_trajectory(i, steps=2 + i % 8, output_lines=40)) for i in range(10)]
        prune = ["--prune-tool-outputs", "--protect-last-n-turns", "0"]
    rows += [make_trajectory(20 + i, steps=30 + 10 * i, output_lines=12) for i in range(2)]  # pruning cannot fit
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    with FakeServerThread() as server:
        result = run_cli("compress", str(source), "-o", str(tmp_path / "live" / "x.jsonl"),
                         *_flags(server.base_url, tmp_path / "live.sqlite3"), *prune, env=KEY_ENV)  # fmt: skip
        assert result.returncode == 0, result.stderr
        live_requests = len(server.requests)
    metrics = read_jsonl(tmp_path / "live" / "x.metrics.jsonl")
    asked = {m["index"] for m in metrics if m["was_compressed"]}
    assert any(m.get("pruned_turns") for m in metrics) and live_requests > 0
    if not windows:  # rows pruning fits ask nothing (a window's pruning only makes room for more turns)
        assert any(m.get("pruned_turns") and m["index"] not in asked for m in metrics)
    batch_server = FakeBatchServer()
    with FakeServerThread(server=batch_server):
        result = _batch(source, tmp_path / "out" / "x.jsonl", batch_server.base_url, tmp_path / "c.sqlite3", *prune)
    assert result.returncode == 0, result.stderr
    assert len(batch_server.requests) == 0 and len(batch_server.batch_lines()) == live_requests
    _paid_once(batch_server)
    _same_as_live(tmp_path / "out", tmp_path / "live")
