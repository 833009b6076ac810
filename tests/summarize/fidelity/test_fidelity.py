"""The salient items of a region and the scoring of a summary against them (pure functions)."""

from __future__ import annotations

import json
from typing import Any

from trajectory_compressor.summarize.fidelity import salient_items, score_summary
from trajectory_compressor.summarize.fidelity.salient import error_key
from trajectory_compressor.summarize.fidelity.score import shown_item
from trajectory_compressor.types import Turn


def call(name: str, **arguments: Any) -> Turn:
    return Turn("gpt", f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>")


def result(content: str) -> Turn:
    return Turn("tool", f"<tool_response>\n{json.dumps({'name': 'x', 'content': content})}\n</tool_response>")


REGION = [
    Turn("human", "Book flight HAT170 for user mia_li_3668 on 2024-05-15, budget 1200 dollars."),
    call("search_flights", origin="JFK", date="2024-05-15"),
    result(json.dumps({"flight": "HAT170", "price": 845.5, "ok": True})),
    call("bash", command="sed -n 100,200p src/app/models.py && cat tests/test_models.py"),
    result("Traceback (most recent call last):\n  File \"/usr/lib/python3/site.py\", line 3\nKeyError: 'seat'"),
    call("bash", command="ls /nowhere"),
    result("ls: cannot access '/nowhere': No such file or directory"),
    call("edit_file", path="src/app/views.py", new_str="x"),
    result("see https://example.com/docs/v2 and commit 3f2a9c1d"),
]


def test_items_by_kind_follow_the_documented_rules() -> None:
    items = salient_items(REGION)
    assert items.tools == ("search_flights", "bash", "edit_file")
    # Paths: arguments and commands, plus the innermost traceback frame; not the listing's words.
    assert set(items.paths) == {
        "src/app/models.py",
        "tests/test_models.py",
        "/usr/lib/python3/site.py",
        "src/app/views.py",
    }
    assert items.errors == ("KeyError", "ls: cannot access '/nowhere': No such file or di")  # 48 chars
    # Identifiers from the user, non-command arguments and JSON results; none from shell commands
    # (100, 200) nor from a plain-text result (the URL and hash of the last one).
    assert set(items.identifiers) == {"HAT170", "mia_li_3668", "2024-05-15", "1200", "845.5"}


def test_error_key_is_the_class_or_the_head_of_the_line() -> None:
    assert error_key("ValueError: bad value") == "ValueError"
    assert error_key("django.core.exceptions.AppRegistryNotReady: Models aren't loaded yet.") == "AppRegistryNotReady"
    assert error_key("FAILED tests/test_a.py::test_b - AssertionError: 1 != 2") == "AssertionError"
    assert error_key("error: command 'gcc' failed with exit code 1 and a long tail") == (
        "error: command 'gcc' failed with exit code 1 and"
    )


def test_a_summary_stating_everything_scores_one_and_one_stating_nothing_zero() -> None:
    items = salient_items(REGION)
    everything = " ".join([*items.tools, *items.paths, *items.errors, *items.identifiers])
    full = score_summary(REGION, everything)
    assert full.score == 1.0 and not any(full.missed.values()) and full.unsupported == ()
    empty = score_summary(REGION, "The assistant did some work.")
    assert empty.score == 0.0 and empty.missed["tools"] == items.tools


def test_recall_is_per_kind_and_the_score_weighs_kinds_equally() -> None:
    fidelity = score_summary(REGION, "Called SEARCH_FLIGHTS, bash and edit_file; KeyError seen.")
    metrics = fidelity.to_metrics()
    assert metrics["tools"] == 1.0  # tool names match case-insensitively
    assert metrics["errors"] == 0.5 and metrics["paths"] == 0.0 and metrics["identifiers"] == 0.0
    assert metrics["score"] == 0.375
    assert metrics["items"] == {"tools": 3, "paths": 4, "errors": 2, "identifiers": 5}


def test_a_path_counts_by_a_tail_that_names_no_other_file_but_not_glued_inside_a_word() -> None:
    region = [call("bash", command="cat /t/django/db/models/query.py /t/django/db/models/sql/query.py /t/app.py")]
    fidelity = score_summary(region, "Read models/query.py, sql/query.py and myapp.py.")
    assert fidelity.found["paths"] == 2 and fidelity.missed["paths"] == ("/t/app.py",)
    ambiguous = score_summary(region, "Read query.py twice.")
    assert ambiguous.found["paths"] == 0  # "query.py" could be either file


def test_unsupported_items_are_those_found_nowhere_in_the_row() -> None:
    row = [Turn("human", "Fix the task in src/main.py, see ticket ABC-1234."), *REGION]
    summary = "Edited src/main.py and src/ghost.py for ABC-1234 and XYZ-9999; hit KeyError and ImportError; v9.9.9."
    fidelity = score_summary(REGION, summary, row)
    assert fidelity.unsupported == ("src/ghost.py", "ImportError", "XYZ-9999", "v9.9.9")
    # Plain counts are a summary's own words, not claims: "12 calls" is not unsupported.
    assert score_summary(REGION, "12 calls in 3 turns.", row).unsupported == ()


def test_text_decoded_from_json_results_counts_as_said() -> None:
    row = [result("Agence Calédonienne id ACT_98800")]
    assert score_summary(row, "Found ACT_98800 (Calédonienne).", row).unsupported == ()


def test_shown_items_have_their_secrets_masked() -> None:
    secret = "ghp_" + "Ab3dE5gH7jK9" * 3
    region = [Turn("human", f"token {secret} for repo v1.2.3")]
    fidelity = score_summary(region, "nothing")
    # A credential is no item (a summary may not state it): only the version is missed.
    assert fidelity.missed["identifiers"] == ("v1.2.3",)
    assert secret not in fidelity.shortfall() and "v1.2.3" in fidelity.shortfall()
    invented = score_summary(region, f"used {secret}x1", [Turn("human", "hello")])
    assert all(secret not in item for item in invented.shown_unsupported())


def test_a_shown_item_cut_inside_a_secret_shows_none_of_it() -> None:
    """Masked before the 80-character cut: a token cut short is too short for its pattern."""
    token = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    for pad in range(50, 80):
        shown = shown_item("x" * pad + f" git push https://{token}@github.com/x/y")
        assert "ghp_" not in shown and "AbCd" not in shown, shown


def test_a_row_text_looks_first_in_its_region_and_answers_as_the_whole_row() -> None:
    """`look_first_in` points `recent` at the region's own text, a slice of the row's (a huge turn
    by its head and tail there too): an item is found there first, and nothing changes what the
    row is said to mention."""
    from trajectory_compressor.summarize.fidelity.score import RowText

    huge = "x" * 1_200_000 + " tail_marker_9"
    turns = [
        Turn("system", "You are an agent. " * 50),
        Turn("human", "Fix src/app.py"),
        Turn("gpt", 'Reading.\n<tool_call>\n{"name": "cat", "arguments": {"path": "src/app.py"}}\n</tool_call>'),
        Turn("tool", "<tool_response>\nValueError: bad id a1b2c3d4e5\n</tool_response>"),
        Turn("tool", huge),
        Turn("gpt", "Done: fixed ValueError in src/app.py."),
    ]
    whole = RowText(turns)
    first = RowText(turns)
    first.look_first_in(2, 5)
    assert first.recent.startswith("Reading.\n<tool_call>") and first.recent.endswith("tail_marker_9")
    assert first.recent in whole._raw and len(first.recent) < len(whole._raw)
    for item in ("src/app.py", "a1b2c3d4e5", "tail_marker_9", "You are an agent", "Done: fixed", "never_said_q7"):
        assert (item in first) == (item in whole), item


def test_no_credential_is_an_item_whatever_key_or_result_holds_it() -> None:
    """Items are read as the summarizers read the region, masked: a value that only its key
    makes a credential (an argument, a JSON result's field) is no identifier a summary must keep."""
    region = [
        call("login", user="bob_77", password="hunter2isgood77"),
        result(json.dumps({"client_secret": "Kp3nX9vQ2mL7", "expires": "2031-01-01"})),
        Turn("human", "Use DB_PASSWORD=Zq8Wm3Lp9Rt2 for the import, ticket OPS-4411."),
    ]
    identifiers = salient_items(region).identifiers
    assert {"bob_77", "2031-01-01", "OPS-4411"} <= set(identifiers)
    assert not {"hunter2isgood77", "Kp3nX9vQ2mL7", "Zq8Wm3Lp9Rt2"} & set(identifiers)
    assert "hunter2isgood77" not in score_summary(region, "Logged in as bob_77.").shortfall()
