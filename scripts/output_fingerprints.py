#!/usr/bin/env python3
"""Fingerprint every output of a matrix of real runs on `sample_data/`, to prove a refactor changed no byte.

Each case runs the real command (`python -m trajectory_compressor`) in a subprocess on the
bundled sample data: every output format, every over-limit policy, a dry run, shards + merge,
`analyze --json`, a run killed and resumed, the `requests` batch file, context windows and
tool-output pruning (with and without summaries), and LLM runs (one keeping its cache, whose keys
are fingerprinted; one through the fidelity gate; windows; an endpoint that refuses every request,
with the fallback and with `--on-summary-failure keep`) against the test suite's fake
OpenAI-compatible server on 127.0.0.1. It prints one sha256 per output file. Save the figures
before a change and compare after it:

    python scripts/output_fingerprints.py --save /tmp/before.json
    ... change the code ...
    python scripts/output_fingerprints.py --compare /tmp/before.json   # exit 1 on any difference

Reports hold timings, absolute paths and the fake server's port, so a report is hashed
with those fields removed; every other file is hashed byte for byte, but for the fake server's
port (in the errors of the runs it refuses). A Hugging Face dataset
directory is hashed by its Arrow data files and `dataset_info.json`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_data" / "agent_runs.jsonl"
TIGHT = ("--target-max-tokens", "4000", "--summary-target-tokens", "300", "--protect-last-n-turns", "6")
CHATML = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
FAKE_PORT = re.compile(rb"127\.0\.0\.1:[0-9]+")
# A report's `sha256` of each output: the outputs are fingerprinted themselves (port scrubbed).
VOLATILE_REPORT_KEYS = {"timings", "timings_seconds", "path", "outputs", "base_url", "endpoint", "sha256"}


def run(*args: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", **(env or {})}
    full_env.pop("OPENAI_API_KEY", None)
    done = subprocess.run(
        [sys.executable, "-m", "trajectory_compressor", *args],
        capture_output=True,
        text=True,
        env=full_env,
        check=False,
        cwd=REPO,
    )
    if check and done.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(args)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done


def _scrub(value: object) -> object:
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items() if k not in VOLATILE_REPORT_KEYS}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def file_digest(path: Path) -> str:
    # The fake server's port changes from run to run; an error naming its URL is otherwise the same.
    content = FAKE_PORT.sub(b"127.0.0.1:PORT", path.read_bytes())
    if path.name.endswith(".report.json"):
        data = json.loads(content)
        return hashlib.sha256(json.dumps(_scrub(data), sort_keys=True).encode()).hexdigest()
    return hashlib.sha256(content).hexdigest()


def digests(folder: Path) -> dict[str, str]:
    """sha256 of every visible output under `folder` (work folders and locks are not outputs)."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_dir() or any(part.startswith(".") for part in relative.parts):
            continue
        if path.name in {"state.json", "cache.sqlite3"}:
            continue
        found[str(relative)] = file_digest(path)
    return found


def cache_keys(path: Path) -> str:
    """sha256 of the sorted keys of a summary cache (its rows hold times, so the file is not hashed)."""
    with sqlite3.connect(path) as connection:
        keys = sorted(row[0] for row in connection.execute("SELECT key FROM summaries_v2"))
    return hashlib.sha256("\n".join(keys).encode()).hexdigest() + f" ({len(keys)} keys)"


@contextmanager
def fake_server(then: str = "ok") -> Iterator[str]:
    """The fake server's base URL; `then` is its answer to every request (`ok`, or a fault)."""
    script = REPO / "tests" / "fake_openai_server.py"
    command = [sys.executable, str(script), "--port", "0", "--lifetime", "900", "--then", then]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        try:
            yield url
        finally:
            process.terminate()


