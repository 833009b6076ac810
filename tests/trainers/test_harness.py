"""The trainer harness proves itself on hand-made conversations: what each trainer's real code does.

These are the facts the product's trainer tests rely on; each assertion fails if the trainer (or
the harness) behaves otherwise. File:line citations are of the released wheels (llamafactory
0.9.5, verl 0.9.1, axolotl 0.19.0) and of TRL 1.16.0's `trl/trainer/sft_trainer.py`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.trainers.chat_tokenizers import TEMPLATE_NAMES, TemplateName
from tests.trainers.ownership import assert_loss_covers, loss_by_message, render, token_owners, trained_messages
from tests.trainers.rendered_calls import assert_calls_are_objects, rendered_calls

pytestmark = pytest.mark.trainers

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
]
ASSISTANTS = [2, 4]


def conversation(*, arguments_as_text: bool = False) -> list[dict[str, Any]]:
    """system, user, assistant (text + one call), tool, assistant: OpenAI / HF messages."""
    arguments: Any = {"command": "ls -la src"}
    if arguments_as_text:
        arguments = json.dumps(arguments)
    call = {"type": "function", "function": {"name": "bash", "arguments": arguments}}
    return [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Which files are in src?"},
        {"role": "assistant", "content": "Let me list them.", "tool_calls": [call]},
        {"role": "tool", "content": "main.py\nutil.py"},
        {"role": "assistant", "content": "There are two files: main.py and util.py."},
    ]


def marked(messages: list[dict[str, Any]], trained: list[int]) -> list[dict[str, Any]]:
    """The messages with axolotl's per-message `train` field: true on `trained`, false elsewhere."""
    return [{**message, "train": index in trained} for index, message in enumerate(copy.deepcopy(messages))]


# (a) tool-call arguments through the real templates ------------------------------------------

# Which templates double-encode arguments given as JSON text: those rendering `arguments | tojson`
# with no `is string` branch. qwen3's template has one (qwen3.jinja: `tool_call.arguments is string`).
DOUBLE_ENCODES_TEXT = {"qwen2.5": True, "qwen3": False, "deepseek-v3.1": True, "llama3.1-style": True}


@pytest.mark.parametrize("template", TEMPLATE_NAMES)
@pytest.mark.parametrize("arguments_as_text", [False, True], ids=["mapping", "json-text"])
def test_templates_render_mapping_arguments_as_objects_and_some_double_encode_text(
    chat_tokenizer: Callable[..., Any], template: TemplateName, arguments_as_text: bool
) -> None:
    tokenizer = chat_tokenizer(template)
    text = render(conversation(arguments_as_text=arguments_as_text), TOOLS, tokenizer)
    (call,) = rendered_calls(text, template)
    assert call.name == "bash"
    if arguments_as_text and DOUBLE_ENCODES_TEXT[template]:
        assert call.arguments == '{"command": "ls -la src"}'  # a JSON string holding the object
        with pytest.raises(AssertionError, match="double-encoded"):
            assert_calls_are_objects(text, template, expected=1)
    else:
        assert call.arguments == {"command": "ls -la src"}
        assert_calls_are_objects(text, template, expected=1)


def test_trl_trains_a_double_encoded_call_when_qwen25_renders_json_text_arguments(
    chat_tokenizer: Callable[..., Any], trl_sft: Callable[..., Any], tmp_path: Path
) -> None:
    # TRL renders raw `messages` with the tokenizer's template as they are (sft_trainer.py:1314-1345;
    # only `tools` given as JSON text is decoded, :1316), so JSON-text arguments reach `| tojson`.
    # (One Arrow column cannot hold both shapes: "cannot mix struct and non-struct".)
    import datasets

    rows = [{"messages": conversation(arguments_as_text=True), "tools": TOOLS}]
    tokenizer = chat_tokenizer("qwen2.5")
    run = trl_sft(datasets.Dataset.from_list(rows), tokenizer, tmp_path, max_length=1024)
    text = tokenizer.decode(run.rows[0].input_ids)
    with pytest.raises(AssertionError, match="double-encoded"):
        assert_calls_are_objects(text, "qwen2.5", expected=1)
    assert '"arguments": "{\\"command\\": \\"ls -la src\\"}"' in text


