"""What the reader tests share: small records, a reader of any source, and a made-up file format.

`LINES_FORMAT` (``.lines`` files, each non-blank line a record's id) is added to the table of
formats by the tests that check a new format needs nothing else (`read.readers.FILE_FORMATS`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trajectory_compressor.read.files import open_lines
from trajectory_compressor.read.readers import FileFormat, iter_source
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.settings import ReadConfig
from trajectory_compressor.types import SourceRecord

ROWS: list[dict[str, Any]] = [
    {"id": f"r{i}", "conversations": [{"from": "human", "value": f"q{i}"}, {"from": "gpt", "value": f"a{i}"}]}
    for i in range(5)
]


def read_all(source: InputSource, **settings: Any) -> list[tuple[int, Any]]:
    """(record number, record) of every record of `source`, read with these read settings."""
    return [(item.line, item.record) for item in iter_source(source, ReadConfig(**settings))]


def _read_lines(source: InputSource, settings: ReadConfig) -> Iterator[SourceRecord]:
    with open_lines(source.path or source.name) as handle:
        for number, line in enumerate((line for line in handle if line.strip()), start=1):
            yield SourceRecord(source=source.name, line=number, record={"id": line.strip().decode()})


def _count_lines(source: InputSource, settings: ReadConfig) -> int:
    with open_lines(source.path or source.name) as handle:
        return sum(1 for line in handle if line.strip())


LINES_FORMAT = FileFormat("lines", (".lines",), _read_lines, count=_count_lines)
