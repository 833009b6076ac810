"""What a refused resume says differs: the kept parts of a fingerprint, compared (no run here;
`tests/run/test_resume.py` drives the real command)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from trajectory_compressor.run.settings_record import NESTED_PARTS, flat_settings
from trajectory_compressor.settings import walk
from trajectory_compressor.write import run_fingerprint
from trajectory_compressor.write.run_fingerprint import RunFingerprint, refusal

SETTINGS = {"tokenizer": "Qwen/Qwen2.5-7B", "summarizer": "llm", "plan": {"target_max_tokens": 8000}, "llm": {}}


def _of(
    settings: dict[str, Any], inputs: list[dict[str, Any]] | None = None, secrets: tuple[str, ...] = ()
) -> RunFingerprint:
    inputs = inputs if inputs is not None else [{"name": "a.jsonl", "size": 10, "sha256": "0" * 64}]
    return RunFingerprint.of({"settings": settings, "sources": inputs}, flat_settings(settings), inputs, secrets)


def _changed(before: RunFingerprint, now: RunFingerprint) -> str | None:
    kept = json.loads(json.dumps(before.parts))  # as read back from the checkpoint
    return now.changed_since(kept)


def test_the_fingerprint_is_the_hash_earlier_versions_took() -> None:
    """A run an earlier version left resumes: its state's fingerprint is still this one."""
    hashed = {"settings": SETTINGS, "sources": [{"name": "a.jsonl", "size": 10, "sha256": "0" * 64}]}
    earlier = hashlib.sha256(json.dumps(hashed, sort_keys=True, default=str).encode()).hexdigest()
    assert _of(SETTINGS).digest == earlier


def test_changed_settings_are_named_with_their_values() -> None:
    now = {**SETTINGS, "summarizer": "extractive", "plan": {"target_max_tokens": 4000}}
    assert _changed(_of(SETTINGS), _of(now)) == (
        "settings differ: summarizer 'llm' -> 'extractive', target_max_tokens 8000 -> 4000"
    )
    assert _changed(_of(SETTINGS), _of(SETTINGS)) is None


def test_a_text_that_looks_like_a_number_is_shown_as_a_text() -> None:
    assert _changed(_of({"split": "8000"}), _of({"split": 8000})) == "settings differ: split '8000' -> 8000"


def test_at_most_three_changes_a_group_and_how_many_more() -> None:
    before = {f"s{i}": i for i in range(6)}
    now = {f"s{i}": i + 1 for i in range(6)}
    assert _changed(_of(before), _of(now)) == "settings differ: s0 0 -> 1, s1 1 -> 2, s2 2 -> 3 (+3 more)"


@pytest.mark.parametrize(
    ("before", "now"),
    [
        ({"headers": {"Authorization": "Bearer tok-AAAA1111"}}, {"headers": {"Authorization": "Bearer tok-BBBB2222"}}),
        ("sk-proj-T3BlbkFJ4x9Qm2LpZr7Vw8Yk1Nc5Hd", "sk-proj-Uq8Rn2Wc6Mv4Kx1Zb9Ty3Lp7Gs5Hd"),
        ("Bearer tok-AAAA1111", "plain"),
        ("x" * 300, "y" * 300),
    ],
    ids=["object", "key-shaped text", "credential to plain text", "long text"],
)
def test_a_value_that_may_hold_a_credential_is_kept_and_shown_only_as_changed(before: Any, now: Any) -> None:
    first, second = _of({"extra_body": before}), _of({"extra_body": now})
    said = _changed(first, second)
    assert said == "settings differ: extra_body changed"
    for value in (before, now):
        for text in _texts(value):
            if text != "plain":
                assert text not in json.dumps(first.parts) + json.dumps(second.parts) + said


def _texts(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [text for inner in value.values() for text in _texts(inner)] + [json.dumps(value)]
    return [value.split()[-1], value] if isinstance(value, str) else []


def test_inputs_changed_added_removed_and_reordered() -> None:
    a, b = {"name": "data/a.jsonl", "size": 10, "sha256": "0" * 64}, {"name": "b.jsonl", "size": 5, "sha256": "1" * 64}
    edited = {**a, "sha256": "2" * 64}
    assert _changed(_of({}, [a]), _of({}, [edited])) == "inputs differ: 'data/a.jsonl' changed (size or sha256)"
    assert _changed(_of({}, [a]), _of({}, [a, b])) == "inputs differ: 'b.jsonl' added"
    assert _changed(_of({}, [a, b]), _of({}, [b])) == "inputs differ: 'data/a.jsonl' removed"
    assert _changed(_of({}, [a, b]), _of({}, [b, a])) == "inputs differ: read in another order"
    pipe = {"name": "/dev/fd/3", "mtime_ns": 1}
    assert _changed(_of({}, [pipe]), _of({}, [{**pipe, "mtime_ns": 2}])) == (
        "inputs differ: '/dev/fd/3' changed (modification time)"
    )
    both = _changed(_of({"seed": 1}, [a]), _of({"seed": 2}, [edited]))
    assert both == "settings differ: seed 1 -> 2; inputs differ: 'data/a.jsonl' changed (size or sha256)"


def test_too_many_inputs_are_kept_as_one_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_fingerprint, "MAX_KEPT_INPUTS", 2)
    inputs = [{"name": f"{i}.jsonl", "size": i, "sha256": "0" * 64} for i in range(4)]
    many = _of({}, inputs[:3])
    assert set(many.parts["inputs"]) == {"count", "sha256"}
    assert _changed(many, _of({}, inputs)) == "inputs differ: 3 -> 4 files"
    assert _changed(many, _of({}, inputs[:2])) == "inputs differ: 3 -> 2 files"
    assert _changed(_of({}, inputs[:2]), _of({}, inputs[1:3])) == "inputs differ: '2.jsonl' added, '0.jsonl' removed"


def test_a_known_secret_is_neither_kept_nor_shown_whatever_it_looks_like() -> None:
    """The API key in the environment (here plain words, which no pattern finds), given as a setting by mistake."""
    key = "letmein2024"
    first = _of({"model": key}, [{"name": f"in-{key}.jsonl"}], secrets=(key,))
    second = _of({"model": "gpt-4o"}, [{"name": "in.jsonl"}], secrets=(key,))
    said = _changed(first, second)
    assert key not in json.dumps(first.parts) and said is not None and key not in said
    assert said.startswith("settings differ: model changed; inputs differ: 'in.jsonl' added, 'in-[REDACTED].jsonl'")


@pytest.mark.parametrize("kept", [None, "x", [], {"settings": "x"}, {"inputs": []}])
def test_parts_a_checkpoint_did_not_keep_say_nothing(kept: Any) -> None:
    """A checkpoint written before the parts were kept (or damaged): the refusal as it always was."""
    assert _of(SETTINGS).changed_since(kept) is None
    assert refusal("out/.x.jsonl.work holds an unfinished run", None) == (
        "out/.x.jsonl.work holds an unfinished run with other inputs or settings; "
        "re-run with the same command to resume it, or pass --no-resume to start over"
    )


def test_a_setting_only_one_run_recorded_is_said_unset() -> None:
    assert _changed(_of({"seed": 1}), _of({"seed": 1, "windows": True})) == "settings differ: windows unset -> true"


def test_setting_names_are_unique_across_the_settings_record() -> None:
    """`flat_settings` lifts the planner's and the LLM's settings out of their parts: one name, one setting."""
    names = [name for _, name, spec in walk() if spec.record]
    assert len(names) == len(set(names)) and "tokenizer" not in names and not set(NESTED_PARTS) & set(names)
