"""Counting a long text in pieces whose token counts add up exactly to the whole text's count.

Why: a fast tokenizer's working memory grows with the text it encodes (about 160 bytes a
character while it works: alignments, offsets and a string per token), so one 80 MB value took
14.8 GB. Counted in pieces of about `PIECE_CHARS` characters, at most `BATCH_CHARS` per tokenizer
call, a text of any length is counted in bounded memory. `TokenCounter` counts every text through
`count_in_pieces`, whatever does the counting (`count_batch`), so any counting backend gets this.

Where a text may be cut. A fast tokenizer first splits out its added tokens, then normalizes,
then pre-tokenizes (regular expressions split the text into words, numbers, punctuation,
whitespace runs) and only then runs its model (BPE) inside each pre-token: no token ever spans
a pre-token boundary. But a boundary of the whole text is not always one of each piece: a
regular expression's lookahead (``\\s+(?!\\S)``) or greedy run sees past it. So a cut is taken
only where all of these hold (`PreTokenCuts`):

1. it is a pre-token boundary of the tokenizer's own pre-tokenizer (`pre_tokenize_str`);
2. the two characters around it decide it alone: a letter then a non-letter, a digit run
   starting or ending, a newline then a non-space, never before a combining mark
   (`settled_boundary`). No whitespace run ends there, so no lookahead reaches across; for the
   bundled DeepSeek tokenizer (digits in runs of 3, CJK runs, then the GPT-4-style expression,
   then byte-level) each rule is a boundary of the whole text and of both pieces whatever
   surrounds them, which the tests check against one-piece counts;
3. no added token (`<think>`, `<｜User｜>`), nor the whitespace one strips, spans it;
4. the real tokenizer encodes `CHECK_CHARS` characters either side of it to the same ids whole
   as in two pieces: the normalizer, added tokens and model agree locally too.

A tokenizer whose pipeline sees the text as a whole is never cut (`whole_text_reason`): no
pre-tokenizer (its model sees one word), a Metaspace or byte-level pre-tokenizer that marks the
start of the text, a normalizer that strips or prepends, or one not known to act character by
character. Its texts are counted whole up to `MAX_PIECE_CHARS`; a longer one, like a text with
no exact cut within `MAX_PIECE_CHARS`, raises `UncountableTextError`: the row is rejected with
that reason, never counted inexactly and never an out-of-memory kill.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Any

PIECE_CHARS = 65_536  # a longer text is counted in pieces of about this many characters
MAX_PIECE_CHARS = 1_048_576  # a piece grows up to this to reach an exact cut (~200 MB to encode)
BATCH_CHARS = 1_048_576  # characters given to the tokenizer in one batch call
SEARCH_CHARS = 2_048  # characters pre-tokenized at a time while looking for a cut
CHECK_CHARS = 256  # characters either side of a cut the tokenizer re-encodes to check it

# Normalizers that act on each character (or a character with its combining marks) alone.
LOCAL_NORMALIZERS = frozenset(
    {"NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Replace", "BertNormalizer", "StripAccents", "Nmt", "Precompiled"}
)

CountBatch = Callable[[list[str]], list[int]]


class UncountableTextError(ValueError):
    """A text cannot be counted exactly within the memory bound; the message says why."""


def settled_boundary(before: str, after: str) -> bool:
    """Whether a boundary between these two characters is decided by them alone.

    A letter then a non-letter; a newline then a non-space; a digit run starting or ending.
    Never before a combining mark (it belongs with the character before it), never after a
    space or tab (a whitespace run's split depends on what follows it).
    """
    after_kind = unicodedata.category(after)[0]
    if after_kind == "M":
        return False
    before_kind = unicodedata.category(before)[0]
    if before_kind == "L":
        return after_kind != "L"
    if before == "\n":
        return not after.isspace()
    return (before_kind == "N") != (after_kind == "N")


class AddedTokenSpans:
    """Whether an added token (or the whitespace it strips) spans a position of a text.

    Tokens are looked up by their text, a slice per token length at each place one could start,
    never tried one by one: the bundled tokenizer has 1,282 added tokens starting with `<`, and
    trying each at every `<` near every candidate cut took 85 s to count 70 KB of `<think>`
    (every candidate cut there is inside one, so every one was looked at).
    """

    def __init__(self, tokens: Iterable[tuple[str, bool, bool]]) -> None:
        self._strips: dict[str, tuple[bool, bool]] = {}  # content -> (lstrip, rstrip)
        for content, lstrip, rstrip in tokens:
            if content:
                was_l, was_r = self._strips.get(content, (False, False))
                self._strips[content] = (was_l or lstrip, was_r or rstrip)
        lengths: dict[str, set[int]] = {}
        for content in self._strips:
            lengths.setdefault(content[0], set()).add(len(content))
        self._lengths = {first: sorted(sizes) for first, sizes in lengths.items()}  # by first character
        self.longest = max((len(content) for content in self._strips), default=0)

    @classmethod
    def of(cls, backend: Any) -> AddedTokenSpans:
        table = backend.get_added_tokens_decoder().values()
        return cls((token.content, token.lstrip, token.rstrip) for token in table)

    def spans(self, text: str, position: int) -> bool:
        """Whether `position` falls inside an occurrence of an added token, or between one that
        strips whitespace and the whitespace it strips (looked at within `CHECK_CHARS`)."""
        low = max(0, position - CHECK_CHARS)
        high = min(len(text), position + CHECK_CHARS)
        for start in range(max(low, position - self.longest + 1), position):
            if any(start + size > position for size, _ in self._at(text, start)):
                return True
        blank = position  # where the whitespace before `position` starts
        while blank > low and text[blank - 1].isspace():
            blank -= 1
        for start in range(max(low, blank - self.longest), position):
            if any(rstrip and blank <= start + size <= position for size, (_, rstrip) in self._at(text, start)):
                return True
        start = position
        while start < high:  # a token starting after nothing but whitespace
            if any(lstrip for _, (lstrip, _) in self._at(text, start)):
                return True
            if not text[start].isspace():
                break
            start += 1
        return False

    def _at(self, text: str, start: int) -> list[tuple[int, tuple[bool, bool]]]:
        """(length, (lstrip, rstrip)) of each added token occurring at `start`."""
        found = []
        for size in self._lengths.get(text[start], ()):
            if start + size > len(text):
                break
            strips = self._strips.get(text[start : start + size])
            if strips is not None:
                found.append((size, strips))
        return found


def whole_text_reason(backend: Any) -> str | None:
    """Why this tokenizer's texts cannot be cut (None: they can, at `PreTokenCuts`' cuts)."""
    pre_tokenizer = getattr(backend, "pre_tokenizer", None)
    if pre_tokenizer is None:
        return "the tokenizer has no pre-tokenizer (its model sees a text as one word)"
    for node in _nodes(_state(pre_tokenizer), "pretokenizers"):
        kind = node.get("type")
        if kind == "Metaspace" and (node.get("prepend_scheme", "always") != "never" or node.get("add_prefix_space")):
            return "the tokenizer's Metaspace pre-tokenizer marks the start of the text"
        if kind == "ByteLevel" and node.get("add_prefix_space"):
            return "the tokenizer's ByteLevel pre-tokenizer adds a space at the start of the text"
    normalizer = getattr(backend, "normalizer", None)
    if normalizer is not None:
        for node in _nodes(_state(normalizer), "normalizers"):
            if node.get("type") not in LOCAL_NORMALIZERS:
                return f"the tokenizer's normalizer {node.get('type')} acts on the text as a whole"
    return None


def _state(component: Any) -> dict[str, Any]:
    """A tokenizer component's JSON description ({} for an empty sequence, which has none)."""
    state = component.__getstate__()
    if state is None:  # tokenizers describes an empty Sequence as None
        return {} if len(component) == 0 else {"type": "unknown"}
    return json.loads(state)


