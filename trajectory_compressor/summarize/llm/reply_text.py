"""A reply is a summary, not a transcript: what of a model's text becomes the summary turn.

The summary is written into a user (or system) turn of a training row. A weak model that goes on
in the transcript format it was shown, or a server that does not stop at its end-of-turn token,
puts a turn of its own into that text: `<|im_end|>\\n<|im_start|>assistant\\n...`, a
`<tool_call>` running `rm -rf`, `Assistant:` lines. Rendered by a chat template (whose
tokenizer reads `<|im_start|>` in text as the real control token), the user turn would then hold
an assistant turn that "train on responses only" trainers learn from. So, by kind:

* **Refused** (the reply is a `Refused` with its reason; the row takes `--on-summary-failure`),
  because what follows the switch is another turn and no cut can tell which part is the summary:
  a tool call block (`<tool_call>` before a JSON object or at a line start, `<function=name>`,
  `<function_call>{`, `<tool_response>` at a line start, `[TOOL_CALLS]`, DeepSeek's
  `<｜tool▁calls▁begin｜>`, Llama's `<|python_tag|>`, gpt-oss's `<|call|>`, GLM's `<tool_call>name`
  before `<arg_key>`, MiniMax-M2's and Claude's XML `<invoke name="...">`), a reply that is
  nothing but a JSON tool call; a turn-start control token anywhere but
  the very start (`<|im_start|>`, `<|start_header_id|>`, gpt-oss's `<|start|>`, `<｜User｜>`, `<｜Assistant｜>`,
  `<start_of_turn>`, `[INST]`, `<|user|>`, a BOS token; at the start too when it opens the user's
  or the system's side), a gpt-oss message on its commentary channel (a tool call whose `<|call|>`
  the server stripped); a line that starts a turn (a role word
  alone on its line, `Human:` / `Assistant:` or the prompt's own upper-case labels `USER:`,
  `ASSISTANT:`, `TOOL RESULT:`, `SYSTEM:` before text) or copies the prompt's `[Turn N] ROLE:`.
  Refusals are not retried: the same prompt gets the same kind of answer from the same model.
* **Removed**, the rest kept, because they carry no turn of their own: a leading reasoning block
  (`<think>...</think>`, or text up to a first `</think>` standing at a line's end when no
  `<think>` opened it: chat templates that open the block in the prompt), and a later one whose
  tags stand on lines of their own; never tags named in a sentence, so a summary about a
  reasoning-tag parser that names `</think>` keeps every line; a leading
  role label (`Assistant:`, `<|im_start|>assistant`); every other control token (the common
  ChatML, Llama, Gemma, Mistral, Phi, DeepSeek and Hermes markers, any `<|name|>` or
  `<｜name｜>`, and every added token of the tokenizer in use that is markup, reasoning tags
  aside); a tool tag merely named (`</tool_call>`, a `<tool_call>` mid-sentence); every
  `[CONTEXT SUMMARY]:` (the pipeline adds exactly one, and a second one would read as the start
  of another summary); what no reader sees (terminal escapes, controls, bidi and zero-width
  characters, Unicode tags), first, so that what it hid is judged.
* **Refused after removal**: the same checks again on what is left, since a token split by
  another (`<|im_<|im_end|>start|>`) is whole once the inner one is removed; and a short reply
  that declines (`I'm sorry, but I can't...`).

Then credentials are masked (`redact`). `clean_reply` is the one function live calls, `--batch`
answers and `--responses` answers go through (`reply.ReplyReader`), and cache hits too
(`LLMSummarizer`), so a summary stored under older rules is judged under these.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import cache, lru_cache, partial
from typing import TYPE_CHECKING

from ahocorasick_rs import AhoCorasick, MatchKind

from trajectory_compressor.summarize.llm.json_calls import is_json_tool_call
from trajectory_compressor.summarize.llm.reply import Refused
from trajectory_compressor.summarize.redact import redact_secrets
from trajectory_compressor.types import SUMMARY_PREFIX

if TYPE_CHECKING:
    from trajectory_compressor.count.counter import TokenCounter
    from trajectory_compressor.settings import LLMConfig

_REASONING = ("think", "thinking", "reasoning")
_NAMES = "|".join(_REASONING)
_LEADING_REASONING = re.compile(rf"\s*<({_NAMES})>", re.IGNORECASE)
_CLOSE = re.compile(rf"</(?:{_NAMES})>", re.IGNORECASE)
_ANY_OPEN = re.compile(rf"<(?:{_NAMES})>", re.IGNORECASE)
_QUOTES = "`'\""
_REASONING_TAG = re.compile(rf"</?(?:{_NAMES})>", re.IGNORECASE)
# A reasoning block later in a reply, its tags on lines of their own: the model's reasoning, not
# the summary (its tags would be the tokenizer's own tokens in the row). A tag named in a sentence
# (`the parser strips <think> blocks`) stays.
_REASONING_OPEN_LINE = re.compile(rf"^[ \t]*<({_NAMES})>[ \t]*\n", re.IGNORECASE | re.MULTILINE)


def _without_reasoning_blocks(text: str) -> str:
    """`text` without its reasoning blocks on lines of their own (`_REASONING_OPEN_LINE` to its
    closing tag alone on a line); one search for each block's end, so a reply of many opening
    lines and no close stays linear."""
    pieces, position = [], 0
    while (opened := _REASONING_OPEN_LINE.search(text, position)) is not None:
        close = re.compile(rf"^[ \t]*</{opened.group(1)}>[ \t]*(?:\n|$)", re.IGNORECASE | re.MULTILINE)
        closed = close.search(text, opened.end())
        if closed is None:
            break
        pieces.append(text[position : opened.start()])
        position = closed.end()
    return "".join([*pieces, text[position:]]) if pieces else text


# Control tokens of the common chat templates, whatever the tokenizer in use: ChatML, Llama 2/3,
# Gemma, Mistral, Phi, Zephyr, DeepSeek (fullwidth bars), and any `<|name|>` / `<｜name｜>`.
COMMON_CONTROL_TOKENS = (
    "<|im_start|>", "<|im_end|>", "<|im_sep|>", "<|endoftext|>", "<|begin_of_text|>", "<|end_of_text|>",
    "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>",
    "<|user|>", "<|assistant|>", "<|system|>", "<|end|>", "<|EOT|>",
    "<start_of_turn>", "<end_of_turn>", "[INST]", "[/INST]", "<<SYS>>", "<</SYS>>",
    "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]",
    "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",
    "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>",
    "<｜tool▁sep｜>", "<｜tool▁outputs▁begin｜>", "<｜tool▁outputs▁end｜>",
    "<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>",
    "<s>", "</s>", "<bos>", "<eos>", "<pad>", "<unk>", "<eot>", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
)  # fmt: skip
_GENERIC_CONTROL = re.compile(r"<\|/?[A-Za-z0-9_.\-▁]{1,48}\|>|<｜[^｜<>\s]{1,48}｜>")  # Phi-4's `<|/tool|>` too
# Names (markup and `▁` dropped, lower case) of the tokens that start a turn or a conversation,
# and of those that start a tool call: found anywhere but at the very start, they refuse a reply.
# gpt-oss's Harmony format starts a message with `<|start|>` and ends a tool call with `<|call|>`.
_TURN_STARTS = frozenset(
    {"im_start", "start_header_id", "start_of_turn", "inst", "user", "assistant", "system", "human",
     "begin_of_text", "begin_of_sentence", "bos", "s", "sys", "begin_sys", "system_prompt", "start"}
)  # fmt: skip
_TOOL_STARTS = frozenset({"tool_calls_begin", "tool_call_begin", "python_tag", "tool_calls", "call", "tool_call"})
# What a template leaks at a reply's start, dropped there: a turn's start and its header's end;
# never a marker of the user's or the system's side (`<｜User｜>`, `<|user|>`, `[INST]`, `<<SYS>>`):
# what follows it is a turn the model wrote for them, refused as anywhere else.
_USER_SIDE_MARKERS = frozenset({"user", "system", "human", "inst", "sys", "begin_sys", "system_prompt"})
_LEADING_MARKERS = (_TURN_STARTS - _USER_SIDE_MARKERS) | {"end_header_id", "im_sep"}
# The markers that start a turn of any role, named after them (`<|im_start|>user`): a leading one is
# dropped only before the assistant's role.
_ROLE_NAMED_AFTER = frozenset({"im_start", "start_header_id", "start_of_turn", "start"})
_OTHER_ROLE = re.compile(r"[ \t]*(?:user|human|system|developer|tool|ipython)\b", re.IGNORECASE)

# Tool markup: a block (refused) or a tag merely named (removed).
_TOOL_BLOCK = re.compile(
    r"<tool_call[ \t]*>\s*[{\[<]|^[ \t]*<tool_call[ \t]*>|<function=[\w.\-]+[ \t]*>|<function_call[ \t]*>\s*[{\[]"
    r"|^[ \t]*<tool_response[ \t]*>|<tool_response[ \t]*>\s*[{\[]"
    r"|<tool_call[ \t]*>[^\n<]{0,128}\s{0,16}<arg_key>"  # GLM-4.5's: `<tool_call>bash\n<arg_key>command</arg_key>`
    # MiniMax-M2's and Claude's XML calls: `<minimax:tool_call><invoke name="bash"><parameter name=…>`.
    r"|<invoke[ \t]+name[ \t]*=[ \t]*[\"'][^\"'\n<>]{1,128}[\"'][ \t]*>",
    re.MULTILINE | re.IGNORECASE,
)
_TOOL_TAG = re.compile(
    r"</?[ \t]*(?:tool_call|tool_response|tools|function_call|tool_use)[ \t]*>|</[ \t]*function[ \t]*>", re.IGNORECASE
)

_ROLES = r"user|human|assistant|system|tool|gpt|model|ai|bot|function|tool[ _]result"
# A line's lead is `[#*_> \t]`, never `\s`: a newline in it made a run of line breaks quadratic.
_ROLE_ALONE = re.compile(rf"^[#*_> \t]*(?:{_ROLES})[*_ \t]*:?[*_ \t]*$", re.IGNORECASE | re.MULTILINE)
_ROLE_SPEAKS = re.compile(r"^[#*_> \t]*(?:Human|Assistant|USER|ASSISTANT|TOOL RESULT|SYSTEM)[*_]*[ \t]*:", re.MULTILINE)
_TURN_HEADER = re.compile(r"^[ \t]*\[Turn \d+\][ \t]*[A-Za-z][A-Za-z ]*:", re.MULTILINE | re.IGNORECASE)
_LEADING_ROLE = re.compile(r"\s*[#*_>]*\s*assistant[*_ \t]*(?::[*_ \t]*|[ \t]*\n|(?=<))", re.IGNORECASE)

# The summary's marker, in ASCII or full-width brackets and colon (`［CONTEXT SUMMARY］：`): a second
# one read as the start of another summary either way.
_MARKER = r"[\[［]" + re.escape(SUMMARY_PREFIX.rstrip(":").strip("[]")).replace(r"\ ", "[ \u3000]") + r"[\]］][:：]?"
_PREFIX = re.compile(
    r"^(?:\s*(?:[*_#>]+\s*)?" + _MARKER + r"(?:\s*[*_]+)?\s*)+",
    re.IGNORECASE,
)
# What a reply must not carry into a row: terminal escape sequences; C0 and C1 controls (tab and
# line break aside); format characters: bidi overrides and isolates, zero-width characters, the
# BOM, the soft hyphen, Unicode tag characters (text a reader cannot see); lone surrogates. Other
# line breaks (`\r`, `\r\n`, NEL, U+2028/9, vertical tab, form feed) become `\n`, so that a line
# a template or a reader would start is seen as one.
_LINE_BREAKS = re.compile("\r\n?|[\x0b\x0c\x85\u2028\u2029]")
_TERMINAL = re.compile(
    "\x1b\\[[0-?]{0,64}[ -/]{0,8}[@-~]|\x9b[0-?]{0,64}[ -/]{0,8}[@-~]"  # CSI (colours, cursor moves)
    "|\x1b\\][^\x07\x1b]{0,4096}(?:\x07|\x1b\\\\)?"  # OSC (a title, a hyperlink's URL)
    "|\x1b[ -~]?"
)
_UNSEEN = re.compile(
    "[\x00-\x08\x0e-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
    "\U000e0000-\U000e007f\ud800-\udfff]"
)
# A model declining the task: a short reply that opens with an apology or a refusal.
_DECLINED = re.compile(
    r"(?:I'?m sorry|I am sorry|I apologi[sz]e|Sorry,|I can(?:'|no)t|I cannot|I'?m unable|I am unable"
    r"|I won'?t|As an AI)\b",
    re.IGNORECASE,
)
_DECLINE_CHARS = 400
_ANY_PREFIX = re.compile(r"(?:[*_]{1,3})?" + _MARKER + r"(?:[*_]{1,3})?[ \t]*", re.I)


def _token_name(token: str) -> str:
    """`<|im_start|>` -> `im_start`, `<｜tool▁calls▁begin｜>` -> `tool_calls_begin`, `[INST]` -> `inst`."""
    return token.strip("<>|｜[] ").replace("▁", "_").lower()


def _is_markup(token: str) -> bool:
    """An added token that is a control marker (`<...>`, `[...]`, `｜...｜`), not a word or spaces."""
    if len(token) < 3 or any(ch.isspace() for ch in token):
        return False
    if token.strip("</>").lower() in _REASONING:  # named in summaries of reasoning parsers: kept
        return False
    return any(ch in token for ch in "<>|｜[]")


class ControlTokens:
    """The control tokens a reply may hold: the common ones and the tokenizer's own markup."""

    def __init__(self, tokenizer_tokens: Iterable[str] = ()) -> None:
        tokens = dict.fromkeys([*COMMON_CONTROL_TOKENS, *(t for t in tokenizer_tokens if _is_markup(t))])
        self._tokens = list(tokens)
        self._automaton = AhoCorasick(self._tokens, matchkind=MatchKind.LeftmostLongest)

    def find(self, text: str) -> list[tuple[int, int, str]]:
        """Each control token in `text` (start, end, token), by position, none overlapping."""
        matches = self._automaton.find_matches_as_indexes(text)
        found = [(start, end, self._tokens[index]) for index, start, end in matches]
        found += [(m.start(), m.end(), m.group()) for m in _GENERIC_CONTROL.finditer(text)]
        found.sort(key=lambda match: (match[0], -match[1]))  # the longest of those at one place
        spans: list[tuple[int, int, str]] = []
        for start, end, token in found:
            if not spans or start >= spans[-1][1]:
                spans.append((start, end, token))
        return spans


