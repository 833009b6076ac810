"""Credentials known from anywhere in a row, masked wherever else they stand in what is read.

`redact_secrets` knows a credential by its shape or by what stands around it (`Authorization:
Bearer …`, `API_KEY=…`, `curl -u admin:…`), `revealed_secrets` by the call that printed it (`cat
/run/secrets/api_key`), `written_secrets` by the file a call wrote it to. An agent then uses the
value bare: `Logged in with Zq8w…`, an argument with no flag, the next turn's prose. Read turn by
turn, that use has no credential's shape, and it reached the LLM prompt, the extractive summary
and, as an anchor a later turn needs, the metrics. So every value found any of these ways
anywhere in a row is masked in every turn a summarizer reads (`masked_known`), as written and
JSON-escaped, and is never a needed anchor.

A value a rule found counts only when it is one word of at least 8 characters that is not a
plain word (letters only, under 16): `SECRET_KEY = 'something'` must not mask `something` in
every sentence of the region.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from urllib.parse import quote

import orjson
from ahocorasick_rs import AhoCorasick, MatchKind

from trajectory_compressor.summarize.encoded_secrets import decoded_text
from trajectory_compressor.summarize.huge_turns import HUGE_TURN_CHARS, elide_huge
from trajectory_compressor.summarize.redact import REDACTED, find_secrets, scrub
from trajectory_compressor.summarize.revealed_secrets import revealed_values
from trajectory_compressor.summarize.secret_rules import credential_value
from trajectory_compressor.summarize.toolcalls.memo import TextMemo
from trajectory_compressor.summarize.written_secrets import written_values

secret_spans = TextMemo(find_secrets, entries=1 << 13, max_chars=HUGE_TURN_CHARS, max_total_chars=1 << 23)
"""`find_secrets`, remembered for the texts read last (up to 8 M characters): a row's turns are
read for their values here, then masked by every reader of its regions (`masking.redact_remembered`)."""

_MIN_CHARS = 8  # a shorter value (`test`, `1234`) masked everywhere would blank common words and numbers
_MIN_PLAIN_CHARS = 16  # a value of letters only shorter than this may be a word (`something`)
_MAX_CHARS = 8192
# Up to this many forms are each searched for in each turn (`scrub`); more, in one pass of an
# automaton: a region of thousands of reads (each a value of its own) took values x turns searches.
_SEARCHED_ONE_BY_ONE = 32


def row_secrets(texts: Sequence[str], roles: Sequence[str]) -> tuple[str, ...]:
    """`SummaryRequest.known_secrets` of a row's regions: the values its calls read out of a
    credential's file or variable or write into one, and those the rules mask, wherever in the
    row they stand."""
    return tuple(sorted(with_decoded({*called_values(texts, roles), *named_values(texts)})))


def with_decoded(values: set[str]) -> set[str]:
    """`values` and the text each one encodes, when it is base64 or hex of text (`decoded_text`): a
    Kubernetes secret's `.data.password` printed, then decoded by `echo … | base64 -d` in a later
    call, whose output is the password bare; a registry's `auth` (`user:password`): the password
    too. Found by the round-9 adversarial pass."""
    decoded: set[str] = set()
    for value in values:
        text = decoded_text(value) if len(value) >= _MIN_ENCODED_CHARS else None
        if text is None:
            continue
        text = text.strip()
        for candidate in (text, text.partition(":")[2]):
            if _distinctive(candidate):
                decoded.add(candidate)
    return values | decoded


_MIN_ENCODED_CHARS = 12  # base64 of 8 characters, the shortest value worth masking everywhere


_called_of_rows: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[str, ...]] = {}
_ROWS_REMEMBERED = 4
_MAX_ROW_CHARS = 1 << 23  # 8 M characters, as the texts' memos hold at most


def called_values(texts: Sequence[str], roles: Sequence[str]) -> tuple[str, ...]:
    """The values the calls of a row (`texts`, with their `roles`) read out of a credential's file
    or store, or wrote into one; remembered for the last few rows: a row's summary and the
    fidelity of its summary each ask (the keys' strings hash once; a hit compares them by
    identity). A row over `_MAX_ROW_CHARS` is not remembered: its turns would outlive it."""
    if sum(map(len, texts)) > _MAX_ROW_CHARS:
        return (*revealed_values(texts, roles), *written_values(texts, roles))
    key = (tuple(texts), tuple(roles))
    values = _called_of_rows.get(key)
    if values is None:
        values = (*revealed_values(texts, roles), *written_values(texts, roles))
        if len(_called_of_rows) >= _ROWS_REMEMBERED:
            _called_of_rows.clear()
        _called_of_rows[key] = values
    return values


def named_values(texts: Iterable[str]) -> set[str]:
    """The values `redact_secrets` masks in `texts` that are worth masking everywhere (see the
    module docstring). A turn over `HUGE_TURN_CHARS` is read by its region's readers as its head
    and tail (`huge_turns`), and in that form, among the region's turns, by `masked_known`."""
    values: set[str] = set()
    for text in texts:
        read = elide_huge(text)  # a huge turn (a kept log starting `export API_KEY=…`) by its head and tail
        for start, end in secret_spans(read):
            value = read[start:end]
            for candidate in _cores(value):
                if _distinctive(candidate):
                    values.add(candidate)
    return values


