"""Which input rows a run takes: one stream over all sources, shards, sample, limit, in chunks.

`compress` and `analyze` select rows the same way, so they share this; the row index is the
0-based position in the whole input stream, which is what sharding, sampling, resume and the
metrics' `index` are all defined on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator, Iterator, Sequence

from trajectory_compressor.read.readers import iter_source
from trajectory_compressor.read.sources import InputError, InputSource
from trajectory_compressor.settings import ReadConfig, SelectConfig
from trajectory_compressor.types import SourceRecord

# A selected row: (index in the input stream, stream position once it is committed, record).
Selected = tuple[int, int, SourceRecord]


def sampled(index: int, percent: float, seed: int) -> bool:
    """Deterministic per-row sampling: the same rows for the same seed, whatever the chunking."""
    digest = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 * 100 < percent


def shard_filter(index: int, num_shards: int, shard_index: int) -> bool:
    """Whether the row with global 0-based `index` belongs to shard `shard_index` of `num_shards`.

    Round-robin by row index: it needs no row counts up front, keeps shards within one row of
    each other in size, and gives every row to exactly one shard whatever the input order.
    """
    if num_shards < 1:
        raise ValueError(f"num_shards must be >= 1, got {num_shards}")
    if not 0 <= shard_index < num_shards:
        raise ValueError(f"shard_index must be in [0, {num_shards}), got {shard_index}")
    return index % num_shards == shard_index


def records_of(source: InputSource, settings: ReadConfig) -> Iterator[SourceRecord]:
    """The source's records; a source that breaks mid-way (a truncated gzip) ends with one
    error record naming where, so the rows read so far are kept and the run goes on."""
    line = 0
    try:
        for item in iter_source(source, settings):
            line = item.line
            yield item
    except InputError as exc:
        yield SourceRecord(source=source.name, line=line + 1, error=f"unreadable from here on: {exc}")


class RowSelection:
    """Iterates the selected rows of `sources`; counts what it read and selected as it goes.

    `skip` stream positions are passed over first (a resumed run's committed rows) and
    `selected` starts at `already_selected`. `limit` bounds the rows the sample takes from the
    whole input stream, counted from its start whatever the shard or the resume: the shards of a
    limited run take, between them, the rows one unsharded run takes (what `merge` promises).
    """

    def __init__(
        self,
        sources: Sequence[InputSource],
        *,
        read: ReadConfig | None = None,
        select: SelectConfig | None = None,
        skip: int = 0,
        already_selected: int = 0,
    ) -> None:
        select = select or SelectConfig()
        self.sources = sources
        self.read = read or ReadConfig()
        self.sample_percent = select.sample_percent
        self.seed = select.seed
        self.limit = select.limit
        self.num_shards = select.num_shards
        self.shard_index = select.shard_index
        self.skip = skip
        self.stream_rows = 0  # stream rows read so far
        self.selected = already_selected

    def _sampled(self, index: int) -> bool:
        percent = self.sample_percent
        return percent is None or percent >= 100 or sampled(index, percent, self.seed)

    def __iter__(self) -> Iterator[Selected]:
        index = 0
        taken = 0  # rows the sample took so far, in every shard: what `limit` bounds
        for source in self.sources:
            for item in records_of(source, self.read):
                current = index
                index += 1
                self.stream_rows = index
                if not self._sampled(current):
                    continue
                if self.limit is not None and taken >= self.limit:
                    return
                taken += 1
                if current < self.skip:
                    continue
                if self.num_shards > 1 and not shard_filter(current, self.num_shards, self.shard_index):
                    continue
                self.selected += 1
                yield current, index, item

    def chunks(self, max_rows: int, max_bytes: int) -> Generator[list[Selected], None, None]:
        """The selected rows in lists of at most `max_rows` rows or about `max_bytes` of raw input."""
        chunk: list[Selected] = []
        size = 0
        for entry in self:
            chunk.append(entry)
            size += len(entry[2].raw) if entry[2].raw else 0
            if len(chunk) >= max_rows or size >= max_bytes:
                yield chunk
                chunk, size = [], 0
        if chunk:
            yield chunk
