"""What turns a batch of texts into token counts: Hugging Face `tokenizers`, or a faster exact one.

Every count in a run goes through one `CountingBackend.count_many`. The reference is the
Hugging Face `tokenizers` library (`HFCounting`), the same Rust code that `transformers` and
the trainers run. The fast backends (`fastokens`, `gigatoken`) reimplement byte-level BPE in
Rust at 30-100x its speed on agent trajectories (scripts/bench_count_backends.py measures
them); each is built from the reference's own serialized tokenizer.json, so the added
tokens a `transformers` tokenizer holds come along, and refuses at load what it cannot
reproduce (WordPiece, Unigram, some normalizers and pre-tokenizers): `load_fast` then says
why, and `auto` counts with the reference. Whether a loaded fast backend agrees with the
reference is `exactness`' job, not this module's.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import sys
from array import array
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from trajectory_compressor.settings.tree import TOKENIZER_BACKENDS
from trajectory_compressor.types import one_line

REFERENCE = "hf"
# Tried in this order by `--tokenizer-backend auto` (declared with the setting, measured fastest
# first); one that is not installed or refuses the tokenizer is skipped.
FAST_BACKENDS = tuple(name for name in TOKENIZER_BACKENDS if name not in ("auto", REFERENCE))


class CountingBackend(Protocol):
    """Token counts of a batch of texts, in order, without special tokens added around them."""

    @property
    def name(self) -> str: ...  # read-only: a class attribute or a property

    def count_many(self, texts: Sequence[str]) -> list[int]: ...


class HFCounting:
    """The reference: a `tokenizers.Tokenizer`'s batch encoding, on every core, GIL released."""

    name = REFERENCE

    def __init__(self, backend: Any) -> None:
        # encode_batch_fast skips offset tracking (tokenizers >= 0.20); a count needs none.
        self._encode_batch = getattr(backend, "encode_batch_fast", backend.encode_batch)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encodings = self._encode_batch(list(texts), add_special_tokens=False)
        return [len(encoding) for encoding in encodings]  # len(): no Python list of ids built


class FastokensCounting:
    """`fastokens` (Apache-2.0): one flat buffer of ids per batch, lengths from its offsets."""

    name = "fastokens"

    def __init__(self, tokenizer_json: str, *, split_special_tokens: bool = False) -> None:
        import fastokens

        self._tokenizer = fastokens.Tokenizer.from_json_str(tokenizer_json)
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._split_special = split_special_tokens

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        _, offsets = self._tokenizer.encode_batch_flat(
            list(texts), add_special_tokens=False, split_special_tokens=self._split_special
        )
        ends = array("Q")
        ends.frombytes(offsets)  # len(texts) + 1 little-endian uint64 offsets into the ids
        if sys.byteorder == "big":  # pragma: no cover - no big-endian wheel exists today
            ends.byteswap()
        return [end - start for start, end in itertools.pairwise(ends)]


class GigatokenCounting:
    """`gigatoken` (MIT): a batch encodes into one ragged array; lengths from its offsets."""

    name = "gigatoken"

    def __init__(self, tokenizer_json: str, *, split_special_tokens: bool = False) -> None:
        if split_special_tokens:
            raise ValueError("it cannot encode special tokens as text (the tokenizer's split_special_tokens)")
        import gigatoken

        self._tokenizer = gigatoken.Tokenizer.from_json(tokenizer_json)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        import numpy

        encoded = self._tokenizer.encode_batch(list(texts))
        offsets = getattr(encoded.layout, "offsets", None)
        if offsets is None:  # pragma: no cover - another layout than a list of offsets
            import awkward

            return awkward.num(encoded).to_list()
        return numpy.diff(numpy.asarray(offsets.data)).tolist()


LOADERS: dict[str, Callable[..., CountingBackend]] = {
    "fastokens": FastokensCounting,
    "gigatoken": GigatokenCounting,
}


class Unsupported(Exception):
    """A fast backend cannot count with this tokenizer: not installed, or it refused it."""


def installed(name: str) -> bool:
    """Whether the package of fast backend `name` is installed (found without importing it)."""
    return importlib.util.find_spec(name) is not None


def load_fast(name: str, tokenizer_json: str, *, split_special_tokens: bool = False) -> CountingBackend:
    """Fast backend `name` for the tokenizer serialized as `tokenizer_json` (its `to_str()`).

    Loaded once per process for the same tokenizer (a fast backend's load costs a second or
    more, and counting holds no state). Raises `Unsupported` with a reason a person can act on:
    the package is missing (and how to install it), or it refused the tokenizer (its own words).
    """
    if not installed(name):
        raise Unsupported(f"the {name!r} package is not installed (pip install {name})")
    try:
        return _load(LOADERS[name], tokenizer_json, split_special_tokens)
    except Exception as exc:  # each library raises its own types for "cannot reproduce this"
        raise Unsupported(f"{name} cannot reproduce this tokenizer: {one_line(exc)}") from None


@functools.lru_cache(maxsize=4)
def _load(loader: Callable[..., CountingBackend], tokenizer_json: str, split_special_tokens: bool) -> CountingBackend:
    return loader(tokenizer_json, split_special_tokens=split_special_tokens)
