"""LLaMA-Factory 0.9.5's own data path, run from its wheel: a data file in, what it trains out.

The steps are theirs, called as `llamafactory/data/loader.py:get_dataset` calls them for one
file dataset: `parser.get_dataset_list` reads a `dataset_info.json` entry into a `DatasetAttr`,
`loader._load_single_dataset` loads the file with `datasets` and aligns it with the entry's
converter (`converter.py`: `SharegptDatasetConverter` / `OpenAIDatasetConverter`, via
`align_dataset`), `template.get_template_and_fix_tokenizer` picks their template (their own
Python formatters, not the tokenizer's Jinja template) and `loader._get_preprocessed_dataset`
tokenizes with `processor/supervised.py:SupervisedDatasetProcessor` (`mask_history`,
`cutoff_len`, `train_on_prompt` as in `hparams/data_args.py`).
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.trainers.stubs import llamafactory_stubs, stubbed_imports
from tests.trainers.trl_runner import IGNORE_INDEX
from tests.trainers.wheels import unpacked_wheel

MODULES = (
    "llamafactory.data.converter",
    "llamafactory.data.parser",
    "llamafactory.data.template",
    "llamafactory.data.loader",
    "llamafactory.data.processor.supervised",
    "llamafactory.hparams.data_args",
)
DATASET_NAME = "trajectory_compressor_output"


def llamafactory_modules() -> dict[str, ModuleType]:
    """LLaMA-Factory's data modules, imported from the unpacked wheel (see `stubs.llamafactory_stubs`)."""
    root = unpacked_wheel("llamafactory") / "llamafactory"
    shells = {  # these packages' __init__ files import the whole framework (collators, trainers, web UI)
        "llamafactory": root,
        "llamafactory.data": root / "data",
        "llamafactory.hparams": root / "hparams",
    }
    with stubbed_imports(llamafactory_stubs(), shells):
        return {name: importlib.import_module(name) for name in MODULES}


@dataclass(frozen=True)
class LlamaFactoryRow:
    """One input row as LLaMA-Factory's converter left it and, if it survived, what it trains."""

    accepted: bool  # the converter kept it (it empties `_prompt` and `_response` of a row it rejects)
    prompt: list[dict[str, str]]
    response: list[dict[str, str]]
    system: str
    tools: str
    input_ids: list[int] | None  # None: rejected, or dropped by the supervised processor
    labels: list[int] | None

    def trained_text(self, tokenizer: Any) -> list[str]:
        """The runs of consecutive trained tokens, decoded."""
        assert self.input_ids is not None and self.labels is not None
        runs: list[list[int]] = []
        previous = False
        for token, label in zip(self.input_ids, self.labels, strict=True):
            if label != IGNORE_INDEX:
                if not previous:
                    runs.append([])
                runs[-1].append(token)
            previous = label != IGNORE_INDEX
        return [tokenizer.decode(run) for run in runs]


def llamafactory_dataset(
    data_file: Path,
    dataset_info: dict[str, Any],
    tokenizer: Any,
    work_dir: Path,
    *,
    template: str = "qwen",
    cutoff_len: int = 4096,
    **data_arguments: Any,
) -> list[LlamaFactoryRow]:
    """Run `data_file` through LLaMA-Factory as a user's `dataset_info.json` entry `dataset_info` says.

    `dataset_info` is the entry without `file_name` (e.g. `{"formatting": "sharegpt", "columns":
    {"messages": "conversations", "tools": "tools"}}`, or with `"tags"`); `template` is
    LLaMA-Factory's template name (`qwen` for Qwen2.5, `qwen3_nothink`, `llama3`, `deepseek3`);
    `data_arguments` go to their `DataArguments` (`mask_history=True`, `train_on_prompt=True`).
    The tokenizer is changed as their `get_template_and_fix_tokenizer` changes it: pass a fresh one.
    """
    from transformers import Seq2SeqTrainingArguments

    modules = llamafactory_modules()
    loader, parser = modules["llamafactory.data.loader"], modules["llamafactory.data.parser"]
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / "dataset_info.json").write_text(
        json.dumps({DATASET_NAME: {"file_name": str(data_file.resolve()), **dataset_info}}), encoding="utf-8"
    )
    data_args = modules["llamafactory.hparams.data_args"].DataArguments(
        template=template,
        dataset=DATASET_NAME,
        dataset_dir=str(work_dir),
        cutoff_len=cutoff_len,
        overwrite_cache=True,
        **data_arguments,
    )
    training_args = Seq2SeqTrainingArguments(output_dir=str(work_dir / "out"), report_to=[], use_cpu=True)
    model_args = _ModelArguments(cache_dir=str(work_dir / "cache"))
    (attr,) = parser.get_dataset_list(data_args.dataset, data_args.dataset_dir)
    aligned = loader._load_single_dataset(attr, model_args, data_args, training_args)
    chat_template = modules["llamafactory.data.template"].get_template_and_fix_tokenizer(tokenizer, data_args)
    # supervised.py:preprocess_dataset drops a row whose prompt is not odd or response not one turn;
    # a batch it drops whole returns no columns, which `datasets` then refuses ("Schema and number
    # of arrays unequal"): only the rows it keeps are given to it, as it would keep them.
    keep = [_kept(example) for example in aligned]
    tokenize = aligned.select([i for i, kept in enumerate(keep) if kept])
    processed = loader._get_preprocessed_dataset(tokenize, data_args, training_args, "sft", chat_template, tokenizer)
    tokenized = iter(processed)
    rows = []
    for example, kept in zip(aligned, keep, strict=True):
        accepted = bool(example["_prompt"]) and bool(example["_response"])
        encoded = next(tokenized) if kept else None
        rows.append(
            LlamaFactoryRow(
                accepted=accepted,
                prompt=list(example["_prompt"]),
                response=list(example["_response"]),
                system=example["_system"],
                tools=example["_tools"],
                input_ids=list(encoded["input_ids"]) if encoded else None,
                labels=list(encoded["labels"]) if encoded else None,
            )
        )
    assert next(tokenized, None) is None, "LLaMA-Factory kept rows this harness thought it dropped"
    return rows


def _kept(example: dict[str, Any]) -> bool:
    accepted = bool(example["_prompt"]) and bool(example["_response"])
    return accepted and len(example["_prompt"]) % 2 == 1 and len(example["_response"]) == 1


@dataclass
class _ModelArguments:
    """What `loader._load_single_dataset` reads of their `ModelArguments` for a local file: where
    `datasets` caches (a temporary folder, so runs never share a cache) and the Hub token (none).
    Their class (`hparams/model_args.py`) also validates model-loading settings no test has."""

    cache_dir: str
    hf_hub_token: str | None = None
