"""Plain record types shared by every stage of the pipeline.

The stages (read → count → plan → summarize → write) pass these small values to each other and
never reach into each other's internals; keeping them here, free of I/O, lets each stage be
tested alone and lets the planner stay a pure function of numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

if TYPE_CHECKING:  # the scorer imports these records; only type checkers need it here
    from trajectory_compressor.summarize.fidelity import Fidelity

Role = Literal["system", "human", "gpt", "tool"]
ROLES: frozenset[str] = frozenset({"system", "human", "gpt", "tool"})

# Who wrote a summary (`Summarizer.name`, `SummaryResult.summarizer`, the metrics' `summarizer`).
SummarizerName = Literal["llm", "extractive"]
LLM_SUMMARIZER: Final = "llm"
EXTRACTIVE_SUMMARIZER: Final = "extractive"

SUMMARY_PREFIX = "[CONTEXT SUMMARY]:"
# How summary turns of earlier compactions begin: ours, and the Hermes agent's live compressor's.
EARLIER_SUMMARY_PREFIXES = (SUMMARY_PREFIX, "[CONTEXT COMPACTION")


@dataclass(frozen=True)
class Turn:
    """One conversation turn in the canonical ShareGPT vocabulary (`from` / `value`)."""

    role: str
    value: str


@dataclass(frozen=True)
class KeptTurn:
    """Original turn `index`, written back as the very same object."""

    index: int


@dataclass(frozen=True)
class EditedTurn:
    """Original turn `index` with its text replaced by `value`; its other keys are kept.

    For OpenAI messages only text-only messages can be edited (not an assistant message with
    ``tool_calls`` nor a tool result), since their text is rendered from structure; a tool
    result's own `content` can be given instead (`content`), `value` then being its rendering.
    """

    index: int
    value: str
    content: str | None = None


@dataclass(frozen=True)
class NewTurn:
    """A turn that did not exist in the record (the summary), built in the record's format."""

    turn: Turn


OutputTurn = KeptTurn | EditedTurn | NewTurn


@dataclass(frozen=True)
class SourceRecord:
    """One record as read from an input, before validation.

    `record` is the parsed object, or None when the text could not be parsed (then `error`
    says why and `raw` holds the text, so the reject file can show the user what was wrong).
    `raw` is the record's source bytes when the format has them (JSONL): an unchanged row is
    then written back exactly as it came in.
    `line` is the 1-based line of a JSONL file or the 1-based record number of other formats.
    `raw_is_json` marks a rejected record whose `raw` is still valid JSON (nested too deep to
    parse, or holding a lone surrogate): it is written back unchanged like any valid-JSON reject.
    """

    source: str
    line: int
    record: Any = None
    raw: bytes | None = None
    error: str | None = None
    raw_is_json: bool = False


class SummaryCarry:
    """What a summarizer may keep from one request of a row to the next, when each region is the
    one before with more turns after it (the extractive digest of a context window's region:
    `--windows` then reads each turn once, as an LLM updates its summary with the new turns).
    The row code makes one per row and passes it in each request; a summarizer checks that the
    state it finds is for a prefix of the request's turns before it uses it."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state: object = None


@dataclass(frozen=True)
class SummaryRequest:
    """What a summarizer is asked to condense: the region's turns and a token budget."""

    turns: tuple[Turn, ...]
    budget_tokens: int
    label: str = ""  # where the row came from ("file.jsonl:12"), for messages only
    task: str = ""  # the row's first user request (from the head): context, not to be summarized
    feedback: str = ""  # what an earlier summary of this region missed, when asking again
    previous_summary: str = ""  # the summary of what came before `turns`, to update (not rewrite)
    structured: bool = False  # the sectioned summary of a context window (Goal, Progress, ...)
    carry: SummaryCarry | None = field(default=None, compare=False, repr=False)  # never part of what is asked
    # The end of the turn before `turns` and the start of the one after (`masking.EDGE_CHARS` each):
    # a credential a split output cut across the region's edge is masked by them, never asked.
    edges: tuple[str, str] = field(default=("", ""), compare=False, repr=False)
    # The credentials known anywhere in the row (`masking.RowSecrets`: masked by a rule, read out of
    # a credential's file, variable or store, or written into one), outside `turns` too: a token the
    # kept head sends and the region uses bare is masked there. Asked for when the request is
    # masked, not when it is built. None: not read from the row; `turns` alone are read.
    known_secrets: Callable[[], tuple[str, ...]] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class SummaryResult:
    """A summary body (without the `[CONTEXT SUMMARY]:` prefix) and how it was obtained.

    `calls` and `errors` are the requests this one summary took (counted in the summarizer's
    tally, `summarize.tally`; from the cache: those it took when made). A row's metrics do not read
    them: the row code counts every attempt of a summary in one tally of its own.
    """

    text: str
    summarizer: SummarizerName
    calls: int = 0
    errors: int = 0
    last_error: str | None = None
    cache_hit: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens: int | None = None  # tokens of the summary turn's value (prefix included), if measured
    fidelity_retried: bool = False  # asked for again because the first one fell short (--min-fidelity)
    fidelity: Fidelity | None = None  # its score, when the fidelity gate already measured it


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message (or its type): user-facing errors are one line."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


