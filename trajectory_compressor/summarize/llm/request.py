"""One summary request as the endpoint sees it: its body, and the cache key that names it.

Live calls (`LLMSummarizer`), the batch file of `requests` and the loading of a batch output
(`--responses`) all build requests here, so a request written to a file today is the very one a
live run would send, and its answer, stored under its key, is found by that run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.summarize.llm.cache import cache_key
from trajectory_compressor.summarize.llm.prompt import MAX_TURN_CHARS, build_messages
from trajectory_compressor.types import SummaryRequest

MIN_MAX_TOKENS = 16
MIN_PROMPT_CHARS = 1500  # below this a transcript says too little to summarize
CHAT_COMPLETIONS_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class ChatRequest:
    """The chat-completions body for one summary, and its cache key (the batch `custom_id`)."""

    key: str
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, str]]:
        return list(self.body["messages"])

    @property
    def max_tokens(self) -> int:
        return int(self.body["max_tokens"])


def max_tokens_for(budget_tokens: int) -> int:
    """Room for the reply: twice the summary budget (a summary a little over it is still useful)."""
    return max(MIN_MAX_TOKENS, 2 * budget_tokens)


def turn_chars_for(config: LLMConfig) -> int:
    """One turn may take a quarter of the transcript, so a huge tool output leaves room for others."""
    return min(MAX_TURN_CHARS, config.max_prompt_chars // 4)


def request_body(config: LLMConfig, messages: list[dict[str, str]], max_tokens: int) -> dict[str, Any]:
    """The JSON body sent for `messages`; `extra_body` is merged last, as the user asked."""
    body: dict[str, Any] = {
        "model": config.model,
        "messages": messages,
        "temperature": config.temperature,
        "max_tokens": max_tokens,
    }
    body.update(config.extra_body)
    return body


def chat_request(
    config: LLMConfig,
    request: SummaryRequest,
    *,
    max_turn_chars: int | None = None,
    max_prompt_chars: int | None = None,
) -> ChatRequest:
    """The request for `request` at the configured prompt size (or the one given)."""
    messages = build_messages(
        request,
        redact=config.redact_secrets,
        max_turn_chars=turn_chars_for(config) if max_turn_chars is None else max_turn_chars,
        max_prompt_chars=config.max_prompt_chars if max_prompt_chars is None else max_prompt_chars,
    )
    max_tokens = max_tokens_for(request.budget_tokens)
    key = cache_key(
        model=str(config.model),
        messages=messages,
        temperature=config.temperature,
        max_tokens=max_tokens,
        extra_body=config.extra_body,
        redact=config.redact_secrets,
    )
    return ChatRequest(key, request_body(config, messages, max_tokens))


def messages_within(config: LLMConfig, request: SummaryRequest, prompt_chars: int) -> list[dict[str, str]]:
    """The messages for `request` with the transcript cut to `prompt_chars`: how a prompt the
    endpoint refused as too long is asked again, and how a batch line is made to fit its file."""
    return build_messages(
        request,
        redact=config.redact_secrets,
        max_turn_chars=min(turn_chars_for(config), prompt_chars // 2),
        max_prompt_chars=prompt_chars,
    )


def shortened(config: LLMConfig, request: SummaryRequest, chat: ChatRequest, prompt_chars: int) -> ChatRequest:
    """`chat` with its transcript cut to `prompt_chars`, under the key of its full-size form: the
    answer is stored where the run looks for it, as a live answer to a shortened prompt is."""
    return ChatRequest(chat.key, request_body(config, messages_within(config, request, prompt_chars), chat.max_tokens))


def batch_line(chat: ChatRequest) -> dict[str, Any]:
    """One line of an OpenAI batch input file (also what `vllm run-batch` reads)."""
    return {"custom_id": chat.key, "method": "POST", "url": CHAT_COMPLETIONS_PATH, "body": chat.body}
