"""axolotl 0.19.0's chat_template strategy, run from its wheel: a dataset in, input ids and labels out.

The call is axolotl's own: `axolotl/utils/data/wrappers.py:get_dataset_wrapper`, which for
`type: chat_template` loads `axolotl/prompt_strategies/chat_template.py` (`StrategyLoader`, i.e.
`load`, building `ChatTemplatePrompter` + `ChatTemplateStrategy`) through
`axolotl/prompt_strategies/__init__.py:load` and maps it over the dataset with
`axolotl/datasets.py:TokenizedPromptDataset` (batched, as in training). The dataset entry and the
config are `DictDefault`s holding only the keys given, as axolotl's validated config does.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.trainers.stubs import axolotl_stubs, stubbed_imports
from tests.trainers.wheels import unpacked_wheel

MODULES = ("axolotl.utils.dict", "axolotl.utils.data.wrappers", "axolotl.prompt_strategies.chat_template")


def axolotl_modules() -> dict[str, ModuleType]:
    """axolotl's dataset wrapper and chat_template strategy, imported from the unpacked wheel."""
    root = unpacked_wheel("axolotl") / "axolotl"
    shells = {  # axolotl/utils/data/__init__.py imports the whole data pipeline (Hub, packing, RL)
        "axolotl.utils.data": root / "utils" / "data",
    }
    with stubbed_imports(axolotl_stubs(), {"axolotl": root, **shells}):
        return {name: importlib.import_module(name) for name in MODULES}


def axolotl_tokenize(
    dataset: Any,
    tokenizer: Any,
    *,
    sequence_len: int = 4096,
    cfg: dict[str, Any] | None = None,
    **dataset_entry: Any,
) -> Any:
    """`dataset` tokenized by axolotl as a `datasets:` entry `dataset_entry` of type chat_template says.

    `dataset_entry` holds the keys a user writes under `datasets:` (`field_messages="messages"`,
    `message_field_training="train"`, `field_tools="tools"`, `roles_to_train=[...]`...);
    `type` is `chat_template` unless given. `cfg` adds top-level keys (`chat_template`,
    `train_on_inputs`, `eot_tokens`...). The chat template is the tokenizer's unless `cfg` or
    the entry names another (axolotl's `tokenizer_default`). Returns the tokenized `datasets`
    dataset: `input_ids`, `attention_mask`, `labels` per row.
    """
    modules = axolotl_modules()
    dict_default = modules["axolotl.utils.dict"].DictDefault
    entry = dict_default({"path": "trajectory_compressor_output", "type": "chat_template", **dataset_entry})
    config = dict_default({"sequence_len": sequence_len, "train_on_inputs": False, **(cfg or {})})
    wrapped, _ = modules["axolotl.utils.data.wrappers"].get_dataset_wrapper(
        dataset_config=entry,
        tokenizer=tokenizer,
        cfg=config,
        dataset_base_type=entry.type,
        dataset=dataset,
    )
    return wrapped


def axolotl_wheel_file(relative: str) -> Path:
    """A file of the unpacked axolotl wheel, for tests that cite it."""
    return unpacked_wheel("axolotl") / relative
