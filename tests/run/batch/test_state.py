"""The batch record: what it keeps survives a reload exactly; a damaged one is refused, never guessed at."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trajectory_compressor.run.batch.state import STATE_NAME, BatchState, BatchStateError, Submission


def _state() -> BatchState:
    first = Submission("round-01-part-0001.jsonl", 1, 3, 900, "a" * 64, "n1", file_id="file-1", batch_id="batch_1",
                       status="completed", counts={"total": 3, "completed": 3, "failed": 0}, stored=True)  # fmt: skip
    second = Submission("round-02-part-0001.jsonl", 2, 1, 300, "b" * 64, "n2", file_id="file-2")
    state = BatchState([first, second], answers=3, prompt_tokens=120, completion_tokens=30)
    state.note_failure("k" * 64, "HTTP 500 from the batch")
    return state


def test_a_saved_record_loads_as_it_was(tmp_path: Path) -> None:
    state = _state()
    state.save(tmp_path)
    loaded = BatchState.load(tmp_path)
    assert loaded == state
    assert loaded.rounds == 2 and [s.name for s in loaded.unstored] == ["round-02-part-0001.jsonl"]
    assert loaded.attempts("k" * 64) == 1 and loaded.attempts("other") == 0
    loaded.note_failure("k" * 64, "again")
    assert loaded.attempts("k" * 64) == 2
    loaded.note_answered("k" * 64)
    assert loaded.attempts("k" * 64) == 0
    assert BatchState.load(tmp_path / "none") == BatchState()  # no record yet: a new run


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2].encode(),  # cut short
        lambda text: text.replace('"batch_1"', '"batch_9"').encode(),  # edited: the checksum no longer matches
        lambda text: json.dumps({**json.loads(text), "version": 99}).encode(),
        lambda text: b'{"version": 1, "x": "\xed\xa0\x80"}',  # a lone surrogate: not UTF-8
    ],
)
def test_a_damaged_record_is_refused_with_one_line(tmp_path: Path, damage) -> None:  # type: ignore[no-untyped-def]
    _state().save(tmp_path)
    path = tmp_path / STATE_NAME
    path.write_bytes(damage(path.read_text()))
    with pytest.raises(BatchStateError) as caught:
        BatchState.load(tmp_path)
    message = str(caught.value)
    assert str(path) in message and "cannot be trusted" in message and "\n" not in message


def test_a_record_with_a_wrong_shape_but_a_right_checksum_is_refused(tmp_path: Path) -> None:
    _state().save(tmp_path)
    path = tmp_path / STATE_NAME
    data = json.loads(path.read_text())
    data["submissions"][0]["unknown_field"] = 1
    body = {key: value for key, value in data.items() if key != "checksum"}
    from trajectory_compressor.run.batch.state import _checksum

    data["checksum"] = _checksum(body)
    path.write_text(json.dumps(data))
    with pytest.raises(BatchStateError, match="unexpected content"):
        BatchState.load(tmp_path)
