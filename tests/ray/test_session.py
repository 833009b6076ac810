"""The driver's Ray session as a user sees it: `-q` prints what a quiet local run prints, none of Ray's own lines.

A real process: Ray's C++ core writes its ERROR lines to the process's stderr, which an
in-process run does not capture."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SAMPLE, read_jsonl, run_cli, run_cli_subprocess, write_jsonl

pytestmark = pytest.mark.ray


@pytest.mark.ray_runs
def test_quiet_prints_what_a_quiet_local_run_prints_and_nothing_of_rays_own(tmp_path: Path) -> None:
    pytest.importorskip("ray.data")
    rows = read_jsonl(SAMPLE)[:8]
    source = write_jsonl(tmp_path / "in.jsonl", [*rows[:4], "{not json", *rows[4:], "[]"])
    args = ("--summarizer", "extractive", "-q")
    local = run_cli("compress", str(source), "-o", str(tmp_path / "local" / "x.jsonl"), *args)
    assert local.returncode == 0, local.stderr
    assert len(local.stderr.splitlines()) == 2  # the two bad records, nothing else
    on_ray = run_cli_subprocess(
        "compress", str(source), "-o", str(tmp_path / "ray" / "x.jsonl"), *args, "--engine", "ray", "--num-workers", "2"
    )  # fmt: skip
    assert on_ray.returncode == 0, on_ray.stderr
    assert on_ray.stderr.splitlines() == local.stderr.splitlines()


@pytest.mark.parametrize("where", ["flag", "environment"])
def test_ray_client_is_refused_with_the_command_to_use_instead(tmp_path: Path, where: str) -> None:
    """Ray Data does not run over Ray Client (`ray://`) with the pinned Ray: refused before Ray starts."""
    pytest.importorskip("ray.data")
    address = "ray://127.0.0.1:10001"
    flags = ("--ray-address", address) if where == "flag" else ()
    result = run_cli(
        "compress", str(SAMPLE), "-o", str(tmp_path / "x.jsonl"), "--summarizer", "extractive", "--engine", "ray",
        *flags, env={"RAY_ADDRESS": address} if where == "environment" else None,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: Ray Client ({address}) cannot run Ray Data jobs: submit the run as a job instead, ray job submit "
        "--address http://HEAD:8265 -- trajectory-compressor compress ... --engine ray (README: Running on Ray)"
    ]
    assert not (tmp_path / "x.jsonl").exists()