def _nodes(state: dict[str, Any], children: str) -> list[dict[str, Any]]:
    """The components of a (possibly nested) sequence, in order."""
    if state.get("type") == "Sequence":
        return [node for child in state.get(children, []) for node in _nodes(child, children)]
    return [state] if state else []


class PreTokenCuts:
    """Exact cuts of long texts for one tokenizer (see the module's docstring)."""

    def __init__(
        self,
        backend: Any,
        encode_batch: Callable[..., Any],
        *,
        piece_chars: int = PIECE_CHARS,
        max_piece_chars: int = MAX_PIECE_CHARS,
    ) -> None:
        self._backend = backend
        self._encode_batch = encode_batch
        self.piece_chars = piece_chars
        self.max_piece_chars = max_piece_chars
        self.whole_text_reason = whole_text_reason(backend)
        self._added = AddedTokenSpans.of(backend)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of each piece of `text`: one piece when it is short enough.

        Raises `UncountableTextError` when a piece would exceed `max_piece_chars`.
        """
        if len(text) <= self.piece_chars:
            return [(0, len(text))]
        if self.whole_text_reason is not None:
            if len(text) > self.max_piece_chars:
                raise UncountableTextError(
                    f"a text of {len(text):,} characters is over {self.max_piece_chars:,} and cannot be cut "
                    f"for counting: {self.whole_text_reason}"
                )
            return [(0, len(text))]
        spans: list[tuple[int, int]] = []
        start = 0
        while len(text) - start > self.piece_chars:
            cut = self._cut_before(text, start, start + self.piece_chars)
            if cut is None:
                cut = self._cut_after(text, start + self.piece_chars, min(len(text), start + self.max_piece_chars))
            if cut is None:
                if len(text) - start <= self.max_piece_chars:
                    break
                raise UncountableTextError(
                    f"a text of {len(text):,} characters has no place to cut it for counting that keeps its "
                    f"token count exact within {self.max_piece_chars:,} characters (after character {start:,})"
                )
            spans.append((start, cut))
            start = cut
        spans.append((start, len(text)))
        return spans

    def is_exact_cut(self, text: str, position: int) -> bool:
        """Rules 2-4 of the module's docstring at `position` (0 < position < len(text))."""
        if not settled_boundary(text[position - 1], text[position]):
            return False
        if self._added.spans(text, position):
            return False
        low = max(0, position - CHECK_CHARS)
        window = text[low : position + CHECK_CHARS]
        middle = position - low
        whole, left, right = self._encode_batch([window, window[:middle], window[middle:]], add_special_tokens=False)
        return whole.ids == left.ids + right.ids

    def _boundaries(self, text: str, start: int, end: int) -> list[int]:
        """Pre-token boundaries strictly inside text[start:end] (rule 1), in the text's offsets."""
        pieces = self._backend.pre_tokenizer.pre_tokenize_str(text[start:end])
        return [start + stop for _, (_, stop) in pieces if 0 < stop < end - start]

    def _cut_before(self, text: str, low: int, high: int) -> int | None:
        """The last exact cut in (low, high], searched backwards `SEARCH_CHARS` at a time."""
        end = high + 1
        while end > low + 1:
            start = max(low, end - SEARCH_CHARS)
            for position in reversed(self._boundaries(text, start, end)):
                if self.is_exact_cut(text, position):
                    return position
            end = start + 1
        return None

    def _cut_after(self, text: str, low: int, high: int) -> int | None:
        """The first exact cut in [low, high), searched forwards `SEARCH_CHARS` at a time."""
        start = max(1, low - 1)
        while start < high - 1:
            end = min(high, start + SEARCH_CHARS)
            for position in self._boundaries(text, start, end):
                if position >= low and self.is_exact_cut(text, position):
                    return position
            start = end - 1
        return None


