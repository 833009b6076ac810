"""veRL 0.9.1's `MultiTurnSFTDataset`, run from its wheel on a Parquet file: each row's ids and loss mask.

`verl/utils/dataset/multiturn_sft_dataset.py` reads Parquet with pandas (`dtype_backend="pyarrow"`),
renders each message alone with the tokenizer's chat template (tools with the first message),
trains every assistant message but its generation prompt, and checks the concatenation against
one rendering of the whole conversation (`sanity_check`). It needs torch, pandas and omegaconf.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.trainers.stubs import stubbed_imports, verl_stubs
from tests.trainers.wheels import unpacked_wheel


def verl_dataset_module() -> ModuleType:
    """`verl.utils.dataset.multiturn_sft_dataset`, imported from the unpacked wheel (see `stubs.verl_stubs`)."""
    root = unpacked_wheel("verl") / "verl"
    shells = {  # these packages' __init__ files import Ray-side protocol code, the RL datasets, model patches
        "verl": root,
        "verl.utils": root / "utils",
        "verl.utils.dataset": root / "utils" / "dataset",
        "verl.models": root / "models",
        "verl.models.transformers": root / "models" / "transformers",
    }
    with stubbed_imports(verl_stubs(), shells):
        # verl/utils/__init__.py re-exports hf_tokenizer from its tokenizer module, which the
        # dataset imports from the package; the shell gets the same function.
        tokenizer_module = importlib.import_module("verl.utils.tokenizer")
        sys.modules["verl.utils"].hf_tokenizer = tokenizer_module.hf_tokenizer  # type: ignore[attr-defined]
        return importlib.import_module("verl.utils.dataset.multiturn_sft_dataset")


@dataclass(frozen=True)
class VerlItem:
    """One dataset item without padding: the ids and which of them carry loss (1) or not (0)."""

    input_ids: list[int]
    loss_mask: list[int]

    @property
    def labels(self) -> list[int]:
        """The loss mask as labels (-100 where no loss), to compare with the other trainers'."""
        return [token if mask else -100 for token, mask in zip(self.input_ids, self.loss_mask, strict=True)]


def verl_dataset(parquet_file: Path, tokenizer: Any, *, max_length: int = 4096, **config: Any) -> Any:
    """veRL's `MultiTurnSFTDataset` over `parquet_file` (its config: `messages_key`, `tools_key`,
    `apply_chat_template_kwargs`, `truncation`...; `pad_mode` defaults to `no_padding` here)."""
    from omegaconf import OmegaConf

    module = verl_dataset_module()
    settings = {"pad_mode": "no_padding", "max_length": max_length, "truncation": "error", **config}
    return module.MultiTurnSFTDataset(str(parquet_file), tokenizer, OmegaConf.create(settings))


def verl_items(parquet_file: Path, tokenizer: Any, *, max_length: int = 4096, **config: Any) -> list[VerlItem]:
    """Every item of `verl_dataset(...)`, as the trainer's data loader would index them."""
    dataset = verl_dataset(parquet_file, tokenizer, max_length=max_length, **config)
    items = []
    for index in range(len(dataset)):
        item = dataset[index]
        items.append(VerlItem(item["input_ids"].tolist(), item["loss_mask"].tolist()))
    return items
