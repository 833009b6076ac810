"""The HTML report's parts that show trajectory text: masked before any cut."""

from __future__ import annotations

from trajectory_compressor.write.html_parts import clip_text


def test_a_secret_the_turn_cut_falls_into_is_not_shown_in_part() -> None:
    """A long secret masked before the cut makes room: the text up to the cut must not end in a
    credential's first characters, too few for its pattern."""
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "A" * 2300 + "\n-----END RSA PRIVATE KEY-----\n"
    token = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    for before_cut in range(1, len(token)):  # characters of the token before the 2,400-character cut
        text = pem + "x" * (2400 - len(pem) - before_cut - 1) + " " + token + " tail"
        shown = clip_text(text)
        assert "ghp_" not in shown and shown.endswith(" [REDACTED]"), shown[-60:]
