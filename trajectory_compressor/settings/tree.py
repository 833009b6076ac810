"""The settings tree: every setting of a run, declared once, grouped by the stage that reads it.

`RunConfig` is the root. Its parts go to the stages that need them and nothing more: the pure
planner gets `PlanConfig`, the LLM summarizer `LLMConfig`, row selection `SelectConfig`, the
readers `ReadConfig`, the writers `OutputConfig`; the run's own switches sit on the root.
The endpoint's parts (`LLMConfig`, `BatchConfig`) are declared in `settings/endpoint.py`.
Each field's `setting(...)` declaration (see `settings.declare`) is the only place its type,
default, bounds, help, YAML key and flag are written: the CLI, the YAML loader, the Python API
checks and the run's settings record are all built from it.

YAML files written for the Hermes reference tool (`tokenizer`, `compression`, `protected_turns`,
`summarization`, `output`, `processing`, `metrics` sections) load unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, get_args

from trajectory_compressor.settings import choices
from trajectory_compressor.settings.declare import BOTH, READERS, ConfigError, check_part, setting
from trajectory_compressor.settings.endpoint import BatchConfig, LLMConfig

DEFAULT_NOTICE = "\n\nSome of your previous tool responses may be summarized to preserve context."
# --tokenizer-backend: auto, the reference, then the fast backends in the order auto tries them
# (the measured fastest first; count/backends.py holds them, README "Counting backends" the figures).
TOKENIZER_BACKENDS = ("auto", "hf", "fastokens", "gigatoken")


@dataclass(frozen=True)
class PlanConfig:
    """The numbers and switches the pure planner needs."""

    target_max_tokens: int = setting(
        15250, "int", minimum=1, yaml="compression.target_max_tokens", commands=BOTH, record=True,
        group="budget", common=True,
        help="Token budget per trajectory.",
    )  # fmt: skip
    summary_target_tokens: int = setting(
        750, "int", minimum=1, yaml="compression.summary_target_tokens", commands=BOTH, record=True,
        group="budget", common=True,
        help="Token budget of the summary turn.",
    )  # fmt: skip
    protect_first_system: bool = setting(
        True, "bool", yaml="protected_turns.first_system", flag_style="switch", commands=BOTH, record=True,
        group="budget",
        help="Keep the first system turn verbatim.",
    )  # fmt: skip
    protect_first_human: bool = setting(
        True, "bool", yaml="protected_turns.first_human", flag_style="switch", commands=BOTH, record=True,
        group="budget",
        help="Keep the first human turn verbatim.",
    )  # fmt: skip
    protect_first_gpt: bool = setting(
        True, "bool", yaml="protected_turns.first_gpt", flag_style="switch", commands=BOTH, record=True, group="budget",
        help="Keep the first gpt turn verbatim.",
    )  # fmt: skip
    protect_first_tool: bool = setting(
        True, "bool", yaml="protected_turns.first_tool", flag_style="switch", commands=BOTH, record=True,
        group="budget",
        help="Keep the tool turns answering the first gpt turn verbatim.",
    )  # fmt: skip
    protect_last_n_turns: int = setting(
        4, "int", minimum=0, yaml="protected_turns.last_n_turns", commands=BOTH, record=True,
        group="budget", common=True,
        help="Turns at the end kept verbatim.",
    )  # fmt: skip
    add_summary_notice: bool = setting(
        True, "bool", yaml="output.add_summary_notice", flag=None, record=True,
        help="Append the notice to the system turn of a compressed row.",
    )  # fmt: skip
    summary_notice_text: str = setting(
        DEFAULT_NOTICE, "str", yaml="output.summary_notice_text", flag=None, record=True,
        help="The notice appended to the system turn of a compressed row.",
    )  # fmt: skip
    windows: bool = setting(
        False, "bool", yaml="compression.windows", flag_style="flag", commands=BOTH, record=True, group="budget",
        help="Split each long row into context windows, as a live context compressor would see it; every "
        "gpt turn is trained (\"train\": true) in the one window where it is new.",
    )  # fmt: skip
    tail_ratio: float = setting(
        0.2, "number", above=0, maximum=0.9, yaml="compression.tail_ratio", commands=BOTH, record=True, group="budget",
        help="--windows: share of the budget the recent turns kept verbatim after each compaction may take.",
    )  # fmt: skip
    prune_tool_outputs: bool = setting(
        False, "bool", yaml="compression.prune_tool_outputs", flag_style="flag", commands=BOTH, record=True,
        group="budget", common=True,
        help="Before summarizing, replace old tool results, oldest first and only as far as needed, by a one-line "
        "placeholder.",
    )  # fmt: skip
    prune_min_chars: int = setting(
        200, "int", minimum=0, yaml="compression.prune_min_chars", commands=BOTH, record=True, group="budget",
        help="--prune-tool-outputs: only tool results longer than this many characters are cleared.",
    )  # fmt: skip

    @property
    def notice(self) -> str:
        """The text appended to the head's system turn of a compressed row ("" when off)."""
        return self.summary_notice_text if self.add_summary_notice else ""

    def validate(self) -> None:
        check_part(self)
        if self.summary_target_tokens >= self.target_max_tokens:
            raise ConfigError(
                "--summary-target-tokens (summary_target_tokens) must be smaller than --target-max-tokens"
            )


