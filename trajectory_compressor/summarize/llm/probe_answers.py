"""Answers to recall questions (`eval --probes`), through the summarizer's own client and cache.

No second HTTP client: a question goes through `ChatClient` (concurrency, rate limits, retries,
the dead-endpoint check, the API key only in its header, replies scrubbed of it), in the run's
dialect, and its answer is stored in the summary cache under the same kind of key as a summary
(the dialect's: model, messages, generation parameters, redaction rules), so asking the same
questions again costs nothing. The
context and the question are masked as a summary's transcript is (`render_transcript`); the
question text was masked when it was built (`fidelity.probes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.summarize.fidelity.probes import NOT_IN_CONTEXT
from trajectory_compressor.summarize.llm.cache import CachedSummary
from trajectory_compressor.summarize.llm.cache_thread import CacheThread, open_cache
from trajectory_compressor.summarize.llm.client import ChatClient
from trajectory_compressor.summarize.llm.prompt import render_transcript
from trajectory_compressor.summarize.llm.request import MIN_PROMPT_CHARS
from trajectory_compressor.summarize.llm.usage import UsageTracker
from trajectory_compressor.summarize.redact import redact_secrets
from trajectory_compressor.types import (
    EndpointAuthError,
    EndpointUnreachableError,
    PromptTooLongError,
    SummaryError,
    Turn,
)

ANSWER_TOKENS = 64  # a value, or NOT IN CONTEXT: a short reply
_ANSWER_CHARS = 400  # of a reply kept: enough for any value, not for a dump of the context

PROBE_SYSTEM_PROMPT = f"""\
You answer one question about a conversation between a user, an AI assistant and its tools. \
Answer only from the conversation shown, never from general knowledge. Reply with the exact \
value asked for and nothing else. If the conversation does not show it, reply exactly: {NOT_IN_CONTEXT}"""


@dataclass(frozen=True)
class ProbeAnswer:
    """A model's answer (None when it could not be had), and whether it came from the cache."""

    text: str | None
    error: str | None = None
    cache_hit: bool = False


class ProbeAnswerer:
    """Asks recall questions about a context at temperature 0; safe to call from many tasks.

    Raises `EndpointAuthError` / `EndpointUnreachableError` as the summarizer does (the caller
    stops); any other failure is the question's own (`ProbeAnswer.error`)."""

    def __init__(self, config: LLMConfig, *, retry_after_cap: float = 300.0) -> None:
        self.config = replace(config, temperature=0.0)
        self.usage = UsageTracker(price_in=config.price_in, price_out=config.price_out)
        self._client = ChatClient(self.config, usage=self.usage, clean=_clean_answer, retry_after_cap=retry_after_cap)
        self._cache = CacheThread(open_cache(config, "answers"), model=str(config.model), name="probe-cache")

    def messages(self, context: Sequence[Turn], question: str, prompt_chars: int | None = None) -> list[dict[str, str]]:
        """The request for `question` about `context` (masked, cut to the prompt size)."""
        chars = prompt_chars or self.config.max_prompt_chars
        redact = self.config.redact_secrets
        transcript = render_transcript(context, redact=redact, max_turn_chars=chars, max_prompt_chars=chars)
        asked = redact_secrets(question) if redact else question
        user = (
            f"<conversation>\n{transcript}\n</conversation>\n\n{asked}\n"
            f"Reply with the exact value only, or {NOT_IN_CONTEXT} if the conversation above does not show it."
        )
        return [{"role": "system", "content": PROBE_SYSTEM_PROMPT}, {"role": "user", "content": user}]

    async def answer(self, context: Sequence[Turn], question: str) -> ProbeAnswer:
        """The model's answer to `question` from `context` alone, from the cache when asked before."""
        messages = self.messages(context, question)
        key = self._client.dialect.cache_key(messages, ANSWER_TOKENS)
        cached = await self._cache.get(key)
        if cached is not None:
            self.usage.record_cache_hit()
            return ProbeAnswer(cached.text, cache_hit=True)
        prompt_chars = self.config.max_prompt_chars
        while True:
            try:
                completion = await self._client.complete(messages, max_tokens=ANSWER_TOKENS, label="probe")
            except PromptTooLongError as exc:  # a small local server: ask again with less context
                prompt_chars = min(prompt_chars, sum(len(m["content"]) for m in messages)) // 2
                if prompt_chars < MIN_PROMPT_CHARS:
                    return ProbeAnswer(None, f"{exc} (even at {prompt_chars * 2} characters)")
                self.usage.record_retry("context")
                messages = self.messages(context, question, prompt_chars)
                continue
            except (EndpointAuthError, EndpointUnreachableError):
                raise  # every question would fail: the caller stops
            except SummaryError as exc:
                return ProbeAnswer(None, str(exc))
            break
        stored = CachedSummary(completion.text, completion.prompt_tokens, completion.completion_tokens)
        await self._cache.put(key, stored)
        return ProbeAnswer(completion.text)

    def stats(self) -> dict[str, Any]:
        """What the questions cost: requests, cache hits, tokens (and cost, with prices)."""
        return {"model": self.config.model, "endpoint": self._client.endpoint, **self.usage.stats()}

    async def aclose(self) -> None:
        await self._client.aclose()
        await self._cache.aclose()


def _clean_answer(text: str) -> str:
    """A reply as scored: trimmed, credentials masked, cut (a reply is a value, not a transcript)."""
    return redact_secrets(text.strip())[:_ANSWER_CHARS]