@cache
def common_control_tokens() -> ControlTokens:
    """The common markers alone: for a summarizer built without a tokenizer."""
    return ControlTokens()


def control_tokens_of(counter: TokenCounter | None) -> ControlTokens:
    """The control tokens of a run: the common ones and its tokenizer's markup. One set per
    tokenizer, shared by the LLM replies' cleaner and the extractive summary (its fallback)."""
    return common_control_tokens() if counter is None else _control_tokens(counter.added_tokens())


@lru_cache(maxsize=8)
def _control_tokens(tokenizer_tokens: tuple[str, ...]) -> ControlTokens:
    return ControlTokens(tokenizer_tokens)


def reply_cleaner(config: LLMConfig, counter: TokenCounter | None = None) -> Callable[[str], str | Refused]:
    """`clean_reply` as a run's replies are cleaned: its `--redact-secrets`, its tokenizer's tokens."""
    return partial(clean_reply, redact=config.redact_secrets, control=control_tokens_of(counter))


def clean_reply(text: str, *, redact: bool = True, control: ControlTokens | None = None) -> str | Refused:
    """The summary body of a model's reply, "" when nothing is left, or why it is refused."""
    plain = _plain(text or "")
    if len(_REASONING_TAG.findall(plain)) > len(_REASONING_TAG.findall(text or "")):
        # `<t\x1b[31mhink>`: a tag the unseen characters hid, whole once they are gone.
        return Refused("the reply is a transcript, not a summary: it hides markup inside markup (a reasoning tag)")
    body = _after_leading_reasoning(plain)
    if body is None:
        return ""  # all reasoning: an unterminated leading block
    body = _without_reasoning_blocks(body)
    tokens = control or common_control_tokens()
    body = _after_leading_role(body.strip(), tokens)
    refused = _transcript(body, tokens)
    if refused is not None:
        return Refused(f"the reply is a transcript, not a summary: {refused}")
    pieces, position = [], 0
    for start, end, _ in tokens.find(body):
        pieces.append(body[position:start])
        position = end
    body = "".join([*pieces, body[position:]])
    body = _TOOL_TAG.sub("", body)
    body = _PREFIX.sub("", body, count=1)
    body = _ANY_PREFIX.sub("", body).strip()
    # What the removals joined (`<|im_<|im_end|>start|>`, `<|im_st[CONTEXT SUMMARY]art|>`) is
    # markup hidden in markup: refused, never removed again (each pass would join the next).
    hidden = _transcript(body, tokens) or ("a token" if tokens.find(body) or _TOOL_TAG.search(body) else None)
    if hidden is not None:
        return Refused(f"the reply is a transcript, not a summary: it hides markup inside markup ({hidden})")
    if is_json_tool_call(body):
        return Refused("the reply is a transcript, not a summary: it is a tool call (a JSON object naming a function)")
    if len(body) <= _DECLINE_CHARS and _DECLINED.match(body):
        return Refused(f"the model declined to summarize ({body[:48]!r})")
    return redact_secrets(body) if redact else body


