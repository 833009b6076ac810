"""One agent run, end to end, for the tests of credentials a kept head makes known: its prompts
(the `requests` file) and, in both modes, its summaries and metrics, as a user finds them."""

from __future__ import annotations

from pathlib import Path

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
    requests = tmp_path / "requests.jsonl"
    result = run_cli("requests", str(source), "-o", str(requests), "--model", "m", *_BUDGET)
    assert result.returncode == 0, result.stderr
    prompts = "\n".join(m["content"] for line in read_jsonl(requests) for m in line["body"]["messages"])
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
