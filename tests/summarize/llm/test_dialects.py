"""The dialects, pure: the OpenAI key and batch line exactly as before dialects existed, Anthropic's
body, key, reply and batch lines, and where `--api` takes its endpoint and key from."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import pytest

from trajectory_compressor.run.batch.state import BatchState, Submission
from trajectory_compressor.settings import ConfigError, LLMConfig, RunConfig
from trajectory_compressor.summarize.choose import resolve_endpoint
from trajectory_compressor.summarize.llm.credentials import Credentials
from trajectory_compressor.summarize.llm.dialects import dialect_for
from trajectory_compressor.summarize.llm.dialects.anthropic import ANTHROPIC_CUSTOM_ID, AnthropicDialect
from trajectory_compressor.summarize.llm.request import RequestBuilder
from trajectory_compressor.types import SummaryRequest, Turn

REQUEST = SummaryRequest(
    turns=(
        Turn("human", "Fix the failing test in src/app.py."),
        Turn(
            "gpt", 'I will read it. <tool_call>{"name": "read_file", "arguments": {"path": "src/app.py"}}</tool_call>'
        ),
        Turn("tool", "<tool_response>def main():\n    return 42\n</tool_response>"),
    ),
    budget_tokens=300,
    label="pinned:1",
)


def _config(**values: Any) -> LLMConfig:
    base = {"base_url": "http://127.0.0.1:1/v1", "model": "gpt-4.1-mini", "temperature": 0.3, "extra_body": {"seed": 7}}
    return LLMConfig(**{**base, **values})


def test_the_openai_cache_key_and_batch_line_are_those_of_the_code_before_dialects() -> None:
    """Computed by main's `request.chat_request` / `batch_line` before the seam: a changed key would
    make every user pay again for the summaries their cache holds."""
    builder = RequestBuilder(_config())
    chat = builder.build(REQUEST)
    assert chat.key == "dae0850d6b06e3c3c649a94d07d5aec9293b7ad4d3c0fa0c1f10fc3df46161c2"
    line = orjson.dumps(builder.batch_line(chat))
    assert hashlib.sha256(line).hexdigest() == "306b93c71e39a52cef5a1594893305326d7b15685ced2c40ab582dead1f25cd2"


def test_anthropic_s_body_has_a_top_level_system_and_max_tokens_and_a_key_of_its_own() -> None:
    openai = RequestBuilder(_config()).build(REQUEST)
    anthropic = RequestBuilder(_config(api="anthropic")).build(REQUEST)
    assert anthropic.messages == openai.messages  # the same prompt...
    assert anthropic.key != openai.key  # ...to another provider is another request
    body = anthropic.body
    assert body["system"] == openai.messages[0]["content"] and body["messages"] == openai.messages[1:]
    assert body["max_tokens"] == 600 and body["model"] == "gpt-4.1-mini" and body["seed"] == 7
    line = RequestBuilder(_config(api="anthropic")).batch_line(anthropic)
    assert list(line) == ["custom_id", "params"] and line["params"] == body
    assert ANTHROPIC_CUSTOM_ID.match(line["custom_id"])  # the cache key: 64 of [0-9a-f]


def test_a_custom_id_anthropic_would_refuse_is_never_written() -> None:
    dialect = AnthropicDialect(_config(api="anthropic"))
    for key in ("a" * 65, "key with spaces", ""):
        with pytest.raises(ValueError):
            dialect.batch_line(key, {})


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ({"content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "A summary."}],
          "stop_reason": "end_turn", "usage": {"input_tokens": 120, "output_tokens": 7}}, ("A summary.", None, 120, 7)),
        ({"content": [{"type": "text", "text": "cut"}], "stop_reason": "max_tokens",
          "usage": {"input_tokens": 5, "output_tokens": 9}}, (None, "cut", 5, 9)),
        ({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, (None, "missing", 0, 0)),
        ({"content": [], "usage": {"input_tokens": True, "output_tokens": "3"}}, (None, "missing", 0, 0)),
    ],
)  # fmt: skip
def test_an_anthropic_reply_is_read_for_its_text_its_cut_and_its_tokens(reply: dict[str, Any], expected: Any) -> None:
    read = AnthropicDialect(_config(api="anthropic")).read_reply(reply)
    text, verdict, prompt, completion = expected
    assert (read.content, read.prompt_tokens, read.completion_tokens) == (text, prompt, completion)
    assert (read.cut is not None) == (verdict == "cut") and (read.missing is not None) == (verdict == "missing")


KEY = "a" * 64


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ({"custom_id": KEY, "result": {"type": "succeeded", "message": {"content": []}}}, (200, None)),
        ({"custom_id": KEY, "result": {"type": "errored", "error": {"type": "error", "error": {
            "type": "invalid_request_error", "message": "max_tokens: too large"}}}},
         (None, "invalid_request_error: max_tokens: too large")),
        ({"custom_id": KEY, "result": {"type": "canceled"}},
         (None, "request canceled: the batch was cancelled before it ran")),
        ({"custom_id": KEY, "result": {"type": "expired"}}, (None, "request expired: the batch ended before it ran")),
        ({"custom_id": KEY, "result": {"type": "mystery"}}, "neither"),
        ({"custom_id": "my-id-1", "result": {"type": "canceled"}}, "no custom_id"),
        ({"custom_id": KEY, "result": {"type": "succeeded"}}, (None, "a succeeded result without a message")),
    ],
)  # fmt: skip
def test_an_anthropic_result_line_is_an_answer_or_one_line_saying_why_not(line: dict[str, Any], expected: Any) -> None:
    answer = AnthropicDialect(_config(api="anthropic")).read_batch_line(3, line)
    if isinstance(expected, str):
        assert isinstance(answer, str) and expected in answer
        return
    assert not isinstance(answer, str)
    status, error = expected
    assert (answer.line, answer.custom_id, answer.error) == (3, KEY, error)
    assert answer.status == status and (answer.body is not None) == (status == 200 and error is None)


def test_api_anthropic_takes_anthropic_s_endpoint_and_key_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai.example/v1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env-123")
    monkeypatch.setenv("MY_KEY", "sk-mine-456789")
    anthropic = resolve_endpoint(RunConfig(llm=LLMConfig(api="anthropic", model="claude")))
    assert anthropic.llm.base_url == "https://api.anthropic.com"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://gateway.example/anthropic")
    assert (
        resolve_endpoint(RunConfig(llm=LLMConfig(api="anthropic"))).llm.base_url == "http://gateway.example/anthropic"
    )
    assert resolve_endpoint(RunConfig()).llm.base_url == "http://openai.example/v1"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert resolve_endpoint(RunConfig()).llm.base_url is None  # OpenAI-compatible servers have no default
    config = anthropic.llm
    headers = Credentials(config, dialect_for(config)).headers()
    assert headers == {"anthropic-version": "2023-06-01", "x-api-key": "sk-ant-from-env-123"}
    mine = LLMConfig(api="anthropic", base_url="http://h", model="m", api_key_env="MY_KEY")
    assert Credentials(mine, dialect_for(mine)).headers()["x-api-key"] == "sk-mine-456789"
    with pytest.raises(ConfigError, match="api: must be one of openai, anthropic, gemini"):
        RunConfig(llm=LLMConfig(api="mistral")).validate()  # type: ignore[arg-type]


def test_api_gemini_takes_google_s_endpoint_and_key_and_sends_the_key_in_its_header_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GEMINI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai.example/v1")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-from-env-123")
    gemini = resolve_endpoint(RunConfig(llm=LLMConfig(api="gemini", model="gemini-2.5-flash"))).llm
    assert gemini.base_url == "https://generativelanguage.googleapis.com/v1beta"
    monkeypatch.setenv("GEMINI_BASE_URL", "http://gateway.example/v1beta")
    assert resolve_endpoint(RunConfig(llm=LLMConfig(api="gemini"))).llm.base_url == "http://gateway.example/v1beta"
    assert Credentials(gemini, dialect_for(gemini)).headers() == {"x-goog-api-key": "AIza-from-env-123"}
    openai = RequestBuilder(_config()).build(REQUEST)
    chat = RequestBuilder(_config(api="gemini")).build(REQUEST)
    assert chat.messages == openai.messages and chat.key != openai.key  # another provider, another key
    assert chat.body["systemInstruction"] == {"parts": [{"text": openai.messages[0]["content"]}]}
    assert chat.body["contents"] == [{"role": "user", "parts": [{"text": openai.messages[1]["content"]}]}]
    assert chat.body["generationConfig"] == {"maxOutputTokens": 600, "temperature": 0.3} and chat.body["seed"] == 7
    with pytest.raises(ValueError, match="gemini dialect writes and reads no batch lines"):
        RequestBuilder(_config(api="gemini")).batch_line(chat)


def test_a_batch_record_from_before_dialects_loads_with_its_files_as_downloads(tmp_path: Any) -> None:
    old = {"name": "round-01-part-0001.jsonl", "round": 1, "requests": 3, "bytes": 900, "sha256": "a" * 64,
           "nonce": "n1", "written_at": 1.0, "submitted_at": 2.0, "file_id": "file-1", "batch_id": "batch_1",
           "status": "completed", "counts": {"total": 3, "completed": 2, "failed": 1}, "output_file_id": "file-2",
           "error_file_id": "file-3", "error": None, "stored": False}  # fmt: skip
    body = {"version": 1, "submissions": [old], "failures": {}, "answers": 0, "prompt_tokens": 0,
            "completion_tokens": 0}  # fmt: skip
    from trajectory_compressor.run.batch.state import STATE_NAME, _checksum

    (tmp_path / STATE_NAME).write_text(orjson.dumps({**body, "checksum": _checksum(body)}).decode())
    state = BatchState.load(tmp_path)
    assert state.api == "openai"
    [submission] = state.submissions
    assert submission.downloads == {"output": "file-2", "errors": "file-3"} and submission.done == 3
    assert isinstance(submission, Submission) and submission.create_sent_at == 0.0


def test_every_row_s_classes_speak_what_the_row_declares() -> None:
    """A row's capabilities are what its classes implement: the live protocol for every provider,
    batch lines for a row with a batch API or offline files, `BatchCalls` for a batch API."""
    from trajectory_compressor.summarize.llm.dialects import DIALECTS, _load
    from trajectory_compressor.summarize.llm.dialects.base import BatchDialect, Dialect

    live = [name for name in Dialect.__dict__ if not name.startswith("_")]
    for api, row in DIALECTS.items():
        dialect = dialect_for(_config(api=api))
        assert all(hasattr(dialect, name) for name in live), api
        assert isinstance(dialect, BatchDialect) == row.batch_lines, api
        if row.batch is not None:
            batches = _load(row.batch)
            assert all(hasattr(batches, name) for name in ("create_batch", "get_batch", "cancel_batch", "download"))


def test_a_command_asks_the_row_and_refuses_what_it_lacks_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """`require` reads the row, never the provider's name: a row stripped of its capabilities is
    refused, naming the provider, what it lacks, who has it, and what to do instead."""
    from dataclasses import replace

    from trajectory_compressor.summarize.llm.dialects import DIALECTS, batch_calls_for, require

    openai = _config()
    for needer in ("--batch", "--responses", "requests"):
        require(openai, needer)  # OpenAI has all three
    with pytest.raises(ConfigError) as refused:
        require(_config(api="anthropic"), "requests")
    assert str(refused.value) == (
        "requests writes offline batch files, which --api anthropic does not have (openai has them); "
        "use compress --batch, which drives anthropic's batch API whole"
    )
    monkeypatch.setitem(DIALECTS, "openai", replace(DIALECTS["openai"], batch=None, offline_files=False))
    with pytest.raises(ConfigError, match=r"^--batch needs a batch API, which --api openai does not have "
                       r"\(anthropic has one\); drop --batch: compress asks openai live$"):  # fmt: skip
        batch_calls_for(openai)
    with pytest.raises(ConfigError, match=r"^--responses reads offline batch files, which --api openai does not have "
                       r"\(no provider has them\); drop --responses: compress asks openai live$"):  # fmt: skip
        require(openai, "--responses")
