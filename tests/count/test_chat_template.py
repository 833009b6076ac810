"""Chat-template counts equal the trainer's own `apply_chat_template` count, row by row and rewritten.

Every total here is compared with transformers itself: ``apply_chat_template(messages,
tools=tools, tokenize=True, **kwargs)`` on the record's own messages (OpenAI message objects
with their tool calls; ShareGPT turns as role/content) and tools, for templates of several
families, on the bundled tokenizer with the added tokens of each family.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.count.chat_fixtures import (
    DEEPSEEK31,
    GATHERING,
    LLAMA31_STYLE,
    PARTS_CHATML,
    QWEN3,
    QWEN25,
    RECURSIVE,
    THINKING_KWARG,
    family_tokenizer,
    openai_record,
    sharegpt_record,
    trainer_count,
    weather_tools,
)
from trajectory_compressor.count import ChatTemplateCounter, TokenizerLoadError, build_counter
from trajectory_compressor.count.backends import FAST_BACKENDS, installed
from trajectory_compressor.count.chat_template import Chat, ChatTemplateError
from trajectory_compressor.read.formats import RecordError, chat_messages, detect_format, from_turns
from trajectory_compressor.run.prepare import RejectedRow, ValidRow, prepare_rows
from trajectory_compressor.settings import PlanConfig, ReadConfig
from trajectory_compressor.types import EditedTurn, KeptTurn, NewTurn, SourceRecord, Turn

_TOKENIZERS: dict[str, Any] = {}


def _counter(family: str, template: str, **kwargs: Any) -> ChatTemplateCounter:
    """A counter on the family's tokenizer (loaded once per family) with `template`, counting its
    rendered pieces with the fast backend as a run does (`auto`), so every comparison with
    transformers' own count below holds for it."""
    if family not in _TOKENIZERS:
        _TOKENIZERS[family] = family_tokenizer(family, template)
    tokenizer = _TOKENIZERS[family]
    tokenizer.chat_template = template
    return ChatTemplateCounter(tokenizer, backend="auto", **kwargs)


def _trainer_messages(record: dict[str, Any]) -> list[Any]:
    """The messages a trainer builds from a record, written independently of the tool's reader:
    OpenAI messages with each call's JSON-text arguments decoded into the object (as axolotl and
    the package's training recipes hand them to the template), ShareGPT turns as role/content."""
    if "messages" in record:
        return [_with_decoded_arguments(message) for message in record["messages"]]
    roles = {"human": "user", "gpt": "assistant"}
    return [
        {"role": roles.get(turn["from"], turn["from"]), "content": turn["value"]} for turn in record["conversations"]
    ]


def _with_decoded_arguments(message: dict[str, Any]) -> dict[str, Any]:
    calls = message.get("tool_calls")
    if not calls:
        return message
    decoded = []
    for call in calls:
        arguments = call["function"]["arguments"]
        if isinstance(arguments, str) and isinstance(json.loads(arguments), dict):
            call = {**call, "function": {**call["function"], "arguments": json.loads(arguments)}}
        decoded.append(call)
    return {**message, "tool_calls": decoded}


def _trainer_tools(record: dict[str, Any], key: str = "tools") -> Any:
    tools = record.get(key)
    return json.loads(tools) if isinstance(tools, str) else tools


def _expected(counter: ChatTemplateCounter, record: dict[str, Any], kwargs: dict[str, Any] | None = None) -> int:
    return trainer_count(counter.tokenizer, _trainer_messages(record), _trainer_tools(record), **(kwargs or {}))


def _counts(counter: ChatTemplateCounter, record: dict[str, Any], layout: Any = None) -> list[int]:
    [counts] = counter.count_chats([counter.chat_of(record, detect_format(record), layout)])
    return counts


