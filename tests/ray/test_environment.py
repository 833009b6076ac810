"""The Ray engine's settings from the environment: read when a run starts, a bad one refused in one line.

`TC_RAY_LEASE_SECONDS`, `TC_RAY_PROBE_SECONDS` and `TC_RAY_ROWS_PER_PART` were read at import:
text was an internal error with a traceback, and `0` was taken. Now they are checked as
`TC_RAY_CLAIM_SECONDS` is (`tests/ray/test_claim.py`), and the values reach what uses them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.conftest import SAMPLE, run_cli
from trajectory_compressor.errors import UsageError
from trajectory_compressor.ray import limits, storage, write
from trajectory_compressor.ray.environment import RayEnvironment, ray_environment
from trajectory_compressor.ray.layout import RayOutputLayout

pytestmark = pytest.mark.ray

KINDS = {
    "TC_RAY_LEASE_SECONDS": "a positive number of seconds (a silent worker's lease of request slots)",
    "TC_RAY_PROBE_SECONDS": "a positive number of seconds (the storage check's wait for every node)",
    "TC_RAY_ROWS_PER_PART": "a positive whole number (rows a part holds)",
}


@pytest.mark.parametrize("value", ["0", "ten"])
@pytest.mark.parametrize("variable", sorted(KINDS))
def test_a_setting_that_is_no_positive_number_is_refused_before_anything_is_written(
    tmp_path: Path, variable: str, value: str
) -> None:
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli("compress", str(SAMPLE), "-o", str(out), "--engine", "ray", "--dry-run", env={variable: value})
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [f"error: {variable} must be {KINDS[variable]}, got {value!r}"]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("TC_RAY_LEASE_SECONDS", "-1"),
        ("TC_RAY_LEASE_SECONDS", "nan"),
        ("TC_RAY_PROBE_SECONDS", "inf"),
        ("TC_RAY_ROWS_PER_PART", "2.5"),
        ("TC_RAY_ROWS_PER_PART", "-3"),
    ],
    ids=["lease-negative", "lease-nan", "probe-infinite", "rows-not-whole", "rows-negative"],
)
def test_other_values_that_are_no_positive_number_are_refused(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(UsageError, match=f"^{variable} must be "):
        ray_environment()


def test_the_values_given_are_read_at_the_start_and_unset_ones_are_the_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for variable in KINDS:
        monkeypatch.delenv(variable, raising=False)
    assert ray_environment() == RayEnvironment(limits.LEASE_SECONDS, storage.PROBE_SECONDS, write.ROWS_PER_PART)
    monkeypatch.setenv("TC_RAY_LEASE_SECONDS", "0.5")
    monkeypatch.setenv("TC_RAY_PROBE_SECONDS", "7")
    monkeypatch.setenv("TC_RAY_ROWS_PER_PART", "16")
    assert ray_environment() == RayEnvironment(0.5, 7.0, 16)


def test_the_runs_lease_and_rows_reach_the_limits_actor_and_the_sink(monkeypatch: pytest.MonkeyPatch) -> None:
    """The actor takes back slots after the driver's lease and tells each worker to beat every quarter
    of it (a worker's own environment may not hold the driver's setting); a part holds the run's rows."""
    monkeypatch.setattr(limits, "LEASE_SECONDS", 10.0)

    async def heartbeat() -> float:
        return limits.RunLimits(max_concurrency=1, lease=2.0).heartbeat("w")

    assert asyncio.run(heartbeat()) == 0.5
    layout = RayOutputLayout.beside("/nowhere/x.jsonl")
    assert write.CompressedOutput(layout, rows_per_part=16).min_rows_per_write == 16
    assert write.CompressedOutput(layout).min_rows_per_write == write.ROWS_PER_PART
