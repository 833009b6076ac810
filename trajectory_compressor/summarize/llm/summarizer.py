"""`LLMSummarizer`: a region's turns in, one summary body out, through an OpenAI-compatible API.

The pieces each live in their own module — the prompt (`prompt`), the transport (`client`),
the request cache (`cache`), the counters (`usage`), masking (`redact`) — and this class only
strings them together: build the prompt, look in the cache, ask the endpoint, clean, store.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from trajectory_compressor.count.counter import TokenCounter
from trajectory_compressor.messages import quoted
from trajectory_compressor.settings import ConfigError, LLMConfig
from trajectory_compressor.summarize.anchor_index import IndexPlan, indexed_request
from trajectory_compressor.summarize.llm.batch_file import ResponsesLoaded, read_batch_output
from trajectory_compressor.summarize.llm.cache import CachedSummary, SummaryCache
from trajectory_compressor.summarize.llm.client import ChatClient, Completion, Reply
from trajectory_compressor.summarize.llm.prompt import clean_reply
from trajectory_compressor.summarize.llm.ratelimit import RequestGate
from trajectory_compressor.summarize.llm.request import (
    MIN_PROMPT_CHARS,
    ChatRequest,
    chat_request,
    messages_within,
)
from trajectory_compressor.summarize.llm.usage import UsageTracker
from trajectory_compressor.types import PromptTooLongError, SummaryError, SummaryRequest, SummaryResult

logger = logging.getLogger(__name__)


@dataclass
class StoredAnswers:
    """What a batch output file gave: the requests answered (now in the cache), the failed ones
    with why, and the tokens the answers were billed."""

    answered: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0


class LLMSummarizer:
    """The `Summarizer` backed by a chat-completions endpoint (`name = "llm"`).

    Safe to call `summarize` concurrently from many tasks of one event loop: the client caps
    requests in flight at `config.max_concurrency`. Raises `SummaryError` when a summary
    cannot be had (fatal status, retries exhausted) and `EndpointAuthError` on 401/403, after
    which every call raises it without sending. `counter` refines the `tpm` estimate and sizes
    the anchor index (`--anchor-index`; without a counter, no index).
    Retries, backoff and the prompt's size come from `config`; `retry_after_cap` is for tests.
    `cache` replaces the configured one (any object with `SummaryCache`'s get/put/close), `gate`
    shares the request limits with other processes (see `ratelimit.RequestGate`).
    """

    name = "llm"
    iterative = True  # a context window's summary is asked as the update of the previous one

    def __init__(
        self,
        config: LLMConfig,
        counter: TokenCounter | None = None,
        *,
        cache: SummaryCache | None = None,
        retry_after_cap: float = 300.0,
        batch_discount: float = 0.5,
        gate: RequestGate | None = None,
    ) -> None:
        if not config.base_url or not config.model:
            raise ConfigError("the llm summarizer needs --base-url and --model")
        self.config = config
        self.counter = counter
        self.usage = UsageTracker(price_in=config.price_in, price_out=config.price_out, batch_discount=batch_discount)
        # Consulted on a cache miss before anything is sent (`--batch`): it may raise
        # `RequestPending` (collect the request for a batch) or `SummaryError` (no live call).
        self.on_miss: Callable[[ChatRequest, SummaryRequest], None] | None = None
        self._client = ChatClient(
            config,
            usage=self.usage,
            clean=partial(clean_reply, redact=config.redact_secrets),
            retry_after_cap=retry_after_cap,
            gate=gate,
        )
        max_prompt_chars = config.max_prompt_chars
        self._max_prompt_chars = max_prompt_chars
        # Lowered when the endpoint refuses a prompt as too long, so later rows start at a size
        # it accepts instead of each paying the same refusals.
        self._fitting_prompt_chars = max_prompt_chars
        self._admission = asyncio.Semaphore(config.max_concurrency)
        self._cache = cache if cache is not None else _open_cache(config)
        # One worker thread owns every SQLite call: a writer waiting on another process's lock
        # (busy_timeout) blocks that thread, never the event loop.
        self._cache_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="summary-cache")
        self._cache_warned = False

    @property
    def endpoint(self) -> str:
        """The endpoint URL without credentials, for reports."""
        return self._client.endpoint

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Summarize `request.turns` within about `request.budget_tokens` tokens.

        A cache hit returns `cache_hit=True` with no tokens spent in this run, and the calls and
        errors the summary took when it was made (so metrics lines do not change on a re-run).
        """
        # The anchor index (`--anchor-index`): the model is asked for the budget it leaves, and
        # the index is added to its text here, on a cache hit or a fresh answer alike.
        request, index = self._indexed(request)
        chat = chat_request(self.config, request)
        messages, max_tokens, key = chat.messages, chat.max_tokens, chat.key
        cached = await self._cache_call(_cache_get, key)
        if cached is not None:
            self.usage.record_cache_hit()
            # Calls and errors are those it took when made: a row's metrics are the same
            # whether its summary came from the endpoint or, on a re-run, from the cache.
            return SummaryResult(
                text=self._finished(cached.text, index),
                summarizer=self.name,
                cache_hit=True,
                calls=cached.calls,
                errors=cached.errors,
                last_error=cached.last_error,
            )
        if self.on_miss is not None:
            self.on_miss(chat, request)
        # Admission as wide as the client's concurrency: a row takes its place here, so the
        # prompt it sends is (re)built with the latest learned size right before it goes out.
        async with self._admission:
            completion = await self._complete_shrinking(request, messages, max_tokens)
        stored = CachedSummary(
            completion.text,
            completion.prompt_tokens,
            completion.completion_tokens,
            completion.calls,
            completion.errors,
            completion.last_error,
        )
        await self._cache_call(partial(_cache_put, model=str(self.config.model)), key, stored)
        return SummaryResult(
            text=self._finished(completion.text, index),
            summarizer=self.name,
            calls=completion.calls,
            errors=completion.errors,
            last_error=completion.last_error,
            cache_hit=False,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
        )

    def _indexed(self, request: SummaryRequest) -> tuple[SummaryRequest, IndexPlan | None]:
        if self.counter is None:
            return request, None
        enabled, redact = self.config.anchor_index, self.config.redact_secrets
        return indexed_request(request, self.counter.count, enabled=enabled, redact=redact)

    def _finished(self, text: str, index: IndexPlan | None) -> str:
        return text if index is None or self.counter is None else index.finish(text, self.counter.count)

    async def _complete_shrinking(
        self, request: SummaryRequest, messages: list[dict[str, str]], max_tokens: int
    ) -> Completion:
        """Ask the endpoint; if it says the prompt exceeds its context, halve the transcript and ask again.

        Small local servers (llama.cpp with a few thousand tokens per slot) refuse long prompts
        with a 400; a shorter, middle-elided transcript still yields a real summary. The calls
        and errors of the refused attempts are counted in the result.
        """
        prompt_chars = self._max_prompt_chars
        calls = errors = 0
        while True:
            if self._fitting_prompt_chars < prompt_chars:
                prompt_chars = self._fitting_prompt_chars
                messages = self._messages_within(request, prompt_chars)
            estimate = None
            if self.config.tpm and self.counter is not None:
                estimate = self.counter.count("\n".join(message["content"] for message in messages))
            try:
                completion = await self._client.complete(
                    messages, max_tokens=max_tokens, label=request.label, prompt_estimate=estimate
                )
            except PromptTooLongError as exc:
                calls, errors = calls + exc.calls, errors + exc.errors
                sent = sum(len(message["content"]) for message in messages)
                prompt_chars = min(prompt_chars, sent) // 2
                if prompt_chars < MIN_PROMPT_CHARS:
                    self.usage.record_failure("context")
                    message = f"{exc} (even at {prompt_chars * 2} characters)"
                    raise SummaryError(message, calls=calls, errors=errors) from None
                self.usage.record_retry("context")
                logger.info("%s: prompt too long for the endpoint; now %d characters", request.label, prompt_chars)
                self._fitting_prompt_chars = min(self._fitting_prompt_chars, prompt_chars)
                messages = self._messages_within(request, prompt_chars)
                continue
            if calls:
                completion = replace(
                    completion,
                    calls=completion.calls + calls,
                    errors=completion.errors + errors,
                    last_error=completion.last_error or "prompt too long for the endpoint",
                )
            return completion

    @property
    def has_cache(self) -> bool:
        return self._cache is not None

    async def load_responses(self, path: Path, *, line_limit: int) -> ResponsesLoaded:
        """Store the answers of a batch output file in the cache, checked as live replies are.

        A run then finds them as cache hits; a request whose answer is missing, failed or
        unusable (empty, cut at `max_tokens`, a line over `line_limit` bytes) is sent live as usual.
        """
        if self._cache is None:
            raise ConfigError("--responses needs the summary cache (drop --no-cache)")
        loaded = ResponsesLoaded(str(path))
        try:
            await self.store_answers(path, loaded, line_limit=line_limit)
        except OSError as exc:
            raise ConfigError(f"cannot read --responses {quoted(path)}: {exc.strerror or exc}") from None
        return loaded

    async def store_answers(
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
        put = partial(_cache_put, model=str(self.config.model))
        stored_answers = StoredAnswers()
        failed, answered = stored_answers.failed, stored_answers.answered
        answered_on: dict[str, int] = {}
        for answer in read_batch_output(path, loaded, line_limit=line_limit):
            if keys is not None and answer.custom_id not in keys:
                loaded.malformed += 1
                loaded.problem(answer.line, "answers a request this batch did not ask")
                continue
            reply = self._client.parse_reply(answer.body) if answer.status == 200 and answer.body else None
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
                    why = self._client.sanitize(answer.error)
                elif reply is not None:
                    why = reply.message
                else:
                    why = self._client.status_message(answer.status or 0, answer.body or b"", "the batch")
                loaded.problem(answer.line, f"no usable answer: {why}")
                failed[answer.custom_id] = why
                continue
            stored = CachedSummary(reply.text, reply.prompt_tokens, reply.completion_tokens, 1, 0, None)
            await self._cache_call(put, answer.custom_id, stored)
            failed.pop(answer.custom_id, None)
            answered.add(answer.custom_id)
            answered_on[answer.custom_id] = answer.line
            loaded.stored += 1
            stored_answers.prompt_tokens += reply.prompt_tokens
            stored_answers.completion_tokens += reply.completion_tokens
        self.usage.record_batch_answers(len(answered), stored_answers.prompt_tokens, stored_answers.completion_tokens)
        return stored_answers

    def _messages_within(self, request: SummaryRequest, prompt_chars: int) -> list[dict[str, str]]:
        return messages_within(self.config, request, prompt_chars)

    def stats(self) -> dict[str, Any]:
        """Counters for the run report; JSON-serializable, free of credentials."""
        return {
            "summarizer": self.name,
            "model": self.config.model,
            "endpoint": self.endpoint,
            "cache": str(self._cache.path) if self._cache is not None else None,
            **self.usage.stats(),
        }

    async def aclose(self) -> None:
        """Close the HTTP session and the cache; pending writes finish first."""
        await self._client.aclose()
        cache, self._cache = self._cache, None
        if cache is not None:
            await asyncio.get_running_loop().run_in_executor(self._cache_thread, cache.close)
        self._cache_thread.shutdown(wait=True)

    async def __aenter__(self) -> LLMSummarizer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _cache_call(self, method: Any, *args: Any) -> Any:
        """Run a cache method on the cache thread; a broken cache degrades to no cache."""
        cache = self._cache
        if cache is None:
            return None
        try:
            return await asyncio.get_running_loop().run_in_executor(self._cache_thread, method, cache, *args)
        except sqlite3.Error as exc:
            if not self._cache_warned:
                self._cache_warned = True
                logger.warning("summary cache %s failed (%s); continuing without it for now", cache.path, exc)
            return None


def _cache_get(cache: SummaryCache, key: str) -> CachedSummary | None:
    """`cache.get`, looked up on the object: a cache given in (a `SharedFolderCache`) has its own."""
    return cache.get(key)


def _cache_put(cache: SummaryCache, key: str, summary: CachedSummary, *, model: str) -> None:
    cache.put(key, summary, model=model)


def _open_cache(config: LLMConfig) -> SummaryCache | None:
    """The configured cache, or None (disabled, or cannot be opened: warn and go on)."""
    if not config.use_cache:
        return None
    try:
        return SummaryCache(config.cache_path)
    except (sqlite3.Error, OSError) as exc:
        logger.warning("cannot open the summary cache (%s); summaries will not be cached", exc)
        return None
