"""`compress --batch` against providers that differ from OpenAI's own API, and batches that go wrong.

Each quirk is a knob of the fake Files + Batches server on 127.0.0.1 (`tests/fake_batch_api.py`):
no list endpoints, lists that never end, a batch that never leaves `in_progress`, a batch the
provider fails, one cancelled by the user, answers given twice, a request over `--batch-max-bytes`.
The promises stay those of `test_batch_api.py`: every row once, nothing paid twice, one line for
what the user must know.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.cli.test_batch_api import KEY_ENV, Live, _batch, _paid_once, _same_as_live, live
from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from tests.fake_batch_api import FakeBatchServer
from tests.fake_openai_server import FakeServerThread

__all__ = ["live"]  # the module fixture: the live run's outputs, for byte comparisons


def _other_runs(server: FakeBatchServer, count: int) -> None:
    """Files of other runs already with the provider, so its lists have pages to turn."""
    for number in range(count):
        server.files[f"file-other-{number}"] = {
            "id": f"file-other-{number}", "object": "file", "bytes": 10, "created_at": int(time.time()),
            "filename": f"other-{number}.jsonl", "purpose": "batch", "status": "processed", "content": b"",
        }  # fmt: skip


@pytest.mark.parametrize("lists", ["404", "405", "ignore_after"])
def test_a_provider_without_usable_lists_still_gets_its_batches_and_says_so_once(
    tmp_path: Path, live: Live, lists: str
) -> None:
    server = FakeBatchServer(lists=lists)
    _other_runs(server, 5)
    with FakeServerThread(server=server):
        result = _batch(live.source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3")
    assert result.returncode == 0, result.stderr
    assert server.created() == 1 and len(server.requests) == 0
    listed = [path for method, path, _ in server.api_calls if method == "GET" and path in ("/v1/files", "/v1/batches")]
    assert len(listed) <= 3, listed  # each list is given up at its first sign, and not asked again
    assert result.stderr.count("a lost reply to an upload or a batch create cannot be checked") == 1
    _paid_once(server)
    _same_as_live(tmp_path / "out", live)


def test_an_output_file_that_repeats_its_answers_is_counted_once(tmp_path: Path, live: Live) -> None:
    usage = []
    for name, repeat in (("once", False), ("twice", True)):
        server = FakeBatchServer(repeat_output=repeat)
        with FakeServerThread(server=server):
            result = _batch(live.source, tmp_path / name / "x.jsonl", server.base_url, tmp_path / f"{name}.sqlite3",
                            "--price-in", "2", "--price-out", "8")  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert server.created() == 1 and len(server.requests) == 0
        usage.append(json.loads((tmp_path / name / "x.report.json").read_text())["summaries"]["endpoint"])
        _same_as_live(tmp_path / name, live)
    for key in ("batch_answers_loaded", "batch_prompt_tokens", "batch_completion_tokens", "cost_batch_usd"):
        assert usage[1][key] == usage[0][key], key
    assert usage[1]["batch_prompt_tokens"] > 0 and usage[1]["cost_batch_usd"] > 0
    assert "a second answer to a request answered on line 1: ignored" in result.stderr
    assert "6 answers stored" in result.stderr


@pytest.mark.parametrize("fallback", ["batch", "live"])
def test_cancelled_requests_take_the_failure_policy_and_are_not_asked_again(
    tmp_path: Path, live: Live, fallback: str
) -> None:
    out = tmp_path / "out" / "x.jsonl"
    server = FakeBatchServer(hold=True)
    with FakeServerThread(server=server):
        flags = ["--batch-fallback", fallback, "--on-summary-failure", "keep"]
        assert _batch(live.source, out, server.base_url, tmp_path / "c.sqlite3", "--no-wait", *flags).returncode == 75
        cancel = run_cli("batches", "cancel", str(out), "--base-url", server.base_url, env=KEY_ENV)
        assert cancel.returncode == 0, cancel.stderr
        assert "--batch-resubmit-cancelled" in cancel.stderr  # what a re-run does with them, said up front
        server.hold = False  # a follow-up batch would be answered (and paid)
        result = _batch(live.source, out, server.base_url, tmp_path / "c.sqlite3", *flags)
    assert result.returncode == 0, result.stderr
    assert server.created() == 1 and len(server.requests) == 0  # no follow-up batch, no live call
    assert "3 requests without an answer take --on-summary-failure (keep)" in result.stderr
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert sum(1 for m in metrics if m["was_compressed"]) == 3  # the answers the batch gave before it stopped
    cancelled = [m for m in metrics if "cancelled" in (m.get("last_error") or "")]
    assert len(cancelled) == 3 and not any(m["was_compressed"] for m in cancelled)
    assert [m["index"] for m in metrics] == list(range(12))
    _paid_once(server)


def test_cancelled_requests_are_submitted_again_when_asked(tmp_path: Path, live: Live) -> None:
    out = tmp_path / "out" / "x.jsonl"
    server = FakeBatchServer(hold=True)
    with FakeServerThread(server=server):
        assert _batch(live.source, out, server.base_url, tmp_path / "c.sqlite3", "--no-wait").returncode == 75
        assert run_cli("batches", "cancel", str(out), "--base-url", server.base_url, env=KEY_ENV).returncode == 0
        server.hold = False
        result = _batch(live.source, out, server.base_url, tmp_path / "c.sqlite3", "--batch-resubmit-cancelled")
    assert result.returncode == 0, result.stderr
    assert server.created() == 2 and len(server.requests) == 0
    assert len(server.batch_lines()) == 6 + 3  # the follow-up holds the cancelled ones only
    _same_as_live(out.parent, live)


@pytest.mark.parametrize("fallback", ["batch", "live"])
def test_a_batch_stuck_in_progress_is_given_up_at_the_batch_timeout(tmp_path: Path, live: Live, fallback: str) -> None:
    server = FakeBatchServer(stuck=True)  # in_progress for ever, deaf to cancel
    with FakeServerThread(server=server):
        # A microsecond: any look at the batch comes after it, on any machine.
        result = _batch(live.source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3",
                        "--batch-timeout", "0.000001", "--batch-fallback", fallback)  # fmt: skip
    assert result.returncode == 0, result.stderr
    batches = 2 if fallback == "batch" else 1  # the follow-up is stuck too, and given up as well
    assert server.created() == batches
    assert server.calls("POST", "/v1/batches/batch_0001/cancel") == 1  # asked to stop, so it is not paid for
    assert result.stderr.count("no result within --batch-timeout") == batches
    if fallback == "live":
        assert len(server.requests) == 6
        _same_as_live(tmp_path / "out", live)
    else:
        assert len(server.requests) == 0
        metrics = read_jsonl(tmp_path / "out" / "x.metrics.jsonl")
        failed = [m for m in metrics if "--batch-timeout" in (m.get("last_error") or "")]
        assert len(failed) == 6 and {m["summarizer"] for m in failed} == {"extractive"}


def test_why_the_provider_failed_a_batch_is_on_stderr(tmp_path: Path, live: Live) -> None:
    server = FakeBatchServer(outcomes=["failed"], failure="model_not_found: The model 'batch-model' does not exist")
    with FakeServerThread(server=server):
        result = _batch(live.source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3",
                        "--batch-fallback", "live")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "batch batch_0001 failed: model_not_found: The model 'batch-model' does not exist" in result.stderr
    _same_as_live(tmp_path / "out", live)


def _uploaded_lines(server: FakeBatchServer) -> list[bytes]:
    return [line for f in server.files.values() if f["purpose"] == "batch" for line in f["content"].splitlines()]


def test_a_request_over_batch_max_bytes_is_sent_with_a_shorter_transcript(tmp_path: Path, live: Live) -> None:
    # The six request lines are 4.9 to 11.4 kB: three are over 8,000 bytes.
    server = FakeBatchServer()
    with FakeServerThread(server=server):
        result = _batch(live.source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3",
                        "--batch-max-bytes", "8000")  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = _uploaded_lines(server)
    assert len(lines) == 6 and max(len(line) + 1 for line in lines) <= 8000
    assert len(server.requests) == 0  # the shortened answers are found by the run: no live call
    assert "3 requests over --batch-max-bytes (8000): 3 are sent with a shorter transcript" in result.stderr
    metrics = read_jsonl(tmp_path / "out" / "x.metrics.jsonl")
    assert sum(1 for m in metrics if m["summarizer"] == "llm") == 6
    live_lines = (live.out / "x.jsonl").read_bytes().splitlines()
    differ = [
        i for i, line in enumerate((tmp_path / "out" / "x.jsonl").read_bytes().splitlines()) if line != live_lines[i]
    ]
    assert len(differ) == 3  # the three shortened prompts got summaries of their own; the rest are the live bytes


def test_a_request_that_cannot_be_shortened_enough_has_a_file_of_its_own_and_is_said(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(i, steps=6, output_lines=40) for i in range(3)])
    server = FakeBatchServer()
    padding = json.dumps({"metadata": {"note": "x" * 5000}})  # every body is over 4,096 bytes whatever its prompt
    with FakeServerThread(server=server):
        result = _batch(source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3",
                        "--batch-max-bytes", "4096", "--extra-body", padding)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert server.created() == 3 and [len(f["content"].splitlines()) for f in server.files.values()
                                      if f["purpose"] == "batch"] == [1, 1, 1]  # fmt: skip
    assert result.stderr.count("over --batch-max-bytes") == 1  # once per run, with the counts
    assert "3 requests over --batch-max-bytes (4096): 3 cannot be made to fit: each goes in a file of its own" in (
        result.stderr
    )