TOOLS = weather_tools(14)
CASES = [
    ("qwen2.5, tools and tool calls", "qwen", QWEN25, openai_record(tools=TOOLS), None),
    ("qwen2.5, tools as a JSON string", "qwen", QWEN25, openai_record(tools=json.dumps(weather_tools(2))), None),
    ("qwen2.5 on a tokenizer without its tokens", "deepseek", QWEN25, openai_record(tools=TOOLS), None),
    ("qwen2.5, ShareGPT with tools", "qwen", QWEN25, sharegpt_record(tools=json.dumps(TOOLS)), None),
    ("qwen3, reasoning_content", "qwen", QWEN3, openai_record(reasoning=True, empty_content="", tools=TOOLS), None),
    ("qwen3, ShareGPT with <think>", "qwen", QWEN3, sharegpt_record(tools=TOOLS), None),
    ("llama3.1-style, tools", "llama", LLAMA31_STYLE, openai_record(tools=TOOLS), None),
    ("llama3.1-style, no tools", "llama", LLAMA31_STYLE, openai_record(), None),
    ("deepseek-v3.1, bundled tokenizer", "deepseek", DEEPSEEK31, openai_record(tools=TOOLS), None),
    ("kwarg given", "qwen", THINKING_KWARG, sharegpt_record(), {"enable_thinking": False}),
    ("kwarg not given", "qwen", THINKING_KWARG, sharegpt_record(), None),
    ("content as parts", "qwen", PARTS_CHATML, openai_record(empty_content=[]), None),
    ("no loop over the messages", "qwen", RECURSIVE, sharegpt_record(), None),
    ("a loop that gathers the messages", "qwen", GATHERING, sharegpt_record(), None),
]
CASE_IDS = [case[0] for case in CASES]


@pytest.mark.parametrize(("name", "family", "template", "record", "kwargs"), CASES, ids=CASE_IDS)
def test_a_row_counts_as_the_trainers_apply_chat_template(
    name: str, family: str, template: str, record: dict[str, Any], kwargs: dict[str, Any] | None
) -> None:
    counter = _counter(family, template, template_kwargs=kwargs)
    counts = _counts(counter, record)
    assert len(counts) == len(_trainer_messages(record)) and min(counts) >= 0, counts
    assert sum(counts) == _expected(counter, record, kwargs)
    assert counter.counting.name in FAST_BACKENDS or not any(map(installed, FAST_BACKENDS))


def test_the_kwarg_changes_the_count_as_it_changes_the_trainers() -> None:
    record = sharegpt_record()
    with_reasoning = sum(_counts(_counter("qwen", THINKING_KWARG), record))
    without = sum(_counts(_counter("qwen", THINKING_KWARG, template_kwargs={"enable_thinking": False}), record))
    assert without < with_reasoning


def test_add_generation_prompt_is_taken_as_apply_chat_template_takes_it() -> None:
    counter = _counter("qwen", QWEN25, template_kwargs={"add_generation_prompt": True})
    record = openai_record(tools=TOOLS)
    expected = _expected(counter, record, {"add_generation_prompt": True})
    assert sum(_counts(counter, record)) == expected > _expected(counter, record)  # + <|im_start|>assistant\n


def test_an_argument_of_apply_chat_template_is_not_a_template_kwarg() -> None:
    with pytest.raises(TokenizerLoadError, match="chat_template_kwargs: 'tokenize' is an argument") as caught:
        _counter("qwen", QWEN25, template_kwargs={"tokenize": False, "enable_thinking": False})
    assert "\n" not in str(caught.value)


def _rewrites(record: dict[str, Any]) -> list[list[Any]]:
    """Layouts as the planner makes them: notice on the system turn, a summary for a middle run."""
    total = len(_trainer_messages(record))
    notice = "\n\nSome of your previous tool responses may be summarized to preserve context."
    system = _trainer_messages(record)[0]["content"]
    summary = NewTurn(Turn("human", "[CONTEXT SUMMARY]: tool_0 found HAT170 for mia_li_3668 🤖."))
    head = [EditedTurn(0, system + notice), KeptTurn(1), KeptTurn(2), KeptTurn(3)]
    return [
        [*head, summary, *[KeptTurn(i) for i in range(total - 3, total)]],
        [*head, summary, KeptTurn(total - 1)],
        [KeptTurn(i) for i in range(total)],
    ]


