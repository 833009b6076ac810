"""The identifier patterns, their word boundary checked once, find what the plain alternation finds."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_compressor.summarize.fidelity import salient
from trajectory_compressor.summarize.fidelity.salient import (
    IDENTIFIER,
    NAMED_IDENTIFIER,
    identifiers_in,
    identifiers_in_each,
)

# The rule as first written: each kind an alternative of its own, each with its own boundary.
_KINDS = [r"\b" + kind for kind in (salient._DATE, salient._HEX_HASH, salient._VERSION, salient._MIXED_ID)]
REFERENCE = re.compile("|".join((salient._URL, *_KINDS, salient._NUMBER)))
NAMED_REFERENCE = re.compile("|".join((salient._URL, *_KINDS)))
EMAIL_REFERENCE = re.compile("|".join((salient._URL, salient._EMAIL, *_KINDS, salient._NUMBER)))
NAMED_EMAIL_REFERENCE = re.compile("|".join((salient._URL, salient._EMAIL, *_KINDS)))

_FRAGMENTS = ["http://", "https://", "2024-01-02", " 10:00", "T10:00:59", "v1.2.3", "9f3c2ab71d", "mia_li_3668",
              "EHGLP3", "1234", "19.99", "0x7f", "٣٤٥٦", "é1", "-", ".", ":", "/", "_", " ", "\n", "a", "f", "Z", "7",
              "(", '"', "…", "x-1", "@", "a@b.co", "mia.li3818@example.com", ".com", "+", "133-def", "-def", "1150p",
              "245d", "p", "d"]  # fmt: skip
texts = st.lists(st.sampled_from(_FRAGMENTS) | st.text(alphabet="0123456789abcdefvT-._:/ hxyzAB٣é", max_size=6),
                 max_size=40).map("".join)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(texts)
def test_the_patterns_find_what_one_alternative_per_kind_finds(text: str) -> None:
    assert IDENTIFIER.findall(text) == REFERENCE.findall(text)
    assert NAMED_IDENTIFIER.findall(text) == NAMED_REFERENCE.findall(text)
    assert salient._WITH_EMAILS[IDENTIFIER].findall(text) == EMAIL_REFERENCE.findall(text)
    assert salient._WITH_EMAILS[NAMED_IDENTIFIER].findall(text) == NAMED_EMAIL_REFERENCE.findall(text)


def test_each_kind_is_found_and_a_url_or_date_is_one_item() -> None:
    text = "see https://x.org/a1 on 2024-01-02 10:00, v1.2.3, 9f3c2ab71d, mia_li_3668 and 1234 (19.99)"
    assert identifiers_in(text) == [
        "https://x.org/a1", "2024-01-02 10:00", "v1.2.3", "9f3c2ab71d", "mia_li_3668", "1234", "19.99",
    ]  # fmt: skip
    assert identifiers_in(text, NAMED_IDENTIFIER) == ["https://x.org/a1", "2024-01-02 10:00", "v1.2.3", "9f3c2ab71d",
                                                      "mia_li_3668", "19.99"]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(texts, max_size=8))
def test_the_identifiers_of_each_text_are_those_of_the_texts_joined(values: list[str]) -> None:
    one_by_one = [item for value in values for item in identifiers_in(value)]
    assert identifiers_in_each(values) == list(dict.fromkeys(one_by_one))


def test_a_long_text_whose_first_digit_comes_late_still_has_its_identifiers() -> None:
    assert identifiers_in("word " * 10_000 + "mia_li_3668") == ["mia_li_3668"]
    assert identifiers_in_each(["word " * 5_000, "nothing here", "EHGLP3"]) == ["EHGLP3"]


def test_an_email_is_one_item_and_grep_or_sed_numbers_are_no_mixed_ids() -> None:
    """As anchors read them (`anchor_tokens.py`): `mia.li3818@example.com` whole (not `li3818`),
    an email without a digit too; grep's `133-def` its number; a sed address (`1150p`) no id."""
    assert identifiers_in("user mia.li3818@example.com asked") == ["mia.li3818@example.com"]
    assert identifiers_in("write to john@example.com", NAMED_IDENTIFIER) == ["john@example.com"]
    assert identifiers_in("133-def foo(x):\n134-    return x") == ["133", "134"]
    assert identifiers_in("sed -n '1140,1150p' a.py; sed -i 245d b.py", NAMED_IDENTIFIER) == []
    assert identifiers_in("@property and pkg@1.2.3") == ["1.2.3"], "only an email's @ joins an item"
