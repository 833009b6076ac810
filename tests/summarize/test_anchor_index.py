"""The anchor index line: its format read back, its fit within a token budget, what the model is asked."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_compressor.count import TokenCounter, load_tokenizer
from trajectory_compressor.summarize.anchor_index import (
    INDEX_LABEL,
    INDEX_SHARE,
    earlier_anchors,
    fit_index,
    index_line,
    indexed_request,
    split_index,
)
from trajectory_compressor.types import SummaryRequest, Turn


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter(load_tokenizer())


def tool(content: str) -> Turn:
    payload = json.dumps({"tool_call_id": "call_1", "name": "get_reservation_details", "content": content})
    return Turn("tool", f"<tool_response>\n{payload}\n</tool_response>")


def region(reservations: int = 40) -> tuple[Turn, ...]:
    ids = [f"R{n:05d}X" for n in range(reservations)]
    return (
        Turn("gpt", "Looking up the user's reservations."),
        tool(json.dumps({"user_id": "mia_li_3668", "reservations": ids, "gift_card": "gift_card_7219"})),
    )


def test_an_index_line_reads_back_and_a_summary_without_one_is_unchanged() -> None:
    summary = "The user asked for a refund.\n\n" + index_line(["KA7I60", "gift_card_6276644", "src/a.py"])
    body, anchors = split_index(summary)
    assert body == "The user asked for a refund."
    assert anchors == ("KA7I60", "gift_card_6276644", "src/a.py")
    assert split_index(index_line(["A1B2C3"])) == ("", ("A1B2C3",))
    plain = "No index here.\nExact values are discussed in the text, not listed."
    assert split_index(plain) == (plain, ())
    # Only a last line is an index: one in the middle is the summary's own text.
    middle = f"{INDEX_LABEL} A1B2C3\nmore text"
    assert split_index(middle) == (middle, ())


_ANCHORS = st.lists(st.from_regex(r"[a-z]{2,8}_[a-z0-9]{1,8}|[A-Z0-9]{6}|[a-z]{1,6}/[a-z]{1,8}\.py", fullmatch=True))


@settings(max_examples=80, deadline=None)
@given(anchors=_ANCHORS, max_tokens=st.integers(min_value=0, max_value=120))
def test_the_index_fits_its_tokens_and_keeps_the_ranked_order(
    counter: TokenCounter, anchors: list[str], max_tokens: int
) -> None:
    anchors = list(dict.fromkeys(anchors))
    line = fit_index(anchors, max_tokens, counter.count)
    if not line:
        return
    assert counter.count("\n\n" + line) <= max_tokens
    listed = split_index(line)[1]
    assert list(listed) == anchors[: len(listed)]  # a prefix of the ranking


def test_values_the_text_already_states_make_room_for_the_next(counter: TokenCounter) -> None:
    anchors = ["KA7I60", "OBUT9V", "gift_card_7219", "certificate_8544743"]
    line = fit_index(anchors, 100, counter.count, stated="Reservation KA7I60 was cancelled.")
    assert split_index(line)[1] == ("OBUT9V", "gift_card_7219", "certificate_8544743")


def test_the_model_is_asked_for_the_budget_the_index_leaves(counter: TokenCounter) -> None:
    request = SummaryRequest(turns=region(8), budget_tokens=300, task="Cancel my trip.")
    asked, index = indexed_request(request, counter.count, enabled=True, redact=True)
    assert index is not None
    assert 0 < index.tokens <= int(300 * INDEX_SHARE)
    assert asked.budget_tokens == 300 - index.tokens
    assert asked.turns == request.turns and asked.task == request.task
    summary = index.finish("The agent listed the user's reservations.", counter.count)
    body, listed = split_index(summary)
    assert body == "The agent listed the user's reservations."
    assert "mia_li_3668" in listed and "gift_card_7219" in listed
    assert counter.count(summary) <= counter.count(body) + index.tokens + 1  # +1: the join of two texts


def test_off_or_without_values_the_request_is_asked_as_it_is(counter: TokenCounter) -> None:
    request = SummaryRequest(turns=region(), budget_tokens=300)
    assert indexed_request(request, counter.count, enabled=False, redact=True) == (request, None)
    plain = SummaryRequest(turns=(Turn("gpt", "All done, nothing else to do."),), budget_tokens=300)
    assert indexed_request(plain, counter.count, enabled=True, redact=True) == (plain, None)


def test_an_earlier_index_is_never_shown_to_the_model_and_its_values_carry_on(counter: TokenCounter) -> None:
    previous = "The user wants a refund for trip OLD123.\n\n" + index_line(["OLD123", "gift_card_1111"])
    request = SummaryRequest(turns=region(3), budget_tokens=300, previous_summary=previous)
    asked, index = indexed_request(request, counter.count, enabled=True, redact=True)
    assert asked.previous_summary == "The user wants a refund for trip OLD123."
    assert index is not None
    summary = index.finish("Updated: three reservations found.", counter.count)
    assert summary.count(INDEX_LABEL) == 1
    listed = split_index(summary)[1]
    assert "gift_card_1111" in listed and "R00000X" in listed
    assert "OLD123" in listed  # not stated by this text: carried on


def test_values_the_task_shows_are_not_listed(counter: TokenCounter) -> None:
    request = SummaryRequest(turns=region(3), budget_tokens=300, task="I am mia_li_3668.")
    _, index = indexed_request(request, counter.count, enabled=True, redact=True)
    assert index is not None and "mia_li_3668" not in index.anchors


def test_an_earlier_summary_carries_its_indexs_values_first_then_its_texts() -> None:
    summary = "Refund for QX7RT2 failed with KeyError in ledger.py.\n\n" + index_line(["OLD123", "gift_card_1111"])
    assert earlier_anchors(summary) == ("OLD123", "gift_card_1111", "QX7RT2", "KeyError", "ledger.py")
    assert earlier_anchors("Refund for QX7RT2.") == ("QX7RT2",)  # a summary from before the index
    assert earlier_anchors("") == ()


def test_an_index_an_older_version_wrote_is_read_as_a_region_is() -> None:
    """Before anchors took emails whole and cut grep's and sed's line numbers from what they glue
    to, an index could list `1150p`, `133-def` or a URL cut at a mask: a summary that updates it
    carries on what this reading makes of them (an email split then stays split: no rule joins it)."""
    listed = ["1150p", "133-def", "https://x.io/a?token=", "mia.li3818", "example.com", "OLD123"]
    summary = "Looked at wcs.py for ana.silva7@example.com.\n\n" + index_line(listed)
    assert earlier_anchors(summary) == (
        "1150", "133", "https://x.io/a", "mia.li3818", "example.com", "OLD123", "wcs.py", "ana.silva7@example.com",
    )  # fmt: skip


def test_an_earlier_index_never_carries_a_value_its_text_shows_as_a_credential() -> None:
    """An index written by another tool may list the password its text states after `password=`:
    masked there, it is a credential in the index too, and no summary carries it on."""
    from trajectory_compressor.summarize.redact import redact_secrets

    summary = "login: user=deploy, password=Pw1earAAAA0095 on QX7RT2\n\n" + index_line(["Pw1earAAAA0095", "OLD123"])
    carried = earlier_anchors(summary, redact_secrets)
    assert "OLD123" in carried and "QX7RT2" in carried and "Pw1earAAAA0095" not in carried
    assert "Pw1earAAAA0095" in earlier_anchors(summary)  # unmasked (`--no-redact-secrets`): carried as it was
