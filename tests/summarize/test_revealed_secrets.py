"""A credential an agent read out of its file or variable (`cat /run/secrets/api_key`, `printenv
DB_PASSWORD`, `echo $API_TOKEN`): its tool result is the bare value, with no name or prefix beside
it, and it reached the LLM prompt and the extractive summary (trust pass, round 7)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.conftest import read_jsonl, run_cli, write_jsonl
from trajectory_compressor.summarize.anchor_index import indexed_request
from trajectory_compressor.summarize.extractive import ExtractiveSummarizer
from trajectory_compressor.summarize.llm.prompt import build_messages
from trajectory_compressor.summarize.masking import split_secrets_masked
from trajectory_compressor.summarize.redact import REDACTED
from trajectory_compressor.summarize.revealed_secrets import masked_revealed
from trajectory_compressor.types import SummaryRequest, Turn

VALUE = "Zq8wXc7vBn6mAs5dFg4hJk3lPo2iUy1t"


def _call(command: str, name: str = "terminal") -> str:
    return f"Checking.\n<tool_call>\n{json.dumps({'name': name, 'arguments': {'command': command}})}\n</tool_call>"


def _result(content: str, name: str = "terminal") -> str:
    return f"<tool_response>\n{json.dumps({'name': name, 'content': content})}\n</tool_response>"


def _masked(*turns: tuple[str, str]) -> list[str]:
    return masked_revealed([text for _, text in turns], [role for role, _ in turns])


def test_the_output_of_reading_a_credentials_file_or_variable_is_masked_everywhere_in_the_region() -> None:
    for command in [
        "cat /run/secrets/api_key",
        "head -n 1 ~/.vault-token",
        "sudo cat /etc/app/db_password.txt",
        "printenv DB_PASSWORD",
        'echo "${GITHUB_TOKEN}"',
        "python -c 'import os; print(os.environ[\"API_KEY\"])'",
    ]:
        later = f"Using it: the key {VALUE} works."
        masked = _masked(("gpt", _call(command)), ("tool", _result(VALUE + "\n")), ("gpt", later))
        assert VALUE not in "".join(masked), command
        assert masked[2] == f"Using it: the key {REDACTED} works.", command
        assert masked[0] == _call(command)


def test_an_editor_views_a_token_file_and_a_shell_observation_turn() -> None:
    arguments = {"command": "view", "path": "/w/secrets/hf_token"}
    view = f"<tool_call>\n{json.dumps({'name': 'str_replace_editor', 'arguments': arguments})}\n</tool_call>"
    assert _masked(("gpt", view), ("tool", _result(VALUE)))[1] == _result(REDACTED)
    observed = _masked(("gpt", "Let me read it.\n```bash\ncat ~/.vault-token\n```"), ("human", VALUE))
    assert observed[1] == REDACTED


def test_only_the_revealing_calls_result_and_only_one_word_lines_are_taken() -> None:
    two_calls = (
        '<tool_call>\n{"name": "terminal", "arguments": {"command": "git rev-parse HEAD"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "terminal", "arguments": {"command": "cat /run/secrets/api_key"}}\n</tool_call>'
    )
    commit = "4f9c2d1e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e"
    masked = _masked(
        ("gpt", two_calls), ("tool", _result(commit)), ("tool", _result(VALUE)), ("gpt", f"{commit} {VALUE}")
    )
    assert commit in masked[1] and commit in masked[3] and VALUE not in "".join(masked)
    # Not a credential's file or variable, a listing, a short word, a sentence: nothing taken.
    listing = "\n".join(f"tokenword{n:04d}" for n in range(50))
    for command, output in [
        ("cat README.md", VALUE),
        ("cat /etc/passwd", VALUE),
        ("echo $PATH", VALUE),
        ("cat vocab_tokens.txt", listing),
        ("cat /run/secrets/api_key", "abc123"),
        ("cat /run/secrets/api_key", "No such file or directory"),
    ]:
        turns = (("gpt", _call(command)), ("tool", _result(output)), ("gpt", f"{VALUE} tokenword0001"))
        assert _masked(*turns) == [text for _, text in turns], command


def test_the_prompt_and_the_extractive_summary_show_no_revealed_value(counter) -> None:
    filler = "looking at the deployment output " * 20
    turns = (
        Turn("gpt", f"Step 1.\n{filler}\n" + _call("cat /run/secrets/api_key")),
        Turn("tool", _result(VALUE)),
        Turn("gpt", f"The key is {VALUE}; next, the deploy.\n{filler}\n" + _call(f"deploy --key-file k --id {VALUE}")),
        Turn("tool", _result(f"deployed with {VALUE}\n{filler}")),
        Turn("gpt", f"Done.\n{filler}"),
    )
    request = SummaryRequest(turns=turns, budget_tokens=300)
    assert not _leaked_token_value("\n".join(turn.value for turn in split_secrets_masked(request).turns))
    asked, _ = indexed_request(request, counter.count, enabled=True, redact=True)
    prompt = "\n".join(message["content"] for message in build_messages(asked))
    assert "/run/secrets/api_key" in prompt and not _leaked_token_value(prompt)
    summary = asyncio.run(ExtractiveSummarizer(counter).summarize(request)).text
    assert not _leaked_token_value(summary), summary


def _leaked_token_value(text: str) -> bool:
    """Whether any 8 characters of the value show in `text` (a clipped field shows a piece)."""
    return any(VALUE[i : i + 8] in text for i in range(len(VALUE) - 7))


def test_a_value_the_head_read_is_masked_where_the_region_repeats_it(tmp_path: Path) -> None:
    """The head (kept verbatim) reads the key; the summarized turns use it bare. The region alone
    has no revealing call: the turns before it come with the request (`SummaryRequest.revealed`)."""
    filler = "looking at the deployment output " * 30
    turns = [
        {"from": "system", "value": "You are an agent."},
        {"from": "human", "value": "Deploy it."},
        {"from": "gpt", "value": _call("cat /run/secrets/api_key")},
        {"from": "tool", "value": _result(VALUE)},
    ]
    for step in range(8):
        turns += [
            {"from": "gpt", "value": f"Step {step}: the key {VALUE} again.\n{filler}\n" + _call(f"deploy --id {step}")},
            {"from": "tool", "value": _result(f"ok {step}\n{filler}")},
        ]
    turns.append({"from": "gpt", "value": "Done."})
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": "r0", "conversations": turns}])
    budget = ["--target-max-tokens", "1500", "--summary-target-tokens", "300", "--protect-last-n-turns", "2"]
    requests = tmp_path / "requests.jsonl"
    result = run_cli("requests", str(source), "-o", str(requests), "--model", "m", *budget)
    assert result.returncode == 0, result.stderr
    prompts = "\n".join(m["content"] for line in read_jsonl(requests) for m in line["body"]["messages"])
    assert "Step 3" in prompts and not _leaked_token_value(prompts)
    for mode in ([], ["--windows"]):
        out = tmp_path / f"out{len(mode)}" / "x.jsonl"
        result = run_cli("compress", str(source), "-o", str(out), "--summarizer", "extractive", "-q", *budget, *mode)
        assert result.returncode == 0, result.stderr
        rows = read_jsonl(out)
        summaries = [
            t["value"] for row in rows for t in row["conversations"] if t["value"].startswith("[CONTEXT SUMMARY]")
        ]
        assert summaries and not _leaked_token_value("\n".join(summaries)), (mode, summaries)
