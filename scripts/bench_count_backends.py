#!/usr/bin/env python3
"""Which token counter should `count/` use? Speed and exactness of each candidate, side by side.

For every tokenizer.json given (default: the bundled DeepSeek one) and every dataset (default:
generated agent rows; `--input` adds JSONL files or folders of them), each installed backend
counts every turn value, in batches of the pipeline's chunk size (64 rows), after its own load:

- load      seconds to build it from the tokenizer (the reference: `Tokenizer.from_file`; the
            fast ones: from the reference's serialized JSON, as `count/backends.py` builds them)
- count     seconds for one pass over the dataset on a fresh instance (what a run pays: each
            turn is counted once), median of `--repeat` rounds interleaved across backends
- MB/s      UTF-8 megabytes of turn text per second of `count`; `x hf` the ratio to the reference
- differ    turns whose count is not the reference's (`refused` when it cannot load the
            tokenizer, with its reason below the table)

Candidates: the project's backends (`hf`, `fastokens`, `gigatoken`, see count/backends.py) and,
when installed, `kitoken` and `tokie` (adapters here only). Then, for each installed package,
its version, licence and size on disk with the packages it alone pulls in.

    python scripts/bench_count_backends.py
    python scripts/bench_count_backends.py --input runs/ --tokenizer a/tokenizer.json b/tokenizer.json
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.metadata
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))

CHUNK_ROWS = 64
EXTRA = ("kitoken", "tokie")


def datasets(args: argparse.Namespace) -> dict[str, list[list[str]]]:
    """Name -> chunks of turn values (64 rows per chunk)."""
    import orjson
    from bench import conversation_values

    result: dict[str, list[list[str]]] = {}
    if args.rows:
        from make_sample_data import generate_trajectories

        rows = [conversation_values(row) for row in generate_trajectories(args.rows, args.seed)]
        result[f"generated ({args.rows} rows)"] = _chunks(rows)
    for given in args.input:
        files = sorted(given.glob("*.jsonl")) if given.is_dir() else [given]
        rows = []
        for path in files:
            with open(path, "rb") as handle:
                rows.extend(conversation_values(orjson.loads(line)) for line in handle if line.strip())
        result[f"{given.name} ({len(rows)} rows)"] = _chunks(rows)
    return result


def _chunks(rows: list[list[str]]) -> list[list[str]]:
    return [[value for row in rows[i : i + CHUNK_ROWS] for value in row] for i in range(0, len(rows), CHUNK_ROWS)]


def loaders(reference_path: Path) -> dict[str, Callable[[], Any]]:
    """Backend name -> a function that loads it (and returns an object with `count_many`)."""
    import tokenizers

    from trajectory_compressor.count.backends import FAST_BACKENDS, LOADERS, HFCounting, installed

    def reference() -> Any:
        tokenizer = tokenizers.Tokenizer.from_file(str(reference_path))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer

    found: dict[str, Callable[[], Any]] = {"hf": lambda: HFCounting(reference())}
    for name in FAST_BACKENDS:
        if installed(name):
            found[name] = lambda name=name: LOADERS[name](reference().to_str())  # not load_fast: uncached
    if installed("kitoken"):
        found["kitoken"] = lambda: _Kitoken(reference_path)
    if installed("tokie"):
        found["tokie"] = lambda: _Tokie(reference_path)
    return found


class _Kitoken:
    def __init__(self, path: Path) -> None:
        import kitoken

        self._tokenizer = kitoken.Kitoken.from_tokenizers_file(str(path))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [len(ids) for ids in self._tokenizer.encode_all(list(texts), True)]


class _Tokie:
    def __init__(self, path: Path) -> None:
        import tokie

        self._tokenizer = tokie.Tokenizer.from_json(str(path))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return list(self._tokenizer.count_tokens_batch(list(texts)))


def measure(load: Callable[[], Any], chunks: list[list[str]]) -> tuple[float, float, list[int]]:
    gc.collect()
    started = time.perf_counter()
    backend = load()
    loaded = time.perf_counter()
    counts: list[int] = []
    for chunk in chunks:
        counts.extend(backend.count_many(chunk))
    return loaded - started, time.perf_counter() - loaded, counts


def package_facts(name: str) -> str:
    """Version, licence, size on disk and the requirements it pulls in beyond the project's."""
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return f"{name}: not installed"
    project = _closure("trajectory-compressor")
    extra = sorted(_closure(name) - project - {_norm(name)})
    size = _size(name) + sum(_size(other) for other in extra)
    licence = dist.metadata.get("License-Expression") or dist.metadata.get("License") or "see its LICENSE file"
    pulls = f", pulls in {', '.join(extra)}" if extra else ", no other packages"
    return f"{name} {dist.version}: licence {licence.splitlines()[0]}, {size / 1e6:.1f} MB on disk{pulls}"


