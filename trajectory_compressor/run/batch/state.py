"""What a `--batch` run has written, uploaded, created and stored: the one record that keeps a
killed run from paying twice.

`batches.json` in the output's batch folder is replaced whole (fsynced, then renamed) after each
step that changes the world: a request file written, uploaded, its batch created, its answers
stored. A step is recorded *after* it happened, so a crash between the two leaves a step done
but not recorded; the batch API finds such uploads and batches again (see `batch_api`), and
storing answers twice only rewrites the same cache rows. The file carries a checksum of itself:
a damaged record is refused, never guessed at, since guessing could submit a batch again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from trajectory_compressor.errors import UsageError
from trajectory_compressor.messages import quoted
from trajectory_compressor.write.run_files import write_json_atomically

STATE_NAME = "batches.json"
STATE_VERSION = 1


class BatchStateError(UsageError, RuntimeError):
    """The batch record cannot be trusted: one line naming it (exit 2)."""


@dataclass
class Submission:
    """One request file and, once they exist, its upload, its batch and what came back."""

    name: str  # the request file, in the batch folder
    round: int  # 1: first requests; 2 and on: second passes, fidelity retries, follow-ups
    requests: int
    bytes: int
    sha256: str
    nonce: str  # names the upload: a follow-up with the same requests is a file and a batch of its own
    written_at: float = 0.0  # epoch seconds: what a look for a lost upload or batch goes back to
    submitted_at: float = 0.0  # epoch seconds its batch was created (or first seen): --batch-timeout counts from it
    file_id: str | None = None  # its upload (providers that take files)
    create_sent_at: float = 0.0  # epoch seconds its first create was sent: where a look for a lost one starts
    create_marker: str | None = None  # what the provider held before that create (`BatchCalls.create_marker`)
    batch_id: str | None = None
    status: str | None = None  # the provider's status when last seen, in the run's words (`BatchView`)
    counts: dict[str, int] = field(default_factory=dict)  # the provider's request counts, as it names them
    done: int = 0  # requests over (answered or failed) when last seen
    downloads: dict[str, str] = field(default_factory=dict)  # file suffix -> what to download once it is over
    error: str | None = None  # why the provider failed the whole batch (validation), scrubbed
    stored: bool = False  # its answers are in the cache and its failures noted below


@dataclass
class BatchState:
    """Every submission of the run, the requests that failed in a batch, and the batch usage."""

    submissions: list[Submission] = field(default_factory=list)
    failures: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> {"attempts", "error", "cancelled"}
    answers: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    api: str = "openai"  # the dialect the batches went to (`--api`): `batches status|cancel` ask the same

    @property
    def rounds(self) -> int:
        return max((s.round for s in self.submissions), default=0)

    @property
    def unstored(self) -> list[Submission]:
        return [s for s in self.submissions if not s.stored]

    def attempts(self, key: str) -> int:
        return int(self.failures.get(key, {}).get("attempts", 0))

    def cancelled(self, key: str) -> bool:
        """Whether the last batch that asked for `key` was cancelled (by the user) before answering it."""
        return bool(self.failures.get(key, {}).get("cancelled"))

    def note_failure(self, key: str, error: str, *, cancelled: bool = False) -> None:
        self.failures[key] = {"attempts": self.attempts(key) + 1, "error": error, "cancelled": cancelled}

    def note_answered(self, key: str) -> None:
        self.failures.pop(key, None)

    def to_dict(self) -> dict[str, Any]:
        body = {
            "version": STATE_VERSION,
            "api": self.api,
            "submissions": [asdict(s) for s in self.submissions],
            "failures": self.failures,
            "answers": self.answers,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }
        return {**body, "checksum": _checksum(body)}

    def save(self, folder: Path) -> None:
        write_json_atomically(folder / STATE_NAME, self.to_dict(), durable=True)

    @classmethod
    def load(cls, folder: Path) -> BatchState:
        """The record in `folder`, or a new one when there is none."""
        path = folder / STATE_NAME
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _damaged(path, str(exc)) from None
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise _damaged(path, "not a batch record of this version")
        body = {key: value for key, value in data.items() if key != "checksum"}
        if data.get("checksum") != _checksum(body):
            raise _damaged(path, "its checksum does not match")
        try:
            return cls(
                api=str(data.get("api", "openai")),
                submissions=[Submission(**_current(item)) for item in data["submissions"]],
                failures=dict(data["failures"]),
                answers=int(data["answers"]),
                prompt_tokens=int(data["prompt_tokens"]),
                completion_tokens=int(data["completion_tokens"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise _damaged(path, f"unexpected content ({exc})") from None


def _current(item: dict[str, Any]) -> dict[str, Any]:
    """A submission as recorded by this version: a record from before dialects named its two
    OpenAI files apart (`output_file_id`, `error_file_id`); they are its downloads."""
    if not isinstance(item, dict):
        raise TypeError("a submission is not an object")
    item = dict(item)
    downloads = dict(item.pop("downloads", {}))
    for name, suffix in (("output_file_id", "output"), ("error_file_id", "errors")):
        if item.get(name):
            downloads[suffix] = item[name]
        item.pop(name, None)
    counts = item.get("counts")
    if "done" not in item and isinstance(counts, dict):
        item["done"] = int(counts.get("completed", 0)) + int(counts.get("failed", 0))
    return {**item, "downloads": downloads}


def _checksum(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _damaged(path: Path, why: str) -> BatchStateError:
    return BatchStateError(
        f"the batch record {quoted(path)} cannot be trusted ({why}); see `trajectory-compressor batches status`, "
        "or remove that folder to start the batches over (batches already submitted would be paid again)"
    )
