"""Which message each token came from, found apart from the product's code, and the loss per message.

How (the method of `/notes/trainers.md`, made to hold for templates that render a conversation's
last message differently):
1. render the whole conversation with `apply_chat_template(..., tokenize=False)`;
2. for each message i > 0, render the messages before it: the common prefix of that rendering
   and the whole one is where message i starts. When the shorter rendering is not a prefix of
   the whole one (the template rendered its last message differently), the boundary is repaired:
   - its tail re-synchronises with the whole rendering after skipping what the template added to
     a last message (Qwen3's empty `<think>` block on the last assistant turn): the boundary is
     where that tail ends, or
   - it only closes something the whole rendering closes later (Qwen's `<|im_end|>` after a run
     of tool results): the boundary is where the two diverge.
   - the template refuses to render the shorter conversation (Llama 3.1 puts the tools inside
     the first user message, so it cannot end before it): message i starts where i-1 does, and
     i-1 owns no token (both are a system and a user message: no trainer trains them).
   The message indexes that needed it are in `Ownership.repaired`;
3. an assistant message's role header is what `add_generation_prompt=True` adds to the rendering
   of the messages before it, as far as the whole rendering has it (DeepSeek adds
   `<｜Assistant｜><think></think>` after a user turn and nothing after a tool result), moved
   back to the end of a token (a call's `<tool_call>` shares `<t` with Qwen3's `<think>`); a first
   assistant message's header is all the template writes before its text alone with the same
   tools (Qwen3 with `enable_thinking=False` prompts an empty think block but writes none there);
4. the tokenizer's offset mapping (`return_offsets_mapping=True`) maps each token to the message
   whose span holds its first character.
The text before the first message's own content (bos, a default system prompt, the tools) is the
first message's: a rendering of no messages is not defined for most templates.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tests.trainers.trl_runner import IGNORE_INDEX

Trailer = Literal["trained", "untrained", "either"]
MIN_RESYNC_TAIL = 3  # a re-synchronised tail this short (a lone "\n") is a coincidence, not the message's end


@dataclass(frozen=True)
class MessageSpan:
    """A message's characters in the rendering: [start, end), its role header [start, header_end)."""

    index: int
    role: str
    start: int
    header_end: int
    end: int


@dataclass(frozen=True)
class Ownership:
    """Each token's message (index into `messages`) and whether it is in that message's role header."""

    text: str
    spans: tuple[MessageSpan, ...]
    token_ids: tuple[int, ...]
    offsets: tuple[tuple[int, int], ...]
    owners: tuple[int, ...]
    in_header: tuple[bool, ...]
    in_trailer: tuple[bool, ...]  # after the message's last end-of-turn (eos) token, e.g. Qwen's "\n"
    straddling: tuple[int, ...]  # token positions whose characters run into the next message
    repaired: tuple[int, ...]  # messages whose start needed the repair described in the module docstring
    tokenizer: Any

    def tokens_of(self, index: int) -> list[int]:
        """The token positions of message `index`."""
        return [p for p, owner in enumerate(self.owners) if owner == index]

    def decode(self, positions: Iterable[int]) -> str:
        """The text of these token positions (consecutive runs joined, gaps shown as ' … ')."""
        runs: list[list[int]] = []
        for p in sorted(positions):
            if runs and runs[-1][-1] == p - 1:
                runs[-1].append(p)
            else:
                runs.append([p])
        return " … ".join(self.tokenizer.decode([self.token_ids[p] for p in run]) for run in runs)


def render(messages: Sequence[dict[str, Any]], tools: Any, tokenizer: Any, **template_kwargs: Any) -> str:
    """The template's text for these messages, as `apply_chat_template(tokenize=False)` gives it."""
    text = tokenizer.apply_chat_template(list(messages), tools=tools, tokenize=False, **template_kwargs)
    assert isinstance(text, str), type(text)
    return text


