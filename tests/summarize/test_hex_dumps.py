"""A hex dump of a file holding a credential (`xxd .env`, `hexdump -C .env`: an agent looking for
the stray `\\r` that breaks a `.env`). Found by the round-12 adversarial pass: the key showed in
the hex columns and, cut every 16 bytes, in the text column, where no piece matched a rule."""

from __future__ import annotations

import pytest

from tests.summarize.test_redact import LAYERS
from trajectory_compressor.summarize.redact import REDACTED, redact_secrets

KEY = "sk-proj-Ab3dEfGh7jKlMnOpQr5tUvWxYz01Ab3dEfGh7jKlMnOpQr5tUvWxYz01"
PASSWORD = "Wq7xLm2pRt9vXk"
ENV = f"APP_ENV=staging\r\nOPENAI_API_KEY={KEY}\r\nDB_PASSWORD={PASSWORD}\r\nLOG_LEVEL=info\r\n".encode()


def xxd(data: bytes, columns: int = 16) -> str:
    """`xxd` as it prints `data` (two bytes a group)."""
    lines = []
    for offset in range(0, len(data), columns):
        chunk = data[offset : offset + columns]
        groups = " ".join(chunk[i : i + 2].hex() for i in range(0, len(chunk), 2))
        width = columns * 2 + columns // 2 - 1
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset:08x}: {groups:<{width}}  {text}")
    return "\n".join(lines) + "\n"


def hexdump_c(data: bytes) -> str:
    """`hexdump -C` as it prints `data`."""
    lines = []
    for offset in range(0, len(data), 16):
        chunk = data[offset : offset + 16]
        left = " ".join(f"{b:02x}" for b in chunk[:8])
        right = " ".join(f"{b:02x}" for b in chunk[8:])
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset:08x}  {left:<23}  {right:<23}  |{text}|")
    lines.append(f"{len(data):08x}")
    return "\n".join(lines) + "\n"


def od_c(data: bytes) -> str:
    """`od -c` as it prints `data`."""
    escapes = {0: "\\0", 7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r"}
    lines = []
    for offset in range(0, len(data), 16):
        cells = (escapes.get(b) or (chr(b) if 32 <= b < 127 else f"{b:03o}") for b in data[offset : offset + 16])
        lines.append(f"{offset:07o}" + "".join(f"{cell:>4}" for cell in cells))
    lines.append(f"{len(data):07o}")
    return "\n".join(lines) + "\n"


DUMPS = {
    "xxd": xxd(ENV),
    "xxd-c32": xxd(ENV, 32),
    "hexdump-C": hexdump_c(ENV),
    "xxd-after-a-prompt": "$ xxd .env\n" + xxd(ENV) + "$ ",
    "od-c": od_c(ENV),
}


def _pieces(text: str, size: int = 6) -> set[str]:
    return {text[i : i + size] for i in range(len(text) - size + 1)}


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("dump", DUMPS)
def test_a_hex_dump_of_a_credential_shows_no_piece_of_it(dump: str, layer: str) -> None:
    if dump == "od-c" and layer != "plain":
        pytest.skip("od -c's escape cells (`\\r`) are decoded with the JSON around them: not read there")
    encode, decode = LAYERS[layer]
    decoded = decode(redact_secrets(encode(DUMPS[dump])))
    assert REDACTED in decoded
    columns = "".join(line.rsplit("  ", 1)[-1].strip("|") for line in decoded.splitlines())
    columns += "".join(line[7:].replace("   ", "") for line in decoded.splitlines())  # od -c's cells
    for secret in (KEY, PASSWORD):
        assert not _pieces(secret) & _pieces(columns), (secret, decoded)
        assert secret.encode().hex()[:12] not in decoded.replace(" ", ""), decoded
    assert "APP_ENV=staging" in columns.replace(".", "") or "APP_ENV=" in decoded, decoded  # the first line stays


def test_a_hex_dump_of_ordinary_bytes_stays() -> None:
    """A binary's header, a text file, an image: no credential in them, the dump stays as it is."""
    for data in (b"\x7fELF\x02\x01\x01" + bytes(range(200)), b"def main():\n    print('hello')\n" * 4):
        for dump in (xxd(data), hexdump_c(data), od_c(data)):
            assert redact_secrets(dump) == dump


@pytest.mark.parametrize("cut", [400, 371, 360, 350])
def test_a_dump_cut_short_shows_no_piece_of_the_key(cut: str) -> None:
    """An assistant quoting the first characters of a dump (found end to end: the line the cut
    fell into, its text column short or gone, was read as no dump's and its hex went to the
    anchors); its bytes join the lines before it."""
    quoted = "I see the CRLF: " + xxd(ENV)[:cut]
    redacted = redact_secrets(quoted)
    hex_digits = redacted.replace(" ", "")
    assert not any(KEY.encode().hex()[i : i + 12] in hex_digits for i in range(0, 100, 2)), redacted
    assert not _pieces(KEY, 8) & _pieces(redacted, 8), redacted
