"""`LLMSummarizer`: a region's turns in, one summary body out, through a chat API.

The pieces each live in their own module — the prompt (`prompt`), the request and its key
(`request`), the provider's dialect (`dialects/`), the transport (`client`), the request cache
(`cache`, `cache_thread`), batch answers (`answers`), the counters (`usage`), masking (`redact`) —
and this class only strings them together: build the request, look in the cache, ask the endpoint
(or the miss policy), clean, store.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from trajectory_compressor.count.counter import TokenCounter
from trajectory_compressor.settings import ConfigError, LLMConfig
from trajectory_compressor.summarize.anchor_index import IndexPlan, indexed_request
from trajectory_compressor.summarize.llm.answers import AnswerStore
from trajectory_compressor.summarize.llm.batch_file import ResponsesLoaded
from trajectory_compressor.summarize.llm.cache import CachedSummary
from trajectory_compressor.summarize.llm.cache_thread import CacheStore, CacheThread, open_cache
from trajectory_compressor.summarize.llm.client import ChatClient, Completion
from trajectory_compressor.summarize.llm.dialects.base import Messages
from trajectory_compressor.summarize.llm.ratelimit import RequestGate
from trajectory_compressor.summarize.llm.reply_text import reply_cleaner
from trajectory_compressor.summarize.llm.request import MIN_PROMPT_CHARS, ChatRequest, RequestBuilder
from trajectory_compressor.summarize.llm.usage import UsageTracker
from trajectory_compressor.summarize.oldest_first import OrderedSlots, OrderedWorker
from trajectory_compressor.summarize.tally import CallTally, counting, note_cached
from trajectory_compressor.types import (
    LLM_SUMMARIZER,
    PromptTooLongError,
    SummarizerName,
    SummaryError,
    SummaryRequest,
    SummaryResult,
)

logger = logging.getLogger(__name__)

# What a summarizer does with a request the cache cannot answer, before anything is sent: return
# (ask the endpoint), or raise (`SummaryError`: no live call; the batch rounds' `RequestPending`:
# the request goes into a batch file and its row waits).
MissPolicy = Callable[[ChatRequest, SummaryRequest], None]


class LLMSummarizer:
    """The `Summarizer` backed by a chat endpoint of any dialect (`name = "llm"`).

    Safe to call `summarize` concurrently from many tasks of one event loop: the client caps
    requests in flight at `config.max_concurrency`. Raises `SummaryError` when a summary
    cannot be had (fatal status, retries exhausted) and `EndpointAuthError` on 401/403, after
    which every call raises it without sending. `counter` refines the `tpm` estimate and sizes
    the anchor index (`--anchor-index`; without a counter, no index).
    Retries, backoff and the prompt's size come from `config`; `retry_after_cap` is for tests.
    `cache` replaces the configured one (any `cache_thread.CacheStore`), `gate` shares the request
    limits with other processes (see `ratelimit.RequestGate`), `usage` is where the counters go
    (the run's report reads it; the batch rounds add their answers to it), and `on_miss` is
    consulted on a cache miss before anything is sent (see `MissPolicy`). All are fixed here, at
    construction: a summarizer with another policy is another summarizer.
    """

    name: SummarizerName = LLM_SUMMARIZER
    iterative = True  # a context window's summary is asked as the update of the previous one

    def __init__(
        self,
        config: LLMConfig,
        counter: TokenCounter | None = None,
        *,
        cache: CacheStore | None = None,
        gate: RequestGate | None = None,
        usage: UsageTracker | None = None,
        on_miss: MissPolicy | None = None,
        retry_after_cap: float = 300.0,
    ) -> None:
        if not config.base_url or not config.model:
            raise ConfigError("the llm summarizer needs --base-url and --model")
        self.config = config
        self.counter = counter
        self.usage = usage if usage is not None else UsageTracker(config.price_in, config.price_out)
        self._on_miss = on_miss
        self._clean = reply_cleaner(config, counter)
        self._client = ChatClient(
            config,
            usage=self.usage,
            clean=self._clean,
            retry_after_cap=retry_after_cap,
            gate=gate,
        )
        self._requests = RequestBuilder(config, self._client.dialect)
        self._max_prompt_chars = config.max_prompt_chars
        # Lowered when the endpoint refuses a prompt as too long, so later rows start at a size
        # it accepts instead of each paying the same refusals.
        self._fitting_prompt_chars = config.max_prompt_chars
        self._admission = OrderedSlots(config.max_concurrency)  # the oldest row first
        self._cache = CacheThread(cache if cache is not None else open_cache(config), model=str(config.model))
        self._answers = AnswerStore(self._client.reader, self._cache, self.usage)
        # The anchor index and the prompt (ranking a region's anchors, the transcript, redaction:
        # milliseconds a row) are made on this thread, not the event loop: the loop is left to
        # the requests in flight, which it must send and read back on time to keep the pipe full.
        # The oldest row's first, as admission: see `oldest_first`.
        self._prompts = OrderedWorker("tc-prompts")

    @property
    def endpoint(self) -> str:
        """The endpoint URL without credentials, for reports."""
        return self._client.endpoint

    @property
    def has_cache(self) -> bool:
        return self._cache.cache is not None

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Summarize `request.turns` within about `request.budget_tokens` tokens.

        A cache hit returns `cache_hit=True` with no tokens spent in this run, and the calls and
        errors the summary took when it was made (so metrics lines do not change on a re-run).
        The requests are counted in a tally of this summary's own (`summarize.tally`), nested
        in the caller's: they fill the result's `calls` and `errors` and the cache entry's.
        """
        with counting() as tally:
            return await self._summarize(request, tally)

    async def _summarize(self, request: SummaryRequest, tally: CallTally) -> SummaryResult:
        # The anchor index (`--anchor-index`): the model is asked for the budget it leaves, and
        # the index is added to its text here, on a cache hit or a fresh answer alike.
        request, index, chat = await self._prompts.call(self._prepared, request)
        cached = await self._cache.get(chat.key)
        # A stored summary is cleaned again (`reply_text`, `redact`): one stored under older
        # rules is judged by today's, and one they refuse is asked for again.
        text = self._clean(cached.text) if cached is not None else None
        if cached is not None and isinstance(text, str) and text:
            self.usage.record_cache_hit()
            # Calls and errors are those it took when made: a row's metrics are the same
            # whether its summary came from the endpoint or, on a re-run, from the cache.
            note_cached(cached.calls, cached.errors)
            return SummaryResult(
                text=await self._finished_off_loop(text, index),
                summarizer=self.name,
                cache_hit=True,
                calls=tally.calls,
                errors=tally.errors,
                last_error=cached.last_error,
            )
        if cached is not None:
            logger.info("%s: the cached summary is refused under the current rules; asking again", request.label)
        if self._on_miss is not None:
            self._on_miss(chat, request)
        # Admission as wide as the client's concurrency: a row takes its place here, so the
        # prompt it sends is (re)built with the latest learned size right before it goes out.
        async with self._admission:
            completion = await self._complete_shrinking(request, chat.messages, chat.max_tokens)
        stored = CachedSummary(
            completion.text,
            completion.prompt_tokens,
            completion.completion_tokens,
            tally.calls,
            tally.errors,
            completion.last_error,
        )
        await self._cache.put(chat.key, stored)
        return SummaryResult(
            text=await self._finished_off_loop(completion.text, index),
            summarizer=self.name,
            calls=tally.calls,
            errors=tally.errors,
            last_error=completion.last_error,
            cache_hit=False,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
        )

    def _prepared(self, request: SummaryRequest) -> tuple[SummaryRequest, IndexPlan | None, ChatRequest]:
        """What is asked for `request` (on `_prompts`' thread): the request less its index, the
        index, and the chat request."""
        asked, index = self._indexed(request)
        return asked, index, self._requests.build(asked)

    async def _finished_off_loop(self, text: str, index: IndexPlan | None) -> str:
        if index is None or self.counter is None:
            return text
        return await self._prompts.call(self._finished, text, index)

    def _indexed(self, request: SummaryRequest) -> tuple[SummaryRequest, IndexPlan | None]:
        if self.counter is None:
            return request, None
        enabled, redact = self.config.anchor_index, self.config.redact_secrets
        return indexed_request(request, self.counter.count, enabled=enabled, redact=redact)

    def _finished(self, text: str, index: IndexPlan | None) -> str:
        return text if index is None or self.counter is None else index.finish(text, self.counter.count)

    async def _complete_shrinking(self, request: SummaryRequest, messages: Messages, max_tokens: int) -> Completion:
        """Ask the endpoint; if it says the prompt exceeds its context, halve the transcript and ask again.

        Small local servers (llama.cpp with a few thousand tokens per slot) refuse long prompts
        with a 400; a shorter, middle-elided transcript still yields a real summary. Every
        attempt, refused or not, is counted in the summary's tally as it is sent.
        """
        prompt_chars = self._max_prompt_chars
        shrunk = False
        while True:
            if self._fitting_prompt_chars < prompt_chars:
                prompt_chars = self._fitting_prompt_chars
                messages = self._requests.messages_within(request, prompt_chars)
            estimate = None
            if self.config.tpm and self.counter is not None:
                estimate = self.counter.count("\n".join(message["content"] for message in messages))
            try:
                completion = await self._client.complete(
                    messages, max_tokens=max_tokens, label=request.label, prompt_estimate=estimate
                )
            except PromptTooLongError as exc:
                shrunk = True
                sent = sum(len(message["content"]) for message in messages)
                prompt_chars = min(prompt_chars, sent) // 2
                if prompt_chars < MIN_PROMPT_CHARS:
                    self.usage.record_failure("context")
                    message = f"{exc} (even at {prompt_chars * 2} characters)"
                    raise SummaryError(message) from None
                self.usage.record_retry("context")
                logger.info("%s: prompt too long for the endpoint; now %d characters", request.label, prompt_chars)
                self._fitting_prompt_chars = min(self._fitting_prompt_chars, prompt_chars)
                messages = self._requests.messages_within(request, prompt_chars)
                continue
            if shrunk and completion.last_error is None:
                completion = replace(completion, last_error="prompt too long for the endpoint")
            return completion

    async def load_responses(self, path: Path, *, line_limit: int) -> ResponsesLoaded:
        """`--responses`: store a batch output file's answers in this summarizer's cache first."""
        return await self._answers.load_responses(path, line_limit=line_limit)

    def stats(self) -> dict[str, Any]:
        """Counters for the run report; JSON-serializable, free of credentials."""
        return {
            "summarizer": self.name,
            "model": self.config.model,
            "endpoint": self.endpoint,
            "cache": str(self._cache.path) if self._cache.path is not None else None,
            **self.usage.stats(),
        }

    async def aclose(self) -> None:
        """Close the HTTP session and the cache; pending writes finish first."""
        await self._client.aclose()
        await self._cache.aclose()
        self._prompts.close()

    async def __aenter__(self) -> LLMSummarizer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