def plain_summary_text(text: str, control: ControlTokens | None = None) -> str:
    """Text quoted from a row (the extractive summary, made of its turns' words) as a summary
    turn may hold it: plain (`_plain`), and each control token, tool tag and `[CONTEXT SUMMARY]:`
    replaced by a space. Removed, never refused: every line of it is the row's own, and the
    extractive summary must always be written. A space, not nothing, so that no removal joins
    the text around it into markup (`<|im_<|im_end|>start|>`); the passes run again while one
    finds something a pass after it made (`<[CONTEXT SUMMARY]:tool_call>`), a few times, then
    every markup character of what is still found goes."""
    tokens = control or common_control_tokens()
    body = _plain(text)
    for _ in range(_SCRUB_PASSES):
        spans = _markup_spans(body, tokens)
        if not spans:
            return body
        body = _spaced(body, spans)
    spans = _markup_spans(body, tokens)
    return _spaced(body, spans, _MARKUP_CHARS) if spans else body


def _markup_spans(text: str, tokens: ControlTokens) -> list[tuple[int, int]]:
    """Where `text` holds a control token, a tool tag or `[CONTEXT SUMMARY]:` (they may overlap)."""
    spans = [(start, end) for start, end, _ in tokens.find(text)]
    spans += [match.span() for pattern in (_TOOL_TAG, _ANY_PREFIX) for match in pattern.finditer(text)]
    return spans


