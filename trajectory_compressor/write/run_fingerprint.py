"""A run's fingerprint, and what it hashed kept beside it: so a refused resume can say what changed.

A resume is refused when the unfinished run had other inputs or settings: the hash of them, the
fingerprint, differs. A hash cannot say what differs, and a user left guessing (a flag? which
input?) may throw hours of work away with `--no-resume`. So the checkpoint (the local engine's
`state.json`, the Ray engine's `run.json` beside its parts' records) keeps, beside the hash, the
parts it hashed (`RunFingerprint.parts`), and the refusal names what differs (`changed_since`):

    settings differ: target_max_tokens 8000 -> 4000, summarizer 'llm' -> 'extractive'
    inputs differ: 'data/a.jsonl' changed (size or sha256), 'b.jsonl' added

The parts are kept, and shown, only in a form safe to write down: the checkpoint is a file
beside the outputs and the refusal goes to logs. The settings record already holds no API key
(it is read from the environment, never a setting) and its URLs no credentials
(`run/settings_record.py`); on top of that, a setting's value is kept only when it is a number,
a flag, a choice, or a short text that `redact_secrets` leaves whole. Any other value (a JSON
object such as `--extra-body`, which may carry a header or a key; a text holding something that
looks like a credential) is kept as a short hash, so the refusal says it changed, never what it
holds. An input is kept by its name, size and sha256, as the report records it.

The parts are an addition to the checkpoint, not a new version of it: a checkpoint written
before they were kept resumes as before when its fingerprint matches, and is refused with the
message it always had (no list) when it does not. Nor do they change the fingerprint.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trajectory_compressor.messages import quoted
from trajectory_compressor.summarize.redact import redact_secrets, scrub

SHOWN_CHANGES = 3  # per group (settings, inputs): the rest is `(+N more)`
MAX_KEPT_TEXT = 200  # a longer text is kept as its hash (a prompt-sized notice text, say)
MAX_SHOWN_TEXT = 80  # a text longer than this is said to have changed, not shown twice
MAX_KEPT_INPUTS = 10_000  # beyond it the inputs are kept as one hash: a checkpoint stays small
_HASH_CHARS = 16
_UNSET = object()  # a setting one of the runs did not record (another version)
# `contents`: a directory input's files hashed (the Ray engine's `save_to_disk` inputs, which have no sha256)
_INPUT_FIELDS = ("name", "path", "size", "bytes", "sha256", "mtime_ns", "records", "contents")


def fingerprint(parts: dict[str, Any]) -> str:
    """A stable hash of what determines the outputs (inputs and settings)."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def _short_hash(value: Any) -> str:
    return fingerprint({"value": value})[:_HASH_CHARS]


@dataclass(frozen=True)
class RunFingerprint:
    """The fingerprint a resume compares (`digest`), and the parts it hashed in their kept form.

    `secrets` are the credentials this run knows (the API key in its environment variable, the
    base URL's): a text holding one is neither kept nor shown, whatever it looks like. They stay
    in memory: not in `parts`, not in the digest.
    """

    digest: str
    parts: dict[str, Any]  # {"settings": {name: value or {"sha256"}}, "inputs": [input] or {"count", "sha256"}}
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @classmethod
    def of(
        cls,
        hashed: dict[str, Any],
        settings: Mapping[str, Any],
        inputs: Sequence[Mapping[str, Any]],
        secrets: Iterable[str | None] = (),
    ) -> RunFingerprint:
        """The fingerprint of `hashed` (as every earlier version took it, so their runs still resume),
        with `settings` (by name, flat) and `inputs` kept: together they are what `hashed` holds."""
        known = tuple(secret for secret in secrets if secret)
        kept_inputs: Any = [_kept_input(entry, known) for entry in inputs]
        if len(kept_inputs) > MAX_KEPT_INPUTS:
            kept_inputs = {"count": len(kept_inputs), "sha256": _short_hash(kept_inputs)}
        kept_settings = {name: _kept_value(value, known) for name, value in settings.items()}
        return cls(fingerprint(hashed), {"settings": kept_settings, "inputs": kept_inputs}, known)

    def changed_since(self, before: Any) -> str | None:
        """What differs between the parts an unfinished run kept (`before`) and this run's, in a few words.

        None when `before` is not parts this version reads (a checkpoint from before they were
        kept, or damaged) or names no difference: the refusal then says only that something does.
        """
        if not (isinstance(before, dict) and isinstance(before.get("settings"), dict)):
            return None
        said = [
            _settings_changes(before["settings"], self.parts["settings"], self.secrets),
            _inputs_changes(before.get("inputs"), self.parts["inputs"], self.secrets),
        ]
        return "; ".join(group for group in said if group) or None