def test_loaded_rows_reach_templates_without_null_message_keys_but_with_null_argument_keys(
    chat_tokenizer: Callable[..., Any],
) -> None:
    # Arrow gives every message every key and every arguments struct every row's keys. transformers
    # (5.24, utils/chat_template_utils.py:720-723) drops a message's None-valued keys before
    # rendering, so `tool_calls: None` never reaches a template (Meta's Llama 3.1 template treats a
    # message HAVING the key as a call); a None inside the arguments is rendered, as null.
    import datasets

    other = conversation()
    other[2]["tool_calls"][0]["function"]["arguments"] = {"path": "src"}
    first = datasets.Dataset.from_list([{"messages": conversation()}, {"messages": other}])[0]["messages"]
    assert first[4]["tool_calls"] is None
    for template in TEMPLATE_NAMES:
        (call,) = rendered_calls(render(first, TOOLS, chat_tokenizer(template)), template)
        assert call.arguments == {"command": "ls -la src", "path": None}, template


# (b) TRL's loss per message, on pre-tokenized rows with a hand-made assistant mask --------------


def _mask_of(text: str, offsets: list[tuple[int, int]], bodies: list[str]) -> list[int]:
    """1 on the tokens inside these literal pieces of `text` (found by search, not by the harness)."""
    spans = [(text.index(body), text.index(body) + len(body)) for body in bodies]
    return [int(any(start <= begin and end <= stop for start, stop in spans)) for begin, end in offsets]


def test_trl_loss_per_message_follows_a_hand_made_assistant_mask(
    chat_tokenizer: Callable[..., Any], trl_sft: Callable[..., Any], tmp_path: Path
) -> None:
    import datasets

    tokenizer = chat_tokenizer("qwen2.5")
    messages = conversation()
    text = render(messages, TOOLS, tokenizer)
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = encoded["input_ids"], encoded["offset_mapping"]
    call = '{"name": "bash", "arguments": {"command": "ls -la src"}}'
    call_turn = f"Let me list them.\n<tool_call>\n{call}\n</tool_call><|im_end|>\n"
    answer = "There are two files: main.py and util.py.<|im_end|>\n"
    masks = {
        "exact": _mask_of(text, offsets, [call_turn, answer]),
        "with the tool result": _mask_of(text, offsets, [call_turn, "main.py\nutil.py", answer]),
        "no end of turn": _mask_of(text, offsets, [call_turn, answer[: -len("<|im_end|>\n")]]),
        "with a role header": _mask_of(text, offsets, [call_turn, "<|im_start|>assistant\n" + answer]),
    }
    # A sixth row longer than max_length whose only masked tokens lie past it: TRL truncates
    # (keep_start) and then drops rows left without loss (sft_trainer.py:1451-1463).
    long_messages = [*messages[:3], {"role": "tool", "content": "x " * 600}, messages[4]]
    long_text = render(long_messages, TOOLS, tokenizer)
    long = tokenizer(long_text, add_special_tokens=False, return_offsets_mapping=True)
    rows = [{"input_ids": ids, "assistant_masks": mask} for mask in masks.values()]
    rows.append(
        {"input_ids": long["input_ids"], "assistant_masks": _mask_of(long_text, long["offset_mapping"], [answer])}
    )
    assert len(long["input_ids"]) > len(ids) + 100

    # TRL folds `assistant_masks` into labels whenever the column is there (sft_trainer.py:1417);
    # two real training steps run on what it prepared.
    run = trl_sft(datasets.Dataset.from_list(rows), tokenizer, tmp_path, max_length=len(ids) + 50, train=True)
    assert len(run.rows) == len(masks), "the row with no loss left after truncation is dropped"
    assert run.train_loss is not None and run.train_loss > 0

    ownership = token_owners(messages, TOOLS, tokenizer, run.rows[0].input_ids)
    by_message = loss_by_message(ownership, run.rows[0].labels)
    assert [m.loss_tokens for m in by_message] == [
        0,
        0,
        by_message[2].tokens - by_message[2].header_tokens,
        0,
        by_message[4].tokens - by_message[4].header_tokens,
    ]
    assert [m.header_tokens > 0 for m in by_message] == [False, False, True, False, True]
    assert_loss_covers(ownership, run.rows[0].labels, ASSISTANTS)

    expected_failures = {
        "with the tool result": r"message 3 \(tool\): \d+ tokens carry loss that should not \(it\): 'main.py\\nutil",
        "no end of turn": r"message 4 \(assistant\): 2 tokens without loss that should carry it: '<\|im_end",
        "with a role header": r"message 4 \(assistant\): \d+ tokens carry loss that should not \(its role header\)",
    }
    for row, (name, pattern) in zip(run.rows[1:], expected_failures.items(), strict=True):
        ownership = token_owners(messages, TOOLS, tokenizer, row.input_ids)
        with pytest.raises(AssertionError, match=pattern):
            assert_loss_covers(ownership, row.labels, ASSISTANTS)
        assert trained_messages(ownership, row.labels) == (ASSISTANTS if name != "with the tool result" else [2, 3, 4])


