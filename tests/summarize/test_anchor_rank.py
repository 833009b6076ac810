"""The ranking of a region's anchors: recency, reuse, who wrote them, boilerplate last, no look-ahead."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_compressor.summarize.anchor_rank import ranked_anchors
from trajectory_compressor.summarize.redact import redact_secrets
from trajectory_compressor.types import Turn


def gpt(text: str, *calls: tuple[str, dict[str, object]]) -> Turn:
    blocks = "".join(
        "\n<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>" for name, args in calls
    )
    return Turn("gpt", text + blocks)


def tool(content: str, name: str = "bash", call_id: str = "call_00_XLacH4bbIVS3pIdb4iR2EfQ2") -> Turn:
    payload = json.dumps({"tool_call_id": call_id, "name": name, "content": content})
    return Turn("tool", f"<tool_response>\n{payload}\n</tool_response>")


def before(ranked: tuple[str, ...], first: str, second: str) -> bool:
    return ranked.index(first) < ranked.index(second)


def test_a_later_value_ranks_before_an_older_one() -> None:
    region = [
        gpt("Looking.", ("get_user", {"user_id": "mia_li_3668"})),
        tool('{"reservations": ["OLD111"], "payment": "gift_card_1111"}'),
        *[x for i in range(6) for x in (gpt(f"Step {i}."), tool(f"nothing here {i}"))],
        gpt("Looking again.", ("get_reservation", {"id": "OLD111"})),
        tool('{"reservations": ["NEW999"], "payment": "gift_card_9999"}'),
    ]
    ranked = ranked_anchors(region)
    assert before(ranked, "NEW999", "gift_card_1111") and before(ranked, "gift_card_9999", "gift_card_1111")
    # Reused, and by the assistant: the id it looked up again ranks first.
    assert ranked[0] == "OLD111"


def test_a_value_used_across_many_turns_ranks_before_one_seen_once() -> None:
    region = [
        tool("config at src/geomesh/mesh.py and src/geomesh/once.py"),
        gpt("Reading src/geomesh/mesh.py."),
        tool("src/geomesh/mesh.py: 120 lines"),
        gpt("Editing src/geomesh/mesh.py again."),
        tool("done"),
    ]
    assert before(ranked_anchors(region), "src/geomesh/mesh.py", "src/geomesh/once.py")


def test_what_the_assistant_wrote_ranks_before_what_a_tool_only_printed() -> None:
    region = [
        tool("ids: TOOL111 TOOL222"),
        gpt("Noting the amount: 4587.", ("bash", {"command": "sed -i '245s/old_name/new_name/' pkg/core.py"})),
        tool("ids: TOOL333"),
    ]
    ranked = ranked_anchors(region)
    for written in ("4587", "245s/old_name/new_name", "pkg/core.py"):
        assert before(ranked, written, "TOOL333")


def test_values_only_in_lines_every_result_repeats_come_last() -> None:
    warning = "WARNING: see https://pip.pypa.io/warnings/venv and /opt/conda/lib/python3.11/site.py"
    region = []
    for i in range(4):
        region += [gpt(f"Run {i}.", ("bash", {"command": "python run.py"})), tool(f"{warning}\nresult_{i}: {1000 + i}")]
    ranked = ranked_anchors(region)
    boilerplate = {"https://pip.pypa.io/warnings/venv", "/opt/conda/lib/python3.11/site.py"}
    assert set(ranked[-2:]) == boilerplate
    assert "result_0" in ranked and ranked.index("result_0") < len(ranked) - 2


def test_a_repeated_line_the_assistant_also_wrote_is_not_boilerplate() -> None:
    region = []
    for i in range(3):
        region += [gpt(f"Try {i}."), tool("value of check_id: CHK42X")]
    region.append(gpt("So check_id is CHK42X."))
    ranked = ranked_anchors(region)
    assert ranked[0] in ("CHK42X", "check_id") and "CHK42X" in ranked[:2]


def test_values_the_task_shows_are_left_out_and_call_ids_are_not_values() -> None:
    region = [
        gpt("Fix it.", ("bash", {"command": "cat astropy/modeling/separable.py"})),
        tool("def _coord_matrix(model, pos, noutp)"),
    ]
    ranked = ranked_anchors(region, known="Fix astropy/modeling/separable.py please.")
    assert "astropy/modeling/separable.py" not in ranked
    assert "_coord_matrix" in ranked
    assert not any("XLacH4bb" in anchor for anchor in ranked)


def test_an_earlier_index_joins_as_the_oldest_turn_once_each() -> None:
    region = [gpt("Booked.", ("book", {"flight": "HAT110"})), tool('{"reservation_id": "RES777"}')]
    ranked = ranked_anchors(region, earlier=("OLD_RES1", "HAT110", "OLD_RES2", "not an anchor"))
    assert ranked.count("HAT110") == 1
    assert "not an anchor" not in ranked
    assert before(ranked, "HAT110", "OLD_RES1")  # still used in the region: ranks above the rest
    assert before(ranked, "OLD_RES1", "OLD_RES2")  # the earlier index's order is kept


def test_no_part_of_a_credential_or_an_opaque_blob_becomes_an_anchor() -> None:
    key = "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vX7zB9dF1hJ3lN5pR7tV9xZ1bD3"
    blob = "QUtJQUlPU0ZPRE5ON0VYQU1QTEVBQkNERUZHSElKS0xNTk9Q"
    region = [tool(f"OPENAI_API_KEY={key}\npayload {blob}\nstatus_code 200 OK")]
    ranked = ranked_anchors(region, redact=redact_secrets)
    assert "status_code" in ranked
    assert not any(key[8:16] in anchor or "Ab3dE5gH" in anchor for anchor in ranked)
    assert blob not in ranked


def test_a_value_that_only_its_key_makes_a_credential_is_no_anchor() -> None:
    """The assistant turn is masked whole before its calls are read: the argument's value alone
    (`hunter2isgood77`) is a word, and only `"password": ` says what it is."""
    region = [
        gpt("Logging in.", ("login", {"user": "bob_77", "password": "hunter2isgood77"})),
        tool("logged in"),
        gpt("", ("http", {"url": "https://db.example.com/v2", "client_secret": "Kp3nX9vQ2mL7"})),
    ]
    ranked = ranked_anchors(region, redact=redact_secrets)
    assert {"bob_77", "https://db.example.com/v2"} <= set(ranked)
    assert not {"hunter2isgood77", "Kp3nX9vQ2mL7"} & set(ranked)
    assert "hunter2isgood77" in ranked_anchors(region)  # unmasked, it is a value like any other


def test_an_email_ranks_whole_and_is_no_credential() -> None:
    """An email is no credential by the masking rules, so it is ranked as the one value a later
    turn types; the password beside it is masked before any anchor is read."""
    region = [
        gpt("Looking you up.", ("get_user_details", {"user_id": "mia_li_3818"})),
        tool('{"email": "mia.li3818@example.com", "password": "Hunter2isgood77"}', name="get_user_details"),
    ]
    ranked = ranked_anchors(region, redact=redact_secrets)
    assert "mia.li3818@example.com" in ranked
    assert not {"mia.li3818", "example.com", "Hunter2isgood77"} & set(ranked)


def test_a_url_whose_key_was_masked_is_ranked_as_its_endpoint() -> None:
    """Masking cuts `?api_key=...` to `?api_key=[REDACTED]`: the ranking lists the endpoint, never
    a URL ending in `=` (nor, of course, the key)."""
    key = "AKd93kd93kdk39dk"
    region = [gpt("Fetching.", ("bash", {"command": f"curl 'https://api.x.com/v1/items?api_key={key}&limit=5'"}))]
    ranked = ranked_anchors(region, redact=redact_secrets)
    assert "https://api.x.com/v1/items" in ranked
    assert not any(anchor.endswith("=") or key in anchor for anchor in ranked)


def test_a_credential_across_the_scan_limit_leaves_no_fragment() -> None:
    """A piece is masked before it is cut to the scan limit: a token cut first would be too short
    for its pattern, and its first characters would rank as a name."""
    from trajectory_compressor.summarize import anchor_rank

    token = "ghp_" + "Ab3dE5gH7jK9" * 3
    for role in ("human", "result"):
        pad = anchor_rank._SCAN_CHARS - 8 - len("GITHUB ")  # the cut falls after "ghp_Ab3d"
        text = "word " * (pad // 5) + " " * (pad % 5) + f"GITHUB {token} done"
        assert text[anchor_rank._SCAN_CHARS - 8 : anchor_rank._SCAN_CHARS] == "ghp_Ab3d"
        region = [Turn("human", text)] if role == "human" else [tool(text)]
        ranked = ranked_anchors(region, redact=redact_secrets)
        assert not any(anchor.startswith("ghp_") or "Ab3dE5" in anchor for anchor in ranked), role


_IDS = st.from_regex(r"[A-Z]{3}[0-9]{3}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(ids=st.lists(_IDS, min_size=1, max_size=12), said=st.integers(min_value=0, max_value=11))
def test_every_anchor_once_deterministic_and_the_assistants_value_first(ids: list[str], said: int) -> None:
    region = [tool(" ".join(ids)), gpt("Using " + ids[said % len(ids)])]
    ranked = ranked_anchors(region)
    assert sorted(ranked) == sorted(set(ids))
    assert ranked == ranked_anchors(list(region))
    assert ranked[0] == ids[said % len(ids)]  # the latest turn, and the assistant wrote it
