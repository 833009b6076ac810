"""`eval --probes` against the fake endpoint: questions asked from both contexts, scored, cached,
and no credential in any request, answer or output.

The fake endpoint reads like a perfect model: it answers a question with the value the masked
line had in the conversation it was given, and NOT IN CONTEXT when that line is not in it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, run_cli, write_jsonl
from tests.fake_openai_server import FakeServerThread, prompt_text

# 300: at 200 the extractive digest beside its anchor index is compact, without the error line.
BUDGET = ["--target-max-tokens", "2500", "--summary-target-tokens", "300"]
SECRET = "ghp_" + "Mn4bV5cX6zL7" * 3
API_KEY = "sk-probe-" + "k3y" * 12


def _rows() -> list[dict[str, Any]]:
    """Runs whose tool results close tickets (one line each, naming the case) that the last
    answer quotes; one line also carries a credential."""
    rows = [make_trajectory(i, steps=4 + i % 5, output_lines=40) for i in range(8)]
    for row in rows:
        turns = row["conversations"]
        for n, turn in enumerate(t for t in turns if t["from"] == "tool"):
            extra = f" (token {SECRET})" if n == 1 else ""
            line = f"case{n} closed ticket TK{n}X{n * 7}{extra}"
            if n == 3:  # a failure: its error line is in the extractive summary, so this one is answerable
                line = f"RuntimeError: {line}\nexit code: 1"
            turn["value"] = turn["value"].replace("exit code: 0", f"exit code: 0\n{line}")
        turns[-1]["value"] += " Tickets TK1X7, TK2X14 and TK3X21 are closed."
    return rows


def reader(number: int, body: Any) -> dict[str, Any]:
    """Answer as a perfect reader: the masked line's value in the conversation given, if there."""
    text = prompt_text(body)
    conversation = text.split("<conversation>", 1)[1].split("</conversation>", 1)[0]
    line = text.split("hidden as ____:\n", 1)[1].split("\nWhat is the hidden value?", 1)[0].strip("…")
    before, after = line.split("____", 1)
    pattern = re.escape(before[-24:]) + r"([^\s\"',)]+)" + re.escape(after[:24])
    found = re.search(pattern, conversation)
    return {"content": found.group(1) if found else "NOT IN CONTEXT"}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("probes")
    source = write_jsonl(root / "in.jsonl", _rows())
    for name, extra in (("single", []), ("windows", ["--windows"])):
        out = root / name / "x.jsonl"
        result = run_cli("compress", str(source), "-o", str(out), "--summarizer", "extractive", "-q", *BUDGET, *extra)
        assert result.returncode == 0, result.stderr
    return root


def _probe(run: Path, server: FakeServerThread, *extra: str, cache: Path | None = None) -> Any:
    outputs = [str(run / "single" / "x.jsonl"), str(run / "windows" / "x.jsonl")]
    caching = ["--cache", str(cache)] if cache else ["--no-cache"]
    return run_cli(
        "eval", *outputs, "--input", str(run / "in.jsonl"), "--probes", "--base-url", server.base_url,
        "--model", "reader", "--retry-delay", "0.01", *caching, *extra,
        env={"OPENAI_API_KEY": API_KEY},
    )  # fmt: skip