def _norm(name: str) -> str:
    return name.lower().replace("_", "-")


def _closure(name: str) -> set[str]:
    """`name` and every installed package it requires, transitively (extras and markers ignored)."""
    import re

    seen: set[str] = set()
    todo = [name]
    while todo:
        current = _norm(todo.pop())
        if current in seen:
            continue
        try:
            requires = importlib.metadata.requires(current) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        seen.add(current)
        for requirement in requires:
            if "extra ==" not in requirement:
                todo.append(re.split(r"[ ;<>=!~\[(]", requirement, maxsplit=1)[0])
    return seen


def _size(name: str) -> int:
    try:
        files = importlib.metadata.files(name) or []
    except importlib.metadata.PackageNotFoundError:
        return 0
    total = 0
    for file in files:
        with contextlib.suppress(OSError):
            total += file.locate().stat().st_size
    return total


def main(argv: Sequence[str] | None = None) -> int:
    summary, details = __doc__.split("\n\n", 1)
    parser = argparse.ArgumentParser(
        description=summary, epilog=details, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tokenizer", type=Path, nargs="*", default=[], help="tokenizer.json files [bundled]")
    parser.add_argument("--input", type=Path, nargs="*", default=[], help="JSONL files or folders, one dataset each")
    parser.add_argument("--rows", type=int, default=400, help="generated rows as a dataset; 0: none [400]")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="rounds; medians are shown [3]")
    args = parser.parse_args(argv)
    from trajectory_compressor.count.tokenizer import bundled_tokenizer_dir

    tokenizers = args.tokenizer or [bundled_tokenizer_dir() / "tokenizer.json"]
    data = {label: chunks for label, chunks in datasets(args).items() if any(chunks)}
    if not data:
        print("error: no turns to count (--rows 0 and no --input with rows)", file=sys.stderr)
        return 1
    refused: dict[str, str] = {}
    print(f"{'tokenizer / dataset':<44} {'backend':<10}{'load s':>8}{'count s':>9}{'MB/s':>8}{'x hf':>7}  differ")
    for path in tokenizers:
        found = loaders(path)
        for label, chunks in data.items():
            megabytes = sum(len(text.encode("utf-8", "surrogatepass")) for chunk in chunks for text in chunk) / 1e6
            turns = sum(map(len, chunks))
            samples: dict[str, list[tuple[float, float]]] = {name: [] for name in found}
            counts: dict[str, list[int]] = {}
            for _ in range(args.repeat):
                for name, load in found.items():
                    if name in refused:
                        continue
                    try:
                        load_s, count_s, counted = measure(load, chunks)
                    except Exception as exc:  # a backend that cannot load this tokenizer
                        refused[name] = str(exc).splitlines()[0][:160]
                        continue
                    samples[name].append((load_s, count_s))
                    counts[name] = counted
            where = f"{path.parent.name}/{path.name}"[-20:] + f" / {label}"
            reference = statistics.median(s for _, s in samples["hf"])
            for name, measured in samples.items():
                if name in refused:
                    print(f"{where:<44} {name:<10}{'':>8}{'':>9}{'':>8}{'':>7}  refused")
                    continue
                load_s = statistics.median(s for s, _ in measured)
                count_s = statistics.median(s for _, s in measured)
                differ = sum(a != b for a, b in zip(counts[name], counts["hf"], strict=True))
                print(
                    f"{where:<44} {name:<10}{load_s:>8.2f}{count_s:>9.3f}{megabytes / count_s:>8.1f}"
                    f"{reference / count_s:>7.1f}  {differ}/{turns}"
                )
        for name, reason in refused.items():
            print(f"    {name} refused {path}: {reason}")
        refused.clear()
    print()
    for name in ("tokenizers", "fastokens", "gigatoken", *EXTRA):
        print(package_facts(name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