def token_owners(
    messages: Sequence[dict[str, Any]],
    tools: Any,
    tokenizer: Any,
    token_ids: Sequence[int],
    *,
    truncated: bool = False,
    **template_kwargs: Any,
) -> Ownership:
    """For each of `token_ids`, the message it came from: see the module docstring for how.

    `token_ids` must be the tokenization of the whole rendering (what TRL, axolotl and veRL
    produce for these messages and tools), or a prefix of it when `truncated` (a trainer cut the
    row at `max_length`); anything else fails with the first differing token, since ownership
    of other ids would mean nothing. `template_kwargs` reach every rendering (`enable_thinking=`,
    `add_generation_prompt` excluded: the rows end on their last message).
    """
    full = render(messages, tools, tokenizer, **template_kwargs)
    starts, repaired = _message_starts(messages, tools, tokenizer, full, template_kwargs)
    ends = [*starts[1:], len(full)]
    encoded = tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(encoded["input_ids"]), [tuple(o) for o in encoded["offset_mapping"]]
    token_ends = sorted({finish for _, finish in offsets})
    spans = []
    for i, message in enumerate(messages):
        header_end = starts[i]
        if message.get("role") == "assistant" and i > 0:
            header_end = min(
                ends[i],
                starts[i]
                + _generation_prompt_length(messages[:i], tools, tokenizer, full[starts[i] :], template_kwargs),
            )
        elif message.get("role") == "assistant":  # a conversation opening on an assistant message
            header_end = _first_header_end(messages[0], tools, tokenizer, full, ends[0], template_kwargs)
        header_end = _on_token_end(header_end, starts[i], token_ends)
        spans.append(MessageSpan(i, str(message.get("role")), starts[i], header_end, ends[i]))

    _check_same_ids(list(token_ids), ids, truncated, tokenizer)
    ids, offsets = ids[: len(token_ids)], offsets[: len(token_ids)]

    owners: list[int] = []
    in_header: list[bool] = []
    straddling: list[int] = []
    for position, (begin, finish) in enumerate(offsets):
        owner = max(0, bisect.bisect_right(starts, begin) - 1)
        owners.append(owner)
        in_header.append(begin < spans[owner].header_end)
        if finish > spans[owner].end:
            straddling.append(position)
    last_eos: dict[int, int] = {}
    for position, token in enumerate(ids):
        if token == tokenizer.eos_token_id:
            last_eos[owners[position]] = position
    in_trailer = [owner in last_eos and p > last_eos[owner] for p, owner in enumerate(owners)]
    return Ownership(
        text=full,
        spans=tuple(spans),
        token_ids=tuple(ids),
        offsets=tuple(offsets),  # type: ignore[arg-type]
        owners=tuple(owners),
        in_header=tuple(in_header),
        in_trailer=tuple(in_trailer),
        straddling=tuple(straddling),
        repaired=tuple(repaired),
        tokenizer=tokenizer,
    )


def _message_starts(
    messages: Sequence[dict[str, Any]], tools: Any, tokenizer: Any, full: str, template_kwargs: dict[str, Any]
) -> tuple[list[int], list[int]]:
    starts: list[int] = [0]
    repaired: list[int] = []
    for i in range(1, len(messages)):
        try:
            prefix = render(messages[:i], tools, tokenizer, **template_kwargs)
        except Exception:  # Llama 3.1 puts the tools in the first user message: no rendering without it
            repaired.append(i)
            starts.append(starts[-1])  # message i starts where i-1 does: i-1 owns no token
            continue
        common = common_prefix_length(prefix, full)
        start = common
        if common < len(prefix):  # the template rendered the prefix's last message differently
            repaired.append(i)
            start = _resynchronised_end(prefix, full, common)
        starts.append(max(start, starts[-1]))
    return starts, repaired


def common_prefix_length(left: str, right: str) -> int:
    """How many leading characters `left` and `right` share (blocks compared first, then characters)."""
    limit, block, i = min(len(left), len(right)), 1024, 0
    while i + block <= limit and left[i : i + block] == right[i : i + block]:
        i += block
    while i < limit and left[i] == right[i]:
        i += 1
    return i


def _resynchronised_end(prefix: str, full: str, common: int) -> int:
    """Where `prefix` ends in `full` when it diverges at `common`: see the module docstring.

    The longest tail of `prefix` (skipping the least of what it added) that `full` continues with
    from `common` on is the rest of the message; none (but a coincidence of a few characters): the
    prefix only closed early, and the message ends where they diverge.
    """
    rest = full[common:]
    for skip in range(common, len(prefix) - MIN_RESYNC_TAIL + 1):
        tail = prefix[skip:]
        if rest.startswith(tail):
            return common + len(tail)
    return common