_SCRUB_PASSES = 4
_MARKUP_CHARS = str.maketrans(dict.fromkeys("<>|｜[]", " "))


def _spaced(text: str, spans: list[tuple[int, int]], chars: dict[int, str] | None = None) -> str:
    """`text` with each of `spans` (overlapping or not) replaced by a space, or, given `chars`,
    with those characters of each span replaced."""
    pieces, position = [], 0
    for start, end in sorted(spans):
        if end <= position:
            continue
        start = max(start, position)
        pieces.append(text[position:start])
        pieces.append(" " if chars is None else text[start:end].translate(chars))
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def _plain(text: str) -> str:
    """`text` as plain text: line breaks as `\n`, no terminal escapes, controls or unseen characters."""
    text = _LINE_BREAKS.sub("\n", text)
    if "\x1b" in text or "\x9b" in text:
        text = _TERMINAL.sub("", text)
    return _UNSEEN.sub("", text)


def _after_leading_reasoning(text: str) -> str | None:
    """`text` without its leading reasoning block; None when the block never ends.

    Without an opening tag, the first closing tag ends a block only where reasoning ends: at a
    line's end or start, unquoted, with no opening tag before it. Anywhere else it is named in
    the summary (a parser's tags) and the whole text is kept."""
    opened = _LEADING_REASONING.match(text)
    if opened is not None:
        close = re.search(rf"</{opened.group(1)}>", text[opened.end() :], re.IGNORECASE)
        return None if close is None else text[opened.end() + close.end() :]
    close = _CLOSE.search(text)
    if close is None or _ANY_OPEN.search(text, 0, close.start()):
        return text
    start, end = close.span()
    before, after = text[start - 1 : start], text[end : end + 1]
    if (before and before in _QUOTES) or (after and after in _QUOTES):
        return text
    line_start = start == 0 or before == "\n"
    line_end = not text[end:].split("\n", 1)[0].strip()
    return text[end:] if line_start or line_end else text


