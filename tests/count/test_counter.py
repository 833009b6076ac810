"""Token counting with the real (bundled) tokenizer: counts, truncation, loading.

Chat-template counts: test_chat_template.py.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from trajectory_compressor.count import TokenCounter, TokenizerLoadError, build_counter
from trajectory_compressor.count.tokenizer import bundled_tokenizer_dir, load_tokenizer
from trajectory_compressor.types import Turn

TEXTS = [
    "",
    " ",
    "hello world",
    "  leading and trailing spaces \n\n\t",
    "naïve café — 日本語のテキスト — ¿qué tal? Ωμέγα 🤖🚀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𠜎𠜱",
    "<tool_call>\n" + '{"name": "bash", "arguments": {"command": "ls -la"}}' + "\n</tool_call>",
    "def f(x):\n    return x ** 2  # comment\n" * 50,
    "a" * 20_000,
    "word " * 5_000,
]
ENGLISH = "The quick brown fox jumps over the lazy dog. " * 20 + "Ünïcödé naïve café, 日本語のテキスト, ¿qué tal?"


def _reference_count(tokenizer, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_count_many_and_count_match_the_tokenizer(counter: TokenCounter) -> None:
    expected = [_reference_count(counter.tokenizer, text) for text in TEXTS]
    assert counter.count_many(TEXTS) == expected
    assert [counter.count(text) for text in TEXTS] == expected
    assert counter.count_many([]) == []
    assert expected[0] == 0 and expected[-1] > 1000


def test_count_conversations_splits_one_batch_back_per_conversation(counter: TokenCounter) -> None:
    conversations = [
        [Turn("system", TEXTS[2]), Turn("human", TEXTS[4]), Turn("gpt", TEXTS[5])],
        [],
        [Turn("human", TEXTS[0])],
        [Turn("gpt", text) for text in TEXTS],
    ]
    counts = counter.count_conversations(conversations)
    assert [len(c) for c in counts] == [len(turns) for turns in conversations]
    for turns, per_turn in zip(conversations, counts, strict=True):
        assert per_turn == [_reference_count(counter.tokenizer, turn.value) for turn in turns]


def test_truncate_returns_a_prefix_within_the_budget(counter: TokenCounter) -> None:
    total = counter.count(ENGLISH)
    for budget in (1, 2, 7, 50, total - 1):
        prefix = counter.truncate(ENGLISH, budget)
        assert ENGLISH.startswith(prefix)
        assert counter.count(prefix) == budget, "the longest prefix: exactly the budget on this text"
    assert counter.truncate(ENGLISH, total) == ENGLISH
    assert counter.truncate(ENGLISH, total + 10) == ENGLISH
    assert counter.truncate(ENGLISH, 0) == "" and counter.truncate(ENGLISH, -3) == ""
    assert counter.truncate("", 5) == ""


@pytest.mark.parametrize("text", ["🦜" * 10, "𠜎𠜱𠝹𠱓", "naïve café 🤖🚀 done"])
def test_truncate_stays_within_the_budget_on_multi_token_characters(counter: TokenCounter, text: str) -> None:
    for budget in range(1, counter.count(text)):
        prefix = counter.truncate(text, budget)
        assert text.startswith(prefix)
        assert counter.count(prefix) <= budget, (budget, prefix)


# --- loading ---------------------------------------------------------------------------------------


def _assert_same_counts(tokenizer, counter: TokenCounter) -> None:
    assert getattr(tokenizer, "is_fast", False) or tokenizer.backend_tokenizer is not None
    assert TokenCounter(tokenizer).count_many(TEXTS) == counter.count_many(TEXTS)


def test_load_tokenizer_bundled_directory_and_tokenizer_json(tmp_path: Path, counter: TokenCounter) -> None:
    bundled = load_tokenizer()
    assert Path(bundled.name_or_path) == bundled_tokenizer_dir()
    _assert_same_counts(bundled, counter)
    _assert_same_counts(load_tokenizer("bundled:deepseek"), counter)
    directory = tmp_path / "tok"
    directory.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(bundled_tokenizer_dir() / name, directory / name)
    _assert_same_counts(load_tokenizer(str(directory)), counter)
    only_json = tmp_path / "elsewhere" / "tokenizer.json"
    only_json.parent.mkdir()
    shutil.copy(bundled_tokenizer_dir() / "tokenizer.json", only_json)
    _assert_same_counts(load_tokenizer(str(only_json)), counter)


def test_hub_id_offline_fails_fast_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.monotonic()
    with pytest.raises(TokenizerLoadError) as caught:
        load_tokenizer("some-org/no-such-model-for-tc-tests")
    elapsed = time.monotonic() - started
    message = str(caught.value)
    assert elapsed < 10, f"loading an unreachable Hub id took {elapsed:.1f}s"
    assert "\n" not in message
    assert "some-org/no-such-model-for-tc-tests" in message and "network" in message


def test_unreadable_tokenizer_and_template_paths_raise_tokenizer_load_error(tmp_path: Path) -> None:
    broken = tmp_path / "tokenizer.json"
    broken.write_text("{not a tokenizer")
    with pytest.raises(TokenizerLoadError, match="cannot load tokenizer"):
        load_tokenizer(str(broken))
    with pytest.raises(TokenizerLoadError, match="cannot read chat template"):
        build_counter(chat_template=str(tmp_path / "missing.jinja"))


def test_counts_ignore_truncation_and_padding_saved_in_tokenizer_json(tmp_path: Path) -> None:
    """A tokenizer.json saved with truncation or padding on must still count every token."""
    import tokenizers

    from trajectory_compressor.count import build_counter

    raw = tokenizers.Tokenizer.from_file(str(bundled_tokenizer_dir() / "tokenizer.json"))
    raw.enable_truncation(16)
    raw.enable_padding(length=64)
    path = tmp_path / "tokenizer.json"
    raw.save(str(path))
    texts = ["hello world " * 100, "hi"]
    expected = TokenCounter(load_tokenizer()).count_many(texts)
    assert expected[0] > 64
    counter = build_counter(str(path))
    assert counter.count_many(texts) == expected
    assert [counter.count(text) for text in texts] == expected
