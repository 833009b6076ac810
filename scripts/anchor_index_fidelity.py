"""What the anchor index does for LLM summaries on real agent runs: with it and without it, side by side.

    python scripts/anchor_index_fidelity.py --fake [--data ../shared/real_trajectories]
    python scripts/anchor_index_fidelity.py --base-url http://127.0.0.1:8080/v1 --model gemma \\
        --extra-body '{"stop": ["\\n\\n"]}' --max-prompt-chars 6000 --limit 10

Compresses every file of the folder twice with the LLM summarizer, `--anchor-index` and
`--no-anchor-index`, at each target (summary budget 750), scores both outputs as `eval` does and
prints, per split (`extractive_fidelity.split_of`: the same tune / held-out halves), the pooled
future-grounded fidelity of each, and the item recall beside it. `--fake` starts the test suite's
fake endpoint (`tests/fake_openai_server.py`, whose summaries name no value of the region: what
the index alone brings); `--base-url` takes any endpoint, such as the local llama.cpp model of
`scripts/local_llm.sh` (a 270M model: its summaries are not a quality measure, the index is).
`--limit N` takes the first N rows of each file; `--windows` scores every window (each later
window's summary the update of the one before). Exits 1 when it measured nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from extractive_fidelity import SPLITS, figures, scored_rows, unmeasured

from trajectory_compressor.api import counter_for
from trajectory_compressor.settings import RunConfig, with_values

REPO = Path(__file__).resolve().parents[1]
FAKE_SERVER = REPO / "tests" / "fake_openai_server.py"


@contextlib.contextmanager
def fake_endpoint() -> Iterator[str]:
    """The test suite's fake endpoint in a process of its own; yields its base URL."""
    server = subprocess.Popen(
        [sys.executable, str(FAKE_SERVER), "--port", "0", "--lifetime", "7200"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait(timeout=30)


def llm_config(args: argparse.Namespace, base_url: str, target: int, *, anchor_index: bool) -> RunConfig:
    run = {"summarizer": "llm", "quiet": True, "on_summary_failure": "keep", "row_timeout": args.request_timeout * 4}
    config = with_values(RunConfig(), "run", **run)
    plan = {"target_max_tokens": target, "summary_target_tokens": args.budget, "windows": args.windows}
    config = with_values(config, "plan", **plan)
    llm: dict[str, Any] = {
        "base_url": base_url,
        "model": args.model,
        "anchor_index": anchor_index,
        "use_cache": False,
        "temperature": 0.0,
        "request_timeout": args.request_timeout,
        "max_concurrency": args.concurrency,
    }
    if args.extra_body:
        llm["extra_body"] = json.loads(args.extra_body)
    if args.max_prompt_chars:
        llm["max_prompt_chars"] = args.max_prompt_chars
    config = with_values(config, "llm", **llm)
    return with_values(config, "select", limit=args.limit) if args.limit else config


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "real_trajectories"))
    parser.add_argument("--fake", action="store_true", help="start the test suite's fake endpoint")
    parser.add_argument("--base-url")
    parser.add_argument("--model", default="m")
    parser.add_argument("--extra-body", help="JSON merged into every request")
    parser.add_argument("--max-prompt-chars", type=int)
    parser.add_argument("--request-timeout", type=float, default=900.0, help="a busy CPU server is slow")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--targets", default="8000", help="comma-separated")
    parser.add_argument("--budget", type=int, default=750)
    parser.add_argument("--limit", type=int, help="the first N rows of each file")
    parser.add_argument("--windows", action="store_true", help="--windows: score every window")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if bool(args.fake) == bool(args.base_url):
        parser.error("pass exactly one of --fake and --base-url")
    files = sorted(Path(args.data).glob("*.jsonl"))
    if not files:
        print(f"error: no real trajectories (*.jsonl) under {args.data}; nothing measured", file=sys.stderr)
        return 1
    counter = counter_for(RunConfig())
    results: dict[str, dict[int, dict[str, Any]]] = {"with_index": {}, "without_index": {}}
    with fake_endpoint() if args.fake else contextlib.nullcontext(args.base_url) as base_url:
        for target in (int(t) for t in args.targets.split(",")):
            for name, anchor_index in (("with_index", True), ("without_index", False)):
                config = llm_config(args, base_url, target, anchor_index=anchor_index)
                results[name][target] = figures(scored_rows(files, config, counter))
    why = unmeasured(results["with_index"]) or unmeasured(results["without_index"])
    if why is not None:
        print(f"error: {why} in {len(files)} file(s) under {args.data}; nothing measured there", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    endpoint = "fake endpoint" if args.fake else f"{args.model} at {base_url}"
    print(f"LLM summaries ({endpoint}), summary budget {args.budget}; pooled future-grounded fidelity")
    for target, with_index in results["with_index"].items():
        without = results["without_index"][target]
        for split in (*SPLITS, "all"):
            on, off = with_index[split], without[split]
            print(
                f"target {target:>6,} {split:<9} rows {on['items']['scored']:>3}: "
                f"with the index {_score(on['future'])}, without {_score(off['future'])}; "
                f"item fidelity {_mean(on)} / {_mean(off)}"
            )
    return 0


def _score(future: dict[str, Any]) -> str:
    score = "-" if future["score"] is None else f"{future['score']:.2f}"
    return f"{score} ({future['kept']}/{future['anchors']})"


def _mean(data: dict[str, Any]) -> str:
    mean = data["items"]["fidelity"]["mean"]
    return "-" if mean is None else f"{mean:.2f}"


if __name__ == "__main__":
    sys.exit(main())
