"""Offline batch files: `requests` → a batch runner → `compress --responses`, against a real HTTP server.

The batch runner is `scripts/run_batch_file.py` (it plays `vllm run-batch`), talking to the
fake endpoint on 127.0.0.1. The run that finishes from the answers must make no live request
and write exactly the bytes a live run writes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from tests.fake_openai_server import FakeServerThread, prompt_text
from trajectory_compressor.summarize.anchor_index import INDEX_LABEL

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-test-DO-NOT-LEAK-77a1c9e3b5d7f901"
BUDGET = ["--target-max-tokens", "2500", "--summary-target-tokens", "200"]


def _llm(base_url: str, cache: Path, *extra: str) -> list[str]:
    return [*BUDGET, "--base-url", base_url, "--model", "batch-model", "--cache", str(cache),
            "--retry-delay", "0.01", "--max-retries", "0", *extra]  # fmt: skip


def _input(tmp_path: Path, *, duplicate: bool = False) -> Path:
    rows = [make_trajectory(i, steps=2 + i % 8, output_lines=40) for i in range(10)]
    if duplicate:
        rows.append(rows[3])  # an identical row: its request is written once
    return write_jsonl(tmp_path / "in.jsonl", rows)


def _run_batch(requests: Path, results: Path, base_url: str) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "run_batch_file.py"), "-i", str(requests), "-o", str(results),
         "--base-url", base_url],
        check=True, capture_output=True, timeout=120, env={"OPENAI_API_KEY": SECRET, "PATH": "/usr/bin:/bin"},
    )  # fmt: skip


def _answered(tmp_path: Path) -> tuple[Path, Path]:
    """An input, and the batch output file that answers every request of it (the fake's answers)."""
    source = _input(tmp_path)
    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    with FakeServerThread() as server:
        assert run_cli("requests", str(source), "-o", str(requests), *BUDGET, "--model", "batch-model").returncode == 0
        _run_batch(requests, results, server.base_url)
    return source, results


def test_requests_file_answered_offline_gives_the_live_run_byte_for_byte(tmp_path: Path) -> None:
    source = _input(tmp_path, duplicate=True)
    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    with FakeServerThread() as server:
        live = run_cli("compress", str(source), "-o", str(tmp_path / "live" / "x.jsonl"),
                       *_llm(server.base_url, tmp_path / "live.sqlite3"), env={"OPENAI_API_KEY": SECRET})  # fmt: skip
        assert live.returncode == 0, live.stderr
        live_requests = len(server.requests)
        written = run_cli("requests", str(source), "-o", str(requests), *BUDGET, "--model", "batch-model")
        assert written.returncode == 0, written.stderr
        _run_batch(requests, results, server.base_url)
    lines = read_jsonl(requests)
    # The file asks once for the identical rows; the live run once or twice (twice when both were
    # in flight before either answer was cached: it depends on the machine's timing).
    assert len(lines) == len({line["custom_id"] for line in lines}) in (live_requests - 1, live_requests)
    assert "1 duplicate request" in written.stderr
    assert all(line["method"] == "POST" and line["url"] == "/v1/chat/completions" for line in lines)
    # Room for twice the summary the prompt asks for: the budget, less what the anchor index keeps.
    assert all(line["body"]["model"] == "batch-model" and 0 < line["body"]["max_tokens"] <= 400 for line in lines)
    assert all(f"in at most {line['body']['max_tokens'] // 2} tokens" in prompt_text(line["body"]) for line in lines)

    with FakeServerThread(default="500") as dead:  # any live request would fail and show
        offline = run_cli("compress", str(source), "-o", str(tmp_path / "batch" / "x.jsonl"),
                          "--responses", str(results), *_llm(dead.base_url, tmp_path / "batch.sqlite3"))  # fmt: skip
        assert offline.returncode == 0, offline.stderr
        assert len(dead.requests) == 0
    assert f"{len(lines)} answers stored in the cache, 0 failed, 0 malformed" in offline.stderr
    for name in ("x.jsonl", "x.metrics.jsonl", "x.over_limit.jsonl"):
        assert (tmp_path / "batch" / name).read_bytes() == (tmp_path / "live" / name).read_bytes(), name
    assert INDEX_LABEL in (tmp_path / "batch" / "x.jsonl").read_text()  # the anchor index, the same offline
    metrics = read_jsonl(tmp_path / "batch" / "x.metrics.jsonl")
    assert {m["summarizer"] for m in metrics if m["was_compressed"]} == {"llm"}
    report = json.loads((tmp_path / "batch" / "x.report.json").read_text())
    assert report["summaries"]["endpoint"]["batch_answers_loaded"] == len(lines)
    for path in (requests, results, *(tmp_path / "batch").iterdir()):
        assert SECRET not in path.read_text()


def test_bad_and_failed_answer_lines_are_reported_and_their_rows_go_live(tmp_path: Path) -> None:
    source, results = _answered(tmp_path)
    answers = read_jsonl(results)
    failed = answers[0]
    failed["response"] = {"status_code": 500, "body": None}
    failed["error"] = {"code": "server_error", "message": f"boom {SECRET}"}
    cut = answers[1]
    cut["response"]["body"]["choices"][0]["finish_reason"] = "length"
    lines = [json.dumps(a) for a in answers] + ["not json", json.dumps({"custom_id": "mine"}), ""]
    results.write_text("\n".join(lines) + "\n")

    with FakeServerThread() as server:
        run = run_cli("compress", str(source), "-o", str(tmp_path / "out" / "x.jsonl"), "--responses", str(results),
                      *_llm(server.base_url, tmp_path / "c.sqlite3"), env={"OPENAI_API_KEY": SECRET})  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert len(server.requests) == 2  # the failed and the cut answer, asked live
    total = len(answers)
    assert f"{total - 2} answers stored in the cache, 2 failed, 2 malformed lines" in run.stderr
    assert "results.jsonl:1: no usable answer: boom" in run.stderr
    assert "results.jsonl:2: no usable answer: reply was cut at max_tokens" in run.stderr
    assert f"results.jsonl:{total + 1}: not JSON" in run.stderr
    assert f"results.jsonl:{total + 2}: no custom_id" in run.stderr
    assert SECRET not in run.stderr + run.stdout
    assert all(
        m["summarizer"] == "llm" for m in read_jsonl(tmp_path / "out" / "x.metrics.jsonl") if m["was_compressed"]
    )


def test_responses_need_the_llm_and_a_readable_file(tmp_path: Path) -> None:
    source = _input(tmp_path)
    no_llm = run_cli("compress", str(source), "-o", str(tmp_path / "o.jsonl"), "--summarizer", "extractive",
                     "--responses", str(tmp_path / "r.jsonl"))  # fmt: skip
    assert no_llm.returncode == 2 and "--responses needs the llm summarizer" in no_llm.stderr
    absent = str(tmp_path / "absent.jsonl")
    missing = run_cli("compress", str(source), "-o", str(tmp_path / "o2.jsonl"), "--responses", absent,
                      *_llm("http://127.0.0.1:9/v1", tmp_path / "c.sqlite3"))  # fmt: skip
    assert missing.returncode == 2 and "cannot read --responses" in missing.stderr
    no_model = run_cli("requests", str(source), "-o", str(tmp_path / "r.jsonl"))
    assert no_model.returncode == 2 and "--model" in no_model.stderr


def test_an_answer_line_larger_than_a_live_reply_is_refused_not_read_whole(tmp_path: Path) -> None:
    source, results = _answered(tmp_path)
    answers = read_jsonl(results)
    answers[0]["response"]["body"]["choices"][0]["message"]["content"] = "x" * 10_000_000  # a 10 MB "summary"
    lines = [json.dumps(answer) for answer in answers]
    results.write_text(lines[0] + "\n" + lines[0][:5_000_000] + "\n" + "\n".join(lines[1:]) + "\n")
    with FakeServerThread() as server:
        run = run_cli("compress", str(source), "-o", str(tmp_path / "out" / "x.jsonl"), "--responses", str(results),
                      *_llm(server.base_url, tmp_path / "c.sqlite3"))  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert len(server.requests) == 1  # the refused answer's row is asked live
    assert "results.jsonl:1: answer line over" in run.stderr
    assert "results.jsonl:2: answer line over" in run.stderr  # a cut copy, still over the cap
    assert f"{len(answers) - 1} answers stored in the cache, 0 failed, 2 malformed lines" in run.stderr
    summaries = [m["summary_tokens"] for m in read_jsonl(tmp_path / "out" / "x.metrics.jsonl") if m["was_compressed"]]
    assert summaries and max(summaries) <= 400


def test_requests_with_windows_hold_each_rows_first_window_and_the_run_asks_only_the_later_ones(
    tmp_path: Path,
) -> None:
    source = _input(tmp_path)
    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    windows = ["--windows", "--target-max-tokens", "2000"]
    with FakeServerThread() as server:
        live = run_cli("compress", str(source), "-o", str(tmp_path / "live" / "x.jsonl"),
                       *_llm(server.base_url, tmp_path / "live.sqlite3"), *windows)  # fmt: skip
        assert live.returncode == 0, live.stderr
        first_prompts = {json.dumps(r.body, sort_keys=True) for r in server.requests if "<previous_summary>" not in
                         r.body["messages"][1]["content"]}  # fmt: skip
        written = run_cli("requests", str(source), "-o", str(requests), *BUDGET, *windows, "--model", "batch-model")
        assert written.returncode == 0, written.stderr
        _run_batch(requests, results, server.base_url)
    lines = read_jsonl(requests)
    assert {json.dumps(line["body"], sort_keys=True) for line in lines} == first_prompts
    later = sum(m["window"]["index"] > 1 for m in read_jsonl(tmp_path / "live" / "x.metrics.jsonl"))
    with FakeServerThread() as server:
        run = run_cli("compress", str(source), "-o", str(tmp_path / "batch" / "x.jsonl"), "--responses", str(results),
                      *_llm(server.base_url, tmp_path / "batch.sqlite3"), *windows)  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert len(server.requests) == later  # the first windows came from the file
    for name in ("x.jsonl", "x.metrics.jsonl"):
        assert (tmp_path / "batch" / name).read_bytes() == (tmp_path / "live" / name).read_bytes(), name


def test_an_answer_given_twice_is_stored_and_counted_once(tmp_path: Path) -> None:
    source, results = _answered(tmp_path)
    once = results.read_bytes()
    twice = tmp_path / "twice.jsonl"
    lines = once.splitlines(keepends=True)
    twice.write_bytes(once + b"".join(lines[:3]))  # a runner that re-ran the start of its file
    usage = []
    with FakeServerThread() as server:
        for name, path in (("once", results), ("twice", twice)):
            run = run_cli("compress", str(source), "-o", str(tmp_path / name / "x.jsonl"), "--responses", str(path),
                          *_llm(server.base_url, tmp_path / f"{name}.sqlite3"))  # fmt: skip
            assert run.returncode == 0, run.stderr
            usage.append(json.loads((tmp_path / name / "x.report.json").read_text())["summaries"]["endpoint"])
        assert len(server.requests) == 0
    for key in ("batch_answers_loaded", "batch_prompt_tokens", "batch_completion_tokens"):
        assert usage[1][key] == usage[0][key] > 0, key
    assert f"{len(lines)} answers stored in the cache, 0 failed, 0 malformed lines, 3 repeated" in run.stderr
    assert f"twice.jsonl:{len(lines) + 1}: a second answer to a request answered on line 1: ignored" in run.stderr
    for name in ("x.jsonl", "x.metrics.jsonl"):
        assert (tmp_path / "twice" / name).read_bytes() == (tmp_path / "once" / name).read_bytes(), name


def test_requests_with_pruning_ask_only_what_the_pruned_rows_need(tmp_path: Path) -> None:
    """`requests --prune-tool-outputs` plans as a pruning run plans: no request for a row pruning
    fits, the others on the pruned row; its answers then finish the run with no live call."""
    from tests.run.test_pruning import cut_off

    # Runs cut off after parallel calls (results no gpt turn answers: pruning clears them), and two
    # whose answered results pruning may not touch (summarized as without it).
    rows = [cut_off(make_trajectory(i, steps=2 + i % 8, output_lines=40)) for i in range(8)]
    rows += [make_trajectory(20 + i, steps=30 + 10 * i, output_lines=12) for i in range(2)]  # pruning cannot fit
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    prune = ["--prune-tool-outputs", "--protect-last-n-turns", "0"]
    with FakeServerThread() as server:
        live = run_cli("compress", str(source), "-o", str(tmp_path / "live" / "x.jsonl"),
                       *_llm(server.base_url, tmp_path / "live.sqlite3", *prune))  # fmt: skip
        assert live.returncode == 0, live.stderr
        live_requests = len(server.requests)
        plain = run_cli(
            "requests", str(source), "-o", str(tmp_path / "plain.jsonl"), *BUDGET, "--model", "m", *prune[1:]
        )
        written = run_cli("requests", str(source), "-o", str(requests), *BUDGET, "--model", "batch-model", *prune)
        assert plain.returncode == written.returncode == 0, written.stderr
        _run_batch(requests, results, server.base_url)
    lines = read_jsonl(requests)
    assert 0 < len(lines) == live_requests < len(read_jsonl(tmp_path / "plain.jsonl"))
    with FakeServerThread(default="500") as dead:  # any live request would fail and show
        offline = run_cli("compress", str(source), "-o", str(tmp_path / "batch" / "x.jsonl"), "--responses",
                          str(results), *_llm(dead.base_url, tmp_path / "batch.sqlite3", *prune))  # fmt: skip
        assert offline.returncode == 0, offline.stderr
        assert len(dead.requests) == 0
    for name in ("x.jsonl", "x.metrics.jsonl", "x.over_limit.jsonl"):
        assert (tmp_path / "batch" / name).read_bytes() == (tmp_path / "live" / name).read_bytes(), name
