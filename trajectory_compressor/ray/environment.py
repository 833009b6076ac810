"""The Ray engine's settings from the driver's environment, read and checked when a run starts.

`TC_RAY_LEASE_SECONDS` (a silent worker's request slots taken back), `TC_RAY_PROBE_SECONDS` (the
multinode storage check's wait) and `TC_RAY_ROWS_PER_PART` (rows a part holds) were read when
the modules were imported: a value that is no number was an internal error with a traceback,
and `0` was taken (a lease of 0 took back every slot at once; 0 rows a part). Now a run reads
them before Ray starts, as `TC_RAY_CLAIM_SECONDS` (`claim_file.lease_seconds`), and refuses a
value that is not a positive number in one line (exit 2), nothing written. The driver hands the
values on: to the limits actor, to the write tasks, to the storage check. No Ray here.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from trajectory_compressor.errors import UsageError

LEASE_VARIABLE = "TC_RAY_LEASE_SECONDS"
PROBE_VARIABLE = "TC_RAY_PROBE_SECONDS"
ROWS_VARIABLE = "TC_RAY_ROWS_PER_PART"


@dataclass(frozen=True)
class RayEnvironment:
    """What a run takes from the environment: each a positive number (the rows a whole one)."""

    lease_seconds: float  # a worker silent this long gives its request slots back (`limits`)
    probe_seconds: float  # the longest wait for every node's answer to the storage check (`storage`)
    rows_per_part: int  # rows a part holds at most (`write`)


def ray_environment() -> RayEnvironment:
    """The settings from the environment, or `UsageError` naming the first bad one (exit 2).

    The defaults are the modules' own constants, read here, at the start of the run."""
    from trajectory_compressor.ray import limits, storage, write

    setting = positive_setting
    return RayEnvironment(
        lease_seconds=setting(LEASE_VARIABLE, limits.LEASE_SECONDS, "a silent worker's lease of request slots"),
        probe_seconds=setting(PROBE_VARIABLE, storage.PROBE_SECONDS, "the storage check's wait for every node"),
        rows_per_part=int(setting(ROWS_VARIABLE, write.ROWS_PER_PART, "rows a part holds", whole=True)),
    )


def positive_setting(variable: str, default: float, meaning: str, *, whole: bool = False) -> float:
    """The one reader of the engine's numeric settings (the claim's lease too, `claim_file`):
    `variable`'s value, `default` when unset or empty; a positive finite number (a whole one when
    `whole`), else one line naming the variable, what it sets and the value given."""
    text = (os.environ.get(variable) or "").strip()
    if not text:
        return default
    try:
        value = float(int(text)) if whole else float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        kind = "a positive whole number" if whole else "a positive number of seconds"
        raise UsageError(f"{variable} must be {kind} ({meaning}), got {text!r}")
    return value
