"""An earlier summary inside a new region: its lists carried into the next summary, not cut."""

from __future__ import annotations

import asyncio

import pytest

from tests.summarize.extractive.test_summarizer import gpt, shell, tool
from trajectory_compressor.count import TokenCounter, load_tokenizer
from trajectory_compressor.summarize.extractive import ExtractiveSummarizer
from trajectory_compressor.summarize.extractive.earlier import read_earlier
from trajectory_compressor.types import SummaryRequest

# As this summarizer writes one (render.py), from a first compression.
OURS = """22 turns (11 assistant, 11 tool).
Earlier summary: 9 turns (4 assistant, 5 tool).
User requests:
- Fix the separability bug in astropy/modeling/separable.py.
- … 2 more user messages …
- Also keep the public API unchanged.
Actions (11 tool calls):
1. bash: cat ./astropy/modeling/separable.py → ok, 317 lines / 9.9k chars
... 9 more tool calls (names: bash×9) ...
Files touched: edited: separable.py; other: test_separable.py
Errors:
- 2 earlier distinct errors: ImportError, OSError
- ModuleNotFoundError: No module named 'erfa' (calls 3, 6)
- pip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='files' (call 8)
Last assistant note: The bug is in _cstack: the right operand is copied as ones."""


def test_a_summary_this_summarizer_wrote_is_read_back_into_its_lists() -> None:
    earlier = read_earlier(OURS)
    assert earlier.structured
    assert earlier.text == "22 turns (11 assistant, 11 tool). 9 turns (4 assistant, 5 tool)."
    assert earlier.requests == (
        "Fix the separability bug in astropy/modeling/separable.py.",
        "Also keep the public API unchanged.",
    )
    assert earlier.errors == (
        "ImportError",
        "OSError",
        "ModuleNotFoundError: No module named 'erfa'",  # the earlier call numbers dropped
        "pip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='files'",
    )
    assert earlier.note == "The bug is in _cstack: the right operand is copied as ones."


@pytest.mark.parametrize(
    "text",
    [
        "The agent fixed ledger.py after a KeyError; booking QX7RT2.",
        "22 turns of work on the ledger, then tests passed.\nNothing else happened.",
    ],
)
def test_other_text_stays_whole(text: str) -> None:
    earlier = read_earlier(text)
    assert not earlier.structured and earlier.text == text and not earlier.requests and not earlier.errors


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter(load_tokenizer())


def test_the_next_summary_keeps_the_earlier_requests_errors_and_note(counter: TokenCounter) -> None:
    region = [
        gpt("", ("bash", {"command": "pytest astropy/modeling/tests/test_separable.py"})),
        tool("bash", shell(0, "5 passed")),
    ]
    request = SummaryRequest(tuple(region), 400, previous_summary=OURS)
    text = asyncio.run(ExtractiveSummarizer(counter).summarize(request)).text
    assert "Fix the separability bug in astropy/modeling/separable.py." in text  # the goal, whole
    assert "No module named 'erfa'" in text and "(calls 3, 6)" not in text
    assert "right operand is copied as ones" in text  # no newer note in the region
    assert text.count("Earlier summary:") == 1