def settings_changes(before: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    """What differs between two settings by name (a run report's, flat: `flat_settings`), in a
    few words, shown as a refused resume shows them: how `merge` names what keeps shards apart."""
    kept = [{name: _kept_value(value, ()) for name, value in settings.items()} for settings in (before, now)]
    return _settings_changes(kept[0], kept[1], ()) or "settings differ"


def _safe_text(text: str, secrets: tuple[str, ...]) -> bool:
    """Whether `text` may be written down and shown: nothing in it looks like, or is, a credential."""
    return redact_secrets(text) == text and scrub(text, secrets) == text


def _kept_value(value: Any, secrets: tuple[str, ...]) -> Any:
    """`value` itself when it is safe to write down and show, else `{"sha256": <short hash>}`
    (never a value itself: no setting's value that is kept is a JSON object)."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str) and len(value) <= MAX_KEPT_TEXT and _safe_text(value, secrets):
        return value
    return {"sha256": _short_hash(value)}


def _kept_input(entry: Mapping[str, Any], secrets: tuple[str, ...]) -> dict[str, Any]:
    """An input's name, size and sha256 (a URI's, too), its name and path masked as messages show them."""
    kept = {key: entry[key] for key in _INPUT_FIELDS if key in entry}
    for key in ("name", "path"):
        if isinstance(kept.get(key), str):
            kept[key] = _masked(kept[key], secrets)
    return kept


def _masked(text: str, secrets: tuple[str, ...]) -> str:
    return scrub(redact_secrets(text), secrets)


def refusal(holder: str, changes: str | None) -> str:
    """The one line that refuses a resume: `holder` (where the unfinished run is), what differs if known."""
    known = f" ({changes})" if changes else ""
    return (
        f"{holder} with other inputs or settings{known}; "
        "re-run with the same command to resume it, or pass --no-resume to start over"
    )


def _settings_changes(before: dict[str, Any], now: Mapping[str, Any], secrets: tuple[str, ...]) -> str | None:
    names = [*now, *(name for name in before if name not in now)]
    differ = [name for name in names if before.get(name, _UNSET) != now.get(name, _UNSET)]
    changes = [_setting_change(name, before, now, secrets) for name in differ]
    return f"settings differ: {_listed(changes)}" if changes else None


def _setting_change(name: str, before: Mapping[str, Any], now: Mapping[str, Any], secrets: tuple[str, ...]) -> str:
    shown = _shown(before, name, secrets), _shown(now, name, secrets)
    return f"{name} changed" if None in shown else f"{name} {shown[0]} -> {shown[1]}"


def _shown(kept: Mapping[str, Any], name: str, secrets: tuple[str, ...]) -> str | None:
    """A kept setting as the refusal shows it; None when it is not to be shown (kept as a hash, or long)."""
    if name not in kept:
        return "unset"  # a setting the other run did not record (another version)
    value = kept[name]
    if isinstance(value, str):
        return _text(value) if len(value) <= MAX_SHOWN_TEXT and _safe_text(value, secrets) else None
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    return None


def _text(value: str) -> str:
    """A text in single quotes (escaped as `quoted` escapes names), so `'8000'` is not `8000`."""
    shown = quoted(value)
    return shown if shown.startswith("'") else f"'{shown}'"


def _inputs_changes(before: Any, now: Any, secrets: tuple[str, ...]) -> str | None:
    if before is None or before == now:
        return None  # the same, or not kept by the other run
    if not (isinstance(before, list) and isinstance(now, list) and all(_is_input(entry) for entry in before)):
        counts = _count(before), _count(now)  # too many inputs to keep one by one, on either side
        return (
            f"inputs differ: {counts[0]} -> {counts[1]} files"
            if None not in counts and counts[0] != counts[1]
            else "inputs differ"
        )
    earlier = {entry["name"]: entry for entry in before}
    named = {entry["name"]: entry for entry in now}
    changes = []
    for name, entry in named.items():
        if name not in earlier:
            changes.append(f"{_name(name, secrets)} added")
        elif earlier[name] != entry:
            changes.append(f"{_name(name, secrets)} changed{_why(earlier[name], entry)}")
    changes += [f"{_name(name, secrets)} removed" for name in earlier if name not in named]
    if not changes:
        changes.append("read in another order")
    return f"inputs differ: {_listed(changes)}"


def _count(kept: Any) -> int | None:
    count = len(kept) if isinstance(kept, list) else kept.get("count") if isinstance(kept, dict) else None
    return count if isinstance(count, int) else None


def _is_input(entry: Any) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("name"), str)


def _name(name: str, secrets: tuple[str, ...]) -> str:
    return _text(_masked(name, secrets))


def _why(before: dict[str, Any], now: dict[str, Any]) -> str:
    differ = {key for key in {*before, *now} if before.get(key) != now.get(key)}
    if differ & {"size", "bytes", "sha256"}:
        return " (size or sha256)"
    if "contents" in differ:
        return " (its files' bytes)"
    if "mtime_ns" in differ:
        return " (modification time)"
    return ""


def _listed(changes: Iterable[str]) -> str:
    items = list(changes)
    more = len(items) - SHOWN_CHANGES
    return ", ".join(items[:SHOWN_CHANGES]) + (f" (+{more} more)" if more > 0 else "")
