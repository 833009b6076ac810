"""The one place that counts what the LLM summarizer did and what it cost.

The client and the summarizer call the `record_*` methods where things happen; the run report
reads `stats()`. Nothing else keeps counters, so the numbers in the report add up.
Only counts, token totals and scrubbed cause names live here: never a request, a reply or a key.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class UsageTracker:
    """Counters for one summarizer instance (one run). All updates happen on the event loop."""

    price_in: float | None = None  # USD per million prompt tokens
    price_out: float | None = None  # USD per million completion tokens
    batch_discount: float = 0.5  # batch tokens cost this share of the live price
    requests: int = 0  # HTTP requests sent (every attempt)
    successes: int = 0  # summaries obtained from the endpoint
    failures: int = 0  # summaries given up on (SummaryError / EndpointAuthError raised)
    cache_hits: int = 0
    batch_answers_loaded: int = 0  # answers stored from batch output (`--batch`, `--responses`)
    prompt_tokens: int = 0  # live tokens: requests this run sent itself
    completion_tokens: int = 0
    batch_prompt_tokens: int = 0  # tokens of the batch answers (billed at the batch price)
    batch_completion_tokens: int = 0
    batches_submitted: int = 0
    retries: Counter[str] = field(default_factory=Counter)  # cause -> retries
    failures_by_cause: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    rate_limit_wait_seconds: float = 0.0  # time spent waiting for rpm/tpm buckets
    backoff_seconds: float = 0.0  # time spent sleeping between attempts (incl. Retry-After)

    def request_started(self) -> None:
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def request_finished(self, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        """One attempt ended; tokens are those the endpoint reported (paid for even if rejected)."""
        self.in_flight -= 1
        self.prompt_tokens += max(0, prompt_tokens)
        self.completion_tokens += max(0, completion_tokens)

    def record_retry(self, cause: str) -> None:
        self.retries[cause] += 1

    def record_success(self) -> None:
        self.successes += 1

    def record_failure(self, cause: str) -> None:
        self.failures += 1
        self.failures_by_cause[cause] += 1

    def record_cache_hit(self) -> None:
        self.cache_hits += 1

    def record_batch_answers(self, count: int, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        self.batch_answers_loaded += count
        self.batch_prompt_tokens += max(0, prompt_tokens)
        self.batch_completion_tokens += max(0, completion_tokens)

    def record_batches_submitted(self, count: int) -> None:
        self.batches_submitted += count

    def _priced(self, prompt_tokens: int, completion_tokens: int, share: float = 1.0) -> float | None:
        if self.price_in is None and self.price_out is None:
            return None
        return share * (prompt_tokens * (self.price_in or 0.0) + completion_tokens * (self.price_out or 0.0)) / 1e6

    @property
    def cost_live_usd(self) -> float | None:
        return self._priced(self.prompt_tokens, self.completion_tokens)

    @property
    def cost_batch_usd(self) -> float | None:
        return self._priced(self.batch_prompt_tokens, self.batch_completion_tokens, self.batch_discount)

    @property
    def cost_usd(self) -> float | None:
        """Spend from reported tokens (batch tokens at the batch price), or None without prices."""
        live, batch = self.cost_live_usd, self.cost_batch_usd
        return None if live is None or batch is None else live + batch

    def stats(self) -> dict[str, Any]:
        """JSON-serializable counters for the run report."""
        cost, live, batch = self.cost_usd, self.cost_live_usd, self.cost_batch_usd
        return {
            "requests": self.requests,
            "successes": self.successes,
            "failures": self.failures,
            "failures_by_cause": dict(sorted(self.failures_by_cause.items())),
            "retries": sum(self.retries.values()),
            "retries_by_cause": dict(sorted(self.retries.items())),
            "cache_hits": self.cache_hits,
            "batch_answers_loaded": self.batch_answers_loaded,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "batch_prompt_tokens": self.batch_prompt_tokens,
            "batch_completion_tokens": self.batch_completion_tokens,
            "batches_submitted": self.batches_submitted,
            "cost_usd": None if cost is None else round(cost, 6),
            "cost_live_usd": None if live is None else round(live, 6),
            "cost_batch_usd": None if batch is None else round(batch, 6),
            "max_in_flight": self.max_in_flight,
            "rate_limit_wait_seconds": round(self.rate_limit_wait_seconds, 3),
            "backoff_seconds": round(self.backoff_seconds, 3),
        }


def merge_usage(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """`stats()` of several workers' summarizers as one (Ray actors, or `--num-workers` processes):
    numbers added, per-cause counts merged."""
    total: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, bool) or value is None:
                total.setdefault(key, value)
            elif isinstance(value, (int, float)):
                if key == "max_in_flight":
                    total[key] = max(total.get(key) or 0, value)
                else:
                    total[key] = round((total.get(key) or 0) + value, 6)
            elif isinstance(value, dict):
                merged = dict(total.get(key) or {})
                for name, count in value.items():
                    merged[name] = merged.get(name, 0) + count
                total[key] = dict(sorted(merged.items()))
            else:
                total.setdefault(key, value)
    return total


def usage_since(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any] | None:
    """`after` less `before`, both a summarizer's `stats()`: what one output's run used, when the
    outputs of one `compress` call (an input folder) share their summarizer. Numbers and per-cause
    counts subtract (a cause at zero is left out, as a fresh run has none); names, flags and
    `max_in_flight` (the most so far) are `after`'s."""
    if before is None or after is None:
        return after
    since: dict[str, Any] = {}
    for key, value in after.items():
        old = before.get(key)
        if isinstance(value, bool) or key == "max_in_flight" or old is None:
            since[key] = value
        elif isinstance(value, (int, float)) and isinstance(old, (int, float)):
            since[key] = round(value - old, 6)
        elif isinstance(value, dict) and isinstance(old, dict):
            since[key] = {name: count - old.get(name, 0) for name, count in value.items() if count != old.get(name, 0)}
        else:
            since[key] = value
    return since


def carried_usage(
    resumed: dict[str, Any] | None, before: dict[str, Any] | None, now: dict[str, Any] | None
) -> dict[str, Any] | None:
    """What one output's runs used: the counters its interrupted runs had checkpointed
    (`resumed`: every request they made by then was spent, and is counted), plus this run's
    (`now` less `before`, as `usage_since`)."""
    this_run = usage_since(before, now)
    if resumed is None or this_run is None:
        return this_run
    return merge_usage([resumed, this_run])
