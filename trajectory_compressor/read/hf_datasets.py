"""Inputs `datasets` reads: a ``save_to_disk`` directory, and ``hf:NAME`` or ``hf:NAME:CONFIG`` specs.

An ``hf:`` spec is `datasets.load_dataset(NAME, CONFIG, split=..., streaming=True)`. NAME is a
Hub id (``hf:org/name``, checked once when the inputs are expanded, see `check_hub_dataset`),
or a packaged builder (``hf:json``, ``hf:parquet``, ``hf:csv``...) together with
``data_files`` (local paths or globs), which `expand_inputs` takes as an argument (the CLI's
``--data-files``) and checks exist. A directory holding ``state.json`` or
``dataset_dict.json`` was written by ``save_to_disk`` and is read with
`datasets.load_from_disk`; of a `DatasetDict`, the split given to `iter_source` is taken.
Binary, decimal and temporal values become JSON as `read.arrow_values` describes.
"""

from __future__ import annotations

import dataclasses
import glob
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from trajectory_compressor.messages import quoted
from trajectory_compressor.read.sources import InputError, InputSource
from trajectory_compressor.types import SourceRecord, one_line

HF_PREFIX = "hf:"
HF_DISK_BATCH_ROWS = 256
HUB_CHECK_TIMEOUT = 10.0  # seconds for the one request that checks a Hub dataset is there
_SAVE_TO_DISK_MARKERS = ("state.json", "dataset_dict.json")


def is_save_to_disk_dir(path: Path) -> bool:
    """Whether `path` is a directory `datasets`' ``save_to_disk`` wrote (one dataset, not a folder of files)."""
    return any((path / marker).is_file() for marker in _SAVE_TO_DISK_MARKERS)


def hf_source(spec: str, data_files: Sequence[str] | None, streaming: bool) -> InputSource:
    """The source of an ``hf:`` spec; raises `InputError` for an empty name, data files that
    match nothing or a Hub dataset that cannot be had."""
    body = spec[len(HF_PREFIX) :]
    dataset, _, config = body.partition(":")
    if not dataset:
        raise InputError(f"empty dataset name in {quoted(spec)} (expected hf:NAME or hf:NAME:CONFIG)")
    files: tuple[str, ...] | None = None
    if data_files:
        for pattern in data_files:
            if not _is_remote(pattern) and not glob.glob(pattern, recursive=True):
                raise InputError(f"data file not found for {quoted(spec)}: {quoted(pattern)}")
        files = tuple(data_files)
    check_hub_dataset(spec, dataset, config or None)
    return InputSource(
        name=spec,
        kind="hf_load",
        dataset=dataset,
        config=config or None,
        data_files=files,
        streaming=streaming,
    )


def _is_remote(pattern: str) -> bool:
    return "://" in pattern


def check_hub_dataset(spec: str, dataset: str, config: str | None) -> None:
    """Fail now, in one line, when a Hub dataset cannot be had: `load_dataset` would otherwise
    retry for half a minute, log pages of retries and leave one reject behind.

    Offline (``HF_HUB_OFFLINE=1``) the local cache is asked; online, one metadata request with
    a short timeout and no retry. Packaged builders (``hf:json``...) and local paths are not
    on the Hub and are not checked.
    """
    from huggingface_hub import constants

    try:
        from datasets.packaged_modules import _PACKAGED_DATASETS_MODULES as packaged
    except ImportError:  # a private name: without it, the common builders
        packaged = {"json", "csv", "parquet", "arrow", "text", "imagefolder", "audiofolder", "webdataset"}
    if dataset in packaged or os.path.exists(dataset):
        return
    if constants.HF_HUB_OFFLINE:
        import datasets

        try:
            datasets.load_dataset_builder(dataset, config)
        except Exception as exc:  # datasets raises many unrelated types for a dataset it cannot find
            raise InputError(
                f"{quoted(spec)}: not in the local cache and the Hugging Face Hub is off (HF_HUB_OFFLINE is set): "
                f"{one_line(exc)}"
            ) from None
        return
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        HfApi().dataset_info(dataset, timeout=HUB_CHECK_TIMEOUT)
    except GatedRepoError:
        return  # it exists; the loader will say what access it needs
    except RepositoryNotFoundError:
        raise InputError(
            f"{quoted(spec)}: no such dataset on the Hugging Face Hub (or it is private and no token is set)"
        ) from None
    except Exception as exc:  # connection, DNS, TLS, proxy and HTTP errors of several libraries
        raise InputError(
            f"{quoted(spec)}: cannot reach the Hugging Face Hub ({one_line(exc)}); "
            "set HF_HUB_OFFLINE=1 to read it from the local cache"
        ) from None