# Ownership itself, on templates that render the last message or runs of tool results differently


@pytest.mark.parametrize("template", TEMPLATE_NAMES)
def test_each_message_owns_its_own_text_in_every_template(
    chat_tokenizer: Callable[..., Any], template: TemplateName
) -> None:
    tokenizer = chat_tokenizer(template)
    messages = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Which files are in src?"},
        {"role": "assistant", "content": "Checking the folder first."},
        {"role": "user", "content": "Go ahead and look."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "bash", "arguments": {"command": "ls src"}}}],
        },
        {"role": "tool", "content": "main.py util.py"},
        {"role": "assistant", "content": "Two files: main.py and util.py."},
    ]
    if template != "llama3.1-style":  # one result per call there; Qwen renders a run of results as one turn
        messages[4]["tool_calls"] = messages[4]["tool_calls"] * 2
        messages[5:5] = [{"role": "tool", "content": "README.md LICENSE"}]
    text = render(messages, TOOLS, tokenizer)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    ownership = token_owners(messages, TOOLS, tokenizer, ids)
    for index, message in enumerate(messages):
        piece = message["content"]
        if not piece or index == 0:
            continue
        start = text.rindex(piece) if index > 1 else text.index(piece)
        span = ownership.spans[index]
        assert span.header_end <= start and start + len(piece) <= span.end, (index, span, text[span.start : span.end])
    if template == "qwen3":  # its last assistant turn gets an empty <think> block a shorter rendering's last one lacks
        assert 3 in ownership.repaired
    if template in ("qwen2.5", "qwen3"):  # the first of two results: the shorter rendering closes the turn early
        assert 6 in ownership.repaired


@pytest.mark.parametrize("thinking", [False, True], ids=["enable_thinking=False", "thinking"])
@pytest.mark.parametrize("opening", ["system first", "assistant first"])
def test_qwen3_headers_end_where_each_answer_starts_with_thinking_on_or_off(
    chat_tokenizer: Callable[..., Any], thinking: bool, opening: str
) -> None:
    """Without thinking, Qwen3's generation prompt is `<|im_start|>assistant\n<think>\n\n</think>\n\n`,
    but it writes answers before the last user turn, and a record's first answer, with no think
    block. Ownership took the characters an answer shares with that prompt as its header: a call's
    `<t` (of `<tool_call>`, so that token was the header's), and, the prompt not found before a
    first answer, nothing (so the tools' system turn was that answer's to train). The header is
    what the template writes to open the answer, the expected answers found by search here."""
    tokenizer = chat_tokenizer("qwen3")
    call = {"type": "function", "function": {"name": "bash", "arguments": {"command": "ls src"}}}
    messages = [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "main.py util.py"},
        {"role": "user", "content": "And now?"},
        {"role": "assistant", "content": "Two files."},
    ]
    if opening == "system first":
        messages.insert(0, {"role": "system", "content": "You are a careful coding agent."})
    kwargs = {} if thinking else {"enable_thinking": False}
    text = render(messages, TOOLS, tokenizer, **kwargs)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    ownership = token_owners(messages, TOOLS, tokenizer, ids, **kwargs)
    last_header = "<|im_start|>assistant\n" + ("" if thinking else "<think>\n\n</think>\n\n")
    answers = {
        len(messages) - 4: ("<tool_call>\n{", "<|im_start|>assistant\n"),
        len(messages) - 1: ("<think>" if thinking else "Two files.", last_header),
    }
    for index, (answer, header) in answers.items():
        span = ownership.spans[index]
        assert text[span.header_end :].startswith(answer), (index, text[span.start : span.header_end])
        assert text[span.start : span.header_end].endswith(header), (index, text[span.start : span.header_end])
        body = [p for p in ownership.tokens_of(index) if not ownership.in_header[p]]
        assert ownership.offsets[body[0]][0] == span.header_end, (index, ownership.decode(body[:3]))
    first = ownership.spans[len(messages) - 4]
    if opening == "assistant first":  # the tools' system turn is before the first answer: its header's
        assert first.start == 0 and text[: first.header_end].startswith("<|im_start|>system\n# Tools")