# gpt-oss served without a Harmony parser: its reply opens with a channel's header. The final
# channel's is a header like `<|im_start|>assistant`; the analysis channel is its reasoning, up to
# `<|end|>`. (The commentary channel, its tool calls, is refused by `<|call|>`.)
_HARMONY_FINAL = re.compile(r"<\|channel\|>[ \t]*final[ \t]*(?:<\|constrain\|>[\w.-]{0,32})?[ \t]*<\|message\|>")
_HARMONY_ANALYSIS = re.compile(r"<\|channel\|>[ \t]*analysis[ \t]*<\|message\|>")
_HARMONY_END = "<|end|>"


def _after_leading_role(text: str, tokens: ControlTokens) -> str:
    """`text` without the turn header a template leaked at its start (`<|im_start|>assistant`,
    `<｜Assistant｜>`, `Assistant:`, Harmony's `<|channel|>final<|message|>`), control tokens and
    role label alike, and without a leading Harmony analysis message ("" when it never ends)."""
    position = 0  # a position, not a slice per marker: a reply of 80,000 leading markers stays linear
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        final = _HARMONY_FINAL.match(text, position)
        if final is not None:
            position = final.end()
            continue
        analysis = _HARMONY_ANALYSIS.match(text, position)
        if analysis is not None:
            end = text.find(_HARMONY_END, analysis.end())
            if end < 0:
                return ""  # all reasoning, as an unterminated leading <think> block
            position = end + len(_HARMONY_END)
            continue
        found = tokens.find(text[position : position + 64])
        if found and found[0][0] == 0 and _token_name(found[0][2]) in _LEADING_MARKERS:
            if _token_name(found[0][2]) in _ROLE_NAMED_AFTER and _OTHER_ROLE.match(text, position + found[0][1]):
                return text[position:]  # `<|im_start|>system …`: kept, to be refused as another turn
            position += found[0][1]
            continue
        label = _LEADING_ROLE.match(text, position)
        if label is not None:
            position = label.end()
            continue
        return text[position:].lstrip()