_AROUND = "`'\".,;:!?|/()[]{}<>"
_COMMAND_SEPARATORS = re.compile(r"[;&|]")
_ASSIGNMENT = re.compile(r"=(?=[^=])")  # not a base64 value's padding


def _cores(value: str) -> set[str]:
    """`value` (a rule's span) and the values a later turn may use bare in its stead: a span may take
    in the punctuation after it (`` `GITHUB_TOKEN=…` ``, `Bearer ….`), the next command (`export
    API_KEY=…;ls`) or, in a `sed` script, the text before a second assignment (`s/^API_KEY=.*/API_KEY=…/`)."""
    core = value.strip(_AROUND)
    cores = {value, core, _ASSIGNMENT.split(core)[-1].strip(_AROUND)}
    cores.update(piece.strip(_AROUND) for piece in _COMMAND_SEPARATORS.split(core))
    return cores


def _distinctive(value: str) -> bool:
    return (
        _MIN_CHARS <= len(value) <= _MAX_CHARS
        and (len(value) >= _MIN_PLAIN_CHARS or not value.isalpha())
        and (not any(char.isspace() for char in value) or _passphrase(value))
        and REDACTED not in value
        and credential_value(value)
    )


def _passphrase(value: str) -> bool:
    """A value of words a rule masked whole (`PASSWORD='correct horse battery staple'`): known as
    a phrase of at least `_MIN_PLAIN_CHARS` characters, its words joined by single spaces (not a
    listing's lines, nor a layout of columns), and masked where the phrase stands again."""
    return len(value) >= _MIN_PLAIN_CHARS and value == " ".join(value.split())


def masked_known(texts: Sequence[str], roles: Sequence[str], known: Iterable[str] | None = None) -> list[str]:
    """`texts` (a region's turns, with their `roles`) with every known credential masked in each of
    them; the same objects when there is none. `known`: the row's (`row_secrets`); None: the
    region's own turns are read for revealed values. The values the rules mask in `texts` count
    either way (their huge turns come here as their readers see them)."""
    called = {*revealed_values(texts, roles), *written_values(texts, roles)} if known is None else set()
    found = with_decoded(called | named_values(texts))
    found.update(known or ())  # the row's, decoded already (`row_secrets`)
    secrets = sorted(found, key=len, reverse=True)  # a longer value first: its part is one too
    if not secrets:
        return list(texts)
    forms = [form for secret in secrets for form in _forms(secret)]
    if len(forms) <= _SEARCHED_ONE_BY_ONE:
        return [scrub(text, forms) for text in texts]
    automaton = _automaton(tuple(forms))
    return [_masked_matches(text, automaton.find_matches_as_indexes(text)) for text in texts]


def _forms(secret: str) -> dict[str, None]:
    """How `secret` may stand in a turn: as written, in a JSON string, in a JSON string inside one
    (an output's JSON object), with its slashes escaped (`\\/`, as PHP's JSON writes them) and
    percent-encoded (a URL's query)."""
    escaped = json_escaped(secret)
    forms = dict.fromkeys((secret, escaped, json_escaped(escaped)))
    if "/" in secret:
        forms.update(dict.fromkeys((escaped.replace("/", "\\/"), json_escaped(escaped).replace("/", "\\\\/"))))
    forms.update(dict.fromkeys((quote(secret, safe=""), quote(secret))))  # a query's value; a path's
    return forms


_last_automaton: tuple[tuple[str, ...], AhoCorasick] | None = None


def _automaton(forms: tuple[str, ...]) -> AhoCorasick:
    """The automaton of `forms`, the last one kept: a row's windows each mask their region with
    the row's values, and built anew for each, thousands of values cost thousands of builds."""
    global _last_automaton
    last = _last_automaton
    if last is not None and last[0] == forms:
        return last[1]
    automaton = AhoCorasick(list(forms), matchkind=MatchKind.LeftmostLongest)
    _last_automaton = (forms, automaton)
    return automaton


def shows_secret(anchor: str, known: Iterable[str]) -> bool:
    """Whether `anchor` holds a known credential, or is a long piece of one: never a needed anchor."""
    return any(value in anchor or (len(anchor) >= _MIN_CHARS and anchor in value) for value in known)


def _masked_matches(text: str, matches: list[tuple[int, int, int]]) -> str:
    """`text` with each match `(value, start, end)` of the automaton masked; the same object when none."""
    if not matches:
        return text
    pieces, kept = [], 0
    for _, start, end in matches:
        pieces += [text[kept:start], REDACTED]
        kept = end
    return "".join(pieces) + text[kept:]


def json_escaped(value: str) -> str:
    """`value` as it stands inside a JSON string (a tool turn's `"content"`)."""
    return orjson.dumps(value).decode()[1:-1]