@pytest.mark.parametrize(("name", "family", "template", "record", "kwargs"), CASES, ids=CASE_IDS)
def test_a_rewritten_row_counts_as_the_trainer_counts_the_row_written(
    name: str, family: str, template: str, record: dict[str, Any], kwargs: dict[str, Any] | None
) -> None:
    counter = _counter(family, template, template_kwargs=kwargs)
    fmt = detect_format(record)
    for layout in _rewrites(record):
        written = from_turns(record, fmt, layout)  # what the writer writes
        assert sum(_counts(counter, record, layout)) == _expected(counter, written, kwargs), layout


def test_the_tools_preamble_is_counted_on_the_first_message_only() -> None:
    counter = _counter("qwen", QWEN25)
    with_tools, without = _counts(counter, openai_record(tools=TOOLS)), _counts(counter, openai_record())
    assert with_tools[1:] == without[1:]
    tools_cost = _expected(counter, openai_record(tools=TOOLS)) - _expected(counter, openai_record())
    assert with_tools[0] - without[0] == tools_cost > 14 * 50


@pytest.mark.parametrize("family", ["qwen", "deepseek"])
def test_each_message_is_charged_what_removing_it_saves(family: str) -> None:
    """Qwen2.5 writes each message alone, so removing a call with its results saves their shares,
    exactly where the template opens messages with its own tokens (Qwen's tokenizer), and within
    a few tokens where those are plain text (the bundled tokenizer)."""
    counter = _counter(family, QWEN25)
    record = openai_record(steps=4, tools=TOOLS)
    counts = _counts(counter, record)
    assert min(counts) > 0, counts
    messages = record["messages"]
    start = 4  # the second call (two parallel calls) and its two results: 4, 5, 6
    assert messages[start].get("tool_calls") and [m["role"] for m in messages[start + 1 : start + 3]] == ["tool"] * 2
    kept = {**record, "messages": messages[:start] + messages[start + 3 :]}
    predicted = sum(counts) - sum(counts[start : start + 3])
    slack = 0 if family == "qwen" else 2
    assert abs(predicted - _expected(counter, kept)) <= slack


def test_a_new_turn_costs_its_text_and_the_templates_markers() -> None:
    counter = _counter("qwen", QWEN25)
    record = openai_record(tools=TOOLS)
    summary = Turn("human", "[CONTEXT SUMMARY]: the flight was changed to Friday.")
    layout = [*[KeptTurn(i) for i in range(4)], NewTurn(summary), *[KeptTurn(i) for i in range(4, 7)]]
    added = sum(_counts(counter, record, layout)) - sum(_counts(counter, record)[:7])
    assert counter.count_turn(summary) == added == counter.count(summary.value) + counter.turn_overhead
    assert counter.turn_overhead == 5  # <|im_start|> user \n ... <|im_end|> \n


@pytest.mark.parametrize("template", [RECURSIVE, GATHERING], ids=["recursive", "gathering"])
def test_a_template_whose_loop_cannot_be_seen_splits_by_prefixes(template: str) -> None:
    counter = _counter("qwen", template)
    record = sharegpt_record()
    counts = _counts(counter, record)
    messages = _trainer_messages(record)
    prefixes = [trainer_count(counter.tokenizer, messages[:end]) for end in range(1, len(messages) + 1)]
    assert counts == [after - before for before, after in zip([0, *prefixes], prefixes, strict=False)]


NO_TOOL_RESULTS = (
    "{% for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('this model takes no tool results') }}"
    "{% endif %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
)


