"""The crash hooks the kill-and-resume tests rely on, held in-process: they log, pause and release as told.

(`TC_CRASH_AT` kills the process, so it is held by the subprocess tests that resume after it.)
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from trajectory_compressor import faults


@pytest.fixture(autouse=True)
def fresh_counts():
    faults.reset()
    yield
    faults.reset()


def test_without_a_hook_a_boundary_does_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("TC_CRASH_LOG", "TC_CRASH_AT", "TC_PAUSE_AT"):
        monkeypatch.delenv(variable, raising=False)
    faults.boundary("commit")
    assert faults._seen == {}


def test_each_boundary_is_logged_with_its_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "crash.log"
    monkeypatch.setenv("TC_CRASH_LOG", str(log))
    monkeypatch.setenv("TC_CRASH_AT", "commit:not-a-number")  # malformed: never matches
    for name in ("commit", "part", "commit"):
        faults.boundary(name)
    assert log.read_text().splitlines() == ["commit:1", "part:1", "commit:2"]


def test_a_pause_holds_at_its_boundary_until_released(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "paused"
    monkeypatch.setenv("TC_PAUSE_AT", "part:2")
    monkeypatch.setenv("TC_PAUSE_FILE", str(marker))
    faults.boundary("part")  # the first: passes
    assert not marker.exists()
    held = threading.Thread(target=faults.boundary, args=("part",))
    held.start()
    for _ in range(1000):  # held: the marker appears and the thread waits (no timing assumed beyond 10 s)
        if marker.exists() and marker.read_text().isdigit():  # written whole
            break
        threading.Event().wait(0.01)
    assert marker.read_text().isdigit() and held.is_alive()
    marker.with_name(marker.name + ".release").touch()
    held.join(timeout=10)
    assert not held.is_alive()
