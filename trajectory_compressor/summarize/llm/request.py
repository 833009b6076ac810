"""One summary request as the endpoint sees it: its prompt, its body, and the cache key that names it.

Live calls (`LLMSummarizer`), the batch files of `--batch` and `requests`, and the loading of a
batch output (`--responses`) all build requests here, so a request written to a file today is
the very one a live run would send, and its answer, stored under its key, is found by that run.
The prompt is the same for every provider; the body and the key are the dialect's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.summarize.llm.dialects import dialect_for
from trajectory_compressor.summarize.llm.dialects.base import Dialect, Messages, with_batch_lines
from trajectory_compressor.summarize.llm.prompt import MAX_TURN_CHARS, build_messages
from trajectory_compressor.types import SummaryRequest

MIN_MAX_TOKENS = 16
MIN_PROMPT_CHARS = 1500  # below this a transcript says too little to summarize


@dataclass(frozen=True)
class ChatRequest:
    """One summary request: its prompt (provider-neutral), `max_tokens`, the dialect's body, and
    its cache key (the batch `custom_id`)."""

    key: str
    messages: Messages
    max_tokens: int
    body: dict[str, Any]

    @property
    def prompt_chars(self) -> int:
        return sum(len(message["content"]) for message in self.messages)


def max_tokens_for(budget_tokens: int) -> int:
    """Room for the reply: twice the summary budget (a summary a little over it is still useful)."""
    return max(MIN_MAX_TOKENS, 2 * budget_tokens)


def turn_chars_for(config: LLMConfig) -> int:
    """One turn may take a quarter of the transcript, so a huge tool output leaves room for others."""
    return min(MAX_TURN_CHARS, config.max_prompt_chars // 4)


class RequestBuilder:
    """The requests of one endpoint: `config`'s prompt size and redaction, its dialect's body and key."""

    def __init__(self, config: LLMConfig, dialect: Dialect | None = None) -> None:
        self.config = config
        self.dialect = dialect or dialect_for(config)

    def build(self, request: SummaryRequest) -> ChatRequest:
        """The request for `request` at the configured prompt size."""
        config = self.config
        messages = build_messages(
            request,
            redact=config.redact_secrets,
            max_turn_chars=turn_chars_for(config),
            max_prompt_chars=config.max_prompt_chars,
        )
        max_tokens = max_tokens_for(request.budget_tokens)
        key = self.dialect.cache_key(messages, max_tokens)
        return ChatRequest(key, messages, max_tokens, self.dialect.body(messages, max_tokens))

    def messages_within(self, request: SummaryRequest, prompt_chars: int) -> Messages:
        """The messages for `request` with the transcript cut to `prompt_chars`: how a prompt the
        endpoint refused as too long is asked again, and how a batch line is made to fit its file."""
        return build_messages(
            request,
            redact=self.config.redact_secrets,
            max_turn_chars=min(turn_chars_for(self.config), prompt_chars // 2),
            max_prompt_chars=prompt_chars,
        )

    def shortened(self, request: SummaryRequest, chat: ChatRequest, prompt_chars: int) -> ChatRequest:
        """`chat` with its transcript cut to `prompt_chars`, under the key of its full-size form: the
        answer is stored where the run looks for it, as a live answer to a shortened prompt is."""
        messages = self.messages_within(request, prompt_chars)
        return ChatRequest(chat.key, messages, chat.max_tokens, self.dialect.body(messages, chat.max_tokens))

    def batch_line(self, chat: ChatRequest) -> dict[str, Any]:
        """One line of the dialect's batch input (OpenAI's is also what `vllm run-batch` reads); only
        a provider whose row declares batches has them (`dialects.require` asked first)."""
        return with_batch_lines(self.dialect).batch_line(chat.key, chat.body)
