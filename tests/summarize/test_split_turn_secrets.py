"""A credential cut over two turns (a tool's output split over two messages: `NEW_TOKEN=ghp_Zq8w…`
ending one, the rest starting the next), inside a region or across its edge: neither piece alone
has a credential's shape, and both reached the LLM prompt, the `requests` batch file and the
extractive summary's exact values (round-6 trust pass)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.conftest import write_jsonl
from tests.summarize.secret_runs import messages_run, prompts_of
from trajectory_compressor.summarize.anchor_index import indexed_request
from trajectory_compressor.summarize.extractive import ExtractiveSummarizer
from trajectory_compressor.summarize.llm.prompt import build_messages
from trajectory_compressor.summarize.masking import masked_across_turns, region_edges, split_secrets_masked
from trajectory_compressor.summarize.redact import REDACTED
from trajectory_compressor.types import SummaryRequest, Turn

TOKEN = "ghp_Zq8wXc7vBn6mAs5dFg4hJk3lPo2iUy1tRe0w"
CUT = 14


def _pieces(text: str, size: int = 8) -> set[str]:
    return {text[i : i + size] for i in range(len(text) - size + 1)}


def _leaked(text: str) -> set[str]:
    return _pieces(TOKEN) & _pieces(text)


def test_a_credential_cut_at_a_turn_boundary_is_masked_on_both_sides() -> None:
    texts = ["Tool says:\nexport NEW_TOKEN=" + TOKEN[:CUT], TOKEN[CUT:] + "\nDone.", "next"]
    masked = masked_across_turns(texts)
    assert masked == ["Tool says:\nexport NEW_TOKEN=" + REDACTED, REDACTED + "\nDone.", "next"]
    assert masked_across_turns(["the tests passed", "Step one done"]) == ["the tests passed", "Step one done"]
    assert masked_across_turns(["a line\n", "another"]) == ["a line\n", "another"]
    assert masked_across_turns(["a token", "izer loaded"]) == ["a token", "izer loaded"]


def test_a_key_ending_one_turn_and_its_value_starting_the_next_are_masked() -> None:
    """The value alone has no credential's shape; with its key (`DB_PASSWORD=`, `"password": "`,
    `-p`) at the end of the turn before, it is one, and it was kept: the join only masked what ran
    across the boundary, and a value starting at the boundary, or after a space, runs next to it."""
    value = TOKEN[4:]
    for key, after in [
        ("run: export DB_PASSWORD=", "{} then more"),
        ("password:", " {} then more"),
        ('{"password": "', '{}"}}'),
        ("mysql -u root -p", "{} db"),
        ("the db password is", " {} then more"),
    ]:
        masked = masked_across_turns(["Tool says:\n" + key, after.format(value)])
        assert masked == ["Tool says:\n" + key, after.format(REDACTED)], key
    assert masked_across_turns(["password:", " see the docs"]) == ["password:", " see the docs"]


def _request(edge_cut: bool) -> SummaryRequest:
    filler = "looking at the build output " * 20
    turns = [Turn("gpt", f"Step 1.\n{filler}"), Turn("tool", "Output:\nexport NEW_TOKEN=" + TOKEN[:CUT])]
    turns += [Turn("tool", TOKEN[CUT:] + f"\nDone.\n{filler}"), Turn("gpt", f"Step 2.\n{filler}")]
    if edge_cut:  # the region starts with the token's second half; its first half ends the turn before
        return SummaryRequest(turns=tuple(turns[2:]), budget_tokens=300, edges=region_edges(turns[1:2], turns[4:5]))
    return SummaryRequest(turns=tuple(turns), budget_tokens=300)


def test_the_prompt_and_the_extractive_summary_show_no_piece_of_a_cut_credential(counter) -> None:
    for edge_cut in (False, True):
        request = _request(edge_cut)
        asked, _ = indexed_request(request, counter.count, enabled=True, redact=True)
        prompt = "\n".join(message["content"] for message in build_messages(asked))
        assert not _leaked(prompt), (edge_cut, prompt)
        summary = asyncio.run(ExtractiveSummarizer(counter).summarize(request)).text
        assert not _leaked(summary), (edge_cut, summary)
    assert split_secrets_masked(SummaryRequest(turns=(Turn("gpt", "a b"),), budget_tokens=9)).turns[0].value == "a b"


def test_the_requests_file_shows_no_piece_of_a_credential_cut_over_two_turns(tmp_path: Path) -> None:
    filler = "looking at the build output " * 30
    turns = [{"from": "system", "value": "You are an agent."}, {"from": "human", "value": "Deploy it."}]
    for step in range(8):
        turns += [
            {"from": "gpt", "value": f"Step {step}.\n{filler}"},
            {"from": "tool", "value": f"ok {step}\n{filler}"},
        ]
    turns[9:9] = [
        {"from": "tool", "value": "Output:\nexport NEW_TOKEN=" + TOKEN[:CUT]},
        {"from": "tool", "value": TOKEN[CUT:] + "\nDone."},
    ]
    turns.append({"from": "gpt", "value": "Done."})
    prompts = prompts_of(tmp_path, write_jsonl(tmp_path / "in.jsonl", [{"id": "r0", "conversations": turns}]))
    assert "NEW_TOKEN" in prompts and REDACTED in prompts  # the split turns are in the region
    assert not _leaked(prompts), prompts


def test_a_credential_cut_over_three_turns_is_masked_in_each() -> None:
    """The middle piece is a turn of its own, shorter than the edge read: the join of the first
    two turns found the credential and masked the middle turn whole, and the third turn's piece
    (the token's last 20 characters) was then read beside `[REDACTED]` and kept."""
    texts = ["Tool says:\nexport NEW_TOKEN=" + TOKEN[:10], TOKEN[10:20], TOKEN[20:] + "\nDone.", "next"]
    masked = masked_across_turns(texts)
    assert masked == ["Tool says:\nexport NEW_TOKEN=" + REDACTED, REDACTED, REDACTED + "\nDone.", "next"]
    assert not _leaked("\n".join(masked))
    assert masked_across_turns(["a b", "c", "d e"]) == ["a b", "c", "d e"]


def test_a_credential_cut_over_three_turns_across_the_regions_edge_is_masked() -> None:
    """The region starts with the token's last piece; its first two pieces are the two turns
    before it, outside the region: the edge reads them both, not only the turn beside it."""
    before = [Turn("gpt", "Step 1."), Turn("tool", "export NEW_TOKEN=" + TOKEN[:10]), Turn("tool", TOKEN[10:20])]
    turns = (Turn("tool", TOKEN[20:] + "\nDone."), Turn("gpt", "Step 2."))
    request = SummaryRequest(turns=turns, budget_tokens=300, edges=region_edges(before, ()))
    masked = split_secrets_masked(request)
    assert masked.turns[0].value == REDACTED + "\nDone."
    assert not _leaked("\n".join(turn.value for turn in masked.turns))


def _wrapped(content: str, **keys: str) -> str:
    """A tool turn as Hermes writes one (and as a messages input's tool message is read)."""
    return f"<tool_response>\n{json.dumps({**keys, 'name': 'terminal', 'content': content})}\n</tool_response>"


def test_a_credential_cut_over_tool_turns_of_json_results_is_masked_in_their_contents() -> None:
    """Each piece inside its own `<tool_response>` JSON: read at the turns' ends, the markup
    between the pieces (`"}` / `</tool_response>` / `<tool_response>` / `{"name": …`) kept them
    apart, and neither was masked. The contents are read joined; each turn stays valid JSON."""
    cases = [
        ([_wrapped("Output:\nexport NEW_TOKEN=" + TOKEN[:CUT]), _wrapped(TOKEN[CUT:] + "\nDone.")], 2),
        (
            [
                _wrapped("export NEW_TOKEN=" + TOKEN[:10], tool_call_id="c1"),
                _wrapped(TOKEN[10:20]),
                _wrapped(TOKEN[20:]),
            ],
            3,
        ),
        ([_wrapped("run: export DB_PASSWORD="), _wrapped(TOKEN[4:] + " then more")], 1),  # the value
    ]
    for texts, pieces in cases:
        masked = masked_across_turns(texts)
        assert not _leaked("\n".join(masked)), masked
        assert sum(REDACTED in text for text in masked) == pieces
        for text in masked:
            json.loads(text.removeprefix("<tool_response>\n").removesuffix("\n</tool_response>"))
    plain = [_wrapped("the tests passed"), _wrapped("Step one done"), _wrapped("a token"), _wrapped("izer loaded")]
    assert masked_across_turns(plain) == plain


def _shaped(shape: str, content: str) -> str:
    """A tool turn of one result, written as harnesses write them."""
    records = {
        "content first, more keys after": {"content": content, "name": "terminal", "exit_code": 0},
        "an id first, a null name": {"id": "c1", "name": None, "content": content},
        "a Hermes terminal's JSON output": {
            "name": "terminal",
            "content": json.dumps({"output": content, "exit_code": 0}),
        },
        "MCP text parts": {"name": "terminal", "content": [{"type": "text", "text": content}]},
        "ASCII-only, compact": {"name": "terminal", "content": content.replace("Output", "Résultat")},  # é: `\u00e9`
    }
    if shape == "text, no JSON":
        return f"<tool_response>\n{content}\n</tool_response>"
    body = json.dumps(records[shape], separators=(",", ":")) if "compact" in shape else json.dumps(records[shape])
    return f"<tool_response>\n{body}\n</tool_response>"


@pytest.mark.parametrize(
    "shape",
    [
        "content first, more keys after",
        "an id first, a null name",
        "a Hermes terminal's JSON output",
        "MCP text parts",
        "ASCII-only, compact",
        "text, no JSON",
    ],
)
def test_a_credential_cut_over_results_of_any_json_shape_is_masked(shape: str) -> None:
    """The output is found in the turn as it is written there (escaped once, or twice inside a JSON
    content), whatever keys stand around it."""
    texts = [_shaped(shape, "Output:\nexport NEW_TOKEN=" + TOKEN[:CUT]), _shaped(shape, TOKEN[CUT:] + "\nDone.")]
    masked = masked_across_turns(texts)
    assert not _leaked("\n".join(masked)), masked
    assert all(REDACTED in text for text in masked)
    for text in masked if shape != "text, no JSON" else ():
        json.loads(text.removeprefix("<tool_response>\n").removesuffix("\n</tool_response>"))


def test_the_requests_file_of_a_messages_input_shows_no_piece_of_a_credential_cut_over_tool_messages(
    tmp_path: Path,
) -> None:
    messages = messages_run()
    messages[7]["content"] = "Output:\nexport NEW_TOKEN=" + TOKEN[:CUT]  # step 2's output, in two messages
    messages.insert(8, {"role": "tool", "tool_call_id": "c2", "content": TOKEN[CUT:] + "\nDone."})
    messages.append({"role": "assistant", "content": "Done."})
    prompts = prompts_of(tmp_path, write_jsonl(tmp_path / "in.jsonl", [{"id": "r0", "messages": messages}]))
    assert "NEW_TOKEN" in prompts and REDACTED in prompts  # the split messages are in the region
    assert not _leaked(prompts), prompts