def _generation_prompt_length(
    before: Sequence[dict[str, Any]], tools: Any, tokenizer: Any, from_start: str, template_kwargs: dict[str, Any]
) -> int:
    """How much of the text from a message's start is what `add_generation_prompt=True` adds there
    (none when the template refuses the messages before it: Llama 3.1 with tools and no user
    message yet; no trainer should train such a message, see `_message_starts`)."""
    try:
        plain = render(before, tools, tokenizer, **template_kwargs)
    except Exception:
        return 0
    prompted = tokenizer.apply_chat_template(
        list(before), tools=tools, tokenize=False, add_generation_prompt=True, **template_kwargs
    )
    assert prompted.startswith(plain), "add_generation_prompt changed the text before the generation prompt"
    return common_prefix_length(prompted[len(plain) :], from_start)


def _first_header_end(
    message: dict[str, Any], tools: Any, tokenizer: Any, full: str, end: int, template_kwargs: dict[str, Any]
) -> int:
    """Where the role header of a first assistant message ends: after what the template writes
    before any message (a default system prompt, the tools' instructions) and the header it opens
    that message with.

    That is what the template writes before the text of this message alone, with the same tools,
    when the whole rendering starts so. A generation prompt is no guide here: Qwen3 with
    `enable_thinking=False` asks for an answer with an empty think block but writes a first
    answer with none, and the header was once looked for whole, not found, and the tools'
    system turn counted as the answer. Else (a template that refuses or reorders the lone
    message): the generation prompt of a one-turn probe, as far as it is found; for a template
    that writes no header there (DeepSeek V3.1, whose header follows a user turn only), what it
    writes before a lone assistant message's text (its bos)."""
    probe = [{"role": "user", "content": "x"}]
    plain = render(probe, None, tokenizer, **template_kwargs)
    prompted = tokenizer.apply_chat_template(probe, tokenize=False, add_generation_prompt=True, **template_kwargs)
    header = prompted[len(plain) :]
    before = _before_lone_text(message, tools, tokenizer, template_kwargs)
    if full.startswith(before) and len(before) <= end and _ends_on_header_start(before, header, tokenizer):
        return len(before)
    found = full.find(header, 0, end) if header else -1
    if found >= 0:
        return found + len(header)
    lone = render([{"role": "assistant", "content": "x"}], None, tokenizer, **template_kwargs)
    before = lone[: lone.find("x")]
    return len(before) if header not in before and full.startswith(before) else 0


def _before_lone_text(message: dict[str, Any], tools: Any, tokenizer: Any, template_kwargs: dict[str, Any]) -> str:
    """What the template writes before the text of `message` (as an assistant message whose text
    is a marker, its calls dropped) rendered alone with `tools` ("" if it refuses it)."""
    marker = "\u2063probe\u2063"
    lone = {"role": "assistant", "content": marker}
    try:
        text = render([lone], tools, tokenizer, **template_kwargs)
    except Exception:  # Llama 3.1 with tools: no first user message to hold them
        return ""
    found = text.find(marker)
    return text[:found] if found >= 0 else ""


