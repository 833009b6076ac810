"""One record compressed with the chat-template count, as the trainer tests of one record run it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import read_jsonl, run_cli, write_jsonl


def written_with_chat_count(record: dict[str, Any], tokenizer: Any, folder: Path, write_format: str) -> tuple[Any, Any]:
    """(the record written, its metrics line) for `record` compressed with `--count-mode
    chat-template` and `tokenizer` (saved in `folder`), written as `write_format`."""
    saved = folder / "tokenizer"
    if not saved.exists():
        tokenizer.save_pretrained(saved)
    source = write_jsonl(folder / "in.jsonl", [record])
    out = folder / write_format / "x.jsonl"
    result = run_cli(
        "compress", str(source), "-o", str(out), "--write-format", write_format, "--count-mode",
        "chat-template", "--tokenizer", str(saved), "--summarizer", "extractive", "-q",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (written,) = read_jsonl(out)
    (metrics,) = read_jsonl(out.with_name("x.metrics.jsonl"))
    return written, metrics
