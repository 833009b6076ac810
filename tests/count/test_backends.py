"""The counting backends: each fast one counts every text as Hugging Face `tokenizers` does, or
refuses the tokenizer at load. All on real tokenizers (the bundled one, or built here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tokenizers
from tokenizers import models, normalizers, pre_tokenizers, trainers

from tests.conftest import make_trajectory
from tests.count.chat_fixtures import family_tokenizer
from trajectory_compressor.count import TokenizerLoadError, build_counter
from trajectory_compressor.count.backends import (
    FAST_BACKENDS,
    HFCounting,
    Unsupported,
    installed,
    load_fast,
)
from trajectory_compressor.count.exactness import probe_texts
from trajectory_compressor.count.tokenizer import bundled_tokenizer_dir

INSTALLED = [pytest.param(name, marks=pytest.mark.skipif(not installed(name), reason=f"{name} not installed"))
             for name in FAST_BACKENDS]  # fmt: skip
CORPUS = ["hello world, this is a short test of a tokenizer", "def f(x):\n    return x  # ok", "中文 测试", "👍🏽"] * 40


def _bundled() -> tokenizers.Tokenizer:
    return tokenizers.Tokenizer.from_file(str(bundled_tokenizer_dir() / "tokenizer.json"))


def _values() -> list[str]:
    """Every turn value of a few generated agent runs, and the probe set."""
    rows = [make_trajectory(index, steps=4, output_lines=30) for index in range(6)]
    return [turn["value"] for row in rows for turn in row["conversations"]] + probe_texts(["<tool_call>"])


@pytest.mark.parametrize("name", INSTALLED)
def test_a_fast_backend_counts_every_text_as_tokenizers_does(name: str) -> None:
    reference = _bundled()
    fast = load_fast(name, reference.to_str())
    texts = _values()
    assert fast.name == name
    assert fast.count_many(texts) == HFCounting(reference).count_many(texts)
    assert fast.count_many([]) == [] and fast.count_many([""]) == [0]


@pytest.mark.parametrize("name", INSTALLED)
def test_added_tokens_of_a_transformers_tokenizer_come_along(name: str) -> None:
    """Tokens added to a `transformers` tokenizer (as a model's tokenizer.json lists them) are in
    the serialized tokenizer the fast backend is built from, so they count as one token each."""
    backend = family_tokenizer("qwen", None).backend_tokenizer
    fast = load_fast(name, backend.to_str())
    texts = ["<|im_start|>user\nhi<|im_end|>", "a<tool_call>b", " <tool_response> ", "<think>x</think>"]
    assert fast.count_many(texts) == HFCounting(backend).count_many(texts)
    assert fast.count_many(["<|im_start|>"]) == [1]


@pytest.mark.parametrize("name", INSTALLED)
def test_special_tokens_encoded_as_text_count_as_tokenizers_counts_them(name: str) -> None:
    """`split_special_tokens` (tokenizers' `encode_special_tokens`): special tokens are plain text."""
    reference = _bundled()
    reference.encode_special_tokens = True
    texts = ["<｜begin▁of▁sentence｜>hello", "x<｜end▁of▁sentence｜>"]
    try:
        fast = load_fast(name, reference.to_str(), split_special_tokens=True)
    except Unsupported as exc:  # gigatoken has no such mode: it says so, and auto uses another
        assert "special tokens as text" in str(exc)
        return
    assert fast.count_many(texts) == HFCounting(reference).count_many(texts)
    assert fast.count_many(texts)[0] > 2


def _wordpiece() -> tokenizers.Tokenizer:
    tokenizer = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer()
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.train_from_iterator(CORPUS, trainers.WordPieceTrainer(vocab_size=120, special_tokens=["[UNK]"]))
    return tokenizer


def _unigram() -> tokenizers.Tokenizer:
    tokenizer = tokenizers.Tokenizer(models.Unigram())
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=60, unk_token="<unk>", special_tokens=["<unk>"])
    tokenizer.train_from_iterator(CORPUS, trainer)
    return tokenizer


def _nfkc_byte_level() -> tokenizers.Tokenizer:
    tokenizer = tokenizers.Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tokenizer.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=300, initial_alphabet=alphabet))
    return tokenizer


@pytest.mark.parametrize("name", INSTALLED)
@pytest.mark.parametrize("make", [_wordpiece, _unigram, _nfkc_byte_level], ids=["wordpiece", "unigram", "nfkc"])
def test_a_tokenizer_a_fast_backend_cannot_reproduce_is_refused_at_load(name: str, make: Any) -> None:
    with pytest.raises(Unsupported, match=f"^{name} cannot reproduce this tokenizer: .+"):
        load_fast(name, make().to_str())


@pytest.mark.parametrize("make", [_wordpiece, _unigram, _nfkc_byte_level], ids=["wordpiece", "unigram", "nfkc"])
def test_auto_counts_with_tokenizers_where_no_fast_backend_can(tmp_path: Path, make: Any) -> None:
    path = tmp_path / "tokenizer.json"
    make().save(str(path))
    counter = build_counter(str(path), tokenizer_backend="auto")
    assert counter.counting.name == "hf"
    assert counter.guard.backend == "hf" and "cannot reproduce this tokenizer" in counter.guard.note
    assert counter.count_many(CORPUS[:4]) == HFCounting(counter.tokenizer).count_many(CORPUS[:4])
    assert counter.guard.warning is None, "an unsupported tokenizer is expected, not a warning"


def test_auto_picks_the_first_installed_fast_backend_on_the_bundled_tokenizer() -> None:
    counter = build_counter(tokenizer_backend="auto")
    expected = next(name for name in FAST_BACKENDS if installed(name))
    assert counter.counting.name == expected
    assert counter.guard.probes > 100 and counter.guard.probe_refusals == [] and counter.guard.warning is None


@pytest.mark.parametrize("name", INSTALLED)
def test_counts_ignore_truncation_and_padding_saved_in_tokenizer_json(tmp_path: Path, name: str) -> None:
    data = json.loads((bundled_tokenizer_dir() / "tokenizer.json").read_text(encoding="utf-8"))
    data["truncation"] = {"direction": "Right", "max_length": 8, "strategy": "LongestFirst", "stride": 0}
    data["padding"] = {
        "strategy": {"Fixed": 64}, "direction": "Right", "pad_to_multiple_of": None,
        "pad_id": 0, "pad_type_id": 0, "pad_token": "<｜end▁of▁sentence｜>",
    }  # fmt: skip
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    counter = build_counter(str(path), tokenizer_backend=name)
    assert counter.counting.name == name
    text = "word " * 100
    assert counter.count_many([text, "a"]) == [counter.count(text), 1] and counter.count(text) > 50


def test_the_reference_backend_counts_what_the_tokenizer_encodes() -> None:
    reference = _bundled()
    texts = _values()
    assert HFCounting(reference).count_many(texts) == [len(reference.encode(text).ids) for text in texts]
    assert HFCounting(reference).count_many([]) == []


def test_a_backend_asked_for_by_name_that_cannot_count_stops_the_run(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    _wordpiece().save(str(path))
    with pytest.raises(TokenizerLoadError, match=r"^--tokenizer-backend fastokens: .*(cannot reproduce|not installed)"):
        build_counter(str(path), tokenizer_backend="fastokens")
