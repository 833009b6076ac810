"""The values of the choice settings a run's code branches on, as `Literal` types.

`settings/tree.py` declares each setting with these as its type and its choices
(`get_args`); the code that reads one compares it with the named constant, so a choice is
spelled once and a type checker sees a misspelled comparison.
"""

from __future__ import annotations

from typing import Final, Literal

SummarizerSetting = Literal["auto", "llm", "extractive", "none"]  # --summarizer
NO_SUMMARIES: Final = "none"  # --summarizer none: tool outputs pruned only
AUTO_SUMMARIZER: Final = "auto"  # --summarizer auto: the LLM when an endpoint is set, else extractive
FailurePolicy = Literal["extractive", "keep", "fail"]  # --on-summary-failure
OverLimitPolicy = Literal["keep", "drop", "truncate"]  # --over-limit
RejectPolicy = Literal["keep", "drop"]  # --on-reject
WriteFormat = Literal["sharegpt", "messages", "hf-chat"]  # --write-format