def test_questions_are_answered_from_the_compressed_and_the_whole_row(run: Path, tmp_path: Path) -> None:
    html = tmp_path / "eval.html"
    with FakeServerThread(faults=reader) as server:
        result = _probe(run, server, "--json", "--html-report", str(html))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    probes = data["probes"]
    assert probes["questions_per_row"] == 5 and probes["endpoint"]["model"] == "reader"
    asked = [summary["probes"] for summary in data["outputs"]]
    assert len(server.requests) == probes["endpoint"]["requests"] == 2 * sum(a["questions"] for a in asked)
    for figures, summary, row in zip(asked, data["outputs"], data["table"], strict=True):
        assert figures["questions"] > 0 and figures["failed"] == figures["ceiling_failed"] == 0
        assert figures["rows"] + figures["rows_without_questions"] == summary["compressed"]
        assert figures["questions"] <= 5 * figures["rows"]
        # The whole row shows every line asked about: a perfect reader gets all of them.
        assert figures["ceiling_recall"] == 1.0 and figures["ceiling_right"] == figures["questions"]
        assert 0 < figures["recall"] == round(figures["right"] / figures["questions"], 4) < 1.0
        assert figures["right"] + figures["not_in_context"] == figures["questions"]
        assert (row["probe_recall"], row["probe_ceiling_recall"]) == (figures["recall"], figures["ceiling_recall"])
        assert figures["examples"] and all("____" in e["question"] for e in figures["examples"])
    for request in server.requests:
        prompt = prompt_text(request.body)
        assert request.body["temperature"] == 0.0 and request.body["max_tokens"] == 64
        assert "What is the hidden value?" in prompt and "NOT IN CONTEXT" in prompt
        assert SECRET[:12] not in prompt and request.authorization == f"Bearer {API_KEY}"
    assert any("[REDACTED]" in prompt_text(request.body) for request in server.requests)
    page = html.read_text()
    assert "<h2>Probes: recall questions" in page and SECRET[:12] not in page
    for text in (result.stdout, result.stderr, page):
        assert API_KEY not in text and SECRET[:12] not in text


def test_a_second_run_asks_nothing_and_the_key_is_in_no_file(run: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite3"
    with FakeServerThread(faults=reader) as server:
        first = _probe(run, server, "--json", cache=cache)
        asked = len(server.requests)
        again = _probe(run, server, "--json", cache=cache)
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    assert asked > 0 and len(server.requests) == asked  # every answer came from the cache
    before, after = json.loads(first.stdout), json.loads(again.stdout)
    questions = sum(o["probes"]["questions"] for o in before["outputs"])
    # Two outputs of one input share questions (and their contexts): asked once, then cached.
    assert before["probes"]["endpoint"]["cache_hits"] + asked == 2 * questions
    assert after["probes"]["endpoint"]["requests"] == 0 and after["probes"]["endpoint"]["cache_hits"] == 2 * questions
    assert [o["probes"] for o in after["outputs"]] == [o["probes"] for o in before["outputs"]]
    for path in tmp_path.iterdir():
        assert API_KEY.encode() not in path.read_bytes() and SECRET[:12].encode() not in path.read_bytes()


def test_failed_answers_are_counted_and_a_dead_endpoint_stops_eval(run: Path) -> None:
    def half_fail(number: int, body: Any) -> Any:
        return "500" if number % 2 else reader(number, body)

    with FakeServerThread(faults=half_fail) as server:
        result = _probe(run, server, "--json", "--max-retries", "0")
    assert result.returncode == 0, result.stderr
    asked = [summary["probes"] for summary in json.loads(result.stdout)["outputs"]]
    failed = sum(a["failed"] + a["ceiling_failed"] for a in asked)
    assert failed == len(server.requests) // 2 > 0
    dead = run_cli(
        "eval", str(run / "single" / "x.jsonl"), "--input", str(run / "in.jsonl"), "--probes",
        "--base-url", f"http://user:{SECRET}@127.0.0.1:9/v1", "--model", "m", "--no-cache", "--max-retries", "0",
    )  # fmt: skip
    assert dead.returncode == 2 and dead.stderr.startswith("error: ") and len(dead.stderr.splitlines()) == 1
    assert "never answered" in dead.stderr and SECRET[:12] not in dead.stderr and "Traceback" not in dead.stderr
    unset = run_cli("eval", str(run / "single" / "x.jsonl"), "--input", str(run / "in.jsonl"), "--probes")
    assert unset.returncode == 2 and "give --base-url (or set OPENAI_BASE_URL) and --model" in unset.stderr
