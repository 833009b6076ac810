"""A local Ray for the whole session (2 CPUs, no dashboard), and helpers to compare the two engines.

Every test here is marked `ray` and skipped when the `[ray]` extra is not installed.
"""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path
from typing import Any

import pytest

# Slots of a killed worker come back after this long (the default is 10 s); set before Ray
# starts, so its worker processes see it too.
os.environ.setdefault("TC_RAY_LEASE_SECONDS", "2")


@pytest.fixture(scope="session")
def local_ray():
    """`ray.init(num_cpus=2)` once; shut down at the end of the session."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    yield ray
    ray.shutdown()


def ray_parts(folder: Path) -> bytes:
    """A part-file folder's bytes in input order (part names sort as the rows' indexes)."""
    return b"".join(Path(name).read_bytes() for name in sorted(glob.glob(str(folder / "part-*"))))


def json_lines(data: bytes) -> list[Any]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def assert_same_outputs(local_out: Path, ray_out: Path) -> None:
    """Records byte for byte, metrics / over-limit / rejects row for row, the report's totals equal."""
    stem = local_out.parent / local_out.name.removesuffix(".jsonl")
    ray_stem = ray_out.parent / ray_out.name.removesuffix(".jsonl")
    assert ray_parts(ray_out) == (local_out.read_bytes() if local_out.exists() else b"")  # a dry run: none
    for side in ("metrics", "over_limit", "rejects"):
        local_side = Path(f"{stem}.{side}.jsonl")
        local_lines = json_lines(local_side.read_bytes()) if local_side.exists() else []
        assert json_lines(ray_parts(Path(f"{ray_stem}.{side}"))) == local_lines, side
    local_report = json.loads(Path(f"{stem}.report.json").read_text())
    ray_report = json.loads(Path(f"{ray_stem}.report.json").read_text())
    for section in ("status", "rows", "tokens", "turns", "histogram", "settings"):
        assert ray_report[section] == local_report[section], section
    assert ray_report["summaries"]["calls"] == local_report["summaries"]["calls"]
