"""`merge`: combine the outputs of `--num-shards N` runs into one set, in global input order.

Each shard's metrics lines carry the row's global `index` and whether it was `written` to the
dataset, so the shards' metrics, over-limit lists, rejects and datasets (JSON Lines, gzipped or
not, and Parquet: see `merge_data`) can be interleaved back into input order with a streaming
k-way merge: memory stays flat whatever the size of the shards. Reports are merged by adding
their raw counters.

Before anything is merged, every shard file is checked against the record its run wrote in its
report (bytes, lines, sha256): a shard file edited, cut short or swapped since is refused with
exit 2, never merged into a misordered dataset.
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import fields
from functools import partial
from pathlib import Path
from typing import IO, Any

import orjson

from trajectory_compressor.commands.merge_data import DatasetMerge, MergeError, merge_formats
from trajectory_compressor.messages import quoted
from trajectory_compressor.read.convert_format import WriteShape
from trajectory_compressor.run.settings_record import flat_settings
from trajectory_compressor.write.collisions import NamedFile, refuse_foreign_outputs, refuse_overwrites, run_outputs
from trajectory_compressor.write.output_format import ConversionError, output_format_for
from trajectory_compressor.write.paths import OutputPaths
from trajectory_compressor.write.report import RunTotals
from trajectory_compressor.write.run_files import file_record, write_json_atomically
from trajectory_compressor.write.run_fingerprint import settings_changes
from trajectory_compressor.write.run_report import COMPLETED, build_report

_JSON_LINES_INPUTS = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz", ".jsonl.zst", ".ndjson.zst", ".json")


def _load_report(path: Path) -> dict[str, Any]:
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MergeError(f"cannot read shard report {quoted(path)}: {exc}") from None
    if not isinstance(report, dict):
        raise MergeError(f"shard report {quoted(path)} is not a report of this tool (not a JSON object)")
    if report.get("status") != COMPLETED:
        raise MergeError(f"shard report {quoted(path)} is not from a completed run (status: {report.get('status')})")
    if "counters" not in report:
        raise MergeError(f"shard report {quoted(path)} has no counters (written by another version?)")
    problem = _report_problem(report)
    if problem is not None:
        raise MergeError(f"shard report {quoted(path)} is not a report of this tool ({problem}); re-run the shard")
    return report


def _report_problem(report: dict[str, Any]) -> str | None:
    """The first field `merge` reads that is not of the type a run writes, or None: an edited
    report is named, not an internal error halfway through the merge."""
    settings, outputs, inputs = report.get("settings"), report.get("outputs"), report.get("inputs")
    if not isinstance(settings, dict):
        return "'settings' is not an object"
    for key in ("shard_index", "num_shards"):
        if type(settings.get(key)) is not int:
            return f"'settings.{key}' is not an integer"
    if not isinstance(outputs, dict) or sorted(outputs) != sorted(f.name for f in fields(OutputPaths)):
        return f"'outputs' does not name the {', '.join(f.name for f in fields(OutputPaths))} files"
    if not all(isinstance(value, str) for value in outputs.values()):
        return "'outputs' holds a path that is not a string"
    if inputs is not None and not (
        isinstance(inputs, list) and all(isinstance(i, dict) and isinstance(i.get("path", ""), str) for i in inputs)
    ):
        return "'inputs' is not a list of objects with a path"
    counters = report["counters"]
    if not isinstance(counters, dict) or type(counters.get("rows_read")) is not int:
        return "'counters' has no integer rows_read"
    defaults = RunTotals().to_dict()
    for key, value in counters.items():
        if key in defaults and not _same_shape(value, defaults[key]):
            return f"'counters.{key}' is not of the type a run writes"
    timings = report.get("timings_seconds")
    if not isinstance(timings, dict) or not _is_number(timings.get("total", 0.0)):
        return "'timings_seconds.total' is not a number"
    summaries = report.get("summaries")
    if not isinstance(summaries, dict) or not isinstance(summaries.get("endpoint") or {}, dict):
        return "'summaries.endpoint' is not an object"
    return None


def _same_shape(value: Any, default: Any) -> bool:
    """Whether a counter's value has the shape of its default: a number, a list or a dict of numbers."""
    if isinstance(default, list):
        return isinstance(value, list) and len(value) == len(default) and all(map(_is_number, value))
    if isinstance(default, dict):
        return isinstance(value, dict) and all(map(_is_number, value.values()))
    return _is_number(value) and (isinstance(default, float) or type(value) is int)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _indexed_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(index, line) for a JSONL side file whose lines carry `index`."""
    if not path.exists():
        return
    with open(path, "rb") as handle:
        for line in handle:
            line = line.rstrip(b"\n")
            if line:
                yield orjson.loads(line)["index"], line


def _merge_into(out: IO[bytes], streams: Sequence[Iterator[tuple[int, bytes]]]) -> int:
    count = 0
    for _, line in heapq.merge(*streams, key=lambda pair: pair[0]):
        out.write(line + b"\n")
        count += 1
    return count


def _check_shard_files(report_path: Path, report: dict[str, Any], names: Sequence[str]) -> None:
    """Each shard file must still be exactly what its run wrote (size, lines and sha256)."""
    records = report.get("files")
    if not isinstance(records, dict):
        raise MergeError(
            f"shard report {quoted(report_path)} records no file hashes (written by an older version?); re-run it"
        )
    for name in names:
        record = records.get(name)
        if not isinstance(record, dict):
            raise MergeError(f"shard report {quoted(report_path)} has no record of its {name} file; re-run the shard")
        try:  # a dataset in another format than JSON Lines is recorded without its lines
            path, expected = Path(record["path"]), (record["bytes"], record.get("lines"), record["sha256"])
        except (KeyError, TypeError):
            raise MergeError(f"shard report {quoted(report_path)} has a malformed record of its {name} file") from None
        if not path.is_file():
            raise MergeError(f"shard file {quoted(path)} is missing (listed in {quoted(report_path)})")
        digest, size, counted_lines = file_record(path)
        lines = counted_lines if "lines" in record else None
        if (size, lines, digest.hexdigest()) != expected:
            counted = f"{lines} lines, {size} bytes" if lines is not None else f"{size} bytes"
            recorded = f"{record['lines']} lines, " if lines is not None else ""
            raise MergeError(
                f"shard file {quoted(path)} changed since its run wrote it ({counted}; "
                f"{quoted(report_path)} records {recorded}{record['bytes']} bytes); re-run that shard"
            )


def merge_shards(report_paths: Sequence[Path], output: Path, *, overwrite: bool = False) -> dict[str, Any]:
    """Merge shard runs (given by their report files) into the files beside `output`; existing
    files there are replaced only if a run wrote them (or with `overwrite`)."""
    try:
        return _merge_shards(report_paths, output, overwrite=overwrite)
    except OSError as exc:
        where = f" ({quoted(exc.filename)})" if exc.filename else ""
        raise MergeError(f"cannot merge into {quoted(output)}: {exc.strerror or exc}{where}") from None


def _merge_shards(report_paths: Sequence[Path], output: Path, *, overwrite: bool) -> dict[str, Any]:
    if not report_paths:
        raise MergeError("no shard reports given")
    reports = [_load_report(path) for path in report_paths]
    settings = [{k: v for k, v in r["settings"].items() if k != "shard_index"} for r in reports]
    for path, other in zip(report_paths[1:], settings[1:], strict=True):
        if other != settings[0]:
            raise MergeError(
                f"the shard reports were written with different settings ({quoted(report_paths[0])} against "
                f"{quoted(path)}: {settings_changes(flat_settings(settings[0]), flat_settings(other))})"
            )
    contents = [[(i.get("bytes"), i.get("sha256")) for i in r.get("inputs") or ()] for r in reports]
    if any(c != contents[0] for c in contents[1:]):
        raise MergeError("the shard reports were made from different input files")
    indices = sorted(r["settings"]["shard_index"] for r in reports)
    if indices != list(range(settings[0]["num_shards"])):
        raise MergeError(
            f"expected the reports of shards 0..{settings[0]['num_shards'] - 1} once each, got shards {indices}"
        )
    totals = RunTotals()
    for report in reports:
        totals.merge(RunTotals.from_dict(report["counters"]))
    totals.rows_read = max(r["counters"]["rows_read"] for r in reports)  # every shard reads the whole input
    shard_paths = [OutputPaths(**{k: Path(v) for k, v in r["outputs"].items()}) for r in reports]
    # Every shard run wrote a dataset (a dry run's report names none, refused above): the merge
    # writes one or refuses, and every check of it (its format, the Parquet shards' schemas, each
    # shard file against its report) is made before anything is written.
    shard_format = _shard_format(report_paths[0], reports[0])
    merge_formats(shard_format, output)  # a pair of formats with no merge is named before the files are read
    for path, report in zip(report_paths, reports, strict=True):
        _check_shard_files(path, report, ("data", "metrics", "over_limit", "rejects"))
    shards = [(p.metrics, p.data) for p in shard_paths]
    json_lists = WriteShape(reports[0]["settings"].get("write_format")).json_lists
    dataset = DatasetMerge.plan(shard_format, output, shards, partial(_input_column_types, reports[0]), json_lists)
    target = OutputPaths.beside(output)
    shard_files = [NamedFile("a shard's file", p) for paths in shard_paths for p in paths.as_dict().values()]
    shard_files += [NamedFile("a shard's file", p) for p in report_paths]
    inputs = reports[0].get("inputs")  # every shard reads the same inputs
    shard_files += [NamedFile("the shards' input", i["path"]) for i in inputs or () if i.get("path")]
    refuse_overwrites(run_outputs(target.as_dict()), shard_files)
    if not overwrite:
        refuse_foreign_outputs(target)
    target.data.parent.mkdir(parents=True, exist_ok=True)
    data_record = dataset.write(target.data)  # the part most likely to fail: first
    files: dict[str, dict[str, Any]] = {}
    for name in ("metrics", "over_limit", "rejects"):
        files[name] = _atomic_merge(getattr(target, name), [_indexed_lines(getattr(p, name)) for p in shard_paths])
    if data_record is not None:
        files["data"] = data_record
    timings = {"total": max(r["timings_seconds"].get("total", 0.0) for r in reports)}
    merged = build_report(
        totals,
        status=COMPLETED,
        settings={**reports[0]["settings"], "shard_index": None, "merged_shards": len(reports)},
        outputs=target.as_dict(),
        timings=timings,
        summarizer_stats=_sum_stats([r["summaries"].get("endpoint") or {} for r in reports]),
        files=files,
        inputs=inputs,
    ).to_dict()
    write_json_atomically(target.report, merged)
    return merged


def _shard_format(report_path: Path, report: dict[str, Any]) -> str:
    """The format a shard run wrote its dataset in (by its `--output-format`, else its suffix)."""
    explicit = report["settings"].get("output_format")
    try:
        return output_format_for(report["outputs"]["data"], explicit if isinstance(explicit, str) else None)
    except ConversionError:
        raise MergeError(f"shard report {quoted(report_path)} names a dataset of no format this tool writes") from None


def _input_column_types(report: dict[str, Any]) -> dict[str, Any]:
    """The Arrow types of the shards' columnar inputs' columns, which a run gives a Parquet or hf
    output (`read.column_types`); refused when such an input is gone or its size changed since."""
    from trajectory_compressor.read.column_types import source_column_types
    from trajectory_compressor.read.expand import expand_inputs

    paths = []
    for recorded in report.get("inputs") or ():
        path = recorded.get("path")
        if path is None or path.lower().endswith(_JSON_LINES_INPUTS):  # no column types to read
            continue
        if not os.path.exists(path) or (os.path.isfile(path) and os.path.getsize(path) != recorded.get("bytes")):
            raise MergeError(
                f"the shards' input {quoted(path)} is gone or its size changed: a Parquet or hf output takes its "
                "columns' types from it; merge into .jsonl or .jsonl.gz, as the shards wrote"
            )
        paths.append(path)
    return source_column_types(expand_inputs(paths)) if paths else {}


def _sum_stats(stats: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Add the shards' summarizer usage (numbers, nested dicts of numbers)."""
    merged: dict[str, Any] = {}
    for stat in stats:
        for key, value in stat.items():
            if isinstance(value, dict):
                earlier = merged.get(key, {})
                merged[key] = _sum_stats([earlier, value]) if isinstance(earlier, dict) else earlier
            elif _is_number(value) and _is_number(merged.get(key, 0)):
                combine = max if key.startswith("max_") else (lambda a, b: a + b)
                merged[key] = combine(merged.get(key, 0), value)
            else:
                merged.setdefault(key, value)
    return merged


def _atomic_merge(path: Path, streams: Sequence[Iterator[tuple[int, bytes]]]) -> dict[str, Any]:
    """Merge into a temporary file, rename it into place; the record a later check needs."""
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "wb") as out:
        _merge_into(out, streams)
    os.replace(temporary, path)
    digest, size, lines = file_record(path)
    return {"path": str(path), "bytes": size, "lines": lines, "sha256": digest.hexdigest()}
