"""The Ray engine gives the local engine's results, row for row (extractive and LLM), and its
limits hold for the whole cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLE, read_jsonl, run_cli
from tests.fake_anthropic_api import FakeAnthropicServer
from tests.fake_openai_server import FakeServerThread
from tests.ray.conftest import assert_same_outputs, json_lines, ray_parts
from trajectory_compressor.count.exactness import sampled

pytestmark = pytest.mark.ray
RAY = ("--engine", "ray", "--num-workers", "2", "-q")


def llm_args(base_url: str, cache: Path, *extra: str) -> list[str]:
    return [
        "--summarizer", "llm", "--base-url", base_url, "--model", "test-model", "--cache", str(cache),
        "--retry-delay", "0.01", "--request-timeout", "30", *extra,
    ]  # fmt: skip


def test_extractive_run_equals_the_local_engine(local_ray, tmp_path: Path) -> None:
    local = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "local" / "x.jsonl"), "--summarizer", "extractive")
    assert local.returncode == 0, local.stderr
    out = tmp_path / "ray" / "x.jsonl"
    on_ray = run_cli("compress", str(SAMPLE), "-o", str(out), "--summarizer", "extractive", *RAY)
    assert on_ray.returncode == 0, on_ray.stderr
    assert_same_outputs(tmp_path / "local" / "x.jsonl", tmp_path / "ray" / "x.jsonl")
    report = json.loads((tmp_path / "ray" / "x.report.json").read_text())
    assert report["engine"]["name"] == "ray" and report["rows"]["compressed"] > 0
    counting = report["counting"]
    if counting["fast_backend"]:  # the workers' guards, added up: every turn the sample picks (by its text)
        picked = [value for row in read_jsonl(SAMPLE) for value in _turn_values(row) if sampled(value)]
        assert len(picked) > 1 and counting["guard"]["sampled"] >= len(picked)
        assert counting["guard"]["sample_differences"] == 0


@pytest.mark.ray_runs
@pytest.mark.parametrize("output", ["x.jsonl", "x.parquet"])
def test_windows_equal_the_local_engine(local_ray, tmp_path: Path, output: str) -> None:
    """--windows falls out of the row path: a row's windows travel as one Ray row, split back in order."""
    flags = ["--summarizer", "extractive", "--windows", "--target-max-tokens", "3000", "--limit", "40"]
    local = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "local" / output), *flags)
    assert local.returncode == 0, local.stderr
    on_ray = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "ray" / output), *flags, *RAY)
    assert on_ray.returncode == 0, on_ray.stderr
    if output.endswith(".jsonl"):
        assert_same_outputs(tmp_path / "local" / output, tmp_path / "ray" / output)
        report = json.loads((tmp_path / "ray" / "x.report.json").read_text())
        assert report["windows"]["rows_split"] > 0
    else:
        import pyarrow.parquet as pq

        local_rows = pq.read_table(tmp_path / "local" / output).to_pylist()
        ray_rows = [row for part in sorted((tmp_path / "ray" / output).glob("part-*.parquet"))
                    for row in pq.read_table(part).to_pylist()]  # fmt: skip
        assert [r["window"] for r in ray_rows] == [r["window"] for r in local_rows]


@pytest.mark.ray_runs
def test_an_hf_chat_parquet_output_equals_the_local_engine(local_ray, tmp_path: Path) -> None:
    """Ray's Parquet parts store hf-chat's messages as the local output does: a list of JSON
    values, each message read back with exactly its own keys."""
    import datasets

    flags = ["--summarizer", "extractive", "--windows", "--target-max-tokens", "3000", "--limit", "12"]
    flags += ["--write-format", "hf-chat"]
    for engine, extra in (("local", []), ("ray", RAY)):
        result = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / engine / "x.parquet"), *flags, *extra)
        assert result.returncode == 0, result.stderr
    local = datasets.load_dataset("parquet", data_files=str(tmp_path / "local" / "x.parquet"), split="train")
    parts = sorted(str(part) for part in (tmp_path / "ray" / "x.parquet").glob("part-*.parquet"))
    on_ray = datasets.load_dataset("parquet", data_files=parts, split="train")
    assert local.features["messages"] == on_ray.features["messages"] == datasets.List(datasets.Json())
    assert local.to_list() == on_ray.to_list()