def count_in_pieces(
    texts: Sequence[str],
    count_batch: CountBatch,
    spans_of: Callable[[str], list[tuple[int, int]]],
    *,
    whole_up_to: int = 0,
    batch_chars: int = BATCH_CHARS,
) -> list[int]:
    """Token counts of `texts`: each long text cut by `spans_of`, pieces counted `batch_chars` at a
    time by `count_batch`, and summed back per text. Pure: no tokenizer here.

    Every text's cuts are found before anything is counted, so an `UncountableTextError` costs
    no tokenization. A text that is one piece is passed as is (no copy); a call holds at most
    `batch_chars` characters, or one piece. `whole_up_to`: texts this short are one piece
    without asking `spans_of` (its own rule for them), so the usual batch, all short texts,
    costs a length and a slice per text and nothing more: this runs on every text a run counts.
    """
    items = texts if isinstance(texts, list) else list(texts)
    layouts = {owner: spans_of(text) for owner, text in enumerate(items) if len(text) > whole_up_to}
    if not layouts:
        return _count_whole(items, count_batch, batch_chars)
    totals = [0] * len(items)
    owners: list[int] = []  # which text each piece of the batch belongs to
    pieces: list[str] = []
    size = 0
    for owner, text in enumerate(items):
        for start, end in layouts.get(owner) or ((0, len(text)),):
            if pieces and size + end - start > batch_chars:
                _add_counts(owners, pieces, count_batch, totals)
                owners, pieces, size = [], [], 0
            piece = text if (start, end) == (0, len(text)) else text[start:end]
            owners.append(owner)
            pieces.append(piece)
            size += len(piece)
    if pieces:
        _add_counts(owners, pieces, count_batch, totals)
    return totals


def _count_whole(texts: list[str], count_batch: CountBatch, batch_chars: int) -> list[int]:
    """`count_in_pieces` when every text is one piece: consecutive slices of `texts`."""
    counts: list[int] = []
    first = size = 0
    for index, text in enumerate(texts):
        if index > first and size + len(text) > batch_chars:
            counts.extend(count_batch(texts[first:index]))
            first, size = index, 0
        size += len(text)
    if first < len(texts):
        counts.extend(count_batch(texts[first:]))
    return counts


def _add_counts(owners: list[int], pieces: list[str], count_batch: CountBatch, totals: list[int]) -> None:
    for owner, count in zip(owners, count_batch(pieces), strict=True):
        totals[owner] += count
