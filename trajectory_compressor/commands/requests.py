"""`requests`: the summary requests a compress run would send, as an OpenAI batch input file.

For a provider whose row in `summarize.llm.dialects.DIALECTS` declares offline batch files
(OpenAI's format, what `vllm run-batch` and the OpenAI-style Files APIs read); any other is refused
in one line naming it (Anthropic's batches take their requests in the create call, and
`compress --batch` drives them whole; Gemini's `--api gemini` is live only).

Rows are read, counted and planned exactly as `compress` does (the same exact notice cost, the
same region), and each request is built by the same code as a live call, so its `custom_id` is
the cache key a run looks for. Run the file through a provider's batch API or `vllm run-batch`,
then `compress ... --responses OUTPUT_FILE` finishes from the answers. Identical requests (two
identical rows) are written once. Only first-pass requests can be known in advance: a summary
that overshoots its budget, or a `--min-fidelity` retry, is asked for live by the run; with
`--windows`, each row's first window's (the later ones update its answer).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from trajectory_compressor.count import TokenCounter
from trajectory_compressor.messages import quoted
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.run.commit import REJECTS_SHOWN, reject_warning
from trajectory_compressor.run.prepare import RejectedRow, ValidRow, planned_rows
from trajectory_compressor.run.row.measure import RowMeasure
from trajectory_compressor.run.row.summary_step import summary_budget, summary_request
from trajectory_compressor.run.row.windows import first_window_request
from trajectory_compressor.settings import ConfigError, RunConfig
from trajectory_compressor.summarize.anchor_index import indexed_request
from trajectory_compressor.summarize.llm.dialects import require
from trajectory_compressor.summarize.llm.dialects.base import custom_id_of
from trajectory_compressor.summarize.llm.request import RequestBuilder
from trajectory_compressor.types import SummaryRequest
from trajectory_compressor.write.collisions import NamedFile, input_files, refuse_foreign_file, refuse_overwrites
from trajectory_compressor.write.run_files import OutputError, new_file_beside


@dataclass
class RequestsWritten:
    """What `write_requests` wrote."""

    path: str
    rows: int = 0
    rejected: int = 0
    requests: int = 0
    duplicates: int = 0

    def summary(self) -> str:
        return (
            f"{self.requests:,} requests for {self.rows:,} rows ({self.rejected:,} rejected, "
            f"{self.duplicates:,} duplicate requests written once) in {quoted(self.path)}"
        )


def write_requests(
    sources: list[InputSource],
    output: Path,
    config: RunConfig,
    counter: TokenCounter,
    say: Callable[[str], None] = lambda line: None,
) -> RequestsWritten:
    """Write the first-pass summary requests of `sources` to `output` (replaced whole at the end);
    each bad record is named to `say` (file and line, the first `REJECTS_SHOWN`), as `compress`
    names them."""
    if not config.llm.model:
        raise ConfigError("requests need the model they are for: pass --model")
    require(config.llm, "requests")  # a provider with offline batch files (`DIALECTS`)
    builder = RequestBuilder(config.llm)
    refuse_overwrites([NamedFile("the output", output)], input_files(sources))
    if not config.output.overwrite:
        refuse_foreign_file(NamedFile("the output", output), is_requests_file)
    plan = config.plan
    measure = RowMeasure(counter, plan, skip_under_target=config.skip_under_target)
    written = RequestsWritten(str(output))
    seen: set[str] = set()
    partial: Path | None = None
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        # A name of its own: two runs writing one output never share a half-written file.
        fd, partial = new_file_beside(output, ".partial")
        with open(fd, "wb") as handle:
            for row in planned_rows(sources, config, counter):
                written.rows += 1
                if isinstance(row, RejectedRow):
                    written.rejected += 1
                    if written.rejected <= REJECTS_SHOWN:
                        say(reject_warning({"file": row.item.source, "line": row.item.line, "error": row.error}))
                    continue
                request = _first_request(row, measure, windows=plan.windows, fill_room=config.llm.anchor_index)
                if request is None:
                    continue
                # As a live call asks it: the budget the anchor index leaves (`--anchor-index`).
                asked, _ = indexed_request(
                    request, counter.count, enabled=config.llm.anchor_index, redact=config.llm.redact_secrets
                )
                chat = builder.build(asked)
                if chat.key in seen:
                    written.duplicates += 1
                    continue
                seen.add(chat.key)
                handle.write(orjson.dumps(builder.batch_line(chat)) + b"\n")
                written.requests += 1
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, output)
        if written.rejected > REJECTS_SHOWN:
            say(f"warning: {written.rejected - REJECTS_SHOWN:,} more bad records not named")
    except OSError as exc:
        raise OutputError(f"cannot write {quoted(output)}: {exc.strerror or exc}") from None
    finally:
        if partial is not None:
            partial.unlink(missing_ok=True)  # gone already once renamed into place
    return written


def is_requests_file(path: Path) -> bool:
    """Whether `path` is a batch file `requests` wrote: empty (no row needed a summary), or its
    first line a JSON object whose `custom_id` is one of our keys (any provider's line shape)."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(_FIRST_LINE_MAX + 1)
    except OSError:
        return False
    if not first:
        return True
    if len(first) > _FIRST_LINE_MAX:
        return False
    try:
        line = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    return isinstance(line, dict) and custom_id_of(line) is not None


_FIRST_LINE_MAX = 64 << 20  # a request line holds one prompt: far less than this


def _first_request(row: ValidRow, measure: RowMeasure, *, windows: bool, fill_room: bool) -> SummaryRequest | None:
    """The row's first-pass request as the run plans it (with `--windows`: its first window's)."""
    if windows:
        return first_window_request(row, measure)
    if row.plan.region is None:
        return None
    exact = measure.with_exact_notice(row, row.plan)  # as the run plans it
    if exact.region is None:
        return None
    plan = measure.plan_config
    budget = summary_budget(exact, plan.summary_target_tokens, plan.target_max_tokens, fill_room=fill_room)
    return summary_request(row, exact, budget)
