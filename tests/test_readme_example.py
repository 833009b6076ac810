"""The README's example ("An example") is what the tool does: its command, run on the row it shows
(`sample_data/run-17.jsonl`), writes the record it shows, and the token counts it quotes are the
metrics'. The README shows two long tool results cut at `…`; the row's values begin with them.

A README example nobody runs drifts (it once showed `"tools": null` after hf-chat had begun to
write `"[]"`); a newcomer copies it and finds another record.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from tests.conftest import read_jsonl, run_cli

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
EXAMPLE = README[README.index("## An example") : README.index("## Five recipes")]
ROW = REPO / "sample_data" / "run-17.jsonl"
CUT = "…"


def json_blocks() -> list[Any]:
    """The example's two JSON blocks: the input row, then the record written."""
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", EXAMPLE, re.DOTALL)]


def shown_command() -> list[str]:
    """The example's command line, without the program name."""
    command = re.search(r"`trajectory-compressor (compress [^`]+)`", EXAMPLE)
    assert command, "the README example has no `trajectory-compressor compress ...` command"
    return shlex.split(command.group(1))


def quoted_tokens(label: str) -> int:
    """A count the example quotes: `"original_tokens": 864`."""
    found = re.search(rf'"{label}": (\d+)', EXAMPLE)
    assert found, f"the README example quotes no {label}"
    return int(found.group(1))


def matches_cut(shown: Any, actual: Any) -> bool:
    """Whether `shown` is `actual` with some strings cut at `…` (a stretch of the string left out there)."""
    if isinstance(shown, str) and isinstance(actual, str):
        head, cut, tail = shown.partition(CUT)
        if not cut:
            return shown == actual
        return len(actual) > len(head) + len(tail) and actual.startswith(head) and actual.endswith(tail)
    if isinstance(shown, dict) and isinstance(actual, dict):
        return shown.keys() == actual.keys() and all(matches_cut(shown[key], actual[key]) for key in shown)
    if isinstance(shown, list) and isinstance(actual, list):
        return len(shown) == len(actual) and all(map(matches_cut, shown, actual))
    return shown == actual


def test_the_shown_row_is_the_sample_file_cut_where_it_says() -> None:
    shown_row, _ = json_blocks()
    (row,) = read_jsonl(ROW)
    assert matches_cut(shown_row, row)
    assert json.dumps(shown_row, ensure_ascii=False).count(CUT) == 2, "the README says two tool results are cut"


def test_the_command_writes_the_shown_record_and_the_quoted_counts(tmp_path: Path) -> None:
    _, shown_record = json_blocks()
    args = shown_command()
    assert args[1] == "sample_data/run-17.jsonl" and args[2] == "-o"
    output = tmp_path / "x.jsonl"
    result = run_cli("compress", str(ROW), "-o", str(output), *args[4:], "-q")
    assert result.returncode == 0, result.stderr

    (record,) = read_jsonl(output)
    assert record == shown_record
    (metrics,) = read_jsonl(tmp_path / "x.metrics.jsonl")
    assert metrics["original_tokens"] == quoted_tokens("original_tokens")
    assert metrics["compressed_tokens"] == quoted_tokens("compressed_tokens")
    assert f"{metrics['original_tokens']:,} tokens:" in EXAMPLE
    assert f"record, {metrics['compressed_tokens']:,} tokens" in EXAMPLE
    region = metrics["compression_region"]
    assert f'"start_idx": {region["start_idx"]}, "end_idx": {region["end_idx"]}' in EXAMPLE
    assert (metrics["gpt_turns"], metrics["train_turns"]) == (6, 4), "the README: four of the six gpt turns"
