"""One huge line (an 80 MB log inside a tool result) through every command and mode, in bounded memory.

Each run is a real process whose peak resident memory is read after it exits
(`getrusage(RUSAGE_CHILDREN)` in a wrapper process that runs nothing else), so the bound holds
for the whole process, whatever the machine's speed. Before counting went by pieces, this line
took 14.8 GB (one tokenizer call on the whole value); a 240 MB one was killed by the kernel.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, read_jsonl
from tests.fake_openai_server import FakeServerThread, prompt_text

pytestmark = [pytest.mark.huge_rows, pytest.mark.timeout(1800)]

BOUND = 1_500_000_000  # bytes of peak resident memory, the whole process
HUGE_INDEX = 7  # the huge tool result: outside the protected head (4 turns) and tail (4 turns)

# Runs `argv` and prints its peak resident memory in bytes (Linux reports KiB).
_WRAPPER = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[2:], stdout=open(sys.argv[1] + ".out", "w"), stderr=open(sys.argv[1] + ".err", "w"))
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


def _log(megabytes: int) -> str:
    """A log of `megabytes` million characters: lines of words, as a long tool output is."""
    rng = random.Random(megabytes)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randrange(8, 30))) for _ in range(500)]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randrange(3, 8))) + " ok" for _ in range(2_000)]
    size = megabytes * 1_000_000
    picked = rng.choices(lines, k=size // 60)
    return "\n".join(picked)[:size]


def _huge_input(directory: Path, megabytes: int) -> Path:
    """Three rows: an ordinary one, one whose middle tool result holds the log (JSON-escaped, as a
    Hermes tool result stores it), an ordinary one."""
    huge = make_trajectory(1, steps=8, output_lines=5)
    result = {"tool_call_id": "call_3", "name": "bash", "content": _log(megabytes)}
    huge["conversations"][HUGE_INDEX]["value"] = f"<tool_response>\n{json.dumps(result)}\n</tool_response>"
    path = directory / f"huge{megabytes}.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        for row in (make_trajectory(0, steps=8), huge, make_trajectory(2, steps=8)):
            handle.write(json.dumps(row) + "\n")
    return path


@pytest.fixture(scope="module")
def huge80(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = _huge_input(tmp_path_factory.mktemp("huge"), 80)
    yield path
    path.unlink()  # 80 MB: not left behind in pytest's kept temporary folders


def _peak(tmp_path: Path, *args: str) -> tuple[int, int, str]:
    """(exit code, peak resident bytes, stderr) of the command run in a process of its own."""
    log = tmp_path / "run"
    command = [sys.executable, "-m", "trajectory_compressor", *args]
    wrapper = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(log), *command], capture_output=True, text=True, timeout=1700, check=True
    )
    code, peak = map(int, wrapper.stdout.split())
    print(f"{args[0]} {' '.join(arg for arg in args[1:] if arg.startswith('--'))}: peak {peak / 1e6:,.0f} MB")
    return code, peak, Path(f"{log}.err").read_text(encoding="utf-8")


def _assert_every_row_in_order(metrics: Path, out: Path | None, source: Path) -> list[dict[str, Any]]:
    lines = read_jsonl(metrics)
    assert [line["id"] for line in lines] == ["row-0000", "row-0001", "row-0002"]
    assert not any(line["rejected"] for line in lines)
    if out is not None:
        written = out.read_bytes().splitlines()
        originals = source.read_bytes().splitlines()
        assert [json.loads(line)["id"] for line in written] == ["row-0000", "row-0001", "row-0002"]
        assert written[0] == originals[0] and written[2] == originals[2], "unchanged rows byte for byte"
    return lines


EXTRACTIVE = ["--summarizer", "extractive"]
MODES = {
    "extractive": EXTRACTIVE,
    "dry-run": ["--dry-run"],
    "windows": ["--windows", *EXTRACTIVE],
    "prune-tool-outputs": ["--prune-tool-outputs", *EXTRACTIVE],
    "chat-template": ["--count-mode", "chat-template", "--chat-template", "deepseek-v3.1", *EXTRACTIVE],
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_huge_line_is_compressed_in_bounded_memory(tmp_path: Path, huge80: Path, mode: str) -> None:
    out = tmp_path / "out" / "x.jsonl"
    page = tmp_path / "report.html"  # its example row is the huge one, read back from the input
    report = ["--html-report", str(page)] if mode == "extractive" else []
    code, peak, stderr = _peak(tmp_path, "compress", str(huge80), "-o", str(out), "-q", *MODES[mode], *report)
    assert code == 0, stderr
    assert peak < BOUND, f"{mode}: peak {peak / 1e9:.2f} GB"
    if report:
        assert "huge80.jsonl:2" in page.read_text(encoding="utf-8") and page.stat().st_size < 2_000_000
    metrics = out.parent / "x.metrics.jsonl"
    if mode == "windows":
        windows = read_jsonl(metrics)
        assert [line["id"] for line in windows] == sorted(line["id"] for line in windows)
        assert {line["id"] for line in windows} == {"row-0000", "row-0001", "row-0002"}
        return
    lines = _assert_every_row_in_order(metrics, None if mode == "dry-run" else out, huge80)
    assert lines[1]["original_tokens"] > 10_000_000
    if mode == "prune-tool-outputs":
        # the huge result is answered by the gpt turn after it: pruning never clears it (the kept
        # turn would react to a placeholder), so the summary takes it, in the same bounded memory
        assert not lines[1].get("pruned_turns"), "an answered result was cleared"
        assert lines[1]["was_compressed"] and not lines[1]["still_over_limit"]
    elif mode != "dry-run":
        assert lines[1]["was_compressed"] and not lines[1]["still_over_limit"]


def test_a_huge_line_is_summarized_by_an_llm_in_bounded_memory_from_a_bounded_prompt(
    tmp_path: Path, huge80: Path
) -> None:
    out = tmp_path / "out" / "x.jsonl"
    with FakeServerThread() as server:
        args = ["--base-url", server.base_url, "--model", "m", "--no-cache", "--retry-delay", "0.01"]
        code, peak, stderr = _peak(tmp_path, "compress", str(huge80), "-o", str(out), "-q", *args)
        prompts = [prompt_text(request.body) for request in server.requests]
    assert code == 0, stderr
    assert peak < BOUND, f"peak {peak / 1e9:.2f} GB"
    lines = _assert_every_row_in_order(out.parent / "x.metrics.jsonl", out, huge80)
    assert lines[1]["was_compressed"] and lines[1]["summarizer"] == "llm"
    assert prompts and max(map(len, prompts)) < 110_000, "the prompt holds the log's head and tail only"


def test_analyze_and_requests_read_a_huge_line_in_bounded_memory(tmp_path: Path, huge80: Path) -> None:
    code, peak, stderr = _peak(tmp_path, "analyze", str(huge80), "--prune-tool-outputs")
    assert code == 0, stderr
    assert peak < BOUND, f"analyze: peak {peak / 1e9:.2f} GB"
    requests = tmp_path / "requests.jsonl"
    code, peak, stderr = _peak(tmp_path, "requests", str(huge80), "-o", str(requests), "--model", "m")
    assert code == 0, stderr
    assert peak < BOUND, f"requests: peak {peak / 1e9:.2f} GB"
    lines = requests.read_bytes().splitlines()
    assert len(lines) == 1 and len(lines[0]) < 200_000, "the huge row's request only, with the log's head and tail"


def test_a_240_mb_line_is_compressed_in_bounded_memory(tmp_path: Path) -> None:
    source = _huge_input(tmp_path, 240)
    out = tmp_path / "out" / "x.jsonl"
    code, peak, stderr = _peak(tmp_path, "compress", str(source), "-o", str(out), "-q", "--summarizer", "extractive")
    assert code == 0, stderr
    assert peak < BOUND, f"peak {peak / 1e9:.2f} GB"
    lines = _assert_every_row_in_order(out.parent / "x.metrics.jsonl", out, source)
    assert lines[1]["was_compressed"] and lines[1]["original_tokens"] > 30_000_000
    source.unlink()
