"""The compress page's example rows, read back from the files the run just wrote.

The row path keeps one example in memory (the first compressed row's replaced turns); the page's
picker wants a few rows (one of each input file first) and, for each, the kept turns after its
summary. Those are in the files once the run is written: the metrics say which lines were
compressed and where they were written, so those rows are read back (the inputs and the dataset
are read up to the last of them, parsed, not counted).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from trajectory_compressor.messages import quoted
from trajectory_compressor.read.expand import expand_inputs
from trajectory_compressor.read.formats import detect_format, to_turns
from trajectory_compressor.read.select import RowSelection
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.settings import ReadConfig
from trajectory_compressor.types import SUMMARY_PREFIX, SourceRecord, Turn
from trajectory_compressor.write.html_examples import RowExample, make_example, row_label

EXAMPLE_ROWS = 5


def examples_from_files(
    metrics: Path,
    dataset: Path,
    sources: Sequence[InputSource],
    *,
    read: ReadConfig | None = None,
    count: int = EXAMPLE_ROWS,
) -> list[RowExample]:
    """Up to `count` compressed rows (a `--windows` row's first compressed window): the first of
    each input file, then the earliest; [] when the files cannot be read back as written."""
    wanted = _first_compressed(metrics, count)
    if not wanted:
        return []
    try:
        read = read or ReadConfig()
        originals = _rows_at(RowSelection(sources, read=read), {index for index, _, _ in wanted})
        produced = _rows_at(RowSelection(expand_inputs([str(dataset)]), read=read), {n for _, n, _ in wanted})
        return [
            example
            for index, number, entry in wanted
            if index in originals and number in produced
            for example in [_example(entry, originals[index], produced[number], read.conversation_key)]
            if example is not None
        ]
    except Exception:  # examples are a picture: never the reason a finished run fails
        return []


def _first_compressed(metrics: Path, count: int) -> list[tuple[int, int, dict[str, Any]]]:
    """(input index, output row number, metrics line) of the first compressed line of up to
    `count` rows: the first such row of each input file, then the earliest others, in input order."""
    firsts: list[tuple[int, int, dict[str, Any]]] = []  # one row per input file
    others: list[tuple[int, int, dict[str, Any]]] = []  # the earliest other rows
    sources: set[str] = set()
    rows: set[int] = set()
    written = 0
    with open(metrics, "rb") as handle:
        for line in handle:
            entry = orjson.loads(line)
            if not entry.get("written", True) or entry.get("dropped"):
                continue
            number, written = written, written + 1
            if not entry.get("was_compressed") or entry.get("index") in rows:
                continue
            rows.add(entry["index"])
            if str(entry.get("source")) not in sources and len(firsts) < count:
                sources.add(str(entry.get("source")))
                firsts.append((entry["index"], number, entry))
            elif len(others) < count:
                others.append((entry["index"], number, entry))
    return sorted(firsts + others[: count - len(firsts)], key=lambda wanted: wanted[0])


def _rows_at(rows: RowSelection, positions: set[int]) -> dict[int, SourceRecord]:
    """The rows at `positions` of the stream, reading no further than the last of them."""
    found: dict[int, SourceRecord] = {}
    last = max(positions)
    for position, _, item in rows:
        if position in positions:
            found[position] = item
        if position >= last:
            break
    return found


def _example(
    entry: dict[str, Any], original: SourceRecord, produced: SourceRecord, conversation_key: str | None
) -> RowExample | None:
    before, after = _turns(original, conversation_key), _turns(produced, conversation_key)
    region = entry.get("compression_region") or {}
    start, end = int(region.get("start_idx", 0)), int(region.get("end_idx", -1)) + 1
    at = next((i for i in range(start, len(after)) if after[i].value.startswith(SUMMARY_PREFIX)), None)
    if at is None or not before:
        return None
    window = entry.get("window") if isinstance(entry.get("window"), dict) else None
    fidelity = entry.get("fidelity") or {}
    future = fidelity.get("future") or {}
    return make_example(
        int(entry["index"]),
        None if window is None else int(window.get("index", 0)),
        row_label(
            f"{quoted(str(entry.get('source')))}:{entry.get('line')}",
            None if window is None else int(window.get("index", 0)),
            None if window is None else int(window.get("count", 1)),
        ),
        before[start:end],
        after[at].value[len(SUMMARY_PREFIX) :].strip(),
        after[at + 1 :],
        fidelity=fidelity.get("score"),
        future=future.get("score"),
        missed=future.get("missed") or (),
    )


def _turns(item: SourceRecord, conversation_key: str | None) -> list[Turn]:
    if item.record is None:
        return []
    return to_turns(item.record, detect_format(item.record, conversation_key))