@dataclass(frozen=True)
class ReadConfig:
    """How to read inputs and find the conversation in each record (auto-detected unless set)."""

    split: str = setting(
        "train", "str", commands=READERS, record=True, group="io", help="Split of a dataset input."
    )  # fmt: skip
    data_files: list[str] | None = setting(
        None, "list", optional=True, commands=READERS, group="io",
        help="data_files for an hf:BUILDER input (repeatable).",
    )  # fmt: skip
    conversation_key: str | None = setting(
        None, "str", optional=True, commands=READERS, record=True, group="io",
        help="Key of the turn list [auto: conversations / messages].",
    )  # fmt: skip
    format: str | None = setting(
        None, "choice", optional=True, choices=("sharegpt", "openai"), commands=READERS, record=True,
        group="io", common=True,
        help="Conversation format [auto].",
    )  # fmt: skip
    streaming: bool = setting(True, "bool", flag=None, help="Stream Hugging Face Hub datasets.")

    def validate(self) -> None:
        check_part(self)


@dataclass(frozen=True)
class SelectConfig:
    """Which input rows a run takes: its shard, a deterministic sample, a limit."""

    sample_percent: float | None = setting(
        None, "number", above=0, maximum=100, optional=True, commands=BOTH, record=True, group="io",
        help="Process a deterministic sample of the rows.",
    )  # fmt: skip
    seed: int = setting(42, "int", commands=BOTH, record=True, group="io", help="Seed of --sample-percent.")
    limit: int | None = setting(
        None, "int", minimum=0, optional=True, commands=BOTH, record=True, group="io", common=True,
        help="Process at most N rows.",
    )  # fmt: skip
    num_shards: int = setting(
        1, "int", minimum=1, record=True, group="run", help="Split the input into this many shards."
    )  # fmt: skip
    shard_index: int = setting(
        0, "int", minimum=0, record=True, group="run", help="The shard this run processes (0-based)."
    )  # fmt: skip

    def validate(self) -> None:
        check_part(self)
        if self.shard_index >= self.num_shards:
            raise ConfigError(
                f"--shard-index must be in [0, --num-shards) = [0, {self.num_shards}), got {self.shard_index}"
            )


@dataclass(frozen=True)
class OutputConfig:
    """What a run writes besides the dataset path itself, and what it does with rows over the limit."""

    output_format: str | None = setting(
        None, "choice", optional=True, choices=("jsonl", "jsonl.gz", "parquet", "hf"), record=True,
        group="output", common=True,
        help="Output format [by suffix].",
    )  # fmt: skip
    metrics: str | None = setting(
        None, "path", optional=True, group="output", help="Per-row metrics [<output stem>.metrics.jsonl]."
    )  # fmt: skip
    html_report: str | None = setting(
        None, "path", optional=True, commands=("compress", "analyze", "eval"), group="output", common=True,
        help="Write an HTML report.",
    )  # fmt: skip
    resume: bool = setting(
        True, "bool", flag="--no-resume", flag_style="off", group="run", common=True,
        help="Start over instead of resuming an interrupted run.",
    )  # fmt: skip
    overwrite: bool = setting(
        False, "bool", flag_style="flag", group="output", commands=("compress", "requests"),
        help="Replace existing output files this tool did not write (refused otherwise, the file named).",
    )  # fmt: skip
    over_limit: choices.OverLimitPolicy = setting(
        "keep", "choice", choices=get_args(choices.OverLimitPolicy), record=True, group="budget", common=True,
        help="Rows still over the limit: keep them, drop them, or truncate their middle.",
    )  # fmt: skip
    on_reject: choices.RejectPolicy = setting(
        "keep", "choice", choices=get_args(choices.RejectPolicy), record=True, group="output",
        help="A bad record that is valid JSON (no conversation, a bad turn): keep its line in a JSON Lines dataset "
        "unchanged, or drop it (a trainer's loader fails on it); always in the rejects file.",
    )  # fmt: skip
    fail_on_over_limit: bool = setting(
        False, "bool", flag_style="flag", group="budget", help="Exit 3 when any row is still over the limit."
    )
    write_format: choices.WriteFormat | None = setting(
        None, "choice", optional=True, choices=get_args(choices.WriteFormat), yaml="output.write_format", record=True,
        group="output", common=True,
        commands=BOTH,
        help="Write conversations as ShareGPT, OpenAI messages (arguments as JSON text), or hf-chat: what "
        "trainers load (arguments as objects, other keys as JSON text) [as read].",
    )  # fmt: skip

    def validate(self) -> None:
        check_part(self)


