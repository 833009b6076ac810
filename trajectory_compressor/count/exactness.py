"""Which counts to trust: a fast backend only while it agrees with Hugging Face `tokenizers`.

A wrong count breaks the budget promise without a trace (a row "under target" that is over
it), so a fast backend earns its place twice:

- at load, on a probe set built for the tokenizer (whitespace runs, code, CJK, emoji, RTL
  text, lone combining marks, every added and special token alone, inside words and between
  spaces): any difference and it is not used (`--tokenizer-backend auto` counts with the
  reference and the report says why; a backend asked for by name is refused, exit 2);
- during the run (`GuardedCounting`), on a deterministic sample of what it counts: about one
  text in `SAMPLE_EVERY` (chosen by length and content, so a run and its re-run check the same
  turns, whatever the batches), plus each batch's longest text when it is at least twice as
  long as every text checked before (so every length scale up to the run's longest is
  checked). On any difference the batch is recounted with the reference, which counts the rest
  of the run, and the run says so once.

The reference is ~100x slower than a fast backend on text it has not seen: the sample is small
(about 0.1% of the text and a few long turns) and recounted on another thread while the fast
backend counts the batch, which keeps the guard at about a tenth of the fast count's time
(README, "Counting backends").
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from trajectory_compressor.count.backends import (
    FAST_BACKENDS,
    REFERENCE,
    CountingBackend,
    HFCounting,
    Unsupported,
    load_fast,
)
from trajectory_compressor.settings.tree import TOKENIZER_BACKENDS

# One text in SAMPLE_EVERY is recounted by the reference: at ~100x the fast backend's cost per
# byte, 1 in 1024 costs ~10% of the fast count (1 in 64 would cost more than the count itself).
SAMPLE_EVERY = 1024

_PROBES = (
    "", " ", "  ", "\t", "\n", "\n\n\n", " \n \n", "\r\n", "\t \t  \n\n \r\n  ", " " * 97, "\n" * 40,
    "a" + " " * 17 + "b", "x\u00a0y\u2003z\u3000w\u200bv", "trailing   ", "   leading",
    "def f(x):\n    return x ** 2  # square\n\n\tif a != b:\n\t\tpass\n",
    "for (int i = 0; i < n; ++i) { s += a[i] >> 2; }", '{"name": "bash", "arguments": {"cmd": "ls -la"}}',
    "12345678901234567890 3.14159 -1e-10 0x1F 1,000,000", "https://example.com/a/b?c=d&e=f#g",
    "中文字符测试，包括标点。", "日本語のテキスト、カタカナ、ひらがな。", "한국어 텍스트", "漢字" * 30,
    "emoji 👍🏽 👨‍👩‍👧‍👦 🇫🇷 🤖💥 ❤️", "😀" * 25, "𠜎𠜱𠝹𠱓 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "مرحبا بالعالم", "שלום עולם", "\u202eRTL override\u202c and \u200fmarks\u200e",
    "\u0301", "\u0301\u0301\u0301", " \u0301x", "e\u0301 a\u0308\u0323 n\u0303", "Å vs A\u030a",
    "ﬁ ligature, ①②③, ｆｕｌｌｗｉｄｔｈ, Ⅻ", "\ufeffBOM", "\x00\x01\x1b[31mred\x1b[0m\x7f",
    "A" * 500, "ab" * 300, "-" * 200 + "=" * 200, "Ünïcödé naïve café ¿qué tal? Ωμέγα",
)  # fmt: skip


def probe_texts(added_tokens: Iterable[str]) -> list[str]:
    """The built-in probes, then each of the tokenizer's added and special tokens in context."""
    texts = list(_PROBES)
    for token in added_tokens:
        if token:
            texts.extend((token, f"a{token}b", f" {token} ", f"\n{token}\n{token}", f"{token}{token}x"))
    return texts


def added_token_texts(reference: Any) -> list[str]:
    """The contents of a `tokenizers.Tokenizer`'s added tokens (special ones included)."""
    return [token.content for token in reference.get_added_tokens_decoder().values()]


def probe_differences(fast: CountingBackend, reference: CountingBackend, texts: Sequence[str]) -> list[int]:
    """Positions in `texts` where the two backends count differently."""
    wanted = reference.count_many(texts)
    got = fast.count_many(texts)
    return [index for index, (a, b) in enumerate(zip(wanted, got, strict=True)) if a != b]