def _ends_on_header_start(before: str, header: str, tokenizer: Any) -> bool:
    """Whether `before` ends with the header's first token or more (whole tokens of the header
    tokenized alone): the lone message was written as an assistant turn, not folded into another
    role's (Llama 3.1 with tools writes it inside the first user turn)."""
    if not before or not header:
        return False
    cuts = [
        finish
        for _, finish in tokenizer(header, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    ]
    return any(before.endswith(header[:cut]) for cut in cuts if cut > 0)


def _on_token_end(header_end: int, start: int, token_ends: Sequence[int]) -> int:
    """`header_end` moved back to the last token end at or before it (but not before `start`).

    A header found as the characters a message shares with the generation prompt may end inside
    a token: Qwen3 without thinking prompts `<|im_start|>assistant\n<think>`, and a call's answer
    opens on `<tool_call>`, which shares `<t` with it; DeepSeek's `<｜Assistant｜>` shares `<｜`
    with `<｜tool▁calls▁begin｜>`. That token is the answer's, not the header's."""
    at = bisect.bisect_right(token_ends, header_end) - 1
    return max(start, token_ends[at]) if at >= 0 else start


def _check_same_ids(given: list[int], rendered: list[int], truncated: bool, tokenizer: Any) -> None:
    expected = rendered[: len(given)] if truncated else rendered
    if given == expected:
        return
    at = next(
        (i for i, (a, b) in enumerate(zip(given, expected, strict=False)) if a != b), min(len(given), len(expected))
    )
    raise AssertionError(
        f"the token ids are not the tokenization of the rendered messages ({len(given)} ids given, "
        f"{len(rendered)} rendered{', truncated allowed' if truncated else ''}): first difference at token {at}: "
        f"given {tokenizer.decode(given[at : at + 8])!r}, rendered {tokenizer.decode(expected[at : at + 8])!r}"
    )


@dataclass(frozen=True)
class MessageLoss:
    """What carries loss in one message: its tokens, those of its role header, and how many have loss."""

    index: int
    role: str
    tokens: int
    header_tokens: int
    loss_tokens: int
    loss_header_tokens: int


def loss_by_message(ownership: Ownership, labels: Sequence[int]) -> list[MessageLoss]:
    """Per message, how many of its tokens carry loss (`labels != -100`), header tokens apart."""
    _check_labels(ownership, labels)
    result = []
    for span in ownership.spans:
        positions = ownership.tokens_of(span.index)
        header = [p for p in positions if ownership.in_header[p]]
        result.append(
            MessageLoss(
                index=span.index,
                role=span.role,
                tokens=len(positions),
                header_tokens=len(header),
                loss_tokens=sum(labels[p] != IGNORE_INDEX for p in positions),
                loss_header_tokens=sum(labels[p] != IGNORE_INDEX for p in header),
            )
        )
    return result


def trained_messages(ownership: Ownership, labels: Sequence[int]) -> list[int]:
    """The indexes of the messages any of whose tokens carries loss."""
    return [m.index for m in loss_by_message(ownership, labels) if m.loss_tokens]


def assert_loss_covers(
    ownership: Ownership, labels: Sequence[int], trained: Iterable[int], *, trailer: Trailer = "trained"
) -> None:
    """Loss is on exactly the tokens of messages `trained` (their role headers excepted) and nowhere else.

    `trailer` says what is expected of what a trained message renders after its end-of-turn token
    (Qwen's "\n" after `<|im_end|>`): "trained" (veRL, LLaMA-Factory: the whole message),
    "untrained" (axolotl's chat_template stops at the eos token), or "either". Fails with every
    message that differs: its index and role, and the decoded tokens that carry loss and should
    not, or should and do not. Labels that carry loss must equal the input ids (labels are not
    shifted in any of the trainers' datasets).
    """
    _check_labels(ownership, labels)
    wanted = set(trained)
    wrong_loss: dict[int, list[int]] = {}
    missing_loss: dict[int, list[int]] = {}
    for position, owner in enumerate(ownership.owners):
        expected = owner in wanted and not ownership.in_header[position]
        actual = labels[position] != IGNORE_INDEX
        if expected and ownership.in_trailer[position] and trailer != "trained":
            if trailer == "either":
                continue
            expected = False
        if actual and not expected:
            wrong_loss.setdefault(owner, []).append(position)
        elif expected and not actual:
            missing_loss.setdefault(owner, []).append(position)
    if not wrong_loss and not missing_loss:
        return
    lines = [f"loss is not exactly on messages {sorted(wanted)} (role headers excepted):"]
    for index in sorted(wrong_loss.keys() | missing_loss.keys()):
        span = ownership.spans[index]
        if index in wrong_loss:
            where = "its role header" if all(ownership.in_header[p] for p in wrong_loss[index]) else "it"
            lines.append(
                f"  message {index} ({span.role}): {len(wrong_loss[index])} tokens carry loss that should not"
                f" ({where}): {ownership.decode(wrong_loss[index])!r}"
            )
        if index in missing_loss:
            lines.append(
                f"  message {index} ({span.role}): {len(missing_loss[index])} tokens without loss that should carry it:"
                f" {ownership.decode(missing_loss[index])!r}"
            )
    if ownership.straddling:
        lines.append(f"  (tokens running into the next message: {ownership.decode(ownership.straddling)!r})")
    raise AssertionError("\n".join(lines))


def _check_labels(ownership: Ownership, labels: Sequence[int]) -> None:
    assert len(labels) == len(ownership.token_ids), f"{len(labels)} labels for {len(ownership.token_ids)} tokens"
    shifted = [p for p, label in enumerate(labels) if label != IGNORE_INDEX and label != ownership.token_ids[p]]
    assert not shifted, f"labels differ from the input ids at {shifted[:10]}: {ownership.decode(shifted)!r}"
