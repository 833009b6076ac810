"""A script under `scripts/` that measured (or did) nothing says why and exits non-zero (issue 20 F22).

`extractive_fidelity.py` run from a clone outside the project tree printed "no real trajectories"
and exited 0, which a CI step or a results table would take for a measurement.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, write_jsonl
from tests.fake_openai_server import FakeServerThread

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def _script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPTS / name), *args], capture_output=True, text=True, timeout=600, check=False
    )


def test_extractive_fidelity_without_data_exits_non_zero_and_says_where_it_looked(tmp_path: Path) -> None:
    done = _script("extractive_fidelity.py", "--data", str(tmp_path / "nowhere"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no real trajectories" in done.stderr and str(tmp_path / "nowhere") in done.stderr
    assert "--data" in done.stderr and done.stdout == ""


@pytest.mark.bench
def test_extractive_fidelity_that_scored_no_row_exits_non_zero(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "short.jsonl", [make_trajectory(i, steps=1, output_lines=2) for i in range(2)])  # all under
    done = _script("extractive_fidelity.py", "--data", str(tmp_path), "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no row was compressed" in done.stderr


def _ticket_rows(count: int) -> list[dict[str, Any]]:
    """Rows whose results each name a ticket the next step notes down, the last answer quoting two."""
    rows = []
    for i in range(count):
        row = make_trajectory(i, steps=10, output_lines=30)
        turns = row["conversations"]
        for n, turn in enumerate(t for t in turns if t["from"] == "tool"):
            turn["value"] = turn["value"].replace("exit code: 0", f"exit code: 0, ticket TK{n}X{n * 7}")
        for n, turn in enumerate(t for t in turns if t["from"] == "gpt" and "run the test." in t["value"]):
            if n:
                turn["value"] = turn["value"].replace("run the test.", f"noted ticket TK{n - 1}X{(n - 1) * 7}.")
        turns[-1]["value"] += " Tickets TK1X7 and TK2X14 are closed."
        rows.append(row)
    return rows


@pytest.mark.bench
def test_extractive_fidelity_prints_the_future_grounded_figure_per_split_and_file(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "runs.jsonl", _ticket_rows(6))
    done = _script("extractive_fidelity.py", "--data", str(tmp_path), "--targets", "2500", "--budget", "300", "--json")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)["2500"]
    assert set(figures) == {"tune", "held_out", "all"}
    assert figures["tune"]["items"]["scored"] + figures["held_out"]["items"]["scored"] == 6
    pooled = figures["all"]["future"]
    assert pooled["anchors"] > 0 and pooled["score"] == round(pooled["kept"] / pooled["anchors"], 4)
    assert figures["all"]["by_file"]["runs.jsonl"]["anchors"] == pooled["anchors"]
    text = _script("extractive_fidelity.py", "--data", str(tmp_path), "--targets", "2500", "--budget", "300")
    assert text.returncode == 0 and "held_out" in text.stdout and "future-grounded" in text.stdout


@pytest.mark.bench
def test_extractive_fidelity_whose_kept_turns_needed_nothing_exits_non_zero(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "runs.jsonl", [make_trajectory(i, steps=10, output_lines=30) for i in range(2)])
    done = _script("extractive_fidelity.py", "--data", str(tmp_path), "--targets", "2500", "--budget", "300")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no kept turn needed any anchor" in done.stderr


@pytest.mark.bench
def test_anchor_index_fidelity_compares_llm_summaries_with_and_without_the_index(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "runs.jsonl", _ticket_rows(4))
    args = ("--fake", "--data", str(tmp_path), "--targets", "2500", "--budget", "300")
    done = _script("anchor_index_fidelity.py", *args, "--json")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    with_index, without = figures["with_index"]["2500"]["all"], figures["without_index"]["2500"]["all"]
    assert with_index["items"]["scored"] == without["items"]["scored"] == 4
    assert with_index["future"]["anchors"] == without["future"]["anchors"] > 0
    assert with_index["future"]["kept"] > without["future"]["kept"] == 0  # the fake's summaries name no value
    missing = _script("anchor_index_fidelity.py", "--fake", "--data", str(tmp_path / "nowhere"))
    assert missing.returncode == 1 and "nothing measured" in missing.stderr


def test_run_batch_file_whose_every_request_failed_exits_non_zero(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    line = {"custom_id": "k1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m", "messages": []}}
    write_jsonl(requests, [line, {**line, "custom_id": "k2"}])
    with FakeServerThread(default="500") as server:
        done = _script(
            "run_batch_file.py", "-i", str(requests), "-o", str(tmp_path / "out.jsonl"), "--base-url", server.base_url
        )
    assert done.returncode == 1, done.stderr
    assert "2 requests, 2 failed" in done.stderr and "no request was answered" in done.stderr
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 2  # the error lines are still written


def test_bench_with_an_input_without_rows_exits_non_zero(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    done = _script("bench.py", "--input", str(empty), "--only", "limit", "--workdir", str(tmp_path / "w"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no rows" in done.stderr and str(empty) in done.stderr


def test_output_fingerprints_that_fingerprinted_nothing_exits_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("output_fingerprints", SCRIPTS / "output_fingerprints.py")
    assert spec is not None and spec.loader is not None
    module: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "cases", lambda folder: {"compress": {}})  # every case wrote nothing
    before = tmp_path / "before.json"
    before.write_text(json.dumps({"compress": {}}))
    monkeypatch.setattr(sys, "argv", ["output_fingerprints.py", "--compare", str(before)])
    assert module.main() == 1
    assert "no output was fingerprinted" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["output_fingerprints.py"])
    assert module.main() == 1


@pytest.mark.bench
def test_bench_count_backends_counts_every_turn_with_each_backend_and_compares(tmp_path: Path) -> None:
    runs = write_jsonl(tmp_path / "runs.jsonl", [make_trajectory(i, steps=2, output_lines=5) for i in range(3)])
    done = _script("bench_count_backends.py", "--rows", "0", "--input", str(runs), "--repeat", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {line.split()[-6]: line for line in done.stdout.splitlines() if "runs.jsonl (3 rows)" in line}
    assert "hf" in rows and "fastokens" in rows, done.stdout
    turns = 3 * (2 + 2 * 2 + 1)
    assert all(line.endswith(f" 0/{turns}") for line in rows.values()), done.stdout
    assert "fastokens 0.3" in done.stdout and "licence" in done.stdout
    nothing = _script("bench_count_backends.py", "--rows", "0")
    assert nothing.returncode == 1 and "no turns to count" in nothing.stderr


@pytest.mark.bench
def test_bench_huge_lines_compares_equal_counts_side_by_side(tmp_path: Path) -> None:
    rows = write_jsonl(tmp_path / "rows.jsonl", [make_trajectory(i, steps=2) for i in range(3)])
    done = _script("bench_huge_lines.py", "--input", str(rows), "--megabytes", "1", "--repeat", "1")
    assert done.returncode == 0, done.stderr
    assert "same counts" in done.stdout and "equal counts" in done.stdout and "x the memory" in done.stdout
    empty = write_jsonl(tmp_path / "empty.jsonl", [])
    done = _script("bench_huge_lines.py", "--input", str(empty), "--megabytes", "1", "--repeat", "1")
    assert done.returncode != 0 and "nothing measured" in done.stderr


def test_a_long_row_of_n_groups_is_the_first_n_groups_of_the_stream() -> None:
    """scripts/make_long_row.py: the row-length series compares like for like (bench stage 8)."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        from make_long_row import long_row
    finally:
        sys.path.remove(str(SCRIPTS))
    short, long = long_row(70, seed=3)["conversations"], long_row(140, seed=3)["conversations"]
    assert sum(turn["from"] == "gpt" for turn in short) == 70  # one assistant turn per group
    assert long[: len(short)] == short
    assert any(turn["value"].startswith("Next issue:") for turn in long)  # a new task every 60 groups