def read_hf_disk(source: InputSource, split: str) -> Iterator[SourceRecord]:
    """Rows of a ``save_to_disk`` directory (memory-mapped Arrow, read in batches)."""
    import datasets

    try:
        loaded = datasets.load_from_disk(source.path or source.name)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot load dataset directory {quoted(source.name)}: {one_line(exc)}") from exc
    if isinstance(loaded, datasets.DatasetDict):
        if split not in loaded:
            splits = ", ".join(sorted(loaded)) or "none"
            raise InputError(f"split {split!r} not in {quoted(source.name)} (splits: {splits})")
        loaded = loaded[split]
    loaded = _stored_media(loaded)
    yield from _iter_rows(source, loaded.iter(batch_size=HF_DISK_BATCH_ROWS), batched=True)


def read_hf_load(source: InputSource, split: str) -> Iterator[SourceRecord]:
    """Rows of `datasets.load_dataset`, streamed unless `source.streaming` is False."""
    import datasets

    kwargs: dict[str, Any] = {"split": split, "streaming": source.streaming}
    if source.data_files:
        # Keyed by the requested split, so `--split test` works with a plain list of files.
        kwargs["data_files"] = {split: list(source.data_files)}
    if source.dataset == "json" and "parse_agent_traces" in _json_config_fields():
        # Rows are trajectories to rewrite as they are: never let the loader reshape them.
        kwargs["parse_agent_traces"] = False
    try:
        loaded = datasets.load_dataset(source.dataset, source.config, **kwargs)
    except Exception as exc:  # datasets raises many unrelated types (hub, builder, split errors)
        raise InputError(f"cannot load {quoted(source.name)}: {one_line(exc)}") from exc
    yield from _iter_rows(source, iter(_stored_media(loaded)), batched=False)


# Features `datasets` decodes into objects that are no JSON (a `Json` column decodes into JSON
# values: it is read decoded).
_MEDIA_FEATURES = frozenset({"Image", "Audio", "Video", "Pdf", "Nifti"})


def _stored_media(loaded: Any) -> Any:
    """`loaded` with its image, audio and video columns read as stored, not decoded.

    `datasets` decodes them into objects (PIL images, arrays) that are no JSON, or refuses to
    read at all without the decoder's package; stored, an image is its bytes and path, which
    the pipeline carries like any binary value. Only top-level columns: a media feature nested
    in a list or struct is decoded as before.
    """
    features = getattr(loaded, "features", None) or {}
    for name, feature in features.items():
        media = type(feature).__name__ in _MEDIA_FEATURES and getattr(feature, "decode", False) is True
        if media and dataclasses.is_dataclass(feature) and not isinstance(feature, type):
            loaded = loaded.cast_column(name, dataclasses.replace(feature, decode=False))
    return loaded


def _json_config_fields() -> set[str]:
    try:
        from datasets.packaged_modules.json.json import JsonConfig
    except ImportError:
        return set()
    return {field.name for field in dataclasses.fields(JsonConfig)}


def _iter_rows(source: InputSource, rows: Iterator[Any], *, batched: bool) -> Iterator[SourceRecord]:
    from trajectory_compressor.read.arrow_values import to_json  # pyarrow: only for dataset inputs

    number = 0
    try:
        for item in rows:
            for row in _unbatch(item) if batched else (item,):
                number += 1
                # Binary, decimal and temporal values become JSON (see `arrow_values`).
                yield SourceRecord(source=source.name, line=number, record=to_json(dict(row)))
    except Exception as exc:  # a streamed dataset surfaces file, parse and network errors here
        raise InputError(f"cannot read {quoted(source.name)} after record {number}: {one_line(exc)}") from exc


def _unbatch(batch: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    columns = list(batch)
    for values in zip(*(batch[column] for column in columns), strict=True):
        yield dict(zip(columns, values, strict=True))
