"""What each trainer loads, trains and counts of a real output, with the trainers' own code.

    python scripts/trainer_figures.py [--data FILE_OR_DIR ...] [--target 8000] [--json]

Compresses the inputs (default: the bundled sample runs; e.g. ``--data ../shared/real_trajectories``
for the real runs, all sources in one output) with ``--windows --write-format hf-chat
--count-mode chat-template`` on a Qwen2.5 template (the bundled tokenizer with Qwen's markers as
special tokens, as the tests build it), extractive summaries, and once more single-row and with
``--prune-tool-outputs``. Then loads the output as each README recipe says and prints:

- records `datasets` loads (JSON Lines and Parquet) of those written;
- TRL (`SFTTrainer`'s own data preparation over `ChatTokens` rows): share of the marked assistant
  tokens with loss, loss tokens on any other message, rows TRL kept, rows whose token count equals
  the metrics' ``compressed_tokens``;
- tool calls rendered once as objects by qwen2.5, qwen3, deepseek-v3.1 and a Llama-3.1-style
  template (Llama's refuses parallel calls: those records are counted apart);
- axolotl and veRL (their data code from their wheels): records whose loss is exactly the marks;
- LLaMA-Factory: samples its converter accepts, compressed against the uncompressed input;
- kept or trained assistant turns that follow a cleared result (pruning), and non-assistant
  messages marked ``train``.

Needs what the trainer tests need: ``pip install torch==2.13.0 trl==1.16.0 -e ".[trainers]"``
and PyPI for the trainers' wheels (`tests/trainers`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("LLAMAFACTORY_VERBOSITY", "ERROR")  # its converter warns once per rejected sample
sys.path.insert(0, str(ROOT))

from tests.trainers.chat_tokenizers import trainer_tokenizer  # noqa: E402
from tests.trainers.ownership import assert_loss_covers, render, token_owners  # noqa: E402
from tests.trainers.rendered_calls import rendered_calls  # noqa: E402
from trajectory_compressor.api import compress, counter_for  # noqa: E402
from trajectory_compressor.settings import RunConfig, with_values  # noqa: E402
from trajectory_compressor.training import (  # noqa: E402
    ChatTokens,
    is_trained,
    messages_of,
    tools_of,
    write_llamafactory,
)
from trajectory_compressor.training.llamafactory import DATASET_INFO  # noqa: E402

TEMPLATES = ("qwen2.5", "qwen3", "deepseek-v3.1", "llama3.1-style")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def input_rows(inputs: list[str]) -> list[dict[str, Any]]:
    files = [f for p in map(Path, inputs) for f in (sorted(p.glob("*.jsonl")) if p.is_dir() else [p])]
    return [row for f in files for row in read_jsonl(f)]


PLACEHOLDER = "[tool output cleared"


def run(inputs: list[str], out: Path, tokenizer_dir: Path, target: int, **plan: Any) -> list[dict[str, Any]]:
    config = with_values(RunConfig(), "run", summarizer="extractive", quiet=True, tokenizer=str(tokenizer_dir))
    config = with_values(config, "run", count_mode="chat-template")
    config = with_values(config, "output", write_format="hf-chat")
    config = with_values(config, "plan", target_max_tokens=target, summary_target_tokens=750, **plan)
    compress(inputs, str(out), config, counter=counter_for(config))
    return read_jsonl(out.parent / f"{out.name.split('.')[0]}.metrics.jsonl")


def loss_exact(messages: list[dict[str, Any]], tools: Any, tokenizer: Any, ids: list[int], labels: list[int],
               trailer: str) -> bool:  # fmt: skip
    plain = [{k: v for k, v in m.items() if k != "train"} for m in messages]
    ownership = token_owners(plain, tools, tokenizer, ids)
    try:
        assert_loss_covers(ownership, labels, [i for i, m in enumerate(messages) if is_trained(m)], trailer=trailer)  # type: ignore[arg-type]
    except AssertionError:
        return False
    return True


def trl_figures(loaded: Any, metrics: list[dict[str, Any]], tokenizer: Any, tmp: Path, target: int) -> dict[str, Any]:
    from tests.trainers.trl_runner import run_sft

    prepared = loaded.map(ChatTokens(tokenizer), remove_columns=loaded.column_names)
    sft = run_sft(prepared, tokenizer, tmp / "trl", max_length=target, train=False)
    marked = covered = stray = exact = counted = 0
    for record, row, m in zip(loaded, sft.rows, metrics, strict=False):
        messages = messages_of(record)
        plain = [{k: v for k, v in x.items() if k != "train"} for x in messages]
        ownership = token_owners(plain, tools_of(record), tokenizer, row.input_ids)
        for position, owner in enumerate(ownership.owners):
            wanted = is_trained(messages[owner]) and not ownership.in_header[position]
            has = row.labels[position] != -100
            marked += wanted
            covered += wanted and has
            stray += has and not wanted
        exact += loss_exact(messages, tools_of(record), tokenizer, row.input_ids, row.labels, "trained")
        counted += len(row.input_ids) == m["compressed_tokens"]
    return {
        "rows_kept_by_trl": f"{len(sft.rows)} of {len(loaded)}",
        "marked_tokens_with_loss": round(covered / max(marked, 1), 4),
        "loss_tokens_on_other_messages": stray,
        "rows_with_exact_loss": f"{exact} of {len(sft.rows)}",
        "rows_counted_as_the_metrics": f"{counted} of {len(sft.rows)}",
    }


def objects_rendered(text: str, template: str, calls: list[dict[str, Any]]) -> int:
    """How many of the structured `calls` the rendering shows once, with object arguments (a
    `<tool_call>` the agent wrote as text that is no JSON is no structured call: skipped)."""
    try:
        rendered = rendered_calls(text, template)  # type: ignore[arg-type]
    except json.JSONDecodeError:
        rendered = [call for call in _tolerant_calls(text, template)]
    objects = [call for call in rendered if isinstance(call.arguments, dict)]
    wanted = [call["function"]["arguments"] for call in calls]
    found = [call.arguments for call in objects]
    return sum(1 for arguments in wanted if arguments in found and found.remove(arguments) is None)


def _tolerant_calls(text: str, template: str) -> list[Any]:
    from tests.trainers.rendered_calls import HERMES_CALL, RenderedCall

    calls = []
    for body in HERMES_CALL.findall(text):
        try:
            call = json.loads(body)
        except json.JSONDecodeError:
            continue
        if isinstance(call, dict) and "arguments" in call:
            calls.append(RenderedCall(call.get("name", ""), call["arguments"]))
    return calls


def call_figures(loaded: Any) -> dict[str, str]:
    figures = {}
    for name in TEMPLATES:
        tokenizer = trainer_tokenizer(name)
        good = total = refused = 0
        for record in loaded:
            messages = [{k: v for k, v in m.items() if k != "train"} for m in record["messages"]]
            calls = [c for m in messages for c in m.get("tool_calls") or ()]
            if name == "llama3.1-style" and any(len(m.get("tool_calls") or ()) > 1 for m in messages):
                refused += 1
                continue
            text = render(messages, tools_of(record), tokenizer)
            total += len(calls)
            good += objects_rendered(text, name, calls)
        note = f" ({refused} records with parallel calls refused by the template)" if refused else ""
        figures[name] = f"{good} of {total} calls as objects{note}"
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", nargs="+", default=[str(ROOT / "sample_data" / "agent_runs.jsonl")])
    parser.add_argument("--target", type=int, default=8000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import datasets

    datasets.disable_progress_bars()
    figures: dict[str, Any] = {}

    def record(section: str, values: Any) -> None:
        """Each section as soon as it is measured (the real runs take minutes a section)."""
        figures[section] = values
        if not args.json:
            print(f"{section}: {values}", file=figures_out, flush=True)

    # The trainers print as they load (LLaMA-Factory a whole tokenized example): to stderr, so
    # that stdout holds the figures alone.
    figures_out = sys.stdout
    with contextlib.redirect_stdout(sys.stderr), tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        tokenizer = trainer_tokenizer("qwen2.5")
        tokenizer.save_pretrained(tmp / "qwen")
        out = tmp / "windows" / "x.jsonl"
        metrics = run(args.data, out, tmp / "qwen", args.target, windows=True)
        parquet = tmp / "windows-parquet" / "x.parquet"
        run(args.data, parquet, tmp / "qwen", args.target, windows=True)
        lines = read_jsonl(out)
        loaded = datasets.load_dataset("json", data_files=str(out), split="train")
        from_parquet = datasets.load_dataset("parquet", data_files=str(parquet), split="train")
        record(
            "records",
            {
                "written": len(lines),
                "loaded_jsonl": len(loaded),
                "loaded_parquet": len(from_parquet),
                "messages_exact": sum(r["messages"] == line["messages"] for r, line in zip(loaded, lines, strict=True)),
            },
        )
        record(
            "non_assistant_messages_marked",
            sum("train" in m for line in lines for m in line["messages"] if m["role"] != "assistant"),
        )
        record(
            "trained_turns_right_after_the_summary",
            sum(
                previous["role"] == "user" and str(previous.get("content", "")).startswith("[CONTEXT SUMMARY]:")
                for line in lines
                for previous, message in zip(line["messages"], line["messages"][1:], strict=False)
                if message.get("train") is True
            ),
        )
        record("trl", trl_figures(loaded, metrics, tokenizer, tmp, args.target))
        record("tool_calls", call_figures(loaded))
        record("axolotl", axolotl_figures(loaded, tokenizer, args.target))
        record("verl", verl_figures(parquet, tokenizer, args.target))
        record("llamafactory", llamafactory_figures(loaded, args.data, tmp))
        record("pruning", pruning_figures(args.data, tmp, args.target))
    if args.json:
        print(json.dumps(figures, indent=2))
    return 0


def axolotl_figures(loaded: Any, tokenizer: Any, target: int) -> str:
    from tests.trainers.axolotl_runner import axolotl_tokenize

    tokenized = axolotl_tokenize(
        loaded, tokenizer, sequence_len=target, field_messages="messages", message_field_training="train"
    )
    exact = sum(
        loss_exact(messages_of(r), tools_of(r), tokenizer, row["input_ids"], row["labels"], "untrained")
        for r, row in zip(loaded, tokenized, strict=True)
    )
    return f"{exact} of {len(loaded)} records with loss exactly on the marks"


def verl_figures(parquet: Path, tokenizer: Any, target: int) -> str:
    from omegaconf import OmegaConf

    from tests.trainers.verl_runner import verl_dataset_module

    verl_dataset_module()
    from trajectory_compressor.training.verl import MarkedMultiTurnSFTDataset

    config = OmegaConf.create({"pad_mode": "no_padding", "max_length": target, "truncation": "error"})
    dataset = MarkedMultiTurnSFTDataset(str(parquet), tokenizer, config)
    import datasets

    loaded = datasets.load_dataset("parquet", data_files=str(parquet), split="train")
    exact = 0
    for index in range(len(dataset)):
        item, record = dataset[index], loaded[index]
        ids, mask = item["input_ids"].tolist(), item["loss_mask"].tolist()
        labels = [t if f else -100 for t, f in zip(ids, mask, strict=True)]
        exact += loss_exact(messages_of(record), tools_of(record), tokenizer, ids, labels, "trained")
    return f"{len(dataset)} of {len(loaded)} windows loaded, {exact} with loss exactly on the marks"


def llamafactory_figures(loaded: Any, inputs: list[str], tmp: Path) -> dict[str, str]:
    from tests.trainers.llamafactory_runner import llamafactory_dataset

    rows = input_rows(inputs)
    figures = {}
    for name, records in (("compressed", loaded), ("uncompressed", rows)):
        path = tmp / "lf" / f"{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        written = write_llamafactory(records, path)
        result = llamafactory_dataset(
            path, DATASET_INFO, trainer_tokenizer("qwen2.5"), tmp / "lf" / name, mask_history=True, cutoff_len=1 << 20
        )
        accepted = sum(row.accepted for row in result)
        figures[name] = f"{accepted} of {written} samples accepted ({accepted / max(written, 1):.1%})"
    return figures


def pruning_figures(inputs: list[str], tmp: Path, target: int) -> dict[str, str]:
    figures = {}
    for name, windows in (("single_row", False), ("windows", True)):
        out = tmp / f"pruned-{name}" / "x.jsonl"
        run(inputs, out, tmp / "qwen", target, windows=windows, prune_tool_outputs=True)
        after_cleared = kept = cleared = 0
        for record in read_jsonl(out):
            messages = record["messages"]
            previous_cleared = False
            for message in messages:
                text = message.get("content") if isinstance(message.get("content"), str) else ""
                if message["role"] == "tool":
                    previous_cleared = previous_cleared or text.startswith(PLACEHOLDER)
                    cleared += text.startswith(PLACEHOLDER)
                elif message["role"] == "assistant":
                    trained = message.get("train", True)
                    kept += bool(trained)
                    after_cleared += bool(trained) and previous_cleared
                    previous_cleared = False
        figures[name] = f"{after_cleared} of {kept} trained assistant turns follow a cleared result ({cleared} cleared)"
    return figures


if __name__ == "__main__":
    sys.exit(main())
