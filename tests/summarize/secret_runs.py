"""One agent run, end to end, for the tests of credentials a kept head makes known: its prompts
(the `requests` file) and, in both modes, its summaries and metrics, as a user finds them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import read_jsonl, run_cli, write_jsonl

_FILLER = "looking at the deployment output " * 30
_BUDGET = ["--target-max-tokens", "1500", "--summary-target-tokens", "300", "--protect-last-n-turns", "2"]


def texts_of_a_run(
    tmp_path: Path, head_call: str, head_result: str, step: str, last: str
) -> tuple[str, dict[str, str]]:
    """The prompts of a run whose kept head makes `head_call` (answered `head_result`), whose eight
    summarized steps each say `step` and whose last turn says `last`; and, for single rows and
    `--windows`, the summaries (`"summaries …"`) and the metrics (`"metrics …"`) it writes."""
    turns = [
        {"from": "system", "value": "You are an agent."},
        {"from": "human", "value": "Deploy it."},
        {"from": "gpt", "value": head_call},
        {"from": "tool", "value": head_result},
    ]
    for index in range(8):
        call = f'<tool_call>{{"name": "terminal", "arguments": {{"command": "deploy --id {index}"}}}}</tool_call>'
        turns += [
            {"from": "gpt", "value": f"Step {index}: {step}\n{_FILLER}\n{call}"},
            {"from": "tool", "value": f'<tool_response>{{"content": "ok {index}\\n{_FILLER}"}}</tool_response>'},
        ]
    turns.append({"from": "gpt", "value": last})
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": "r0", "conversations": turns}])
    prompts = prompts_of(tmp_path, source)
    assert "Step 3" in prompts
    written: dict[str, str] = {}
    for mode in ([], ["--windows"]):
        out = tmp_path / f"out{len(mode)}" / "x.jsonl"
        result = run_cli("compress", str(source), "-o", str(out), "--summarizer", "extractive", "-q", *_BUDGET, *mode)
        assert result.returncode == 0, result.stderr
        turns_written = [turn["value"] for row in read_jsonl(out) for turn in row["conversations"]]
        summaries = [value for value in turns_written if value.startswith("[CONTEXT SUMMARY]")]
        assert summaries, mode
        written[f"summaries {' '.join(mode)}"] = "\n".join(summaries)
        written[f"metrics {' '.join(mode)}"] = out.with_suffix(".metrics.jsonl").read_text()
    return prompts, written


def prompts_of(tmp_path: Path, source: Path) -> str:
    """Every prompt message the `requests` command writes for `source` at a budget that summarizes
    the middle of a run of eight steps and keeps its last two turns."""
    requests = tmp_path / "requests.jsonl"
    result = run_cli("requests", str(source), "-o", str(requests), "--model", "m", *_BUDGET)
    assert result.returncode == 0, result.stderr
    return "\n".join(m["content"] for line in read_jsonl(requests) for m in line["body"]["messages"])


def messages_run(steps: int = 8) -> list[dict[str, Any]]:
    """A messages input's run: a system and a user message, then `steps` assistant calls (ids
    `c0`...), each answered by a tool message of filler output."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Deploy it."},
    ]
    for step in range(steps):
        call = {"id": f"c{step}", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": f"Step {step}.\n{_FILLER}", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{step}", "content": f"ok {step}\n{_FILLER}"},
        ]
    return messages
