"""Fixtures of the trainer harness, for any test (registered by `tests/conftest.py` as a plugin).

Nothing here imports torch, TRL or a trainer at collection: a run without them collects as before.
A test using these fixtures is skipped when a part is missing, with the reason, except under
`CI=true`, where it fails (`wheels.unavailable`). Mark such tests `@pytest.mark.trainers`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import pytest

from tests.trainers.wheels import unavailable, unpacked_wheel

# What the harness imports itself, beyond the project's own dependencies (CI's install line:
# pip install torch==2.13.0 trl==1.16.0 and the `trainers` extra).
HARNESS_PACKAGES = {"torch": "torch==2.13.0", "trl": "trl==1.16.0", "omegaconf": "omegaconf", "addict": "addict"}


def require_harness_packages() -> None:
    """Skip (fail under CI=true) when a package the harness runs is not installed."""
    missing = [spec for module, spec in HARNESS_PACKAGES.items() if importlib.util.find_spec(module) is None]
    if missing:
        unavailable(f"the trainer harness needs {', '.join(missing)} (pip install them)")


@pytest.fixture(scope="session")
def chat_tokenizer() -> Callable[..., Any]:
    """`chat_tokenizer(name)`: a fresh tokenizer with template `name` (`chat_tokenizers.trainer_tokenizer`)."""
    require_harness_packages()
    import datasets

    datasets.disable_progress_bars()
    from tests.trainers.chat_tokenizers import trainer_tokenizer

    return trainer_tokenizer


@pytest.fixture(scope="session")
def trl_sft(chat_tokenizer: Callable[..., Any]) -> Callable[..., Any]:
    """`trl_sft(dataset, tokenizer, output_dir, max_length=..., train=False, **SFTConfig)`: `trl_runner.run_sft`."""
    from tests.trainers.trl_runner import run_sft

    return run_sft


@pytest.fixture(scope="session")
def llamafactory(chat_tokenizer: Callable[..., Any]) -> Callable[..., Any]:
    """`llamafactory(data_file, dataset_info, tokenizer, work_dir, template=..., **DataArguments)`:
    `llamafactory_runner.llamafactory_dataset`, its wheel fetched and imported first."""
    unpacked_wheel("llamafactory")
    from tests.trainers.llamafactory_runner import llamafactory_dataset, llamafactory_modules

    llamafactory_modules()
    return llamafactory_dataset


@pytest.fixture(scope="session")
def verl(chat_tokenizer: Callable[..., Any]) -> Callable[..., Any]:
    """`verl(parquet_file, tokenizer, max_length=..., **config)`: `verl_runner.verl_items`."""
    unpacked_wheel("verl")
    from tests.trainers.verl_runner import verl_dataset_module, verl_items

    verl_dataset_module()
    return verl_items


@pytest.fixture(scope="session")
def axolotl(chat_tokenizer: Callable[..., Any]) -> Callable[..., Any]:
    """`axolotl(dataset, tokenizer, sequence_len=..., cfg=..., **datasets_entry)`: `axolotl_runner.axolotl_tokenize`."""
    unpacked_wheel("axolotl")
    from tests.trainers.axolotl_runner import axolotl_modules, axolotl_tokenize

    axolotl_modules()
    return axolotl_tokenize
