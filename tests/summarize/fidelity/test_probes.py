"""Recall questions built from a region's needed anchors: masked, answerable, credential-free."""

from __future__ import annotations

from trajectory_compressor.summarize.fidelity.probes import BLANK, answered, probes_for
from trajectory_compressor.types import Turn

SECRET = "ghp_" + "Zx9Yw8Vu7Ts6" * 3


def _row() -> tuple[list[Turn], list[Turn], list[Turn]]:
    head = [Turn("system", "You are an airline agent."), Turn("human", "Change my flight, I am mia_li_3668.")]
    region = [
        Turn("gpt", 'Looking up the user.\n<tool_call>\n{"name": "get_user_details", "arguments": {}}\n</tool_call>'),
        Turn("tool", '{"reservations": ["EHGLP3", "K9QX21"], "payment": "gift_card_7219"}'),
        Turn("gpt", "Checking the second reservation."),
        Turn("tool", "status of K9QX21: cancelled\nstatus line two"),
    ]
    after = [
        Turn("gpt", "I will pay with gift_card_7219 for EHGLP3."),
        Turn("tool", "ok"),
        Turn("gpt", "K9QX21 stays cancelled; mia_li_3668 is done."),
    ]
    return head, region, after


def test_each_question_masks_a_needed_anchor_in_the_line_that_showed_it() -> None:
    head, region, after = _row()
    probes = probes_for(head, region, after, limit=5)
    assert [p.answer for p in probes] == ["gift_card_7219", "EHGLP3", "K9QX21"]  # in order of use
    assert [p.use for p in probes] == [0, 0, 2]
    for probe in probes:
        assert BLANK in probe.question and probe.answer not in probe.question
        assert probe.question.startswith("Earlier in this conversation, a tool result contained this text")
    assert '{"reservations": [____, "K9QX21"]' not in probes[1].question  # the value's own quotes stay
    assert '["____", "K9QX21"]' in probes[1].question
    assert "mia_li_3668" not in [p.answer for p in probes]  # shown in the head: not needed
    assert len(probes_for(head, region, after, limit=2)) == 2


def test_json_escaped_results_are_asked_as_their_lines() -> None:
    region = [Turn("tool", '{"content": "line one\\nthe build id is BX7781Q\\nline three"}')]
    [probe] = probes_for([], region, [Turn("gpt", "Deploying BX7781Q.")], limit=5)
    assert "\nthe build id is ____\n" in probe.question and "line three" not in probe.question


def test_a_credential_is_never_asked_for_nor_shown() -> None:
    region = [Turn("tool", f"export GITHUB_TOKEN={SECRET} ticket TK1X7\n"), Turn("tool", f"token {SECRET}")]
    after = [Turn("gpt", f"Closing TK1X7 with {SECRET}.")]
    probes = probes_for([], region, after, limit=5)
    assert [p.answer for p in probes] == ["TK1X7"]
    assert SECRET[:12] not in probes[0].question and "[REDACTED]" in probes[0].question


def test_an_answer_counts_when_it_states_the_value() -> None:
    assert answered("The reservation is EHGLP3.", "EHGLP3")
    assert not answered("EHGLP3X", "EHGLP3") and not answered("NOT IN CONTEXT", "EHGLP3")
