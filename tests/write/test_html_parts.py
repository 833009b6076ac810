"""The HTML report's parts that show trajectory text: masked before any cut."""

from __future__ import annotations

from trajectory_compressor.write.html_parts import PathCell, clip_text, short_label, short_names, table_html


def test_a_secret_the_turn_cut_falls_into_is_not_shown_in_part() -> None:
    """A long secret masked before the cut makes room: the text up to the cut must not end in a
    credential's first characters, too few for its pattern."""
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "A" * 2300 + "\n-----END RSA PRIVATE KEY-----\n"
    token = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    for before_cut in range(1, len(token)):  # characters of the token before the 2,400-character cut
        text = pem + "x" * (2400 - len(pem) - before_cut - 1) + " " + token + " tail"
        shown = clip_text(text)
        assert "ghp_" not in shown and shown.endswith(" [REDACTED]"), shown[-60:]


def test_a_token_longer_than_the_margin_the_cut_falls_into_is_not_shown_in_part() -> None:
    jwt = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJ" + "QmFzZTY0UGF5bG9hZA" * 250 + "." + "c2lnbmF0dXJl" * 30
    shown = clip_text("Token: " + jwt + " and more text " * 100)
    assert "QmFzZTY0UGF5bG9hZA" not in shown and "[REDACTED]" in shown


def test_short_names_drop_the_folders_every_name_shares() -> None:
    assert short_names(["/data/runs/a/x.jsonl", "/data/runs/b/x.jsonl"]) == {
        "/data/runs/a/x.jsonl": "a/x.jsonl",
        "/data/runs/b/x.jsonl": "b/x.jsonl",
    }
    assert short_names(["/very/long/folder/in.jsonl"]) == {"/very/long/folder/in.jsonl": "in.jsonl"}
    assert short_names(["runs/x.jsonl", "/abs/y.jsonl"]) == {
        "runs/x.jsonl": "runs/x.jsonl",
        "/abs/y.jsonl": "/abs/y.jsonl",
    }
    names = short_names(["/d/in.jsonl", "/d/more/in2.jsonl"])
    assert short_label("/d/more/in2.jsonl:7 window 2 of 3", names) == "more/in2.jsonl:7 window 2 of 3"


def test_a_path_cell_shows_the_short_name_and_keeps_the_full_one_in_its_title() -> None:
    page = table_html(["file", "rows"], [[PathCell("x.jsonl", "/a/<b>/x.jsonl"), 3]])
    assert '<span class="path" title="/a/&lt;b&gt;/x.jsonl">x.jsonl</span>' in page and "<b>" not in page
