"""Which inputs a run reads: command-line arguments expanded into the ordered list of sources.

What each argument may be:

- a file whose suffix a format of `read.readers.FILE_FORMATS` claims (JSON Lines, plain or
  gzipped; a JSON array; Parquet: the table says how each is read);
- a directory written by `datasets`' ``save_to_disk`` (it holds ``state.json`` or
  ``dataset_dict.json``): read with `datasets.load_from_disk` (`read.hf_datasets`);
- any other directory: its supported files, **recursively**, sorted by relative path. Hidden
  files and directories (a leading ``.``) and this tool's own outputs (``*.metrics.jsonl``,
  ``*.report.json``, ``*.rejects.jsonl``, ``*.over_limit.jsonl``, see `OWN_OUTPUT_SUFFIXES`) are
  skipped (and named once, in one line), so an output directory can sit inside the input directory; a ``save_to_disk``
  directory met on the way is read as one dataset and not descended into;
- ``hf:NAME`` or ``hf:NAME:CONFIG``: `datasets.load_dataset` (`read.hf_datasets`), the dataset
  checked once here, so a missing one fails now and in one line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from trajectory_compressor.messages import quoted
from trajectory_compressor.read.hf_datasets import HF_PREFIX, hf_source, is_save_to_disk_dir
from trajectory_compressor.read.readers import file_kind, supported_suffixes
from trajectory_compressor.read.sources import InputError, InputSource

# Files this tool writes next to its outputs; never read back as input when a directory is given.
OWN_OUTPUT_SUFFIXES: tuple[str, ...] = (
    ".metrics.jsonl",
    ".report.json",
    ".rejects.jsonl",
    ".over_limit.jsonl",
    ".metrics.jsonl.gz",
    ".rejects.jsonl.gz",
    ".over_limit.jsonl.gz",
)


def expand_inputs(
    paths: Sequence[str],
    *,
    data_files: Sequence[str] | None = None,
    streaming: bool = True,
    on_message: Callable[[str], None] | None = None,
    exclude: Sequence[str] = (),
    written_by_us: Callable[[Path], bool] | None = None,
) -> list[InputSource]:
    """Turn command-line input arguments into the ordered, de-duplicated list of sources to read.

    `data_files` and `streaming` apply to every ``hf:`` spec. Raises `InputError` for a missing
    path, an unsupported file type, a directory without any supported file, ``data_files``
    patterns that match nothing, or a Hub dataset that cannot be reached (checked here, once and
    quickly, rather than after minutes of retries). Files of a directory skipped as this tool's
    own outputs are named once through `on_message` (default: a line on stderr). Paths in
    `exclude` (the run's output file or directory) and everything under them are left out of
    directory walks, so an output written inside an input directory is not read back as an
    input by the re-run that resumes or finishes it. With `written_by_us` (which says whether a
    data file is an output this tool wrote), an output directory left out so that holds input
    files the tool did not write, or that is an input directory itself, raises `InputError`:
    those files would be neither read nor written, the user's rows lost without a word.
    """
    excluded = tuple(os.path.realpath(path) for path in exclude)
    sources: list[InputSource] = []
    seen: set[str] = set()
    skipped: list[str] = []  # files named like this tool's side files
    left_out: list[str] = []  # the run's own output paths met in a walk

    def add(source: InputSource) -> None:
        key = source.name if source.kind == "hf_load" else os.path.realpath(source.path or source.name)
        if key not in seen:
            seen.add(key)
            sources.append(source)

    for arg in paths:
        if arg.startswith(HF_PREFIX):
            add(hf_source(arg, data_files, streaming))
            continue
        if not arg:  # as a path, the current folder: an unset shell variable, not a wish to read it all
            raise InputError("an input is an empty path: name a file, a folder (. for this one) or hf:NAME")
        path = Path(arg)
        if not path.exists():
            raise InputError(f"input not found: {quoted(arg)}")
        if path.is_dir():
            if is_save_to_disk_dir(path):
                add(InputSource(name=arg, kind="hf_disk", path=arg))
                continue
            folder = os.path.realpath(path)
            if folder in excluded:  # each input file would be its own output
                raise InputError(f"the output is the input folder {quoted(arg)} itself: write it outside that folder")
            # Only what lies inside this folder: an output folder holding the input folder holds
            # its outputs beside it (`compress runs/a -o runs/`), not in it.
            inside = tuple(item for item in excluded if item.startswith(folder.rstrip(os.sep) + os.sep))
            left_out_here: list[str] = []
            found = list(_walk_directory(path, skipped, inside, left_out_here))
            if written_by_us is not None:
                _refuse_foreign_files(left_out_here, arg, written_by_us)
            left_out += left_out_here
            if not found:
                supported = ", ".join(supported_suffixes())
                raise InputError(f"no input files ({supported}) in directory: {quoted(arg)}")
            for source in found:
                add(source)
            continue
        kind = file_kind(arg)
        if kind is None:
            supported = ", ".join(supported_suffixes())
            raise InputError(f"unsupported input file type (expected {supported}): {quoted(arg)}")
        add(InputSource(name=arg, kind=kind, path=arg))
    say = on_message or (lambda text: print(text, file=sys.stderr))
    if skipped:
        more = f" and {len(skipped) - 1} more" if len(skipped) > 1 else ""
        example = quoted(skipped[0])
        say(f"note: skipped {len(skipped)} file(s) named like this tool's outputs in input folders: {example}{more}")
    if left_out:
        say(f"note: not read as input: this run's output {quoted(left_out[0])}, inside an input folder")
    return sources


def _refuse_foreign_files(left_out: list[str], folder: str, written_by_us: Callable[[Path], bool]) -> None:
    """Raise `InputError` when an output directory left out of the walk of `folder` holds an
    input file that `written_by_us` does not claim (the user's own rows, in the output folder)."""
    for output in left_out:
        if not os.path.isdir(output):
            continue  # an output file: the collision checks refuse one the tool did not write
        foreign = [
            source.name
            for source in _walk_directory(Path(output), [])
            if source.path is not None and not written_by_us(Path(source.path))
        ]
        if foreign:
            more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
            raise InputError(
                f"the output folder {quoted(output)} is inside the input folder {quoted(folder)} and holds input"
                f" files this tool did not write ({quoted(foreign[0])}{more}): they would not be read."
                " Write the outputs outside the input folder, or move those files out of the output folder"
            )


def _is_own_output(name: str) -> bool:
    return name.lower().endswith(OWN_OUTPUT_SUFFIXES)


def _is_excluded(path: Path, excluded: tuple[str, ...]) -> bool:
    real = os.path.realpath(path)
    return any(real == item or real.startswith(item.rstrip(os.sep) + os.sep) for item in excluded)


def _walk_directory(
    root: Path, skipped: list[str], excluded: tuple[str, ...] = (), left_out: list[str] | None = None
) -> Iterator[InputSource]:
    """Supported files under `root`, recursively, sorted by path relative to `root`; own outputs
    are left out: by name (added to `skipped`) or under a path in `excluded` (to `left_out`)."""
    left_out = [] if left_out is None else left_out
    found: list[tuple[str, InputSource]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        kept_dirs = []
        for dirname in sorted(dirnames):
            if dirname.startswith("."):
                continue
            if _is_excluded(here / dirname, excluded):
                left_out.append(str(here / dirname))
                continue
            if is_save_to_disk_dir(here / dirname):
                sub = str(here / dirname)
                found.append((os.path.relpath(sub, root), InputSource(name=sub, kind="hf_disk", path=sub)))
            else:
                kept_dirs.append(dirname)
        dirnames[:] = kept_dirs  # os.walk descends only into these
        for filename in filenames:
            if filename.startswith("."):
                continue
            if _is_own_output(filename):
                skipped.append(str(here / filename))
                continue
            if _is_excluded(here / filename, excluded):
                left_out.append(str(here / filename))
                continue
            full = str(here / filename)
            kind = file_kind(full)
            if kind is not None:
                found.append((os.path.relpath(full, root), InputSource(name=full, kind=kind, path=full)))
    found.sort(key=lambda item: item[0])
    yield from (source for _, source in found)
