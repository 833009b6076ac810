"""The settings of the summary endpoint: how to reach it (`LLMConfig`) and its batch API (`BatchConfig`).

Two parts of the settings tree (`settings/tree.py`, whose root `RunConfig` holds them), kept in a
module of their own: the LLM summarizer and the batch phase read them, no other stage does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from trajectory_compressor.settings.declare import ASKS, BOTH, PROBES, check_part, setting

ApiName = Literal["openai", "anthropic", "gemini"]  # the provider dialects (`summarize/llm/dialects/`)


@dataclass(frozen=True)
class LLMConfig:
    """How to reach a chat endpoint (OpenAI-compatible, Anthropic's or Gemini's own API), and how hard to push it."""

    api: ApiName = setting(
        "openai", "choice", choices=get_args(ApiName), yaml="summarization.api", commands=(*ASKS, "eval"),
        group="endpoint", common=True,
        help="The endpoint's API: openai (chat completions, any compatible server), anthropic (Messages API) or "
        "gemini (generateContent, live only).",
    )  # fmt: skip
    base_url: str | None = setting(
        None, "url", optional=True, yaml="summarization.base_url", record=True, commands=PROBES,
        group="endpoint", common=True,
        help="The endpoint, e.g. http://127.0.0.1:8080/v1 [env OPENAI_BASE_URL; --api anthropic: env "
        "ANTHROPIC_BASE_URL, then https://api.anthropic.com; --api gemini: env GEMINI_BASE_URL, then "
        "https://generativelanguage.googleapis.com/v1beta].",
    )  # fmt: skip
    model: str | None = setting(
        None, "str", optional=True, yaml="summarization.model", record=True, commands=(*ASKS, "eval"),
        group="endpoint", common=True,
        help="Model name sent to the endpoint.",
    )  # fmt: skip
    api_key_env: str | None = setting(
        None, "str", optional=True, yaml="summarization.api_key_env", commands=PROBES, group="endpoint", common=True,
        help="Environment variable holding the API key [OPENAI_API_KEY; ANTHROPIC_API_KEY with --api anthropic; "
        "GEMINI_API_KEY with --api gemini].",
    )  # fmt: skip
    temperature: float = setting(
        0.3, "number", minimum=0, yaml="summarization.temperature", record=True, commands=ASKS, group="endpoint",
        help="Sampling temperature of summaries.",
    )  # fmt: skip
    max_concurrency: int = setting(
        32, "int", minimum=1, yaml=("summarization.max_concurrency", "processing.max_concurrent_requests"),
        group="endpoint", common=True,
        commands=PROBES, help="Requests in flight across the run.",
    )  # fmt: skip
    rpm: float | None = setting(
        None, "number", above=0, optional=True, yaml="summarization.rpm", commands=PROBES, group="endpoint",
        help="Requests per minute limit.",
    )  # fmt: skip
    tpm: float | None = setting(
        None, "number", above=0, optional=True, yaml="summarization.tpm", commands=PROBES, group="endpoint",
        help="Tokens per minute limit.",
    )  # fmt: skip
    request_timeout: float = setting(
        120.0, "duration", above=0, yaml="summarization.request_timeout", commands=PROBES, group="endpoint",
        help="Seconds per request.",
    )  # fmt: skip
    max_retries: int = setting(
        5, "int", minimum=0, yaml="summarization.max_retries", commands=PROBES, group="endpoint",
        help="Retries of a request whose failure is worth retrying (rate limit, server error, timeout).",
    )  # fmt: skip
    retry_delay: float = setting(
        1.0, "duration", minimum=0, yaml="summarization.retry_delay", commands=PROBES, group="endpoint",
        help="Base of the exponential backoff, seconds (full jitter below it).",
    )  # fmt: skip
    retry_max_delay: float = setting(
        60.0, "duration", minimum=0, yaml="summarization.retry_max_delay", group="endpoint",
        help="Cap of one backoff sleep, seconds.",
    )  # fmt: skip
    max_prompt_chars: int = setting(
        96_000, "int", minimum=1000, yaml="summarization.max_prompt_chars", record=True, commands=(*ASKS, "eval"),
        group="endpoint",
        help="Transcript characters sent per summary; lower it for small-context servers.",
    )  # fmt: skip
    extra_body: dict[str, Any] = setting(
        {}, "dict", yaml="summarization.extra_body", record=True, metavar="JSON", commands=(*ASKS, "eval"),
        group="endpoint",
        help='JSON merged into every request, e.g. \'{"stop": ["\\n\\n\\n"]}\'.',
    )  # fmt: skip
    redact_secrets: bool = setting(
        True, "bool", yaml="summarization.redact_secrets", flag_style="switch", record=True, commands=(*ASKS, "eval"),
        group="summarizer",
        help="Mask credentials sent and summarized.",
    )  # fmt: skip
    anchor_index: bool = setting(
        True, "bool", yaml="summarization.anchor_index", flag_style="switch", record=True, commands=ASKS,
        group="summarizer",
        help="End each summary with an exact index of the region's values (ids, paths, names, numbers).",
    )  # fmt: skip
    cache_path: str | None = setting(
        None, "path", optional=True, yaml="summarization.cache", flag="--cache", commands=PROBES, group="endpoint",
        help="SQLite summary cache [user cache dir].",
    )  # fmt: skip
    use_cache: bool = setting(
        True, "bool", flag="--no-cache", flag_style="off", commands=PROBES, group="endpoint",
        help="Do not read or write the summary cache.",
    )  # fmt: skip
    responses: str | None = setting(
        None, "path", optional=True, yaml="summarization.responses", group="batch",
        help="Batch output file (provider or vllm run-batch) of `requests`: its answers go into the cache first.",
    )  # fmt: skip
    price_in: float | None = setting(
        None, "number", minimum=0, optional=True, yaml="summarization.price_in", commands=(*BOTH, "eval"),
        group="endpoint",
        help="Price per million prompt tokens (for cost figures).",
    )  # fmt: skip
    price_out: float | None = setting(
        None, "number", minimum=0, optional=True, yaml="summarization.price_out", commands=(*BOTH, "eval"),
        group="endpoint",
        help="Price per million completion tokens.",
    )  # fmt: skip
    currency: str = setting(
        "USD", "str", yaml="summarization.currency", commands=("compress", "eval"), group="endpoint",
        help="The currency of --price-in/--price-out, shown beside every cost (the report's cost_usd fields "
        "are in it).",
    )  # fmt: skip

    def validate(self) -> None:
        check_part(self)


@dataclass(frozen=True)
class BatchConfig:
    """`--batch`: summaries through a provider's Files + Batches API at its batch price.

    None of these is recorded in the settings record: a run may move between live and batch
    summaries (and resume) without its outputs or its fingerprint changing.
    """

    enabled: bool = setting(
        False, "bool", flag="--batch", flag_style="flag", yaml="batch.enabled", group="batch", common=True,
        help="Ask for summaries through the provider's batch API (/v1/files + /v1/batches), at its batch price.",
    )  # fmt: skip
    max_requests: int = setting(
        50_000, "int", minimum=1, yaml="batch.max_requests", flag="--batch-max-requests", group="batch",
        help="Requests per batch input file.",
    )  # fmt: skip
    max_bytes: int = setting(
        190_000_000, "int", minimum=4096, yaml="batch.max_bytes", flag="--batch-max-bytes", group="batch",
        help="Bytes per batch input file.",
    )  # fmt: skip
    fallback: str = setting(
        "batch", "choice", choices=("batch", "live"), yaml="batch.fallback", flag="--batch-fallback", group="batch",
        help="Requests a batch failed or expired: one follow-up batch, or live calls; then the failure policy.",
    )  # fmt: skip
    no_wait: bool = setting(
        False, "bool", flag="--no-wait", flag_style="flag", yaml="batch.no_wait", group="batch", common=True,
        help="Submit or check the batches, then exit 75 while they are pending (run the same command again later).",
    )  # fmt: skip
    poll_interval: float = setting(
        30.0, "duration", above=0, yaml="batch.poll_interval", flag="--batch-poll-interval", group="batch",
        help="First wait between two looks at a batch; it grows to --batch-poll-max.",
    )  # fmt: skip
    poll_max: float = setting(
        600.0, "duration", above=0, yaml="batch.poll_max", flag="--batch-poll-max", group="batch",
        help="Longest wait between two looks at a batch.",
    )  # fmt: skip
    completion_window: str = setting(
        "24h", "str", yaml="batch.completion_window", flag="--batch-completion-window", group="batch",
        help="The completion window asked of the provider.",
    )  # fmt: skip
    discount: float = setting(
        0.5, "number", minimum=0, maximum=1, yaml="batch.discount", flag="--batch-discount", group="batch",
        commands=("compress", "analyze"), help="Batch price as a share of the live price (for cost figures).",
    )  # fmt: skip
    timeout: float = setting(
        93_600.0, "duration", above=0, yaml="batch.timeout", flag="--batch-timeout", group="batch",
        help="A batch not over this long after it was created is cancelled and taken as expired "
        "(default 26h: past the provider's 24h window).",
    )  # fmt: skip
    resubmit_cancelled: bool = setting(
        False, "bool", flag="--batch-resubmit-cancelled", flag_style="flag", yaml="batch.resubmit_cancelled",
        group="batch",
        help="Requests of a cancelled batch: submit them again (to --batch-fallback) instead of --on-summary-failure.",
    )  # fmt: skip

    def validate(self) -> None:
        check_part(self)