class SummaryError(Exception):
    """A summary could not be produced after every retry; the row takes the failure policy.

    The message must never contain a credential: it is written to metrics and logs. The
    requests it took are in the current tally (`summarize.tally`).
    """


class PromptTooLongError(SummaryError):
    """The endpoint refused the prompt as longer than its context window (a 400 that says so).

    The LLM summarizer answers it by sending a shorter transcript, rather than failing the row.
    """


class EndpointAuthError(SummaryError):
    """The endpoint refused our credentials (401/403): every request would fail, so stop the run."""


class EndpointUnreachableError(SummaryError):
    """The endpoint never answered since the run started (see `summarize.llm.contact`): every
    request would fail, so stop the run."""


class Summarizer(Protocol):
    """Turns a compressible region into one summary body.

    Implementations: `summarize.extractive.ExtractiveSummarizer` (offline, deterministic) and
    `summarize.llm.LLMSummarizer` (OpenAI-compatible endpoint). `summarize` raises
    `SummaryError` when it cannot produce a summary; it never returns a placeholder.
    """

    name: SummarizerName

    async def summarize(self, request: SummaryRequest) -> SummaryResult: ...

    def stats(self) -> dict[str, Any]:
        """Usage counters for the run report (requests, tokens, retries, cache hits, cost)."""
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class CompressionRegion:
    """Half-open turn range [start, end) to be replaced by one summary turn."""

    start: int
    end: int

    @property
    def turns_count(self) -> int:
        return self.end - self.start

    def to_dict(self) -> dict[str, int]:
        # `end_idx` is inclusive, as in the reference tool's metrics.
        return {"start_idx": self.start, "end_idx": self.end - 1, "turns_count": self.turns_count}


@dataclass(frozen=True)
class RowMetrics:
    """One line of the per-trajectory metrics file.

    Frozen: built once, from what the row became (`run.row.metrics.row_metrics`).
    """

    index: int
    source: str
    line: int
    id: Any = None
    original_tokens: int = 0
    compressed_tokens: int = 0
    tokens_saved: int = 0
    compression_ratio: float = 1.0
    original_turns: int = 0
    compressed_turns: int = 0
    turns_removed: int = 0
    compression_region: dict[str, int] | None = None
    was_compressed: bool = False
    skipped_under_target: bool = False
    still_over_limit: bool = False
    rejected: bool = False
    written: bool = True  # whether the row is in the output dataset (not: dropped, invalid JSON, dry run)
    reason: str | None = None
    summary_tokens: int = 0
    summarizer: SummarizerName | None = None
    summary_calls: int = 0
    summary_errors: int = 0
    last_error: str | None = None
    passes: int = 0
    # Outcome fields written only when they apply (None: omitted from the metrics line).
    planned_tokens: int | None = None  # a dry run: the row's size as planned, each summary at its budget
    summary_failed: bool | None = None  # set when the summary came from the fallback, or failed
    truncated: bool | None = None  # `--over-limit truncate` applied to the row
    turns_truncated: int | None = None
    dropped: bool | None = None  # `--over-limit drop`: the row is not in the dataset
    fidelity: dict[str, Any] | None = None  # a compressed row: recall of its region's salient items
    unsupported: list[str] | None = None  # a compressed row: summary items found nowhere in the row
    fidelity_retried: bool | None = None  # the LLM was asked again for a summary that fell short
    gpt_turns: int | None = None  # gpt turns of the input row (a valid row)
    train_turns: int | None = None  # of them, those this record holds verbatim as training targets
    window: dict[str, int] | None = None  # --windows: {"index", "count", "input_index"} of this record
    elided_turns: int | None = None  # --windows: tool results cut in the middle so the window fits
    pruned_turns: int | None = None  # --prune-tool-outputs: tool results this record shows as placeholders
    pruned_tokens: int | None = None  # what those results held, less their placeholders

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k not in _OPTIONAL_METRICS}
        if self.id is None:
            data.pop("id")
        data["compression_ratio"] = round(self.compression_ratio, 4)
        data.update((k, getattr(self, k)) for k in _OPTIONAL_METRICS if getattr(self, k) is not None)
        return data


@dataclass(frozen=True)
class ExampleRow:
    """One compressed row as the HTML report shows it: the replaced turns and their summary.

    Held in memory for one row only (the first compressed one in input order), its turns cut
    to what the page shows; texts are masked when the report is drawn.
    """

    index: int
    where: str
    region: tuple[Turn, ...]
    summary: str
    fidelity: dict[str, Any] | None


_OPTIONAL_METRICS = (
    "planned_tokens",
    "summary_failed",
    "truncated",
    "turns_truncated",
    "dropped",
    "fidelity",
    "unsupported",
    "fidelity_retried",
    "gpt_turns",
    "train_turns",
    "window",
    "elided_turns",
    "pruned_turns",
    "pruned_tokens",
)
