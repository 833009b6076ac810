"""The input files of a Ray run, in the order the local engine reads them.

Local paths go through the local engine's own `expand_inputs` (directories walked recursively
and sorted, this tool's outputs skipped, a file named twice read once), so a row's `source`
and `line` in the metrics are the same whichever engine ran. A URI (`s3://bucket/runs/`,
`gs://...`, anything `pyarrow.fs.FileSystem.from_uri` knows) is listed on its filesystem the
same way: files by suffix (the formats of `read.readers.FILE_FORMATS` read at URIs),
directories recursively, sorted, own outputs skipped.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from trajectory_compressor.messages import quoted
from trajectory_compressor.read.expand import OWN_OUTPUT_SUFFIXES, expand_inputs
from trajectory_compressor.read.files import is_uri
from trajectory_compressor.read.hf_datasets import HF_PREFIX
from trajectory_compressor.read.readers import format_of_file, supported_suffixes
from trajectory_compressor.read.sources import InputError, InputSource
from trajectory_compressor.settings import RunConfig


def list_inputs(paths: Sequence[str], config: RunConfig, *, exclude: Sequence[str] = ()) -> list[InputSource]:
    """Every input file of the run, in order; raises `InputError` for what the engine cannot read."""
    sources: list[InputSource] = []
    seen: set[str] = set()
    for path in paths:
        if path.startswith(HF_PREFIX):
            files = ", ".join(supported_suffixes())
            raise InputError(f"{quoted(path)}: --engine ray reads files ({files}); load {quoted(path)} yourself")
        if is_uri(path):
            found = _remote_files(path, exclude)
        else:
            local = [target for kind, target in map(_on_filesystem, exclude) if kind == "local"]
            found = expand_inputs([path], exclude=local, streaming=False)
        for source in found:
            key = _same_file_key(source)
            if key not in seen:
                seen.add(key)
                sources.append(source)
    return sources


def _same_file_key(source: InputSource) -> str:
    """What tells one input file from another, as the local engine tells them (`expand_inputs`):
    its real path (`a.jsonl`, `./a.jsonl`, a link to it and `file://.../a.jsonl` are one file, read
    once), or a remote filesystem's path."""
    kind, target = _on_filesystem(source.path or source.name)
    return os.path.realpath(target) if kind == "local" else f"{kind}:{target}"


def _on_filesystem(path: str) -> tuple[str, str]:
    """(pyarrow filesystem type, path on it) of a local path or a URI (`file://` is local)."""
    from trajectory_compressor.ray.layout import filesystem_of

    filesystem, target = filesystem_of(path)
    return filesystem.type_name, target.rstrip("/")


def _remote_files(uri: str, exclude: Sequence[str] = ()) -> list[InputSource]:
    """The supported files at `uri` (a file, or a directory walked recursively), sorted; none under
    `exclude` (the run's own folders, as local paths or URIs: a `file://` input folder holding a
    local or `file://` output, an `s3://` one holding an `s3://` output)."""
    import pyarrow.fs as pafs

    try:
        filesystem, root = pafs.FileSystem.from_uri(uri)
        info = filesystem.get_file_info(root)
        if info.type == pafs.FileType.NotFound:
            raise InputError(f"input not found: {quoted(uri)}")
        if info.type == pafs.FileType.File:
            infos = [info]
        else:
            infos = filesystem.get_file_info(pafs.FileSelector(root, recursive=True))
    except (OSError, ValueError) as exc:  # pyarrow's errors for an unknown scheme or no access
        raise InputError(f"cannot list {quoted(uri)}: {exc}") from None
    scheme = uri.split("://", 1)[0]
    kind = filesystem.type_name
    own = tuple(target for target_kind, target in map(_on_filesystem, exclude) if target_kind == kind)
    sources: list[InputSource] = []
    for item in sorted(infos, key=lambda entry: entry.path):
        name = item.base_name
        hidden = any(part.startswith(".") for part in item.path[len(root) :].split("/") if part)
        mine = any(item.path == folder or item.path.startswith(folder + "/") for folder in own)
        if item.type != pafs.FileType.File or hidden or mine or name.endswith(OWN_OUTPUT_SUFFIXES):
            continue
        entry = format_of_file(name, at_uri=True)
        if entry is not None:
            full = f"{scheme}://{item.path}"
            sources.append(InputSource(name=full, kind=entry.kind, path=full))
    if not sources:
        raise InputError(f"no input files ({', '.join(supported_suffixes(at_uri=True))}) at {quoted(uri)}")
    return sources
