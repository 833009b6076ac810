"""The exactness guard: a fast backend counts only while it agrees with Hugging Face `tokenizers`.

The backends here are real (the bundled tokenizer through `tokenizers` and a fast library);
"disagreeing" ones are a real fast backend made to count one more token on the texts holding a
marker, the way a bug in that library would show.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from pathlib import Path

import pytest
import tokenizers

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from trajectory_compressor import PlanConfig, RunConfig, compress
from trajectory_compressor.count import TokenCounter, TokenizerLoadError, build_counter
from trajectory_compressor.count import backends as backends_module
from trajectory_compressor.count.backends import FAST_BACKENDS, HFCounting, installed, load_fast
from trajectory_compressor.count.exactness import (
    SAMPLE_EVERY,
    GuardedCounting,
    GuardResult,
    added_token_texts,
    probe_texts,
    sampled,
)
from trajectory_compressor.count.tokenizer import bundled_tokenizer_dir

FAST = next((name for name in FAST_BACKENDS if installed(name)), None)
needs_fast = pytest.mark.skipif(FAST is None, reason="no fast backend installed")
MARK = "DISAGREE-HERE"


class Disagreeing:
    """A fast backend that counts one token more on every text holding `marker`."""

    def __init__(self, fast: object, marker: str) -> None:
        self._fast = fast
        self.name = fast.name  # type: ignore[attr-defined]
        self.marker = marker

    def count_many(self, texts: Sequence[str]) -> list[int]:
        counts = self._fast.count_many(texts)  # type: ignore[attr-defined]
        return [count + (self.marker in text) for count, text in zip(counts, texts, strict=True)]


class Recording:
    """The reference, noting every text it is asked to count (how much the guard costs)."""

    name = "hf"

    def __init__(self, reference: HFCounting) -> None:
        self._reference = reference
        self.texts: list[str] = []

    def count_many(self, texts: Sequence[str]) -> list[int]:
        self.texts.extend(texts)
        return self._reference.count_many(texts)


def _reference() -> tokenizers.Tokenizer:
    return tokenizers.Tokenizer.from_file(str(bundled_tokenizer_dir() / "tokenizer.json"))


def _guarded(marker: str) -> tuple[GuardedCounting, Recording]:
    reference = _reference()
    assert FAST is not None
    fast = Disagreeing(load_fast(FAST, reference.to_str()), marker)
    recording = Recording(HFCounting(reference))
    return GuardedCounting(fast, recording, GuardResult("auto", FAST, fast=FAST)), recording


def _in_sample(prefix: str) -> str:
    """A text starting with `prefix` that the run's sample holds."""
    text = prefix
    while not sampled(text):
        text += "x"
    return text


# --- the probe set ----------------------------------------------------------------------------------


def test_the_probe_set_covers_what_tokenizers_get_wrong() -> None:
    texts = probe_texts(["<|im_start|>", "<tool_call>"])
    joined = "".join(texts)
    assert any(text.strip() == "" and len(text) > 40 for text in texts), "a long whitespace run"
    assert any("\t" in text and "\r\n" in text for text in texts), "mixed whitespace"
    assert any("def " in text and "return" in text for text in texts), "code"
    assert any("\u4e00" <= char <= "\u9fff" for char in joined), "CJK"
    assert any(unicodedata.category(char) == "So" for char in joined), "emoji"
    assert any(unicodedata.bidirectional(char) in ("R", "AL") for char in joined), "right-to-left text"
    assert "\u0301" in texts, "a lone combining mark"
    assert {"<|im_start|>", "a<tool_call>b", " <tool_call> "} <= set(texts), "added tokens alone, in words, in spaces"


def test_the_probe_set_holds_every_added_and_special_token_of_the_tokenizer() -> None:
    added = added_token_texts(_reference())
    assert "<｜begin▁of▁sentence｜>" in added and len(added) > 100
    assert set(added) <= set(probe_texts(added))


# --- at load ----------------------------------------------------------------------------------------


@pytest.fixture
def disagreeing_on_probes(monkeypatch: pytest.MonkeyPatch) -> str:
    """Every fast backend made to disagree on a lone combining mark (a probe; no agent turn has one)."""
    for name in FAST_BACKENDS:
        real = backends_module.LOADERS[name]

        def load(*args: object, real: object = real, **kwargs: object) -> Disagreeing:
            return Disagreeing(real(*args, **kwargs), "\u0301")  # type: ignore[operator]

        monkeypatch.setitem(backends_module.LOADERS, name, load)
    return "\u0301"


