"""Answers from a batch output into the summary cache, each checked as a live reply is.

`--responses FILE` (a provider's or `vllm run-batch`'s output of `requests`) and every batch of
`--batch` come through here: an answer is read by the dialect, judged by the same `ReplyReader`
as a live reply (empty, cut at `max_tokens`, no content, the key scrubbed), and stored under its
`custom_id`, the request's cache key, where the run finds it. Each request is stored and counted
once: a second answer (a runner that re-ran part of its file) is reported and ignored, so it
doubles neither the batch tokens nor the cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from trajectory_compressor.count.counter import TokenCounter
from trajectory_compressor.messages import quoted
from trajectory_compressor.settings import ConfigError, LLMConfig
from trajectory_compressor.summarize.llm.batch_file import ResponsesLoaded, read_batch_output
from trajectory_compressor.summarize.llm.cache import CachedSummary
from trajectory_compressor.summarize.llm.cache_thread import CacheThread, open_cache
from trajectory_compressor.summarize.llm.credentials import Credentials
from trajectory_compressor.summarize.llm.dialects import batch_dialect_for
from trajectory_compressor.summarize.llm.dialects.base import with_batch_lines
from trajectory_compressor.summarize.llm.reply import Reply, ReplyReader
from trajectory_compressor.summarize.llm.reply_text import reply_cleaner
from trajectory_compressor.summarize.llm.usage import UsageTracker


@dataclass
class StoredAnswers:
    """What a batch output file gave: the requests answered (now in the cache), the failed ones
    with why, and the tokens the answers were billed."""

    answered: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0


class AnswerStore:
    """Stores batch answers in `cache` through `reader`'s verdict; counts them in `usage`."""

    def __init__(self, reader: ReplyReader, cache: CacheThread, usage: UsageTracker) -> None:
        self.reader = reader
        self.cache = cache
        self.usage = usage

    @classmethod
    def for_endpoint(cls, config: LLMConfig, counter: TokenCounter | None = None) -> AnswerStore:
        """A store of its own for `config`'s endpoint: its dialect, its cache, counters of its own
        (the batch rounds count the answers in their record, and hand the run the totals); an
        answer is cleaned as a live reply is, the tokenizer's control tokens (`counter`) included."""
        dialect = batch_dialect_for(config)
        reader = ReplyReader(dialect, Credentials(config, dialect), reply_cleaner(config, counter))
        cache = CacheThread(open_cache(config), model=str(config.model), name="batch-answers")
        return cls(reader, cache, UsageTracker(config.price_in, config.price_out))

    async def aclose(self) -> None:
        await self.cache.aclose()

    async def load_responses(self, path: Path, *, line_limit: int) -> ResponsesLoaded:
        """`--responses`: store the answers of a batch output file, before the run asks.

        A run then finds them as cache hits; a request whose answer is missing, failed or
        unusable (empty, cut at `max_tokens`, a line over `line_limit` bytes) is sent live as usual.
        """
        if self.cache.cache is None:
            raise ConfigError("--responses needs the summary cache (drop --no-cache)")
        loaded = ResponsesLoaded(str(path))
        try:
            await self.store(path, loaded, line_limit=line_limit)
        except OSError as exc:
            raise ConfigError(f"cannot read --responses {quoted(path)}: {exc.strerror or exc}") from None
        return loaded

    async def store(
        self,
        path: Path,
        loaded: ResponsesLoaded,
        *,
        line_limit: int,
        keys: set[str] | None = None,
        already: set[str] | None = None,
    ) -> StoredAnswers:
        """Store each usable answer of batch output `path` in the cache; say which failed and why.

        `keys`: the requests the file may answer (a provider's file for a batch of ours); an
        answer to any other request is counted malformed. The tokens of the stored answers are
        counted as batch tokens, each request once: a second answer to a request (on another
        line, or one in `already`, answered by an earlier file) is counted `repeated` and ignored.
        """
        credentials = self.reader.credentials
        stored_answers = StoredAnswers()
        failed, answered = stored_answers.failed, stored_answers.answered
        answered_on: dict[str, int] = {}
        for answer in read_batch_output(
            path, loaded, line_limit=line_limit, dialect=with_batch_lines(self.reader.dialect)
        ):
            if keys is not None and answer.custom_id not in keys:
                loaded.malformed += 1
                loaded.problem(answer.line, "answers a request this batch did not ask")
                continue
            reply = self.reader.read(answer.body) if answer.status == 200 and answer.body else None
            earlier = answered_on.get(answer.custom_id)
            if isinstance(reply, Reply) and (earlier is not None or answer.custom_id in (already or ())):
                loaded.repeated += 1
                where = f"on line {earlier}" if earlier is not None else "in an earlier file"
                loaded.problem(answer.line, f"a second answer to a request answered {where}: ignored")
                continue
            if not isinstance(reply, Reply):
                if answer.custom_id in answered:
                    continue  # answered on another line already
                loaded.failed += 1
                if answer.error:
                    why = credentials.sanitize(answer.error)
                elif reply is not None:
                    why = reply.message
                else:
                    why = credentials.status_message(answer.status or 0, answer.body or b"", "the batch")
                loaded.problem(answer.line, f"no usable answer: {why}")
                failed[answer.custom_id] = why
                continue
            stored = CachedSummary(reply.text, reply.prompt_tokens, reply.completion_tokens, 1, 0, None)
            await self.cache.put(answer.custom_id, stored)
            failed.pop(answer.custom_id, None)
            answered.add(answer.custom_id)
            answered_on[answer.custom_id] = answer.line
            loaded.stored += 1
            stored_answers.prompt_tokens += reply.prompt_tokens
            stored_answers.completion_tokens += reply.completion_tokens
        self.usage.record_batch_answers(len(answered), stored_answers.prompt_tokens, stored_answers.completion_tokens)
        return stored_answers