def _coverage_report(path: Path, modules: dict[str, tuple[int, int]]) -> Path:
    files = {
        name: {"summary": {"covered_lines": covered, "num_statements": statements}}
        for name, (covered, statements) in modules.items()
    }
    path.write_text(json.dumps({"files": files}))
    return path


def test_coverage_table_shows_each_module_before_and_after_and_fails_when_the_total_drops(tmp_path: Path) -> None:
    before = _coverage_report(tmp_path / "before.json", {"pkg/a.py": (9, 10), "pkg/old.py": (5, 10)})
    after = _coverage_report(tmp_path / "after.json", {"pkg/a.py": (10, 10), "pkg/new/__init__.py": (1, 10)})
    done = _script("coverage_table.py", str(before), str(after))
    assert done.returncode == 1  # 70.0 -> 55.0
    rows = done.stdout.splitlines()
    assert "| `pkg.a` | 10 | 90.0 | 100.0 | +10.0 |" in rows
    assert "| `pkg.new` | 10 | - | 10.0 | new |" in rows
    assert "| `pkg.old` | 10 | 50.0 | - | gone |" in rows
    assert rows[-1] == "| **total** | 20 | 70.0 | 55.0 | -15.0 |"
    unchanged = _script("coverage_table.py", str(after), str(after), "--changed", "0.5")
    assert unchanged.returncode == 0
    assert unchanged.stdout.splitlines()[2:] == ["| **total** | 20 | 55.0 | 55.0 | +0.0 |"]