def test_a_row_the_template_refuses_fails_as_the_trainers_does() -> None:
    counter = _counter("qwen", NO_TOOL_RESULTS)
    record = openai_record()  # it holds tool results, which this template refuses
    with pytest.raises(Exception):  # noqa: B017 - whatever transformers raises, it raises
        _expected(counter, record)
    good = Chat([{"role": "user", "content": "Hello."}, {"role": "assistant", "content": "Hi."}])
    with pytest.raises(ChatTemplateError) as caught:
        counter.count_chats([good, counter.chat_of(record, detect_format(record))])
    assert caught.value.position == 1 and str(caught.value).startswith("chat template failed: ")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ("{not json", "'tools' is not valid JSON"),
        ('{"name": "x"}', "'tools' is not a list of tool schemas (got object)"),
        (["bash"], "'tools'[0] is not an object (got string)"),
    ],
)
def test_tools_a_trainer_could_not_pass_reject_the_row(tools: Any, message: str) -> None:
    counter = _counter("qwen", QWEN25)
    record = openai_record(tools=tools)
    with pytest.raises(RecordError, match=re.escape(message)):
        counter.chat_of(record, detect_format(record))
    rows = [(i, i + 1, SourceRecord("t.jsonl", i + 1, r)) for i, r in enumerate([openai_record(), record])]
    good, bad = prepare_rows(rows, counter, PlanConfig(), notice_tokens=0, skip_under_target=True, reading=ReadConfig())
    assert isinstance(good, ValidRow)
    assert isinstance(bad, RejectedRow) and bad.error.startswith(message)


def test_no_tools_key_null_and_empty_string_mean_no_tools() -> None:
    counter = _counter("qwen", QWEN25)
    plain = sum(_counts(counter, openai_record()))
    for tools in (None, ""):
        record = {**openai_record(), "tools": tools}
        assert sum(_counts(counter, record)) == plain
    assert sum(_counts(counter, openai_record(tools=[]))) == _expected(counter, openai_record(tools=[]))


def test_an_empty_list_of_tools_means_no_tools_as_the_training_recipes_read_it() -> None:
    """Llama 3.1's template, given ``tools=[]``, writes its tool preamble with no tool in it; the
    recipes (`ChatTokens`, veRL's, axolotl's ``if tools:``) render no tools: the count is theirs."""
    from trajectory_compressor.training import ChatTokens

    counter = _counter("llama", LLAMA31_STYLE)
    record = openai_record(steps=1)
    plain = sum(_counts(counter, record))
    for tools in ([], "[]"):
        assert sum(_counts(counter, {**record, "tools": tools})) == plain
        assert len(ChatTokens(counter.tokenizer).row({**record, "tools": tools}).input_ids) == plain


def test_the_tools_key_is_a_setting() -> None:
    record = sharegpt_record(tools_key="functions", tools=TOOLS)
    counter = _counter("qwen", QWEN25, tools_key="functions")
    expected = trainer_count(counter.tokenizer, _trainer_messages(record), TOOLS)
    assert sum(_counts(counter, record)) == expected > sum(_counts(_counter("qwen", QWEN25), record))


# --- where the template comes from ------------------------------------------------------------------


def test_a_local_model_directory_brings_its_template_offline(tmp_path: Path) -> None:
    """`--tokenizer DIR` with the model's tokenizer files and chat template, no Hub access."""
    tokenizer = family_tokenizer("qwen", QWEN25)
    tokenizer.save_pretrained(str(tmp_path / "model"))
    assert (tmp_path / "model" / "chat_template.jinja").exists() or "chat_template" in json.loads(
        (tmp_path / "model" / "tokenizer_config.json").read_text()
    )
    counter = build_counter(str(tmp_path / "model"), count_mode="chat-template")
    record = openai_record(tools=TOOLS)
    assert isinstance(counter, ChatTemplateCounter)
    assert sum(_counts(counter, record)) == _expected(counter, record)
    # The same model directory's template, given to another tokenizer by file:
    shutil.copy(tmp_path / "model" / "chat_template.jinja", tmp_path / "t.jinja")
    other = build_counter(count_mode="chat-template", chat_template=str(tmp_path / "t.jinja"))
    assert sum(_counts(other, record)) == _expected(other, record)


