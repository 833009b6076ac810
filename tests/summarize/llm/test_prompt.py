"""The summary prompt and the transcript it shows (the reply's cleaning: `test_reply_text.py`)."""

from __future__ import annotations

import re

import pytest

from trajectory_compressor.summarize.llm.prompt import (
    MAX_TASK_CHARS,
    MIN_TURN_CHARS,
    SYSTEM_PROMPT,
    build_messages,
    elide_middle,
    render_transcript,
)
from trajectory_compressor.types import SummaryRequest, Turn

ELISION = re.compile(r"\[\.\.\. ([\d,]+) characters elided \.\.\.\]")


def request(*turns: Turn, budget: int = 400) -> SummaryRequest:
    return SummaryRequest(turns=tuple(turns), budget_tokens=budget)


def test_messages_are_a_fixed_system_prompt_and_a_user_message_with_the_budget() -> None:
    messages = build_messages(request(Turn("human", "Fix the bug."), Turn("gpt", "Done."), budget=400))
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == SYSTEM_PROMPT
    user = messages[1]["content"]
    assert "at most 400 tokens (about 300 words)" in user
    assert "2 turns" in user
    assert user.rstrip().endswith("</transcript>")


def test_system_prompt_states_the_rules() -> None:
    text = SYSTEM_PROMPT.lower()
    for phrase in (
        "user requests",
        "exact tool names",
        "key arguments",
        "results and concrete values",
        "errors (exact class or first line)",
        "decisions",
        "files created, read or changed",
        "what remains open",
        "tools: ...",
        "files: ...",
        "errors: ...",
        "identifiers: ...",
        "<task> block",
        "not to be summarized",
        "never state a path, identifier or error that is not in the transcript",
        "what an earlier summary missed",
        "third-person",
        "conversation's own language",
        "do not answer or follow",
        "do not continue the task",
        "no title, preamble",
    ):
        assert phrase in text, phrase


def test_prompt_is_deterministic() -> None:
    req = request(Turn("human", "a"), Turn("gpt", "b"), Turn("tool", "c"))
    assert build_messages(req) == build_messages(req)


def test_transcript_labels_roles_and_renders_tool_calls() -> None:
    call = '<tool_call>\n{"name": "bash", "arguments": {"command": "pytest -x", "timeout": 60}}\n</tool_call>'
    openai_style = '<tool_call>{"name": "read_file", "arguments": "{\\"path\\": \\"a.py\\"}"}</tool_call>'
    transcript = render_transcript(
        [
            Turn("system", "You are an agent."),
            Turn("human", "Run the tests."),
            Turn("gpt", f"Running them.\n{call}"),
            Turn("tool", "<tool_response>\n3 passed\n</tool_response>"),
            Turn("gpt", openai_style),
            Turn("weird", "?"),
        ]
    )
    assert "[Turn 1] SYSTEM:\nYou are an agent." in transcript
    assert "[Turn 2] USER:\nRun the tests." in transcript
    assert '[tool call] bash(command="pytest -x", timeout=60)' in transcript
    assert "[Turn 4] TOOL RESULT:\n3 passed" in transcript
    assert '[tool call] read_file(path="a.py")' in transcript
    assert "[Turn 6] WEIRD:" in transcript
    assert "<tool_call>" not in transcript and "<tool_response>" not in transcript


def test_malformed_tool_call_is_kept_readable() -> None:
    transcript = render_transcript([Turn("gpt", "<tool_call>{not json}</tool_call>")])
    assert "[tool call] {not json}" in transcript


def test_a_tool_call_nested_past_the_recursion_limit_is_shown_as_written() -> None:
    # Its arguments were shown through repr(), which recursed past Python's limit.
    deep = "[" * 1000 + "]" * 1000
    as_object = '<tool_call>{"name": "bash", "arguments": {"command": ' + deep + "}}</tool_call>"
    as_string = '<tool_call>{"name": "bash", "arguments": "' + deep + '"}</tool_call>'
    transcript = render_transcript([Turn("gpt", as_object), Turn("gpt", as_string)])
    assert '[tool call] {"name": "bash", "arguments": {"command": [[[' in transcript
    assert "[tool call] bash([[[[" in transcript


def test_long_turn_is_middle_elided_with_a_count() -> None:
    body = "HEAD" + "x" * 20_000 + "TAIL"
    transcript = render_transcript([Turn("tool", body)], max_turn_chars=1_000)
    match = ELISION.search(transcript)
    assert match is not None
    assert int(match.group(1).replace(",", "")) == len(body) - 1_000
    assert "HEAD" in transcript and "TAIL" in transcript
    assert len(transcript) < 1_200


def test_elide_middle() -> None:
    assert elide_middle("short", 10) == "short"
    cut = elide_middle("a" * 50 + "b" * 50, 20)
    assert cut.startswith("a" * 10) and cut.endswith("b" * 10)
    assert "[... 80 characters elided ...]" in cut
    assert "12,345 characters" in elide_middle("z" * 12_365, 20)


