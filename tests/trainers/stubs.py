"""Stand-ins for the imports of the trainers' data modules that have nothing to do with the data.

Each stub names the import it satisfies and why that import is unrelated to what the tests run.
They are put in `sys.modules` only while the trainers' modules are imported
(`tests/trainers/loaders.py`, `stubbed_imports`) and taken out after, so nothing else in the
test process (transformers' own `find_spec` checks, TRL) ever sees them.

Package shells are the other half: a trainer package whose `__init__.py` imports its whole
framework (LLaMA-Factory's `data/__init__.py` imports its collators and loader, veRL's imports
Ray-side protocol code) is entered in `sys.modules` as an empty package pointing at its real
folder, so its real submodules import from there without its `__init__.py` running.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any


def module(name: str, **attributes: Any) -> ModuleType:
    """A module object named `name` holding `attributes`, importable while it is in `sys.modules`."""
    stub = ModuleType(name)
    stub.__spec__ = importlib.machinery.ModuleSpec(name, None)
    for key, value in attributes.items():
        setattr(stub, key, value)
    return stub


def package_shell(name: str, folder: Path) -> ModuleType:
    """An empty package `name` whose submodules are the real files in `folder` (its `__init__` not run)."""
    shell = ModuleType(name)
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = [str(folder)]
    shell.__spec__ = spec
    shell.__path__ = [str(folder)]
    return shell


def _unused(what: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"the test reached {what}, which is stubbed as unrelated to text data")

    return call


class _Unused:
    """A class the stubbed module exports; constructing it means the stub was wrong to call it unrelated."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"{type(self).__name__} is stubbed as unrelated to text data")


def llamafactory_stubs() -> dict[str, ModuleType]:
    return {
        # llamafactory/extras/constants.py:19-20 imports two adapter file names from peft (LoRA
        # checkpoints); peft is not installed, and no data code reads them.
        "peft": module("peft"),
        "peft.utils": module(
            "peft.utils", SAFETENSORS_WEIGHTS_NAME="adapter_model.safetensors", WEIGHTS_NAME="adapter_model.bin"
        ),
        # llamafactory/data/mm_plugin.py:30 imports torchaudio at the top for audio inputs; the
        # text-only "base" plugin every template here uses never calls it.
        "torchaudio": module("torchaudio", load=_unused("torchaudio.load")),
    }


def verl_stubs() -> dict[str, ModuleType]:
    return {
        # verl/utils/dataset/multiturn_sft_dataset.py:33: rope indexes for Qwen2-VL's images,
        # used only with a multimodal processor (`processor=None` here).
        "verl.models.transformers.qwen2_vl": module(
            "verl.models.transformers.qwen2_vl", get_rope_index=_unused("verl get_rope_index")
        ),
        # multiturn_sft_dataset.py:36: image and video loading (it needs PIL and qwen_vl_utils),
        # reached only for messages with <image>/<video> and a processor.
        "verl.utils.dataset.vision_utils": module(
            "verl.utils.dataset.vision_utils",
            process_image=_unused("verl process_image"),
            process_video=_unused("verl process_video"),
        ),
        # verl/utils/dataset/dataset_utils.py:19,21 (where DatasetPadMode, which the dataset does
        # use, is defined) imports these for SFTTensorCollator's no-padding batches of nested
        # tensors; the dataset's items never go through that collator here.
        "tensordict": module("tensordict"),
        "tensordict.tensorclass": module("tensordict.tensorclass", NonTensorData=_Unused),
        "verl.utils.tensordict_utils": module(
            "verl.utils.tensordict_utils", nested_tensor_from_tensor_list=_unused("nested_tensor_from_tensor_list")
        ),
    }


def axolotl_stubs() -> dict[str, ModuleType]:
    """axolotl/prompters.py:6 imports colorama's Fore for the colours of a prompter's repr
    (prompters.py:12, REPR_TEMPLATE); nothing tokenizes through it. The real colorama is used
    where it is installed (Ray's and others' dependencies bring it, and may have imported it)."""
    if importlib.util.find_spec("colorama") is not None:
        return {}
    return {"colorama": module("colorama", Fore=module("colorama.Fore", CYAN="", RESET=""))}


@contextlib.contextmanager
def stubbed_imports(stubs: dict[str, ModuleType], shells: dict[str, Path]) -> Iterator[None]:
    """`stubs` and `shells` in `sys.modules` for the block; the stubs (not the shells) removed after.

    The shells stay: the trainers' modules imported through them keep importing their siblings
    lazily (LLaMA-Factory's processors, veRL's tokenizer helpers). Their names (`llamafactory`,
    `verl`, `axolotl`) belong to nothing else installed here.
    """
    clashes = [name for name in stubs if name in sys.modules and sys.modules[name] is not stubs[name]]
    assert not clashes, f"a real module is already imported under a stub's name: {clashes}"
    for name, folder in shells.items():
        sys.modules.setdefault(name, package_shell(name, folder))
    sys.modules.update(stubs)
    try:
        yield
    finally:
        for name in stubs:
            sys.modules.pop(name, None)