def test_a_tokenizer_with_named_templates_uses_the_one_apply_chat_template_picks() -> None:
    """A tokenizer_config.json may hold several templates: "tool_use" for rows with tools."""
    templates = {"default": PARTS_CHATML, "tool_use": QWEN25}  # the default one writes no tools
    for record, not_picked in ((openai_record(tools=TOOLS), PARTS_CHATML), (openai_record(), QWEN25)):
        counter = _counter("qwen", templates)  # type: ignore[arg-type]
        expected = _expected(counter, record)
        assert sum(_counts(counter, record)) == expected
        assert sum(_counts(_counter("qwen", not_picked), record)) != expected  # picking matters here
    with pytest.raises(TokenizerLoadError, match="multiple chat templates with no default") as caught:
        _counter("qwen", {"tool_use": QWEN25, "rag": QWEN25})  # type: ignore[arg-type]
    assert "\n" not in str(caught.value) and "chat_template_kwargs" not in str(caught.value)


@pytest.mark.parametrize("name", ["qwen2.5", "qwen3", "deepseek-v3.1"])
def test_shipped_templates_load_by_name(name: str) -> None:
    counter = build_counter(count_mode="chat-template", chat_template=name)
    record = openai_record(tools=TOOLS, empty_content="")
    assert sum(_counts(counter, record)) == _expected(counter, record)


def test_an_unknown_template_name_lists_the_shipped_ones() -> None:
    with pytest.raises(TokenizerLoadError, match=r"cannot read chat template qwen9: .*qwen2\.5, qwen3, deepseek-v3\.1"):
        build_counter(count_mode="chat-template", chat_template="qwen9")


def test_a_template_that_does_not_compile_stops_at_start() -> None:
    tokenizer = family_tokenizer("deepseek", "{% for m in messages %}{{ m.content }")
    with pytest.raises(TokenizerLoadError, match="is not a valid Jinja template") as caught:
        ChatTemplateCounter(tokenizer)
    assert "\n" not in str(caught.value)


def test_chat_template_mode_needs_a_template() -> None:
    with pytest.raises(TokenizerLoadError, match="no chat template") as caught:
        build_counter(count_mode="chat-template")
    assert "\n" not in str(caught.value)


# --- bare turns (no record): the counter's turn-level API ----------------------------------------

TEMPLATE = (
    "<|begin|>{% for m in messages %}"
    "{% if 'FORBIDDEN' in m['content'] %}{{ raise_exception('forbidden content in turn') }}{% endif %}"
    "<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
)
# Real templates (Gemma, Mistral, Llama 2) insist on user/assistant alternation starting with a user.
ALTERNATING_TEMPLATE = (
    "{% for m in messages %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant') }}{% endif %}"
    "[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
)
# Qwen-style: a default system prompt when the conversation has none.
DEFAULT_SYSTEM_TEMPLATE = (
    "{% if messages[0]['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
)


def _template_counter(tmp_path: Path, template: str) -> ChatTemplateCounter:
    path = tmp_path / "template.jinja"
    path.write_text(template, encoding="utf-8")
    counter = build_counter(count_mode="chat-template", chat_template=str(path))
    assert isinstance(counter, ChatTemplateCounter) and counter.counts_chat_template
    return counter


def _rendered_count(counter: ChatTemplateCounter, turns: list[Turn]) -> int:
    return trainer_count(counter.tokenizer, chat_messages(turns))