# A Harmony message on a channel other than the final answer or the analysis: a commentary
# channel's tool call (`<|channel|>commentary to=functions.bash <|constrain|>json<|message|>{…}`),
# whose `<|call|>` a server strips as the stop token it is.
_HARMONY_OTHER_CHANNEL = re.compile(r"<\|channel\|>[ \t]*(?!(?:final|analysis)\b)[A-Za-z]")


def _transcript(text: str, tokens: ControlTokens) -> str | None:
    """Why `text` is a transcript rather than a summary, or None."""
    block = _TOOL_BLOCK.search(text)
    if block is not None:
        return f"it holds a tool call ({block.group().strip()[:24]!r})"
    for _, _, token in tokens.find(text):
        name = _token_name(token)
        if name in _TOOL_STARTS:
            return f"it holds a tool call ({token!r})"
        if name in _TURN_STARTS:
            return f"it starts another turn ({token!r})"
    channel = _HARMONY_OTHER_CHANNEL.search(text)
    if channel is not None:
        return f"it holds a tool call ({channel.group()[:24]!r}: a Harmony commentary channel's)"
    for pattern in (_TURN_HEADER, _ROLE_SPEAKS, _ROLE_ALONE):
        line = pattern.search(text)
        if line is not None:
            return f"a line starts another turn ({line.group().strip()[:32]!r})"
    return None