@dataclass(frozen=True)
class RunConfig:
    """Everything one run needs besides its inputs and its output path: the root of the tree."""

    plan: PlanConfig = field(default_factory=PlanConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    batch: BatchConfig = field(default_factory=BatchConfig)
    read: ReadConfig = field(default_factory=ReadConfig)
    select: SelectConfig = field(default_factory=SelectConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    tokenizer: str | None = setting(
        None, "str", optional=True, yaml="tokenizer.name", commands=BOTH, group="counting", common=True,
        help="Hub id, tokenizer directory or tokenizer.json [default: bundled DeepSeek].",
    )  # fmt: skip
    trust_remote_code: bool = setting(
        False, "bool", yaml="tokenizer.trust_remote_code", flag_style="flag", commands=BOTH, group="counting",
        help="Allow a Hub tokenizer to run its own code.",
    )  # fmt: skip
    tokenizer_backend: str = setting(
        "auto", "choice", choices=TOKENIZER_BACKENDS, yaml="tokenizer.backend", commands=BOTH, group="counting",
        help="Who counts tokens: auto (the fastest exact backend, checked against hf), hf (Hugging Face "
        "tokenizers), or a fast backend by name.",
    )  # fmt: skip
    count_mode: str = setting(
        "values", "choice", choices=("values", "chat-template"), yaml="tokenizer.count_mode", commands=BOTH,
        group="counting", common=True,
        record=True, help="Count turn values (reference measure) or rows as apply_chat_template renders them.",
    )  # fmt: skip
    chat_template: str | None = setting(
        None, "path", optional=True, yaml="tokenizer.chat_template", commands=BOTH, record=True, metavar="FILE|NAME",
        group="counting", common=True,
        help="Jinja chat template file, or a shipped one by name: qwen2.5, qwen3, deepseek-v3.1.",
    )  # fmt: skip
    chat_template_kwargs: dict[str, Any] = setting(
        {}, "dict", yaml="tokenizer.chat_template_kwargs", commands=BOTH, record=True, metavar="JSON", group="counting",
        help='Variables for the chat template, as apply_chat_template\'s kwargs: \'{"enable_thinking": false}\'.',
    )  # fmt: skip
    tools_key: str = setting(
        "tools", "str", yaml="tokenizer.tools_key", commands=BOTH, record=True, group="counting",
        help="Record key of the tool schemas the chat template renders (a list, or a JSON string of one).",
    )  # fmt: skip
    summarizer: choices.SummarizerSetting = setting(
        "auto", "choice", choices=get_args(choices.SummarizerSetting), yaml="summarization.summarizer", record=True,
        group="summarizer", common=True,
        help="auto: the LLM when an endpoint is set, else extractive; none: prune tool outputs only "
        "(needs --prune-tool-outputs).",
    )  # fmt: skip
    on_summary_failure: choices.FailurePolicy = setting(
        "extractive", "choice", choices=get_args(choices.FailurePolicy), yaml="summarization.on_summary_failure",
        group="summarizer", common=True,
        record=True, help="What a row whose summary fails becomes.",
    )  # fmt: skip
    min_fidelity: float | None = setting(
        None, "number", minimum=0, maximum=1, optional=True, yaml="summarization.min_fidelity", record=True,
        group="summarizer",
        help="An LLM summary scoring below this is asked for again, then takes --on-summary-failure.",
    )  # fmt: skip
    reject_unsupported: bool = setting(
        False, "bool", yaml="summarization.reject_unsupported", flag_style="flag", record=True, group="summarizer",
        help="Treat an LLM summary stating items found nowhere in the row like one below --min-fidelity.",
    )  # fmt: skip
    row_timeout: float = setting(
        600.0, "duration", above=0, yaml="processing.per_trajectory_timeout", group="summarizer",
        help="Seconds a row may spend on summaries.",
    )  # fmt: skip
    skip_under_target: bool = setting(True, "bool", yaml="processing.skip_under_target", flag=None, record=True)
    dry_run: bool = setting(
        False, "bool", flag_style="flag", record=True, group="budget",
        help="Count and plan only: metrics and report, no summaries.",
    )  # fmt: skip
    strict: bool = setting(False, "bool", flag_style="flag", group="run", help="Stop at the first bad record (exit 1).")
    window: int | None = setting(
        None, "int", minimum=1, optional=True, group="run",
        help="Rows read ahead of the oldest unfinished one [4 x concurrency, >= 256].",
    )  # fmt: skip
    quiet: bool = setting(
        False, "bool", flag="-q --quiet", flag_style="flag", commands=BOTH, group="output",
        help="No progress bar, fewer messages.",
    )  # fmt: skip
    engine: str = setting(
        "local", "choice", choices=("local", "ray"), yaml="processing.engine", group="run", common=True,
        help='Where the run goes: this process, or Ray Data (pip install "trajectory-compressor[ray]").',
    )  # fmt: skip
    ray_address: str | None = setting(
        None, "str", optional=True, yaml="ray.address", group="run",
        help="Ray cluster to join (--engine ray) [a local Ray].",
    )  # fmt: skip
    ray_stall_timeout: float = setting(
        900.0, "duration", minimum=0, yaml="ray.stall_timeout", group="run",
        help="--engine ray: stop (exit 69, resumable) once no part has finished for this long while the cluster "
        "cannot hold the workers (a node lost, none replacing it) [900s: time for an autoscaler; 0: wait forever].",
    )  # fmt: skip
    num_workers: int | None = setting(
        None, "int", minimum=1, optional=True, yaml="ray.num_workers", group="run",
        help="Processes compressing rows: on the local engine, worker processes making the extractive "
        "summaries, one core each [1: this process]; with --engine ray, Ray actors "
        "[one per CPU of the cluster but one; 2 on one 2-CPU machine].",
    )  # fmt: skip
    probes: bool = setting(
        False, "bool", flag_style="flag", yaml="evaluation.probes", commands=("eval",), group="endpoint", common=True,
        help="eval: ask the model (--base-url, --model) recall questions about what each summary replaced, "
        "answered from the compressed row and from the uncompressed one (the ceiling).",
    )  # fmt: skip
    probe_questions: int = setting(
        5, "int", minimum=1, yaml="evaluation.probe_questions", commands=("eval",), group="endpoint",
        help="eval --probes: questions per compressed row (or window), at most.",
    )  # fmt: skip

    def validate(self) -> None:
        for part in (self.plan, self.llm, self.batch, self.read, self.select, self.output):
            part.validate()
        check_part(self)
        if self.plan.windows and self.output.over_limit == "truncate":
            raise ConfigError(
                "--over-limit truncate does not apply to --windows: a window over the budget holds one turn group "
                "that alone exceeds it (use keep or drop)"
            )
        if self.summarizer == choices.NO_SUMMARIES:
            self._check_no_summarizer()

    def _check_no_summarizer(self) -> None:
        """`--summarizer none` writes no summary: it means pruning only, so it must be asked for."""
        if not self.plan.prune_tool_outputs:
            raise ConfigError(
                "--summarizer none writes no summary: add --prune-tool-outputs to fit rows by pruning tool outputs "
                "(or use --dry-run to count and plan only)"
            )
        if self.batch.enabled or self.llm.responses:
            raise ConfigError("--batch and --responses need the llm summarizer, not --summarizer none")

    @property
    def effective_window(self) -> int:
        return self.window or max(256, 4 * self.llm.max_concurrency)


PARTS: dict[str, type] = {
    "run": RunConfig,
    "plan": PlanConfig,
    "llm": LLMConfig,
    "batch": BatchConfig,
    "read": ReadConfig,
    "select": SelectConfig,
    "output": OutputConfig,
}