def _agent_conversation(index: int, steps: int) -> list[Turn]:
    turns = [Turn("system", "You are an agent."), Turn("human", f"Task {index}: fix café 日本 🤖")]
    for step in range(steps):
        turns.append(Turn("gpt", f'<tool_call>\n{{"name": "bash", "arguments": {{"step": {step}}}}}\n</tool_call>'))
        turns.append(Turn("tool", f"<tool_response>\nline {step}\n" * (step + 1) + "</tool_response>"))
    turns.append(Turn("gpt", "Done."))
    return turns


def test_chat_template_turn_counts_sum_to_the_rendered_conversation(tmp_path: Path) -> None:
    counter = _template_counter(tmp_path, TEMPLATE)
    conversations = [_agent_conversation(0, 1), _agent_conversation(1, 4), [Turn("human", "only one turn")]]
    counts = counter.count_conversations(conversations)
    assert [len(c) for c in counts] == [len(turns) for turns in conversations]
    for turns, per_turn in zip(conversations, counts, strict=True):
        assert sum(per_turn) == _rendered_count(counter, turns)
    # The summary turn costs its text and its markers in the middle of a row: not the template's
    # preamble (`<|begin|>`), which the row pays once.
    summary = Turn("human", "[CONTEXT SUMMARY]: it went well")
    alone = _rendered_count(counter, [summary])
    assert counter.count_turn(summary) == counter.count(summary.value) + counter.turn_overhead
    assert counter.count(summary.value) < counter.count_turn(summary) < alone


def _records(values: list[str]) -> list[tuple[int, int, SourceRecord]]:
    rows = []
    for index, value in enumerate(values):
        record = {"conversations": [{"from": "human", "value": value}, {"from": "gpt", "value": "ok"}]}
        rows.append((index, index + 1, SourceRecord(source="t.jsonl", line=index + 1, record=record)))
    return rows


def _prepare(counter: ChatTemplateCounter, rows: list[tuple[int, int, SourceRecord]]):
    return prepare_rows(rows, counter, PlanConfig(), notice_tokens=0, skip_under_target=True, reading=ReadConfig())


def test_a_conversation_the_template_refuses_rejects_only_that_row(tmp_path: Path) -> None:
    counter = _template_counter(tmp_path, TEMPLATE)
    prepared = _prepare(counter, _records(["first", "has FORBIDDEN text", "third", "FORBIDDEN again", "fifth"]))
    assert [isinstance(row, ValidRow) for row in prepared] == [True, False, True, False, True]
    for row in prepared:
        if isinstance(row, RejectedRow):
            assert row.error == "chat template failed: forbidden content in turn"
        else:
            assert sum(row.token_counts) == _rendered_count(counter, row.turns) == row.plan.total_tokens


def test_an_alternating_template_counts_the_conversations_it_renders(tmp_path: Path) -> None:
    counter = _template_counter(tmp_path, ALTERNATING_TEMPLATE)
    turns = [Turn("human", "question"), Turn("gpt", "answer"), Turn("human", "more"), Turn("gpt", "done")]
    assert _rendered_count(counter, turns) > 0  # the template accepts the conversation as a whole
    [row] = _prepare(counter, _records(["question"]))
    assert isinstance(row, ValidRow)
    assert sum(row.token_counts) == _rendered_count(counter, row.turns)


def test_chat_template_turn_shares_are_what_removing_them_saves(tmp_path: Path) -> None:
    counter = _template_counter(tmp_path, DEFAULT_SYSTEM_TEMPLATE)
    turns = [Turn("human" if i % 2 == 0 else "gpt", f"message {i}: some words about the task") for i in range(12)]
    [per_turn] = counter.count_conversations([turns])
    assert sum(per_turn) == _rendered_count(counter, turns)
    assert min(per_turn) > 0, per_turn
    kept = turns[:3] + turns[9:]
    predicted = sum(per_turn) - sum(per_turn[3:9])
    assert abs(predicted - _rendered_count(counter, kept)) <= 2, (predicted, _rendered_count(counter, kept))