# (c) LLaMA-Factory: what its converter accepts, and what it trains ------------------------------

OPENAI_ENTRY = {
    "formatting": "openai",
    "columns": {"messages": "messages", "tools": "tools"},
    "tags": {
        "role_tag": "role",
        "content_tag": "content",
        "user_tag": "user",
        "assistant_tag": "assistant",
        "observation_tag": "tool",
        "system_tag": "system",
    },
}


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_llamafactory_rejects_broken_alternation_and_drops_the_text_beside_a_call(
    chat_tokenizer: Callable[..., Any], llamafactory: Callable[..., Any], tmp_path: Path
) -> None:
    summary_after_result = [
        *conversation()[:4],
        {"role": "user", "content": "Summary of the earlier steps."},
        conversation()[4],
    ]
    rows = [
        {"messages": conversation(), "tools": json.dumps(TOOLS)},
        {"messages": summary_after_result, "tools": json.dumps(TOOLS)},
        {"messages": conversation(arguments_as_text=True), "tools": json.dumps(TOOLS)},
        {"messages": [conversation()[0], conversation()[1], conversation()[4]], "tools": ""},
    ]
    tokenizer = chat_tokenizer("qwen2.5")
    accepted, broken, text_arguments, no_tools = llamafactory(
        _jsonl(tmp_path / "rows.jsonl", rows), OPENAI_ENTRY, tokenizer, tmp_path / "lf"
    )

    # converter.py:286-302: user-side (user, tool) and assistant-side turns must alternate; a
    # rejected row is kept but emptied (`prompt, response = [], []`) and never tokenized.
    assert accepted.accepted and not broken.accepted
    assert broken.input_ids is None and broken.prompt == [] and broken.response == []

    # converter.py:259-263: an assistant message with tool_calls becomes a `function` turn whose
    # content is the JSON of its calls: its text ("Let me list them.") is dropped.
    assert [m["role"] for m in accepted.prompt] == ["user", "function", "observation"]
    assert json.loads(accepted.prompt[1]["content"]) == [{"name": "bash", "arguments": {"command": "ls -la src"}}]
    assert "Let me list them." not in tokenizer.decode(accepted.input_ids)
    # supervised.py (mask_history off): every assistant-side turn is trained, up to its <|im_end|>\n.
    assert accepted.trained_text(tokenizer) == [
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la src"}}\n</tool_call><|im_end|>\n',
        "There are two files: main.py and util.py.<|im_end|>\n",
    ]
    # formatter.py:108 json.dumps-es each call's arguments and tool_utils.py:605 loads them back:
    # JSON-text arguments come back a string, rendered double-encoded.
    calls = rendered_calls(text_arguments.trained_text(tokenizer)[0], "qwen2.5")
    assert calls[0].arguments == '{"command": "ls -la src"}'
    # converter.py:343-356: the OpenAI converter edits the system prompt: a "\n" after it when the
    # row has tools, "detailed thinking off" appended (or as the whole prompt) when it has none.
    assert accepted.system == "You are a careful coding agent.\n"
    assert no_tools.system == "You are a careful coding agent.\ndetailed thinking off"