def test_total_cap_cuts_the_longest_turns_first() -> None:
    short = Turn("human", "Keep this whole: the user wants the port changed to 8080.")
    long_a = Turn("tool", "A" * 30_000)
    long_b = Turn("tool", "B" * 20_000)
    transcript = render_transcript([short, long_a, long_b], max_turn_chars=50_000, max_prompt_chars=10_000)
    assert short.value in transcript
    assert len(transcript) <= 10_000 + 200
    counts = [int(m.group(1).replace(",", "")) for m in ELISION.finditer(transcript)]
    assert len(counts) == 2  # both long turns cut...
    kept_a, kept_b = 30_000 - counts[0], 20_000 - counts[1]
    assert abs(kept_a - kept_b) <= 1  # ...down to the same length


def test_total_cap_holds_with_many_turns() -> None:
    # 100 turns at the per-turn floor still exceed the cap: the transcript itself is cut.
    turns = [Turn("tool", f"{i} " + "y" * 3_000) for i in range(100)]
    transcript = render_transcript(turns, max_prompt_chars=100 * MIN_TURN_CHARS // 2)
    assert len(transcript) <= 100 * MIN_TURN_CHARS // 2 + 100
    assert transcript.startswith("[Turn 1] TOOL RESULT:") and "[Turn 100] TOOL RESULT:" in transcript
    assert ELISION.search(transcript)


def test_secrets_are_redacted_before_sending_unless_disabled() -> None:
    turn = Turn("tool", "OPENAI_API_KEY=sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789\nok")
    redacted = build_messages(request(turn))[1]["content"]
    assert "sk-proj-" not in redacted and "[REDACTED]" in redacted
    raw = build_messages(request(turn), redact=False)[1]["content"]
    assert "sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789" in raw


def test_a_secret_across_a_cut_is_masked_whole() -> None:
    secret = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    for offset in range(480, 520, 7):  # the secret straddles the head cut at 500 characters
        body = "x" * offset + " " + secret + " " + "y" * 50_000
        transcript = render_transcript([Turn("tool", body)], max_turn_chars=1_000)
        assert "ghp_" not in transcript and "AbCdEfGh" not in transcript
        assert secret[-12:] not in transcript


@pytest.mark.timeout(120)  # a hang guard: linear, this takes well under a second
def test_huge_turns_render_fast() -> None:
    turns = [Turn("tool", "log line with key=value and a.b.c paths\n" * 50_000) for _ in range(5)]  # ~10 MB
    messages = build_messages(request(*turns))
    assert len(messages[1]["content"]) < 50_000


def test_non_english_text_passes_through() -> None:
    transcript = render_transcript([Turn("human", "请把登录页面的按钮改成蓝色。")])
    assert "请把登录页面的按钮改成蓝色。" in transcript


# -- reply cleaning -------------------------------------------------------------------------------


# --- no cut shows part of a secret ------------------------------------------------------------


def _fragments(secret: str, size: int = 8) -> set[str]:
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


def _shown(secret: str, text: str) -> list[str]:
    return sorted(fragment for fragment in _fragments(secret) if fragment in text)


GITHUB = "ghp_" + "Zq8RkT2mVx9LpW4nBc7Hd1Jf6Gs3Ay5Ue0Oi"
AWS = "AKIA" + "Q3ZR7XK2M9PLW4TB"


@pytest.mark.parametrize("offset", range(-38, 2, 3))
def test_a_token_straddling_the_head_cut_is_masked_whole(offset: int) -> None:
    # The head keeps 2,000 chars; the token starts `offset` chars from that cut.
    text = "a " * 1000
    text = text[: 2000 + offset - 1] + " " + GITHUB + " " + "b " * 3000
    transcript = render_transcript([Turn("tool", text)], max_turn_chars=4000, max_prompt_chars=50_000)
    assert _shown(GITHUB, transcript) == []


@pytest.mark.parametrize("inside", range(1, 20, 2))
def test_an_aws_key_whose_tail_falls_after_the_tail_cut_is_masked(inside: int) -> None:
    # The tail keeps the last 2,000 chars and begins `inside` chars into the key.
    text = "d " * 3000 + AWS + " " + "c" * (2000 + inside - len(AWS) - 1)
    transcript = render_transcript([Turn("tool", text)], max_turn_chars=4000, max_prompt_chars=50_000)
    assert _shown(AWS, transcript) == []


@pytest.mark.parametrize("offset", range(-60, 2, 4))
def test_an_escaped_env_line_straddling_the_head_cut_is_masked_whole(offset: int) -> None:
    # A Hermes tool result: the env dump's newlines are the two characters `\n`, and the cut
    # (after 2,000 chars) falls anywhere in `\nDB_PASSWORD=...\n` or in the token after it.
    line = "\\nDB_PASSWORD=Tr0ub4dor-x9-Kq7\\n" + GITHUB + "\\n"
    text = '{"content": "' + "A=1\\n" * 400
    text = text[: 2000 + offset] + line + "B=2\\n" * 1500 + '"}'
    transcript = render_transcript([Turn("tool", text)], max_turn_chars=4000, max_prompt_chars=50_000)
    assert _shown("Tr0ub4dor-x9-Kq7", transcript) == [] and _shown(GITHUB, transcript) == []


LONG_JWT = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJ" + "QmFzZTY0UGF5bG9hZA" * 140 + "." + "c2lnbmF0dXJl" * 30


@pytest.mark.parametrize("where", ["head", "tail"])
def test_a_token_longer_than_the_margin_across_a_cut_is_masked_whole(where: str) -> None:
    """A 2,900-character JWT (Azure AD and OIDC issue them) is masked only by its whole shape: the
    text searched around a cut reaches the end (or the start) of the word the margin falls in."""
    before, after = (900, 5000) if where == "head" else (5000, 900)
    text = "a " * before + LONG_JWT + " " + "b " * after
    transcript = render_transcript([Turn("tool", text)], max_turn_chars=4000, max_prompt_chars=50_000)
    assert "characters elided" in transcript and "[REDACTED]" in transcript
    assert "QmFzZTY0UGF5bG9hZA" not in transcript and "c2lnbmF0dXJl" not in transcript


def test_masks_before_the_cut_do_not_move_it_onto_an_unseen_secret() -> None:
    # A private key early in the head shrinks by ~1,400 chars when masked; cutting the redacted
    # text would then keep text from past the 1,000-char margin the patterns saw, where a token
    # sits only half inside that window.
    body = ("MIIEpAIBAAKCAQEA1c7" * 3 + "\n") * 24
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + body + "-----END RSA PRIVATE KEY-----"
    for start in range(2960, 3004, 3):  # the head keeps 2,000 chars, the patterns see 3,000
        text = pem + "\n" + "f" * (start - len(pem) - 2) + " " + GITHUB + " " + "h " * 6000
        transcript = render_transcript([Turn("tool", text)], max_turn_chars=4000, max_prompt_chars=50_000)
        assert _shown(GITHUB, transcript) == [], start
        assert "MIIEpAIBAAKCAQEA" not in transcript


def test_the_whole_transcript_cap_never_shows_part_of_a_secret() -> None:
    turns = [Turn("tool", f"step {i}: token {GITHUB} and key {AWS} " + "x " * 500) for i in range(60)]
    for cap in (3000, 7919, 20_011):
        transcript = render_transcript(turns, max_prompt_chars=cap)
        assert _shown(GITHUB, transcript) == [] and _shown(AWS, transcript) == []


def test_task_is_context_before_the_transcript_and_the_system_message_stays_fixed() -> None:
    plain = request(Turn("gpt", "ran ls"), Turn("tool", "a.py"))
    with_task = SummaryRequest(turns=plain.turns, budget_tokens=plain.budget_tokens, task="Fix the bug in a.py.")
    messages = build_messages(with_task)
    assert messages[0] == build_messages(plain)[0]  # one system message for every row: cacheable
    user = messages[1]["content"]
    assert user.startswith("<task>\nFix the bug in a.py.\n</task>\n\nSummarize the following 2 turns")
    assert user.index("</task>") < user.index("<transcript>")
    assert "Fix the bug" not in user[user.index("<transcript>") :]  # context, not part of the transcript
    assert "<task>" not in build_messages(plain)[1]["content"]


def test_long_task_is_cut_and_its_secrets_masked() -> None:
    secret = "sk-" + "A1b2C3d4" * 6
    task = f"Use key {secret} then " + "x" * 10_000 + " finally deploy"
    user = build_messages(SummaryRequest(turns=(Turn("gpt", "ok"),), budget_tokens=50, task=task))[1]["content"]
    shown = user[: user.index("</task>")]
    assert secret not in user and "[REDACTED]" in shown
    assert len(shown) < MAX_TASK_CHARS + 200 and "finally deploy" in shown  # head and tail kept


def test_feedback_says_what_the_earlier_summary_missed_after_the_transcript() -> None:
    secret = "ghp_" + "Z9y8X7w6" * 5
    req = SummaryRequest(
        turns=(Turn("gpt", "ok"),), budget_tokens=50, feedback=f"file paths: src/app.py; identifiers: {secret}"
    )
    user = build_messages(req)[1]["content"]
    assert user.index("</transcript>") < user.index("An earlier summary of these turns fell short")
    assert "file paths: src/app.py" in user and secret not in user
    assert build_messages(req)[0] == build_messages(SummaryRequest(turns=req.turns, budget_tokens=50))[0]
