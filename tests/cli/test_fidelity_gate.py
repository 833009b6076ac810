"""`--min-fidelity` and `--reject-unsupported` against a real HTTP server on 127.0.0.1.

The fake endpoint answers the first request for a row with a poor summary and, when the prompt
says what an earlier summary missed, with a summary of exactly those items: the gate must ask
once more, say so in the metrics, and take the failure policy when the retry falls short too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import read_jsonl, run_cli, write_jsonl
from tests.fake_openai_server import FakeServerThread, prompt_text

MISSED_MARKER = "Include what it missed: "
PASSWORD, CLIENT_SECRET = "hunter2isgood77", "Kp3nX9vQ2mL7"  # credentials by the keys they are given to
POOR = {"content": "The assistant looked at some files and ran a script."}


def _row(*, credentials: bool = False) -> dict[str, Any]:
    """A run whose middle calls two tools on three files and hits one error (and with
    `credentials`, logs in with a password and a client secret it uses again at the end)."""
    filler = "\n".join(f"line {i} of a long listing" for i in range(300))

    def call(name: str, **arguments: Any) -> str:
        return f"Working.\n<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"

    def result(name: str, content: str) -> str:
        return f"<tool_response>\n{json.dumps({'name': name, 'content': content})}\n</tool_response>"

    turns = [
        ("system", "You are a coding agent."),
        ("human", "Fix the crash in the report generator."),
        ("gpt", call("bash", command="ls")),
        ("tool", result("bash", filler)),
        ("gpt", call("bash", command="cat src/report.py")),
        ("tool", result("bash", filler)),
        ("gpt", call("read_file", path="src/loader.py")),
        ("tool", result("read_file", filler)),
        ("gpt", call("bash", command="python tools/run_report.py")),
        ("tool", result("bash", "Traceback (most recent call last):\n  x\nKeyError: 'region'")),
        ("gpt", call("bash", command="cat README.md")),
        ("tool", result("bash", filler)),
        ("gpt", "Done."),
        ("human", "Thanks."),
        ("gpt", "You're welcome."),
    ]
    if credentials:
        logins = [
            ("gpt", call("login", user="bob", password=PASSWORD)),
            ("tool", result("login", "logged in as bob")),
            ("gpt", call("http", url="https://db.example.com/v2", client_secret=CLIENT_SECRET)),
            ("tool", result("http", "200 OK")),
        ]
        turns = [*turns[:4], *logins, *turns[4:12], ("gpt", call("login", user="bob", password=PASSWORD)), *turns[12:]]
    return {"id": "gate-0", "conversations": [{"from": role, "value": value} for role, value in turns]}


def _args(base_url: str, *extra: str) -> list[str]:
    return [
        "--target-max-tokens", "1500", "--summary-target-tokens", "300", "--summarizer", "llm",
        "--base-url", base_url, "--model", "gate-model", "--no-cache", "--retry-delay", "0.01",
        "--request-timeout", "5", *extra,
    ]  # fmt: skip


def _fixing(number: int, body: Any) -> Any:
    """Poor first; on a retry, the items the prompt says were missed (and nothing else)."""
    text = prompt_text(body)
    if MISSED_MARKER in text:
        return {"content": "Stated: " + text.split(MISSED_MARKER, 1)[1]}
    return POOR


def _run(
    tmp_path: Path, reply: Any, *extra: str, row: dict[str, Any] | None = None
) -> tuple[Any, list[dict[str, Any]], list[str]]:
    source = write_jsonl(tmp_path / "in.jsonl", [row or _row()])
    out = tmp_path / "out.jsonl"
    with FakeServerThread(faults=reply) as server:
        result = run_cli("compress", str(source), "-o", str(out), *_args(server.base_url, *extra))
        prompts = [prompt_text(request.body) for request in server.requests]
    assert result.returncode == 0, result.stderr
    return result, read_jsonl(tmp_path / "out.metrics.jsonl"), prompts


def test_a_poor_summary_is_asked_for_again_with_what_it_missed_and_the_better_one_is_written(
    tmp_path: Path,
) -> None:
    _, metrics, prompts = _run(tmp_path, _fixing, "--min-fidelity", "0.9")
    row = metrics[0]
    assert len(prompts) == 2
    missed = prompts[1].split(MISSED_MARKER, 1)[1]
    assert all(item in missed for item in ("read_file", "src/report.py", "src/loader.py", "KeyError"))
    assert MISSED_MARKER not in prompts[0]
    assert row["was_compressed"] and row["summarizer"] == "llm" and row["fidelity_retried"] is True
    assert row["fidelity"]["score"] >= 0.9 and row["summary_calls"] == 2
    assert "summary_failed" not in row


def test_without_a_gate_the_poor_summary_is_written_with_its_low_score(tmp_path: Path) -> None:
    _, metrics, prompts = _run(tmp_path, _fixing, "--no-anchor-index")
    row = metrics[0]
    assert len(prompts) == 1 and row["summarizer"] == "llm"
    assert row["fidelity"]["score"] < 0.5 and row["fidelity"]["tools"] == 0.0
    assert row["fidelity"]["items"]["paths"] >= 3 and "fidelity_retried" not in row
    assert "without_index" not in row["fidelity"]


def test_the_gate_judges_the_models_text_not_the_anchor_index_added_to_it(tmp_path: Path) -> None:
    """With the index the written summary states the paths and the error, so it scores higher;
    the model's own text is what the gate asks again for, and what `without_index` shows."""
    _, metrics, prompts = _run(tmp_path / "plain", _fixing)
    row = metrics[0]
    assert len(prompts) == 1 and row["fidelity"]["without_index"] < 0.2 < 0.4 < row["fidelity"]["score"]
    _, gated, prompts = _run(tmp_path / "gated", _fixing, "--min-fidelity", "0.9")
    assert len(prompts) == 2 and gated[0]["fidelity_retried"] is True
    assert all(item in prompts[1].split(MISSED_MARKER, 1)[1] for item in ("read_file", "src/report.py"))