def test_llamafactory_mask_history_trains_the_last_turn_only(
    chat_tokenizer: Callable[..., Any], llamafactory: Callable[..., Any], tmp_path: Path
) -> None:
    tokenizer = chat_tokenizer("qwen2.5")
    data = _jsonl(tmp_path / "rows.jsonl", [{"messages": conversation(), "tools": json.dumps(TOOLS)}])
    (row,) = llamafactory(data, OPENAI_ENTRY, tokenizer, tmp_path / "lf", mask_history=True)
    assert row.trained_text(tokenizer) == ["There are two files: main.py and util.py.<|im_end|>\n"]


# (d) veRL: a Parquet row, every assistant message trained ---------------------------------------


def _parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_verl_loads_a_parquet_row_and_trains_every_assistant_message_whatever_its_marks(
    chat_tokenizer: Callable[..., Any], verl: Callable[..., Any], tmp_path: Path
) -> None:
    # multiturn_sft_dataset.py:234-237: an assistant message's tokens all carry loss but its
    # generation prompt; nothing reads a per-message mark, so `train: false` is trained too.
    tokenizer = chat_tokenizer("qwen2.5")
    messages = marked(conversation(), trained=[4])
    (item,) = verl(_parquet(tmp_path / "rows.parquet", [{"messages": messages, "tools": TOOLS}]), tokenizer)
    plain = [{k: v for k, v in m.items() if k != "train"} for m in messages]
    ownership = token_owners(plain, TOOLS, tokenizer, item.input_ids)
    assert_loss_covers(ownership, item.labels, ASSISTANTS, trailer="trained")


def test_verl_refuses_tools_given_as_json_text(
    chat_tokenizer: Callable[..., Any], verl: Callable[..., Any], tmp_path: Path
) -> None:
    # multiturn_sft_dataset.py:169 hands the column's value to the chat template as it is (:308).
    data = _parquet(tmp_path / "rows.parquet", [{"messages": conversation(), "tools": json.dumps(TOOLS)}])
    with pytest.raises(Exception):  # noqa: B017 - the template's own error on a string of tools
        verl(data, chat_tokenizer("qwen2.5"))


# (e) axolotl: only messages marked `train: true` ------------------------------------------------


def test_axolotl_trains_only_the_messages_marked_train(
    chat_tokenizer: Callable[..., Any], axolotl: Callable[..., Any]
) -> None:
    import datasets

    tokenizer = chat_tokenizer("qwen2.5")
    messages = marked(conversation(), trained=[4])
    dataset = datasets.Dataset.from_list([{"messages": messages, "tools": TOOLS}])
    (row,) = axolotl(dataset, tokenizer, field_messages="messages", message_field_training="train")
    plain = [{k: v for k, v in m.items() if k != "train"} for m in messages]
    ownership = token_owners(plain, TOOLS, tokenizer, row["input_ids"])
    # chat_template.py:526-536: a message's `train` decides alone; :654 trains the eos token after
    # a trained turn, but not the "\n" the template puts after it.
    assert_loss_covers(ownership, row["labels"], [4], trailer="untrained")
    with pytest.raises(AssertionError, match=r"message 4 \(assistant\): 1 tokens without loss"):
        assert_loss_covers(ownership, row["labels"], [4], trailer="trained")


def test_axolotl_reads_tools_from_the_tools_column_whatever_field_tools_says(
    chat_tokenizer: Callable[..., Any], axolotl: Callable[..., Any]
) -> None:
    # chat_template.py:1383-1407 (StrategyLoader) never passes `field_tools` to the prompter, whose
    # default is "tools" (:54), read at :1193: tools in another column are silently not rendered.
    import datasets

    tokenizer = chat_tokenizer("qwen2.5")
    messages = marked(conversation(), trained=ASSISTANTS)
    dataset = datasets.Dataset.from_list([{"messages": messages, "functions": TOOLS}])
    (row,) = axolotl(
        dataset, tokenizer, field_messages="messages", message_field_training="train", field_tools="functions"
    )
    assert "# Tools" not in tokenizer.decode(row["input_ids"])


# The harness's own policy on a missing part -------------------------------------------------------


@pytest.mark.parametrize("ci", ["", "true"])
def test_a_missing_trainer_part_skips_locally_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    from tests.trainers.wheels import unavailable

    monkeypatch.setenv("CI", ci)
    outcome = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(outcome, match="cannot download"):
        unavailable("cannot download axolotl==0.19.0")
