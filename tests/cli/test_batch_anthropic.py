"""`compress --batch --api anthropic`: Anthropic's Message Batches API, against its fake on 127.0.0.1.

Every promise of the OpenAI batch path (`test_batch_api.py`, whose kill-at-every-step test runs
for Anthropic too): the live run's bytes with no live call at the batch price, failed and expired
requests to the fallback, a lost create never paid twice, hostile result lines reported and
harmless, `--no-wait` / `batches status|cancel` on the record's API, the key in no file and no
message, and none sent to a host other than the endpoint.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.cli.test_batch_api import SECRET, Live, _flags, _paid_once, _same_as_live, live
from tests.conftest import read_jsonl, run_cli
from tests.fake_anthropic_api import FakeAnthropicBatchServer, at
from tests.fake_openai_server import FakeServerThread
from tests.providers import no_secret_anywhere

__all__ = ["live"]  # the module fixture: the live run's outputs (the fakes of both providers answer alike)

ENV = {"ANTHROPIC_API_KEY": SECRET}


def _batch(source: Path, out: Path, base_url: str, cache: Path, *extra: str):  # type: ignore[no-untyped-def]
    flags = _flags(base_url, cache, "--batch", "--api", "anthropic", *extra)
    return run_cli("compress", str(source), "-o", str(out), *flags, env=ENV)


def test_a_message_batch_run_writes_the_live_bytes_with_no_live_call_at_the_batch_price(
    tmp_path: Path, live: Live
) -> None:
    server = FakeAnthropicBatchServer()
    with FakeServerThread(server=server):
        result = _batch(live.source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3",
                        "--price-in", "3", "--price-out", "15")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert len(server.requests) == 0 and server.created() == 1 and len(server.batch_lines()) == 6
    _paid_once(server)
    for line in server.batch_lines():
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", line["custom_id"])  # Anthropic's rule, met by the cache key
        # The budget the anchor index leaves (400 less the index), as a live request asks it.
        assert isinstance(line["params"]["system"], str) and 0 < line["params"]["max_tokens"] < 400
    assert {auth for _, _, auth in server.api_calls} == {SECRET}  # x-api-key on every call
    assert [path for method, path, _ in server.api_calls if method == "POST"] == ["/v1/messages/batches"]
    _same_as_live(tmp_path / "out", live)
    endpoint = json.loads((tmp_path / "out" / "x.report.json").read_text())["summaries"]["endpoint"]
    assert endpoint["requests"] == 0 and endpoint["cache_hits"] == 6 and endpoint["batches_submitted"] == 1
    full_price = (endpoint["batch_prompt_tokens"] * 3 + endpoint["batch_completion_tokens"] * 15) / 1e6
    assert endpoint["batch_prompt_tokens"] > 0 and endpoint["cost_batch_usd"] == pytest.approx(full_price / 2, abs=1e-6)
    assert not (tmp_path / "out" / ".x.jsonl.batches").exists()
    no_secret_anywhere(SECRET, tmp_path, result.stderr, result.stdout)


@pytest.mark.parametrize("fallback", ["batch", "live"])
def test_errored_cut_and_expired_requests_go_to_the_fallback(tmp_path: Path, live: Live, fallback: str) -> None:
    def faults(batch: int, index: int, line: dict) -> str | None:  # the first batch errors one request, cuts one
        return {0: "529", 1: "length"}.get(index) if batch == 1 else None

    server = FakeAnthropicBatchServer(line_faults=faults, outcomes=["expired"])
    with FakeServerThread(server=server):
        result = _batch(live.source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3",
                        "--batch-fallback", fallback)  # fmt: skip
    assert result.returncode == 0, result.stderr
    if fallback == "batch":  # 6 requests: 1 errored, 1 cut, 3 expired (the second half), 1 answered
        assert server.created() == 2 and len(server.requests) == 0 and len(server.batch_lines()) == 6 + 5
    else:
        assert server.created() == 1 and len(server.requests) == 5
    assert "batch msgbatch_0001 expired: 1 answers stored, 5 requests without an answer" in result.stderr
    assert "round-01-part-0001.results.jsonl:1: no usable answer: overloaded_error: fake line error 529" in (
        result.stderr
    )
    assert "reply was cut at max_tokens (stop_reason=max_tokens)" in result.stderr
    assert "request expired: the batch ended before it ran" in result.stderr
    _same_as_live(tmp_path / "out", live)


def test_a_request_errored_in_every_batch_takes_the_failure_policy_without_a_live_call(
    tmp_path: Path, live: Live
) -> None:
    server = FakeAnthropicBatchServer(line_faults=lambda batch, index, line: "500" if index == 0 else None)
    with FakeServerThread(server=server):
        result = _batch(live.source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3")
    assert result.returncode == 0, result.stderr
    assert server.created() == 2 and len(server.requests) == 0
    metrics = read_jsonl(tmp_path / "out" / "x.metrics.jsonl")
    failed = [m for m in metrics if m.get("last_error")]
    assert len(failed) == 1 and failed[0]["summarizer"] == "extractive"
    assert "no answer from the batch API: api_error: fake line error 500" in failed[0]["last_error"]
    assert [m["index"] for m in metrics] == list(range(12))


@pytest.mark.parametrize(("faults", "posts"), [(["lost"], 1), (["429", "lost", "500"], 2), (["500", "lost"], 2)])
def test_a_lost_create_reply_is_found_and_never_makes_a_second_batch(
    tmp_path: Path, live: Live, faults: list[str], posts: int
) -> None:
    server = FakeAnthropicBatchServer(create_faults=list(faults), page_size=1)
    counts = {"processing": 0, "succeeded": 6, "errored": 0, "canceled": 0, "expired": 0}
    other = {"id": "msgbatch_other", "type": "message_batch", "processing_status": "ended",
             "created_at": at(time.time()), "request_counts": counts}  # fmt: skip
    server.batches["msgbatch_other"] = other  # another run's batch of the same size, made before ours
    with FakeServerThread(server=server):
        result = _batch(live.source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3")
    assert result.returncode == 0, result.stderr
    assert server.created() == 2  # the other run's, and ours: one
    assert server.calls("POST", "/v1/messages/batches") == posts  # the lost one's batch is found, not sent again
    _paid_once(server)
    _same_as_live(tmp_path / "out", live)


def test_without_a_list_the_create_goes_ahead_and_says_once_a_lost_reply_cannot_be_checked(
    tmp_path: Path, live: Live
) -> None:
    server = FakeAnthropicBatchServer(lists="404", create_faults=["500"])
    with FakeServerThread(server=server):
        result = _batch(live.source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3")
    assert result.returncode == 0, result.stderr
    assert server.created() == 1 and result.stderr.count("a lost reply to an upload or a batch create cannot") == 1
    _same_as_live(tmp_path / "out", live)


def test_hostile_result_lines_are_reported_and_change_nothing(tmp_path: Path, live: Live) -> None:
    deep = b'{"custom_id": "' + b"a" * 64 + b'", "result": ' + b"[" * 3000 + b"]" * 3000 + b"}"
    foreign = json.dumps({"custom_id": "f" * 64, "result": {"type": "succeeded", "message": {"content": []}}})
    leak = json.dumps({"custom_id": "e" * 64, "result": {"type": "errored", "error": {"type": "error", "error": {
        "type": "api_error", "message": f"key {SECRET} refused"}}}})  # fmt: skip
    unknown = b'{"custom_id": "' + b"b" * 64 + b'", "result": {"type": "exploded"}}'
    hostile = [deep, b'{"custom_id": "\\ud800", "result": null}', b"\xff\xfe not utf-8", foreign.encode(),
               leak.encode(), b"[]", unknown]  # fmt: skip

    def quoting(batch: int, index: int, line: dict) -> str | None:  # one error quotes the key; its follow-up answers
        return "echo_auth" if (batch, index) == (1, 0) else None

    server = FakeAnthropicBatchServer(output_extra=hostile, line_faults=quoting)
    with FakeServerThread(server=server):
        result = _batch(live.source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3")
    assert result.returncode == 0, result.stderr
    assert server.created() == 2 and len(server.requests) == 0
    assert "no usable answer: permission_error: refused [REDACTED]" in result.stderr
    name = "round-01-part-0001.results.jsonl"
    for line in range(7, 14):  # after the 6 results, each hostile line, reported where it is
        assert f"warning: {name}:{line}: " in result.stderr, line
    assert "answers a request this batch did not ask" in result.stderr
    _same_as_live(tmp_path / "out", live)
    no_secret_anywhere(SECRET, tmp_path, result.stderr)


def test_a_ten_megabyte_result_is_not_stored_and_its_request_goes_to_the_fallback(tmp_path: Path, live: Live) -> None:
    server = FakeAnthropicBatchServer(line_faults=lambda batch, index, line: "huge:10000000" if batch == 1 else None)
    with FakeServerThread(server=server):
        result = _batch(live.source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("answer line over") == 6 and server.created() == 2
    assert "x" * 1000 not in (tmp_path / "out" / "x.jsonl").read_text()
    _same_as_live(tmp_path / "out", live)


def test_results_on_another_host_are_read_from_the_endpoint_the_key_goes_nowhere_else(
    tmp_path: Path, live: Live
) -> None:
    server = FakeAnthropicBatchServer(results_host="http://127.0.0.1:9")  # a closed port: following it would fail
    with FakeServerThread(server=server):
        result = _batch(live.source, tmp_path / "out" / "x.jsonl", server.base_url, tmp_path / "c.sqlite3")
    assert result.returncode == 0, result.stderr
    assert server.calls("GET", "/v1/messages/batches/msgbatch_0001/results") == 1
    _same_as_live(tmp_path / "out", live)


def test_no_wait_status_and_cancel_follow_the_api_the_record_names(tmp_path: Path, live: Live) -> None:
    out = tmp_path / "out" / "x.jsonl"
    server = FakeAnthropicBatchServer(hold=True)
    with FakeServerThread(server=server):
        pending = _batch(live.source, out, server.base_url, tmp_path / "c.sqlite3", "--no-wait")
        assert pending.returncode == 75, pending.stderr
        status = run_cli("batches", "status", str(out), "--base-url", server.base_url, "--json", env=ENV)
        assert status.returncode == 0, status.stderr
        [run] = json.loads(status.stdout)
        assert run["batches"][0]["status"] == "in_progress" and run["batches"][0]["batch_id"] == "msgbatch_0001"
        assert run["batches"][0]["request_counts"]["processing"] == 6
        openai = _flags(server.base_url, tmp_path / "c.sqlite3", "--batch")
        wrong = run_cli("compress", str(live.source), "-o", str(out), *openai, env={"OPENAI_API_KEY": "k-123456"})
        assert (
            wrong.returncode == 2 and "went to the anthropic API" in wrong.stderr and "--api anthropic" in wrong.stderr
        )
        cancel = run_cli("batches", "cancel", str(out), "--base-url", server.base_url, env=ENV)
        assert cancel.returncode == 0, cancel.stderr
        assert "asked to cancel 1 batch(es): msgbatch_0001" in cancel.stderr
        assert server.calls("POST", "/v1/messages/batches/msgbatch_0001/cancel") == 1
        result = _batch(live.source, out, server.base_url, tmp_path / "c.sqlite3", "--batch-fallback", "live",
                        "--batch-resubmit-cancelled")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "batch msgbatch_0001 cancelled: 3 answers stored, 3 requests without an answer" in result.stderr
    assert len(server.requests) == 3 and server.created() == 1
    _same_as_live(out.parent, live)
    no_secret_anywhere(SECRET, tmp_path, pending.stderr, status.stdout, cancel.stderr, result.stderr)
