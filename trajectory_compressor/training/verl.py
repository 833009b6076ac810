"""veRL: its multi-turn SFT dataset, trained on the marked assistant turns only, tokenized whole.

veRL's `MultiTurnSFTDataset` (`verl/utils/dataset/multiturn_sft_dataset.py`) trains every
assistant message it is given (a ``train: false`` context turn of a window included), passes a
``tools`` column to the template as it finds it (JSON text raises there), and tokenizes each
message alone before checking that the pieces add up to the whole conversation (they do not for
templates that group consecutive tool results, such as Qwen's). This subclass keeps its loading,
padding and truncation and changes what a row's tokens and mask are: the record as the other
recipes see it (`training.view`: messages with their marks, tools decoded from JSON text, the
``list<json>`` messages of an ``hf-chat`` Parquet output decoded), rendered and tokenized whole
by `training.tokens.ChatTokens`, with the loss on the marked assistant turns only. Its pieces
per message are slices of that one tokenization, so veRL's own check passes and the count is
``apply_chat_template``'s, the one the run's metrics hold.

Point veRL at this file (it loads a dataset class from a file path)::

    data.custom_cls.path=$(python -c "import trajectory_compressor.training.verl as m; print(m.__file__)")
    data.custom_cls.name=MarkedMultiTurnSFTDataset

This module imports veRL: it is loaded by veRL, never by the package itself.
"""

from __future__ import annotations

import json
from typing import Any

import torch
from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

from trajectory_compressor.training.tokens import ChatTokens, TrainingRow


class MarkedMultiTurnSFTDataset(MultiTurnSFTDataset):
    """`MultiTurnSFTDataset` over this tool's output: see the module docstring."""

    def _read_files_and_process(self) -> None:
        super()._read_files_and_process()
        found: list[Any] | None = getattr(self, "tools", None)
        self.tools = None if found is None else [_decoded_tools(value) for value in found]
        self._chat_tokens: dict[bool | None, ChatTokens] = {}
        self._row: TrainingRow | None = None

    def _tokens_for(self, example: dict[str, Any]) -> ChatTokens:
        """The `ChatTokens` of this row's template kwargs: `apply_chat_template_kwargs` and, over
        them, veRL's own thinking switch (the row's `enable_thinking` column, else
        `data.enable_thinking_default`), which veRL passes to the template (`__getitem__`,
        `_process_single_message`). Read from the kwargs alone, a switch set veRL's way left the
        mask as with thinking on (Qwen3's empty think block trained) while the row said off."""
        if self.enable_thinking is not None and self.enable_thinking_key in example:
            thinking = example[self.enable_thinking_key]
        else:
            thinking = self.enable_thinking_default
        switch = None if thinking is None else bool(thinking)
        if switch not in self._chat_tokens:
            kwargs = dict(self.apply_chat_template_kwargs)
            if switch is not None:
                kwargs["enable_thinking"] = switch
            self._chat_tokens[switch] = ChatTokens(self.tokenizer, **kwargs)
        return self._chat_tokens[switch]

    def _build_messages(self, example: dict[str, Any]) -> list[dict[str, Any]]:
        from trajectory_compressor.training.view import messages_of, unmarked

        record: dict[str, Any] = {"messages": [_decoded(message) for message in example[self.messages_key]]}
        if self.tools_key in example:
            record["tools"] = _decoded_tools(example[self.tools_key])
        self._row = self._tokens_for(example).row(record)
        return unmarked(messages_of(record))

    def _process_single_message(
        self,
        index: int,
        message: dict[str, Any],
        full_message: list[Any],
        tools: Any = None,
        enable_thinking: bool | None = None,
    ) -> tuple[Any, Any, Any, dict[str, Any]]:
        row = self._row
        assert row is not None, "_build_messages runs first, for the same row"
        positions = [position for position, owner in enumerate(row.owners) if owner == index]
        input_ids = torch.tensor([row.input_ids[p] for p in positions], dtype=torch.long)
        loss_mask = torch.tensor([row.assistant_masks[p] for p in positions], dtype=torch.long)
        return input_ids, loss_mask, torch.ones_like(input_ids), {}


def _decoded(value: Any) -> Any:
    """A message as Parquet gave it: a `list<json>` item comes back as its JSON text."""
    if isinstance(value, str):
        return json.loads(value)
    if hasattr(value, "tolist"):
        value = value.tolist()
    return value


def _decoded_tools(value: Any) -> list[Any] | None:
    """Tools as the template takes them: JSON text decoded, null (or pandas' NA) as None."""
    if value is None or (not isinstance(value, (str, list)) and not hasattr(value, "tolist")):
        return None
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else None
    return value or None
