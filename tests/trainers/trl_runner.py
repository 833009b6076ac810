"""TRL's real `SFTTrainer` (1.16) on the tiny model, on CPU: what it would train, and two real steps.

`run_sft` builds the trainer exactly as a user's script would (a `datasets.Dataset`, a tokenizer
with its chat template, an `SFTConfig`), so everything TRL does to the data before the first step
(`SFTTrainer._prepare_dataset`: rendering raw `messages` with the template, applying an
`assistant_masks` or `completion_mask` column, truncating to `max_length`, dropping rows left
with no loss) happens in TRL's own code. The rows it returns are `trainer.train_dataset` after
that preparation: what the collator batches and the loss is computed on.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.trainers.model import tiny_model

IGNORE_INDEX = -100  # TRL's (and transformers') label for a token without loss


@dataclass(frozen=True)
class PreparedRow:
    """One row of TRL's prepared train dataset: the ids the model sees and their labels."""

    input_ids: list[int]
    labels: list[int]

    @property
    def loss_positions(self) -> list[int]:
        """Where a label carries loss (not -100), the positions TRL trains."""
        return [i for i, label in enumerate(self.labels) if label != IGNORE_INDEX]


@dataclass
class SFTRun:
    """What `run_sft` did: the trainer, its prepared rows, and the training loss when it trained."""

    trainer: Any
    rows: list[PreparedRow]
    train_loss: float | None = None
    log_history: list[dict[str, Any]] = field(default_factory=list)


def sft_config(output_dir: Path, *, max_length: int, **overrides: Any) -> Any:
    """An `SFTConfig` for a fast CPU run: 2 steps of batch 1, nothing saved, nothing reported."""
    from trl import SFTConfig

    settings: dict[str, Any] = {
        "output_dir": str(output_dir),
        "max_length": max_length,
        "max_steps": 2,
        "per_device_train_batch_size": 1,
        "gradient_accumulation_steps": 1,
        "learning_rate": 1e-3,
        "report_to": [],
        "save_strategy": "no",
        "logging_steps": 1,
        "use_cpu": True,
        "bf16": False,
        "fp16": False,
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        "seed": 0,
    }
    settings.update(overrides)
    return SFTConfig(**settings)


def run_sft(
    dataset: Any,
    tokenizer: Any,
    output_dir: Path,
    *,
    max_length: int,
    train: bool = False,
    model: Any = None,
    **config_overrides: Any,
) -> SFTRun:
    """Build TRL's `SFTTrainer` on `dataset` and return its prepared rows (and train 2 steps if asked).

    `dataset` is a `datasets.Dataset` as a recipe hands it to TRL: pre-tokenized (`input_ids`, with
    `assistant_masks` / `completion_mask` / `labels` if the recipe has them) or raw (`messages` and
    `tools`, `prompt` / `completion`). `config_overrides` go to `SFTConfig` (for example
    `assistant_only_loss=True`, `truncation_mode="keep_end"`). The tokenizer is used as given:
    pass a fresh one (`trainer_tokenizer`), TRL sets its pad token.
    """
    from trl import SFTTrainer

    config = sft_config(output_dir, max_length=max_length, **config_overrides)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.getLogger("transformers").setLevel(logging.ERROR)
        trainer = SFTTrainer(
            model=model if model is not None else tiny_model(tokenizer),
            args=config,
            train_dataset=dataset,
            processing_class=tokenizer,
        )
    prepared = trainer.train_dataset
    rows = [PreparedRow(list(row["input_ids"]), list(row["labels"])) for row in prepared]
    run = SFTRun(trainer=trainer, rows=rows)
    if train:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = trainer.train()
        run.train_loss = float(result.training_loss)
        run.log_history = list(trainer.state.log_history)
    return run