def sampled(text: str) -> bool:
    """Whether the run's sample holds `text`: about one in SAMPLE_EVERY, by its length and four
    of its characters (free to compute beside counting it, and the same in every run: the hash
    of a tuple of ints is not randomized, unlike a string's)."""
    length = len(text)
    if not length:
        return False
    key = (length, ord(text[0]), ord(text[length >> 2]), ord(text[length >> 1]), ord(text[-1]))
    return hash(key) % SAMPLE_EVERY == 0


@dataclass
class GuardResult:
    """What the guard saw: the report's and `--json`'s `counting` section."""

    requested: str  # --tokenizer-backend
    backend: str  # who counts now: a fast backend, or "hf"
    fast: str | None = None  # the fast backend tried, if any
    note: str | None = None  # why the fast backend is not (or no longer) counting
    probes: int = 0  # probe texts it counted as the reference does, at load
    sampled: int = 0  # texts recounted by the reference during the run
    sample_differences: int = 0
    counted_before_switch: int | None = None  # texts the fast backend counted before the switch
    probe_refusals: list[str] = field(default_factory=list)  # fast backends that loaded but differed on probes

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "requested": self.requested,
            "fast_backend": self.fast,
            "note": self.note,
            "guard": {
                "probes": self.probes,
                "sampled": self.sampled,
                "sample_differences": self.sample_differences,
                "switched_to_hf_after": self.counted_before_switch,
                "probe_refusals": self.probe_refusals,
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GuardResult:
        """The inverse of `to_dict` (a Ray worker's guard, sent to the driver as plain data)."""
        guard = data["guard"]
        return cls(
            requested=data["requested"],
            backend=data["backend"],
            fast=data["fast_backend"],
            note=data["note"],
            probes=guard["probes"],
            sampled=guard["sampled"],
            sample_differences=guard["sample_differences"],
            counted_before_switch=guard["switched_to_hf_after"],
            probe_refusals=list(guard["probe_refusals"]),
        )

    def with_workers(self, workers: Sequence[GuardResult]) -> GuardResult:
        """This (the driver's) load check with what each Ray worker's own guard saw in the run.

        Every worker loads and guards its own backend, so the run's sample is theirs, added up;
        one worker that found a difference counted with Hugging Face from then on, and the report
        says so (`switched_to_hf_after`: the fewest texts a worker counted before its switch).
        """
        if not workers:
            return self
        switches = [w.counted_before_switch for w in workers if w.counted_before_switch is not None]
        switched = sum(1 for w in workers if w.backend == REFERENCE and self.backend != REFERENCE)
        note = self.note
        if switched:
            note = f"{switched} of {len(workers)} workers switched to hf after a sampled difference"
        return replace(
            self,
            backend=REFERENCE if switched == len(workers) else self.backend,
            note=note,
            sampled=sum(w.sampled for w in workers),
            sample_differences=sum(w.sample_differences for w in workers),
            counted_before_switch=min(switches) if switches else None,
            probe_refusals=list(dict.fromkeys([*self.probe_refusals, *(r for w in workers for r in w.probe_refusals)])),
        )

    @property
    def warning(self) -> str | None:
        """One line when the fast backend disagreed with the reference (at load or in the run)."""
        if self.sample_differences:
            return (
                f"warning: {self.fast} counted a sampled turn differently from Hugging Face tokenizers; "
                f"every count after its first {self.counted_before_switch:,} texts is Hugging Face's "
                "(please report it to that library with the tokenizer)"
            )
        if self.probe_refusals:
            return (
                f"warning: {'; '.join(self.probe_refusals)}: not used, counting with {self.backend} "
                "(please report it to that library with the tokenizer)"
            )
        return None


class GuardedCounting:
    """A fast backend checked against the reference on a sample; the reference after any difference."""

    def __init__(self, fast: CountingBackend, reference: CountingBackend, result: GuardResult) -> None:
        self._fast = fast
        self._reference = reference
        self._active = fast
        self.result = result
        self._lock = threading.Lock()
        self._longest_checked = 0
        self._counted = 0

    @property
    def name(self) -> str:
        return self._active.name

    def count_many(self, texts: Sequence[str]) -> list[int]:
        active = self._active
        if active is self._reference:
            return active.count_many(texts)
        picked = self._pick(texts)
        # The reference recounts the sample on another thread while the fast backend counts the
        # batch (both release the GIL): on a free core the check costs no time at all.
        check = _checks().submit(self._reference.count_many, [texts[index] for index in picked]) if picked else None
        counts = active.count_many(texts)
        if check is not None:
            expected = check.result()
            if any(counts[index] != want for index, want in zip(picked, expected, strict=True)):
                return self._switch(texts)
        with self._lock:
            self._counted += len(texts)
            self.result.sampled += len(picked)
        return counts

    def _pick(self, texts: Sequence[str]) -> list[int]:
        """The sample's texts in `texts`, and the longest if it is at least twice as long as any
        checked before (the checked lengths double up to the run's longest: every scale is
        checked, for at most twice the longest text's cost)."""
        lengths = [len(text) for text in texts]
        every = SAMPLE_EVERY
        picked = [
            index  # `sampled`, inlined: it runs on every text counted
            for index, (text, length) in enumerate(zip(texts, lengths, strict=True))
            if length
            and hash((length, ord(text[0]), ord(text[length >> 2]), ord(text[length >> 1]), ord(text[-1]))) % every == 0
        ]
        longest = max(lengths, default=0)
        with self._lock:
            if longest and longest >= 2 * self._longest_checked:
                self._longest_checked = longest
                index = lengths.index(longest)
                if index not in picked:
                    picked.append(index)
        return picked

    def _switch(self, texts: Sequence[str]) -> list[int]:
        with self._lock:
            if self._active is not self._reference:
                self._active = self._reference
                self.result.backend = REFERENCE
                self.result.sample_differences += 1
                self.result.counted_before_switch = self._counted
                self.result.note = f"{self._fast.name} differed from Hugging Face tokenizers on a sampled turn"
        return self._reference.count_many(texts)


_executor: tuple[int, ThreadPoolExecutor] | None = None


def _checks() -> ThreadPoolExecutor:
    """The threads the guard's recounts run on: started on first use, shared by every counter
    of the process (a forked child, which has none of its parent's threads, starts its own)."""
    global _executor
    if _executor is None or _executor[0] != os.getpid():
        _executor = (os.getpid(), ThreadPoolExecutor(max_workers=2, thread_name_prefix="count-check"))
    return _executor[1]


def choose_counting(requested: str, reference_tokenizer: Any) -> tuple[CountingBackend, GuardResult]:
    """The backend a run counts with for `--tokenizer-backend requested`, and what the guard saw.

    `reference_tokenizer` is the run's `tokenizers.Tokenizer` (truncation and padding off).
    Raises `Unsupported` when a backend asked for by name cannot be used (not installed,
    refuses the tokenizer, or differs on the probes); `auto` then counts with the reference.
    """
    if requested not in TOKENIZER_BACKENDS:
        raise Unsupported(f"unknown tokenizer backend {requested!r} (choose from {', '.join(TOKENIZER_BACKENDS)})")
    reference = HFCounting(reference_tokenizer)
    if requested == REFERENCE:
        return reference, GuardResult(requested, REFERENCE)
    tokenizer_json = reference_tokenizer.to_str()
    split_special = bool(getattr(reference_tokenizer, "encode_special_tokens", False))
    reasons: list[str] = []
    refusals: list[str] = []  # fast backends that loaded but counted a probe differently
    for name in FAST_BACKENDS if requested == "auto" else (requested,):
        try:
            fast = load_fast(name, tokenizer_json, split_special_tokens=split_special)
        except Unsupported as exc:
            reasons.append(str(exc))
            continue
        texts, differences = _probed(fast, reference, reference_tokenizer)
        if not differences:
            result = GuardResult(requested, name, fast=name, probes=len(texts), probe_refusals=refusals)
            return GuardedCounting(fast, reference, result), result
        example = f"{texts[differences[0]]!r:.60}"
        refusals.append(f"{name} counts {len(differences)} of {len(texts)} probe texts differently (e.g. {example})")
    if requested != "auto":
        raise Unsupported((refusals or reasons)[-1])
    result = GuardResult(requested, REFERENCE, note="; ".join([*reasons, *refusals]), probe_refusals=refusals)
    return reference, result


# A fast backend (one object per tokenizer: `load_fast` caches them) -> the probe texts and where
# they differ: a process that builds many counters (the tests, an API user) probes once.
_PROBED: weakref.WeakKeyDictionary[Any, tuple[list[str], list[int]]] = weakref.WeakKeyDictionary()


def _probed(fast: CountingBackend, reference: CountingBackend, reference_tokenizer: Any) -> tuple[list[str], list[int]]:
    if fast not in _PROBED:
        texts = probe_texts(added_token_texts(reference_tokenizer))
        _PROBED[fast] = texts, probe_differences(fast, reference, texts)
    return _PROBED[fast]