@needs_fast
def test_a_backend_asked_for_by_name_that_differs_on_the_probes_is_refused_at_load(disagreeing_on_probes: str) -> None:
    with pytest.raises(TokenizerLoadError, match=rf"^--tokenizer-backend {FAST}: {FAST} counts \d+ of \d+ probe texts"):
        build_counter(tokenizer_backend=FAST)


@needs_fast
def test_auto_counts_with_tokenizers_when_the_fast_backends_differ_on_the_probes(disagreeing_on_probes: str) -> None:
    counter = build_counter(tokenizer_backend="auto")
    assert counter.counting.name == "hf"
    report = counter.guard.to_dict()
    assert report["backend"] == "hf" and report["guard"]["probe_refusals"]
    assert counter.guard.warning is not None and "probe texts differently" in counter.guard.warning
    assert counter.count("e\u0301") == len(_reference().encode("e\u0301").ids)


@needs_fast
def test_auto_uses_a_fast_backend_that_agrees_on_the_probes() -> None:
    counter = build_counter(tokenizer_backend="auto")
    assert counter.counting.name == FAST
    assert counter.guard.probes == len(probe_texts(added_token_texts(_reference())))
    assert counter.guard.warning is None


# --- during the run ---------------------------------------------------------------------------------


def test_the_sample_is_about_one_text_in_sample_every_and_the_same_in_every_run() -> None:
    rows = [make_trajectory(index, steps=20, output_lines=5 + index % 7) for index in range(150)]
    texts = [turn["value"] + str(position) for row in rows for position, turn in enumerate(row["conversations"])]
    picked = [text for text in texts if sampled(text)]
    assert len(texts) / SAMPLE_EVERY / 3 < len(picked) < 3 * len(texts) / SAMPLE_EVERY
    assert [text for text in texts if sampled(text)] == picked
    assert not sampled("")


@needs_fast
def test_a_sampled_text_counted_differently_switches_the_rest_of_the_run_to_tokenizers() -> None:
    guarded, reference = _guarded(MARK)
    wrong = _in_sample(f"{MARK} a tool output")
    batch = ["a plain turn", wrong, "another plain turn " + MARK]
    counts = guarded.count_many(batch)
    assert counts == HFCounting(_reference()).count_many(batch), "the whole batch recounted by the reference"
    assert guarded.name == "hf" and guarded.result.backend == "hf"
    assert guarded.result.sample_differences == 1 and guarded.result.counted_before_switch == 0
    later = [f"{MARK} later", "plain"]
    reference.texts.clear()
    assert guarded.count_many(later) == HFCounting(_reference()).count_many(later)
    assert reference.texts == later, "after the switch every text is the reference's"
    assert guarded.result.warning is not None and "counted a sampled turn differently" in guarded.result.warning


def _not_in_sample(prefix: str) -> str:
    text = prefix
    while sampled(text):
        text += "y"
    return text


@needs_fast
def test_a_longest_text_twice_as_long_as_any_checked_before_is_always_checked() -> None:
    guarded, reference = _guarded(MARK)
    first = _not_in_sample("a tool output line\n" * 100)
    guarded.count_many(["short", first])
    assert reference.texts == [first], "the first batch's longest text"
    a_bit_longer = _not_in_sample(f"{MARK} " + "a tool output line\n" * 150)
    guarded.count_many(["short", a_bit_longer])
    assert reference.texts == [first] and guarded.result.backend == FAST, "not twice as long: not checked"
    longest = _not_in_sample(f"{MARK} " + "a long tool output line\n" * 200)
    assert guarded.count_many(["short again", longest]) == HFCounting(_reference()).count_many(["short again", longest])
    assert guarded.result.backend == "hf"


@needs_fast
def test_the_guard_recounts_only_the_sample_with_the_reference() -> None:
    guarded, reference = _guarded(marker="\x00never present\x00")
    texts = [turn["value"] for index in range(30) for turn in make_trajectory(index, steps=10)["conversations"]]
    guarded.count_many(texts[:1])  # the longest so far is the first text: checked
    reference.texts.clear()
    counts = guarded.count_many(texts)
    assert counts == HFCounting(_reference()).count_many(texts)
    in_sample = [text for text in texts if sampled(text)]
    longest = max(texts, key=len)
    assert sorted(reference.texts) == sorted(in_sample + ([] if sampled(longest) else [longest]))
    assert len(reference.texts) < len(texts) / 20
    assert guarded.result.backend == FAST and guarded.result.sampled >= len(reference.texts)