@pytest.mark.ray_runs
def test_llm_run_equals_the_local_engine_and_limits_hold_across_workers(local_ray, tmp_path: Path) -> None:
    """Two workers, `--max-concurrency 2`: the endpoint never sees more than 2 requests at once."""
    with FakeServerThread(latency=0.02) as server:
        local = run_cli(
            "compress", str(SAMPLE), "-o", str(tmp_path / "local" / "x.jsonl"),
            *llm_args(server.base_url, tmp_path / "local.sqlite3"),
        )  # fmt: skip
        assert local.returncode == 0, local.stderr
        sent = len(server.requests)
        assert sent > 0
        server.server.max_in_flight = 0
        on_ray = run_cli(
            "compress", str(SAMPLE), "-o", str(tmp_path / "ray" / "x.jsonl"),
            *llm_args(server.base_url, tmp_path / "ray-cache" / "s.sqlite3", "--max-concurrency", "2"), *RAY,
        )  # fmt: skip
        assert on_ray.returncode == 0, on_ray.stderr
        assert len(server.requests) == 2 * sent  # a fresh cache: every summary asked once
        assert server.max_in_flight <= 2
    assert_same_outputs(tmp_path / "local" / "x.jsonl", tmp_path / "ray" / "x.jsonl")
    endpoint = json.loads((tmp_path / "ray" / "x.report.json").read_text())["summaries"]["endpoint"]
    assert endpoint["requests"] == sent and endpoint["successes"] == sent
    assert endpoint["max_in_flight"] <= 2
    assert len(list((tmp_path / "ray-cache").glob("worker-*.sqlite3"))) == 2  # one file per worker


@pytest.mark.ray_runs
def test_an_anthropic_run_on_ray_equals_an_openai_run_on_the_local_engine(local_ray, tmp_path: Path) -> None:
    """The dialect travels in the settings to every worker; both fakes answer a prompt alike."""
    with FakeServerThread() as server:
        local = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "local" / "x.jsonl"),
                        *llm_args(server.base_url, tmp_path / "local.sqlite3"))  # fmt: skip
        assert local.returncode == 0, local.stderr
    with FakeServerThread(server=FakeAnthropicServer()) as anthropic:
        on_ray = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "ray" / "x.jsonl"), "--api", "anthropic",
                         *llm_args(anthropic.base_url, tmp_path / "ray-cache" / "s.sqlite3"), *RAY)  # fmt: skip
        assert on_ray.returncode == 0, on_ray.stderr
        assert anthropic.requests  # the workers spoke Anthropic's dialect (the fake serves nothing else)
        assert all(r.headers.get("anthropic-version") and "system" in r.body for r in anthropic.requests)
    assert ray_parts(tmp_path / "ray" / "x.jsonl") == (tmp_path / "local" / "x.jsonl").read_bytes()
    local_metrics = json_lines((tmp_path / "local" / "x.metrics.jsonl").read_bytes())
    assert json_lines(ray_parts(tmp_path / "ray" / "x.metrics")) == local_metrics  # the report differs: its URL


@pytest.mark.ray_runs
def test_a_rerun_takes_every_summary_from_the_shared_cache(local_ray, tmp_path: Path) -> None:
    with FakeServerThread() as server:
        args = llm_args(server.base_url, tmp_path / "cache" / "s.sqlite3")
        first = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "a" / "x.jsonl"), *args, *RAY)
        assert first.returncode == 0, first.stderr
        sent = len(server.requests)
        again = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "b" / "x.jsonl"), *args, *RAY)
        assert again.returncode == 0, again.stderr
        assert len(server.requests) == sent
    endpoint = json.loads((tmp_path / "b" / "x.report.json").read_text())["summaries"]["endpoint"]
    assert endpoint["cache_hits"] == sent and endpoint["requests"] == 0


@pytest.mark.ray_runs
def test_dry_run_equals_the_local_engine(local_ray, tmp_path: Path) -> None:
    local = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "local" / "x.jsonl"), "--dry-run")
    assert local.returncode == 0, local.stderr
    on_ray = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "ray" / "x.jsonl"), "--dry-run", *RAY)
    assert on_ray.returncode == 0, on_ray.stderr
    assert_same_outputs(tmp_path / "local" / "x.jsonl", tmp_path / "ray" / "x.jsonl")