def cases(work: Path) -> dict[str, dict[str, str]]:
    results: dict[str, dict[str, str]] = {}

    def case(name: str, *args: str, env: dict[str, str] | None = None) -> None:
        out = work / name
        out.mkdir()
        run(*[a.replace("{out}", str(out)) for a in args], env=env)
        results[name] = digests(out)
        print(f"{name}: {len(results[name])} files", file=sys.stderr)

    # Relative to the checkout every command runs in (cwd=REPO): metrics and reports name the
    # input, so two checkouts (a worktree of the commit before, this one) compare byte for byte.
    sample = str(SAMPLE.relative_to(REPO))
    case("jsonl", "compress", sample, "-o", "{out}/x.jsonl", "-q")
    case("jsonl_gz", "compress", sample, "-o", "{out}/x.jsonl.gz", "-q")
    case("parquet", "compress", sample, "-o", "{out}/x.parquet", "-q")
    case("hf", "compress", sample, "-o", "{out}/hf", "--output-format", "hf", "-q")
    case("extractive_tight_keep", "compress", sample, "-o", "{out}/x.jsonl", "-q", "--summarizer", "extractive", *TIGHT)
    case("tight_drop", "compress", sample, "-o", "{out}/x.jsonl", "-q", *TIGHT, "--over-limit", "drop")
    case("tight_truncate", "compress", sample, "-o", "{out}/x.jsonl", "-q", *TIGHT, "--over-limit", "truncate")
    case("dry_run", "compress", sample, "-o", "{out}/x.jsonl", "-q", "--dry-run", *TIGHT)
    case("sample_limit", "compress", sample, "-o", "{out}/x.jsonl", "-q", "--sample-percent", "40", "--limit", "50")
    template = Path(tempfile.gettempdir()) / "tc-fingerprints-chatml.jinja"  # a fixed path: the report names it
    template.write_text(CHATML, encoding="utf-8")
    chat = ("--count-mode", "chat-template", "--chat-template", str(template))
    case("chat_template", "compress", sample, "-o", "{out}/x.jsonl", "-q", *chat, *TIGHT)
    prune = ("--prune-tool-outputs",)
    case("prune", "compress", sample, "-o", "{out}/x.jsonl", "-q", *prune, *TIGHT)
    case("prune_truncate", "compress", sample, "-o", "{out}/x.jsonl", "-q", *prune, *TIGHT, "--over-limit", "truncate")
    case("prune_only", "compress", sample, "-o", "{out}/x.jsonl", "-q", *prune, "--summarizer", "none", *TIGHT)
    case("windows", "compress", sample, "-o", "{out}/x.jsonl", "-q", "--windows", *TIGHT)
    case("windows_drop", "compress", sample, "-o", "{out}/x.jsonl", "-q", "--windows", *TIGHT, "--over-limit", "drop")
    case("windows_dry_run", "compress", sample, "-o", "{out}/x.jsonl", "-q", "--windows", "--dry-run", *TIGHT)
    case("windows_prune", "compress", sample, "-o", "{out}/x.jsonl", "-q", "--windows", *prune, *TIGHT)
    none = ("--summarizer", "none")
    case("windows_prune_only", "compress", sample, "-o", "{out}/x.jsonl", "-q", "--windows", *prune, *none, *TIGHT)

    out = work / "shards"
    out.mkdir()
    for index in range(3):
        run("compress", sample, "-o", f"{out}/x.jsonl", "-q", "--num-shards", "3", "--shard-index", str(index))
    reports = sorted(str(p) for p in out.glob("x.shard-*.report.json"))
    run("merge", *reports, "-o", f"{out}/merged.jsonl")
    results["shards_merge"] = digests(out)

    analysis = run("analyze", sample, "--json", *TIGHT, "--price-in", "0.3", "--price-out", "2.5")
    scrubbed = json.dumps(_scrub(json.loads(analysis.stdout)), sort_keys=True)
    results["analyze"] = {"stdout": hashlib.sha256(scrubbed.encode()).hexdigest()}

    with fake_server() as url:
        llm = ("--base-url", url, "--model", "fake", "--no-cache", "--summarizer", "llm")
        case("llm", "compress", sample, "-o", "{out}/x.jsonl", "-q", *llm, *TIGHT)
        # The cache keys a run stores its summaries under: a changed key makes every user pay again.
        cached = ("--base-url", url, "--model", "fake", "--cache", "{out}/cache.sqlite3", "--summarizer", "llm")
        case("llm_cached", "compress", sample, "-o", "{out}/x.jsonl", "-q", *cached, *TIGHT)
        results["llm_cached"]["_cache_keys"] = cache_keys(work / "llm_cached" / "cache.sqlite3")
        case("llm_gate", "compress", sample, "-o", "{out}/x.jsonl", "-q", *llm, *TIGHT, "--min-fidelity", "0.5")
        case("llm_windows", "compress", sample, "-o", "{out}/x.jsonl", "-q", *llm, "--windows", *TIGHT)
    with fake_server(then="400") as url:  # every summary fails: the fallback, or the row kept and flagged
        refused = ("--base-url", url, "--model", "fake", "--no-cache", "--summarizer", "llm")
        case("llm_failed", "compress", sample, "-o", "{out}/x.jsonl", "-q", *refused, *TIGHT)
        keep = (*refused, "--on-summary-failure", "keep")
        case("llm_failed_keep", "compress", sample, "-o", "{out}/x.jsonl", "-q", *keep, *TIGHT)
        case("llm_failed_keep_prune", "compress", sample, "-o", "{out}/x.jsonl", "-q", *keep, *prune, *TIGHT)
        case("llm_failed_keep_windows", "compress", sample, "-o", "{out}/x.jsonl", "-q", *keep, "--windows", *TIGHT)
    # The offline batch file: each line's custom_id (the cache key) and body, as a live call sends it.
    case("requests", "requests", sample, "-o", "{out}/requests.jsonl", "--model", "fake", *TIGHT)

    out = work / "resume"
    out.mkdir()
    first = run(
        "compress",
        sample,
        "-o",
        f"{out}/x.jsonl",
        "-q",
        *TIGHT,
        env={"TC_CRASH_AT": "checkpoint-renamed:2", "TC_CHECKPOINT_ROWS": "40"},
        check=False,
    )
    second = run("compress", sample, "-o", f"{out}/x.jsonl", "-q", *TIGHT)
    results["resume"] = digests(out)
    results["resume"]["_exit_codes"] = f"{first.returncode},{second.returncode}"
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", type=Path, help="write the fingerprints to this JSON file")
    parser.add_argument("--compare", type=Path, help="compare with fingerprints saved earlier; exit 1 on a difference")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tc-fingerprints-") as folder:
        results = cases(Path(folder))
    if not any(results.values()):
        print("error: no output was fingerprinted (every case wrote nothing); nothing to compare", file=sys.stderr)
        return 1
    if args.save:
        args.save.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if args.compare:
        before = json.loads(args.compare.read_text(encoding="utf-8"))
        differences = [
            f"{case}/{name}: {before.get(case, {}).get(name)} -> {results.get(case, {}).get(name)}"
            for case in sorted(set(before) | set(results))
            for name in sorted(set(before.get(case, {})) | set(results.get(case, {})))
            if before.get(case, {}).get(name) != results.get(case, {}).get(name)
        ]
        for line in differences:
            print(line)
        total = sum(len(files) for files in results.values())
        print(f"{total} outputs compared, {len(differences)} differ")
        return 1 if differences else 0
    print(json.dumps(results, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