@needs_fast
def test_a_run_whose_fast_backend_disagrees_on_one_turn_counts_with_tokenizers(tmp_path: Path) -> None:
    """The run's metrics are then Hugging Face's counts, the report names it, and says so once."""
    rows = [make_trajectory(index, steps=4, output_lines=10) for index in range(6)]
    turns = rows[3]["conversations"]
    turns[5]["value"] = f"<tool_response>\n{MARK}\n" + "a long tool output line\n" * 400 + "</tool_response>"
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    reference = _reference()
    expected = [sum(len(reference.encode(t["value"]).ids) for t in row["conversations"]) for row in rows]
    config = RunConfig(plan=PlanConfig(target_max_tokens=100_000), dry_run=True, quiet=True)

    unguarded = Disagreeing(load_fast(FAST, reference.to_str()), MARK)  # type: ignore[arg-type]
    compress([str(source)], tmp_path / "wrong.jsonl", config, counter=TokenCounter(reference, backend=unguarded))
    wrong = [line["original_tokens"] for line in read_jsonl(tmp_path / "wrong.metrics.jsonl")]
    assert wrong[3] == expected[3] + 1, "the disagreeing backend alone gets the row wrong"

    guarded, _ = _guarded(MARK)
    [result] = compress([str(source)], tmp_path / "out.jsonl", config, counter=TokenCounter(reference, backend=guarded))
    assert [line["original_tokens"] for line in read_jsonl(tmp_path / "out.metrics.jsonl")] == expected
    counting = result.report["counting"]
    assert counting["backend"] == "hf" and counting["fast_backend"] == FAST
    assert counting["guard"]["sample_differences"] == 1
    assert [w for w in result.report["warnings"] if "counted a sampled turn differently" in w] != []


# --- the setting --------------------------------------------------------------------------------------


@needs_fast
def test_the_report_and_json_name_the_backend_and_the_guards_result(tmp_path: Path) -> None:
    import json

    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(index) for index in range(3)])
    done = run_cli("compress", str(source), "-o", str(tmp_path / "out.jsonl"), "--dry-run", "--json", "-v")
    assert done.returncode == 0, done.stderr
    counting = json.loads(done.stdout)["counting"]
    assert counting["backend"] == FAST and counting["requested"] == "auto"
    assert counting["guard"]["probes"] > 100 and counting["guard"]["sampled"] >= 1
    assert counting["guard"]["sample_differences"] == 0
    assert f"counting: {FAST} ({FAST} checked against hf" in done.stderr  # the summary's line, with -v
    analyzed = run_cli("analyze", str(source), "--json", "--tokenizer-backend", "hf")
    assert json.loads(analyzed.stdout)["counting"]["backend"] == "hf"


def test_the_backend_is_a_flag_and_a_yaml_key(tmp_path: Path) -> None:
    import json

    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(0)])
    config = tmp_path / "config.yaml"
    config.write_text("tokenizer:\n  backend: hf\n", encoding="utf-8")
    by_yaml = run_cli("analyze", str(source), "--json", "--config", str(config))
    assert json.loads(by_yaml.stdout)["counting"]["requested"] == "hf"
    unknown = run_cli("analyze", str(source), "--tokenizer-backend", "nope")
    assert unknown.returncode == 2 and "nope" in unknown.stderr


# --- the Ray engine: each worker guards its own counts ------------------------------------------


def test_a_ray_runs_guard_is_the_drivers_load_check_with_its_workers_samples_added_up() -> None:
    driver = GuardResult("auto", "fastokens", fast="fastokens", probes=120)
    clean = GuardResult("auto", "fastokens", fast="fastokens", probes=120, sampled=5)
    switched = GuardResult(
        "auto", "hf", fast="fastokens", probes=120, sampled=3, sample_differences=1, counted_before_switch=40
    )
    assert GuardResult.from_dict(switched.to_dict()) == switched, "sent to the driver as plain data"
    assert driver.with_workers([]) == driver
    merged = driver.with_workers([clean, switched])
    assert (merged.sampled, merged.sample_differences, merged.counted_before_switch) == (8, 1, 40)
    assert merged.backend == "fastokens" and merged.note is not None and "1 of 2 workers" in merged.note
    assert merged.warning is not None and "counted a sampled turn differently" in merged.warning
    assert driver.with_workers([switched]).backend == "hf", "every worker switched: hf counted the run"
    assert driver.with_workers([clean, clean]).warning is None