def test_a_retry_that_falls_short_too_takes_the_failure_policy(tmp_path: Path) -> None:
    _, metrics, prompts = _run(tmp_path, POOR, "--min-fidelity", "0.9")
    row = metrics[0]
    assert len(prompts) == 2
    assert row["summarizer"] == "extractive" and row["summary_failed"] is True and row["fidelity_retried"] is True
    assert "fidelity" in row["last_error"] and "below 0.9" in row["last_error"] and "asked twice" in row["last_error"]
    assert row["fidelity"]["score"] >= 0.9  # the extractive fallback's own summary, scored
    assert (row["summary_calls"], row["summary_errors"]) == (2, 0), "the fallback reports both failed attempts"

    (tmp_path / "keep").mkdir()
    _, kept, _ = _run(tmp_path / "keep", POOR, "--min-fidelity", "0.9", "--on-summary-failure", "keep")
    assert not kept[0]["was_compressed"] and kept[0]["summary_failed"] is True
    assert kept[0]["reason"].startswith("summary failed: fidelity") and kept[0]["fidelity_retried"] is True
    assert kept[0]["summary_calls"] == 2


def test_a_retry_that_fails_at_the_endpoint_counts_the_first_attempt_too(tmp_path: Path) -> None:
    # The poor first summary is asked for again; the retry gets a 400: two requests sent, one failed.
    _, metrics, prompts = _run(tmp_path, [POOR, "400"], "--min-fidelity", "0.9")
    [row] = metrics
    assert len(prompts) == 2 and row["summarizer"] == "extractive" and row["summary_failed"] is True
    assert (row["summary_calls"], row["summary_errors"]) == (2, 1)
    report = json.loads((tmp_path / "out.report.json").read_text())
    assert report["summaries"]["calls"] == report["summaries"]["endpoint"]["requests"] == 2
    assert report["summaries"]["errors"] == 1


def test_reject_unsupported_refuses_a_summary_that_invents_a_file(tmp_path: Path) -> None:
    def inventing(number: int, body: Any) -> Any:
        if MISSED_MARKER in prompt_text(body):
            return {"content": "The assistant read src/report.py and src/loader.py with bash and read_file."}
        return {"content": "The assistant edited src/invented_module.py with bash and read_file."}

    _, metrics, prompts = _run(tmp_path, inventing, "--reject-unsupported")
    row = metrics[0]
    assert len(prompts) == 2 and "src/invented_module.py" in prompts[1].split(MISSED_MARKER, 1)[1]
    assert row["summarizer"] == "llm" and row["fidelity_retried"] is True and row["unsupported"] == []

    (tmp_path / "plain").mkdir()
    _, plain, _ = _run(tmp_path / "plain", inventing)
    assert plain[0]["unsupported"] == ["src/invented_module.py"]


def test_a_credential_by_its_key_is_in_no_prompt_no_retry_no_index_and_no_metric(tmp_path: Path) -> None:
    """A password and a client secret given as call arguments are words on their own: only the
    key says what they are. The first prompt, the retry's list of what was missed, the anchor
    index added to the summary and the metrics' missed values must all go without them (the
    kept turn that uses the password again is the input's own, written as it was)."""
    _, metrics, prompts = _run(tmp_path, _fixing, "--min-fidelity", "0.9", row=_row(credentials=True))
    [row] = metrics
    assert len(prompts) == 2 and MISSED_MARKER in prompts[1] and row["fidelity_retried"] is True
    assert not any(secret in prompt for prompt in prompts for secret in (PASSWORD, CLIENT_SECRET))
    written = read_jsonl(tmp_path / "out.jsonl")[0]["conversations"]
    summary = next(turn["value"] for turn in written if turn["value"].startswith("[CONTEXT SUMMARY]"))
    assert "https://db.example.com/v2" in summary  # the index lists the region's values
    assert PASSWORD not in summary and CLIENT_SECRET not in summary
    assert sum(PASSWORD in turn["value"] for turn in written) == 1  # the kept turn, as it was
    outputs = [path.read_text() for path in tmp_path.glob("out.*") if path.name != "out.jsonl"]
    assert outputs and not any(secret in text for text in outputs for secret in (PASSWORD, CLIENT_SECRET))
