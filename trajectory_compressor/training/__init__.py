"""From a compressed dataset to what each trainer reads: exactly the marked turns, exactly the counted tokens.

Every recipe starts from the same view of a record (`view`: Hugging Face chat messages with
their ``train`` marks, tools decoded), whatever format it was written in, so what one trainer
trains and counts, the others do too, and `--count-mode chat-template` counted it. Write the
dataset with ``--write-format hf-chat`` (it loads with `datasets` whatever the mix of sources):

- **TRL** (`SFTTrainer`): ``ds.map(ChatTokens(tokenizer), remove_columns=ds.column_names)`` gives
  pre-tokenized rows with an ``assistant_masks`` column, which TRL turns into its labels.
- **axolotl**: the file itself (``type: chat_template``, ``message_field_training: train``); it
  decodes JSON-text tools and arguments and trains a message iff its mark says so.
- **LLaMA-Factory**: `write_llamafactory` writes one sample per trained turn in its ShareGPT
  format (`llamafactory`); train with ``mask_history: true``.
- **veRL**: the Parquet output with `verl.MarkedMultiTurnSFTDataset` as the dataset class.
- **your own loop**: `messages_of`, `tools_of`, `loss_mask`, or `ChatTokens(tokenizer).row(record)`.
"""

from trajectory_compressor.training.llamafactory import DATASET_INFO as LLAMAFACTORY_DATASET_INFO
from trajectory_compressor.training.llamafactory import llamafactory_samples, write_llamafactory
from trajectory_compressor.training.tokens import ChatTokens, TrainingRow
from trajectory_compressor.training.view import is_trained, loss_mask, messages_of, tools_of

__all__ = [
    "LLAMAFACTORY_DATASET_INFO",
    "ChatTokens",
    "TrainingRow",
    "is_trained",
    "llamafactory_samples",
    "loss_mask",
    "messages_of",
    "tools_of",
    "write_llamafactory",
]