@pytest.mark.ray_runs
def test_an_endpoint_that_never_answers_stops_the_run_with_exit_2(local_ray, tmp_path: Path) -> None:
    with FakeServerThread(default="drop") as server:  # no HTTP answer, ever: a worker's abort reaches the driver
        result = run_cli(
            "compress", str(SAMPLE), "-o", str(tmp_path / "x.jsonl"),
            *llm_args(server.base_url, tmp_path / "c.sqlite3", "--max-retries", "2"), *RAY,
        )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert f"error: the endpoint {server.base_url} never answered" in result.stderr
    assert json.loads((tmp_path / "x.report.json").read_text())["status"] == "aborted"


def test_a_key_the_model_list_refuses_is_one_line_before_ray_starts(tmp_path: Path) -> None:
    """As the local engine: the endpoint is asked before the tokenizer loads, and before Ray."""
    with FakeServerThread(models_status=401) as server:
        result = run_cli(
            "compress", str(SAMPLE), "-o", str(tmp_path / "x.jsonl"),
            *llm_args(server.base_url, tmp_path / "c.sqlite3"), *RAY, env={"OPENAI_API_KEY": "sk-wrong"},
        )  # fmt: skip
        assert server.server.model_lists == 1 and not server.requests  # no summary asked
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: HTTP 401 from {server.base_url}: the endpoint refused the credentials"), line
    assert "sk-wrong" not in result.stderr and not list(tmp_path.glob("x*"))  # Ray never started: nothing written


@pytest.mark.ray_runs
def test_a_run_that_rejects_every_row_exits_4_naming_the_cause(local_ray, tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"messages_v2": [{"from": "human", "value": "hi"}]}) + "\n" for _ in range(3)))
    result = run_cli("compress", str(source), "-o", str(tmp_path / "out" / "x.jsonl"), "--dry-run", *RAY)
    assert result.returncode == 4, result.stderr
    assert "every row was rejected (3 of 3)" in result.stderr and "--conversation-key" in result.stderr
    assert f"{source}:1" in result.stderr.splitlines()[-1]
    assert json.loads((tmp_path / "out" / "x.report.json").read_text())["status"] == "completed"


@pytest.mark.ray_runs
def test_a_refused_key_stops_the_run_with_exit_2_and_local_only_flags_are_refused(local_ray, tmp_path: Path) -> None:
    with FakeServerThread(default="401") as server:
        result = run_cli(
            "compress", str(SAMPLE), "-o", str(tmp_path / "x.jsonl"),
            *llm_args(server.base_url, tmp_path / "c.sqlite3"), *RAY,
        )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "refused the credentials" in result.stderr
    assert json.loads((tmp_path / "x.report.json").read_text())["status"] == "aborted"
    refused = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "y.jsonl"), "--num-shards", "2", *RAY)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "error: --num-shards (Ray spreads the rows itself) is not supported with --engine ray"
    ]


@pytest.mark.ray_runs
@pytest.mark.parametrize("summarizer", ["extractive", "none"])
def test_a_pruning_run_equals_the_local_engine(local_ray, tmp_path: Path, summarizer: str) -> None:
    """--prune-tool-outputs (and --summarizer none) run the local row path on Ray: the same outputs.
    With windows, where pruning clears context results (a single row keeps every result a kept
    turn answers)."""
    flags = ["--prune-tool-outputs", "--summarizer", summarizer, "--target-max-tokens", "4000"]
    flags += ["--windows", "--tail-ratio", "0.5", "--limit", "60"]
    local = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "local" / "x.jsonl"), *flags)
    assert local.returncode == 0, local.stderr
    on_ray = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "ray" / "x.jsonl"), *flags, *RAY)
    assert on_ray.returncode == 0, on_ray.stderr
    assert_same_outputs(tmp_path / "local" / "x.jsonl", tmp_path / "ray" / "x.jsonl")
    report = json.loads((tmp_path / "ray" / "x.report.json").read_text())
    assert report["pruning"]["turns_pruned"] > 0
    assert report["pruning"] == json.loads((tmp_path / "local" / "x.report.json").read_text())["pruning"]


def _turn_values(row: dict[str, Any]) -> list[str]:
    turns = row.get("conversations") or row.get("messages") or []
    return [value for turn in turns if isinstance(value := turn.get("value", turn.get("content")), str)]
