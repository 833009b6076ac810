"""A token a terminal wrapped over lines (a tmux pane's capture, `fold`, a console library's
hard wrap): each line holds a piece, and the pieces after the first matched no rule, so they
reached prompts and summaries (a JWT wrapped inside its payload matched nothing at all)."""

from __future__ import annotations

import pytest

from tests.summarize.test_redact import LAYERS
from trajectory_compressor.summarize.redact import REDACTED, redact_secrets

_OPENAI = "sk-proj-" + "Ab3dEfGh7jKlMnOpQr5tUvWxYz01" * 5 + "Qx9zT2"  # 154 characters
_JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwi"
    "aWF0IjoxNTE2MjM5MDIyLCJzY29wZSI6ImFkbWluIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
_ANTHROPIC = "sk-ant-api03-" + "Zuftc3ydUquViqYyZh2RtgB1pGJnv7vGYz95LEgi" * 2 + "P0CHJU21LSHIb51sVkmxyHug-AA"
_GITHUB_PAT = "github_pat_11ABCDEFG0" + "aB3dEfGh7jKlMnOpQr5tUvWxYz01" * 3


def _wrapped(text: str, width: int) -> str:
    """`text` as a terminal `width` columns wide shows it: each line cut every `width` characters."""
    lines = []
    for line in text.split("\n"):
        lines += [line[i : i + width] for i in range(0, max(len(line), 1), width)]
    return "\n".join(lines)


WRAPPED = [
    ("root@box:/app# echo $OPENAI_API_KEY\n{}\nroot@box:/app# ", _OPENAI, 80),
    ("{}", _JWT, 80),  # the cut falls inside the payload: no piece is a JWT's shape
    ("$ echo $TOKEN\n{}\n$ ", _JWT, 64),
    ("Authorization: Bearer {}", _JWT, 80),
    ("export ANTHROPIC_API_KEY={}", _ANTHROPIC, 100),
    ("GITHUB_TOKEN={}\nHOME=/root", _GITHUB_PAT, 48),
    ('{{"token": "{}"}}', _JWT, 80),
]


def _pieces(text: str, size: int = 8) -> set[str]:
    return {text[i : i + size] for i in range(len(text) - size + 1)}


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize(("template", "secret", "width"), WRAPPED)
def test_a_wrapped_token_leaves_no_eight_characters(template: str, secret: str, width: int, layer: str) -> None:
    encode, decode = LAYERS[layer]
    around = _wrapped(f"A=1\n{template}\nHOME=/root", width)
    text = _wrapped(f"A=1\n{template.format(secret)}\nHOME=/root", width)
    redacted = redact_secrets(encode(text))
    assert redact_secrets(redacted) == redacted
    decoded = decode(redacted)
    assert REDACTED in decoded and decoded.startswith("A=1") and decoded.endswith("HOME=/root"), redacted
    left = _pieces(secret) & _pieces(decoded.replace("\n", "")) - _pieces(around)
    assert not left, (left, redacted)


# A token that ends where its line ends, and a next line that is no piece of it (kept, the second
# item): a command, an assignment, a plain word, a prompt, or a line of a width no wrap gives.
NOT_WRAPPED = [
    (f"export OPENAI_API_KEY={_OPENAI[:58]}\npython3 main.py --model gpt-4o", "\npython3 main.py --model gpt-4o"),
    (f"OPENAI_API_KEY={_OPENAI[:58]}\nMODEL_NAME=gpt-4o\nDEBUG=1", "\nMODEL_NAME=gpt-4o\nDEBUG=1"),
    (f"$ echo $OPENAI_API_KEY\n{_OPENAI[:64]}\nDONE\n", "\nDONE\n"),
    (f"$ echo $OPENAI_API_KEY\n{_OPENAI[:64]}\nroot@box:/app#", "\nroot@box:/app#"),
    (f"token={_OPENAI[:30]}\nabc123XYZ", "\nabc123XYZ"),  # a line of 36 characters: too narrow
    # A file's name, or words ending a sentence, on the line after a key printed whole.
    (f"GITHUB_TOKEN={_GITHUB_PAT[:60]}\nconfig.yaml", "\nconfig.yaml"),
    (f"$ echo $OPENAI_API_KEY\n{_OPENAI[:64]}\nREADME.md", "\nREADME.md"),
    (f"$ cat token.txt\n{_OPENAI[:64]}\nsettings_local.py", "\nsettings_local.py"),
]


@pytest.mark.parametrize(("text", "kept"), NOT_WRAPPED)
def test_what_follows_an_unwrapped_token_on_the_next_line_stays(text: str, kept: str) -> None:
    redacted = redact_secrets(text)
    assert redacted.endswith(REDACTED + kept), redacted


def test_hashes_and_paths_wrapped_by_a_terminal_stay() -> None:
    """Ordinary long words a terminal wraps (a git log's hashes, a path) are no credential."""
    text = _wrapped(
        "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904e69de29bb2d1d6434b8b29ae775ad8c2e48c5391a1b2c3\n"
        "/usr/lib/python3.12/site-packages/trajectory_compressor/summarize/redact_wrapped_lines.py\n"
        "550e8400-e29b-41d4-a716-446655440000550e8400-e29b-41d4-a716-446655440000550e8400-e29b-41d4\n",
        40,
    )
    assert redact_secrets(text) == text


# A wrap that falls inside a token's prefix, or right after it: the first line ends in `gh`,
# `sk-`, `xo`, holding no literal nor a token's run, and nothing was joined (round-6 trust pass).
PREFIX_TOKENS = [  # (token, its prefix's length)
    ("ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", 4),
    ("sk-proj-" + "Ab3dEfGh7jKlMnOpQr5tUvWxYz01Qx9zT2", 8),
    ("github_pat_11ABCDEFG0" + "aB3dEfGh7jKlMnOpQr5tUvWxYz01", 11),
    ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", 5),
    ("AKIAIOSFODNN7EXAMPLE", 4),
    ("hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567", 3),
    ("glpat-" + "Ab3dEfGh7jKlMnOpQr5t", 6),
    (_JWT, 3),
]
_PROMPT = "root@box:/srv/app# export SERVICE_CREDENTIAL="  # 46 characters: the token starts after it


def _prefix_cuts() -> list[tuple[str, int]]:
    return [(token, cut) for token, length in PREFIX_TOKENS for cut in range(1, length + 1)]


@pytest.mark.parametrize("layer", ["plain", "json"])
@pytest.mark.parametrize(("secret", "cut"), _prefix_cuts(), ids=lambda value: str(value)[:8])
def test_a_wrap_inside_a_tokens_prefix_leaves_no_eight_characters(secret: str, cut: int, layer: str) -> None:
    encode, decode = LAYERS[layer]
    # The cut falls `cut` characters into the token (the token ends its line, as the others here).
    text = _wrapped(f"A=1\n{_PROMPT}{secret}\nHOME=/root", len(_PROMPT) + cut)
    assert secret[:cut] + "\n" + secret[cut : cut + 4] in text
    decoded = decode(redact_secrets(encode(text)))
    assert REDACTED in decoded and decoded.startswith("A=1") and decoded.endswith("HOME=/root"), decoded
    assert not _pieces(secret) & _pieces(decoded.replace("\n", "")), decoded


def test_a_line_ending_in_a_prefix_word_joins_no_plain_next_line() -> None:
    text = "The deployment notes for this service say to rotate the gh\np_values table weekly, and sk-\nlearn too."
    assert redact_secrets(text) == text
