"""What an anchor is, and the reading of a text's anchors (`anchors_in`): the tokenizer that the
anchor index (`anchor_rank`, `anchor_index`) and the future-grounded fidelity (`anchors`) share.

An *anchor* is a token of text that names something exactly, so that a turn using it only
works if it was seen: a path (`src/geomesh/mesh.py`), a URL, an email
(`mia.li3818@example.com`, whole), a dotted name (`django.db.models`, `self.mask`), a
snake_case or camelCase name (`iter_chunk_chunks`, `getUser`), an error class (`KeyError`), an
id mixing letters and digits (`EHGLP3`, `mia_li_3668`), a hash (`9f3c2ab71d`), a version, date
or ISO time (`1.2.3`, `2025-12-20`, `2024-05-14T16:03:16`, its colons in it), a number of
three digits or more (`1234`, `19.99`). Plain words are not anchors, nor the names any program
writes whatever it saw (`np.array`, `os.path.join`, `f.read`, `/bin/bash`).

A token is what a later turn would type, not what a tool or an escape glued to it: a new line
written in code inside JSON (`"print('a\\\\nSQL')"`) ends the token before it (`SQL`, not `nSQL`),
the line number grep -n / -C prints before a line of code is a token of its own (`133-def` gives
`133`), a sed address is its line number (`1150p` gives `1150`), and a URL that a mask cut short of a value
(`?token=[REDACTED]`) is its endpoint, never an anchor ending in `=`. Only an email's `@` joins
a token (`pkg@1.2.3`, `root@web01:/srv`, `@property` keep theirs between tokens).

Pure functions over strings, deterministic.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import chain, filterfalse

from trajectory_compressor.summarize.fidelity.salient import EMAIL, GLUED_TO_LINE_NUMBER, SED_ADDRESS, has_digit
from trajectory_compressor.summarize.secret_rules import REDACTED

# Candidate tokens: URLs and emails whole, else runs of word characters with the separators names use.
# An ISO time's colons are part of its token (`2024-05-14T16:32:07`, not `2024-05-14T16`, `32`, `07`).
_ISO_TIME_HEAD = r"\d{4}-\d\d-\d\dT\d\d(?::\d\d){1,2}"
# The line number grep -n / -C glues to a line of code at the left margin (`133-def`, `12-CONSTANT_X`)
# is a token of its own (`salient.GLUED_TO_LINE_NUMBER`: `2024-05-14`, `06-Nov-26` and
# `12345678-abcd-4ef0` stay whole, while `64-bit` is read as `64` and `bit`).
_LINE_NUMBER = rf"[0-9]+(?={GLUED_TO_LINE_NUMBER})"
_TOKEN_BODY = "|".join(
    (
        r"https?://[^\s\"'<>()\[\]{}`\\]+",
        EMAIL,  # one token, its `@` in it; elsewhere an `@` is between tokens
        _LINE_NUMBER,
        r"(?:" + _ISO_TIME_HEAD + r"|(?:~?/)?[A-Za-z0-9_])[A-Za-z0-9_./-]*",
    )
)
_WORD = re.compile(_TOKEN_BODY)
_EMAIL_WORD = re.compile(EMAIL)
# A sed address and its command glued (`1150p`, `12d`): the line number is the value.
_SED_ADDRESS = re.compile(SED_ADDRESS)
# What a text holding an email holds around its `@`: the one-pass reading leaves such a text to `_TOKEN`.
_EMAIL_AT = re.compile(r"[A-Za-z0-9_.+-]@[A-Za-z0-9-]+\.")
# A URL's credentials as redaction leaves them (`redact.py`: the user kept, the password masked).
_MASKED_AT = REDACTED + "@"
_MASKED_USERINFO = re.compile(r"://[^\s/@:\[\]]*:?" + re.escape(_MASKED_AT))
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_CAMEL = re.compile(r"[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*|[A-Z]{2,}[a-z][A-Za-z0-9]*")
_HEX = re.compile(r"(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,64}")
_NUMBER = re.compile(r"\d{3,}(?:\.\d+)?|\d+\.\d+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# A JSON escape; and before it, an escaped backslash and `n`, `r` or `t` that no lower-case letter
# follows: the escape of the text the JSON holds (`print('rows\\nSQL')` in a call's arguments is a
# new line, then `SQL`, not the name `nSQL`), while `C:\\new_dir` keeps its `new_dir`.
_INNER_ESCAPE = r"\\\\[nrt](?![a-z])"
_ESCAPES = re.compile(_INNER_ESCAPE + r"|\\[nrt\"\\/]")
# `_WORD`, with the `<` before a token and the `":` or `>` after it, which make it a key or a tag.
_TOKEN = re.compile(r"(?=[<~/A-Za-z0-9_])(<?)(" + _TOKEN_BODY + r')(":|>)?')
# Where the one-pass reading marks an ISO time's colons (`\x05`, a token character there): only
# at a token's start, as `_WORD` reads one (`_starts_a_token`).
_ISO_TIME = re.compile(_ISO_TIME_HEAD)
_TIME_COLON = re.compile(r"T\d\d:\d\d")  # a quick test first: a literal start, searched at C speed
# Names any program writes, whatever it saw: standard modules and their usual aliases (as the
# head of a dotted name), a file handle's methods, and system paths. Not anchors.
_GENERIC_HEADS = frozenset(
    [
        "np", "pd", "os", "sys", "re", "json", "math", "f", "fh", "fp", "plt", "torch", "tf", "io", "subprocess",
        "shutil", "time", "datetime", "collections", "itertools", "functools", "typing", "logging", "random",
        "string", "pathlib", "glob", "tempfile", "unittest", "pytest", "argparse", "csv", "copy",
    ]
)  # fmt: skip
_GENERIC_PATHS = ("/bin/", "/usr/", "/dev/", "/proc/", "/etc/", "/tmp")


@lru_cache(maxsize=1 << 16)  # the same words recur across turns and rows; pure, so cached
def anchor_kind(word: str) -> str | None:
    """What kind of anchor `word` is (`path`, `url`, `email`, `name`, `id`, `number`), or None for a plain word."""
    if word.startswith(("http://", "https://")):
        return "url"
    if "@" in word:
        return "email" if _EMAIL_WORD.fullmatch(word) else None
    if "/" in word:
        generic = word.startswith(_GENERIC_PATHS)
        return "path" if _has_alpha(word) and len(word) > 3 and not generic else None
    if not _has_alpha(word) or (word[0] in "vV" and _version(word[1:])):
        return "number" if _NUMBER.fullmatch(word) or _DATE.fullmatch(word) or _version(word.lstrip("vV")) else None
    if _HEX.fullmatch(word):
        return "id"
    if "_" in word.strip("_") and len(word) >= 4:
        return "name"
    if "." in word:
        generic = word.split(".", 1)[0] in _GENERIC_HEADS
        return "name" if len(word) >= 5 and _DOTTED.fullmatch(word) and not generic else None
    if _CAMEL.fullmatch(word):
        return "name"
    if len(word) >= 4 and has_digit(word):
        return "id"
    return None


def _has_alpha(word: str) -> bool:
    """`any(map(str.isalpha, word))`; in ASCII, a letter is what has two cases (quicker in C)."""
    return word.lower() != word.upper() if word.isascii() else any(map(str.isalpha, word))


def _version(word: str) -> bool:
    parts = word.split(".")
    return len(parts) >= 3 and all(part.isdigit() for part in parts)


def anchors_in(text: str) -> dict[str, None]:
    """The anchors of `text`, distinct, in order of first appearance (JSON escapes read as the
    whitespace they stand for, so `\\nsrc/a.py` gives `src/a.py`; JSON keys and markup tags skipped).

    This reads every turn of every summarized row, so it is written for speed, its rule unchanged
    (`tests/summarize/fidelity/test_anchors_fast.py` holds it to the token-by-token reading):
    the text is cut into runs of token characters in C (the escapes, and what makes a token a JSON
    key or a tag, written into the runs as marks), and each distinct run is read once, through a
    cache, as the same runs recur across turns and rows. A text with a URL or an email (whose
    tokens span other characters) is read by the tokenizing regex in one pass."""
    if "://" in text or "\x02" in text or "\x03" in text or "\x04" in text or "\x05" in text:  # a URL, or a mark
        return _anchors_of_tokens(without_masked_userinfo(unescaped(text)))
    if "@" in text and _EMAIL_AT.search(text):
        return _anchors_of_tokens(unescaped(text))
    if "\\" in text:
        if '\\":' in text:  # an escaped quote before a colon: the token before it is a key
            text = _ESCAPED_KEY.sub("\\1\x02 ", text)
        text = _ANY_ESCAPE.sub(" ", text)
    if '":' in text:
        text = text.replace('":', "\x02 ")
    if ">" in text:
        text = text.replace(">", "\x03 ")
    if "<" in text:
        text = text.replace("<", " \x04")
    if ":" in text and _TIME_COLON.search(text):
        text = _ISO_TIME.sub(lambda m: m.group().replace(":", "\x05") if _starts_a_token(m) else m.group(), text)
    runs = text.translate(_RUN_CHARS).split() if text.isascii() else _RUN.findall(text)
    # In C: the runs not known to be plain, their anchors (a miss reads the run), in order, once.
    unknown = filterfalse(_PLAIN_RUNS.__contains__, runs)
    return dict.fromkeys(chain.from_iterable(map(_RUN_ANCHORS.__getitem__, unknown)))


def without_masked_userinfo(text: str) -> str:
    """`text` with the credentials redaction masked in a URL dropped (`https://alice:[REDACTED]@host/x`
    reads `https://host/x`): what is left of them (`https://alice:`) names nothing a later turn
    types, and the URL is whole again."""
    return _MASKED_USERINFO.sub("://", text) if _MASKED_AT in text else text


def _starts_a_token(match: re.Match[str]) -> bool:
    """Whether the ISO time `match` found starts a token as `_WORD` reads tokens: no word
    character before it but for `.`, `-` and `/` (which start none), and no `/` right before it
    (`/2024-…` is a path's token)."""
    text, position = match.string, match.start()
    if text[position - 1 : position] == "/":
        return False
    while position and text[position - 1] in ".-/":
        position -= 1
    before = text[position - 1 : position]
    return not (before.isascii() and (before.isalnum() or before == "_"))


def unescaped(text: str) -> str:
    """`text` with each JSON escape read as anchors read it: `\\"` as a quote, the others (`\\n`,
    `\\t`, `\\r`, `\\\\`, `\\/`) as a space, and so an escaped backslash with the `n`, `r` or `t`
    after it when no lower-case letter follows (`\\\\nSQL`: the JSON holds the text `\\nSQL`)."""
    if "\\" not in text:
        return text
    return _ESCAPES.sub(lambda m: '"' if m.group(0) == '\\"' else " ", text)


def _anchors_of_tokens(text: str) -> dict[str, None]:
    """`anchors_in` of an unescaped `text` by the tokenizing regex (`findall`: each token with the
    `<` before it and the `":` or `>` after it), each distinct token judged once."""
    found: dict[str, None] = {}
    for before, token, after in dict.fromkeys(_TOKEN.findall(text)):
        if after and (after == '":' or "@" not in token):  # a tag's name holds no `@`: `<mia@example.com>` is an email
            if after == '":' or before:
                continue  # a JSON key (an argument's name) or a markup tag (`<tool_call>`): the format, not a fact
            if token[0] in "/~":  # a tag if the character before it is "/" ("//x>"): only the spans can say
                return _anchors_in_exact(text)
        word = _anchor_of(token)
        if word is not None and word not in found:
            found[word] = None
    return found


def _anchors_in_exact(text: str) -> dict[str, None]:
    """`anchors_in` of an unescaped `text`, token by token with their spans: the rule as written."""
    found: dict[str, None] = {}
    for match in _WORD.finditer(text):
        start, end = match.span()
        tag = text[start - 1 : start] in ("<", "/") and text.startswith(">", end) and "@" not in match.group(0)
        if text.startswith('":', end) or tag:
            continue
        word = _anchor_of(match.group(0))
        if word is not None and word not in found:
            found[word] = None
    return found


def _anchor_of(token: str) -> str | None:
    """The anchor a token stands for (without trailing `.-/` and leading `./`; a sed address
    without its command, `1150p` as `1150`; a URL that lost a value, without its query), or None.

    A URL ending in `=` lost its last value: a mask (`?token=[REDACTED]`) ends a URL there, as
    any bracket does. Its endpoint (`https://example.com/a/b`) is what a later turn's URL starts
    with; with no query to drop (`https://x.io/a;sid=`) it is no anchor."""
    word = token.rstrip(".-/")
    while word.startswith("./"):
        word = word[2:]
    if word.endswith(("p", "d")) and _SED_ADDRESS.fullmatch(word):
        word = word[:-1]
    elif word.endswith("=") and word.startswith(("http://", "https://")):
        word = word.split("?", 1)[0].rstrip(".-/") if "?" in word else ""
    return word if word and anchor_kind(word) is not None else None


# A run: token characters (and `~`), with `\x04` for a `<` before it and `\x02` (`":`) or `\x03`
# (`>`) after it. The marks are control characters a text holding any of reads the slow way.
_TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-"
_RUN_CHARS = {code: code if chr(code) in _TOKEN_CHARS + "~\x02\x03\x04\x05" else 32 for code in range(128)}
_RUN = re.compile(r"[A-Za-z0-9_./~\x02-\x05-]+")
_STARTS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_DIGITS = frozenset("0123456789")
_GLUED_LINE_NUMBER = re.compile(r"([0-9]+)-[A-Za-z_][A-Za-z0-9_./]*")  # a whole token, as `_LINE_NUMBER` cuts it
_ESCAPED_KEY = re.compile(r'(?<!\\)((?:\\\\)*)\\":')  # an escaped quote (its backslash unpaired), then ":"
_ANY_ESCAPE = re.compile(_INNER_ESCAPE + r'|\\[nrt"\\/]')


class _RunAnchors(dict[str, tuple[str, ...]]):
    """Run -> its anchors, for the runs that hold some; a run not seen yet is read on lookup."""

    def __missing__(self, run: str) -> tuple[str, ...]:
        return _read_run(run)


_RUN_ANCHORS = _RunAnchors()
_PLAIN_RUNS: set[str] = set()  # runs that hold none: most words
_RUN_CACHE_SIZE = 1 << 17


def _read_run(run: str) -> tuple[str, ...]:
    """The anchors of one run, as `_WORD` tokenizes it (cached): a token starts at a word
    character, at `/` before one, or at `~/` before one, and runs to the next `~` or the end
    (a line number glued to a word, `133-def`, ends at its `-`);
    the last token is a key before `\x02`, a tag before `\x03` when `<` or `/` comes before it."""
    before_lt = run.startswith("\x04")
    core = run[1:] if before_lt else run
    mark = core[-1:] if core.endswith(("\x02", "\x03")) else ""
    if mark:
        core = core[:-1]
    words: list[str] = []
    position, size = 0, len(core)
    while position < size:
        char = core[position]
        following = core[position + 1 : position + 2]
        if char in _STARTS:
            starts = True
        elif char == "/":
            starts = following in _STARTS
        else:
            starts = char == "~" and following == "/" and core[position + 2 : position + 3] in _STARTS
        if not starts:
            position += 1
            continue
        stop = core.find("~", position + 1)
        stop = size if stop < 0 else stop
        if char in _DIGITS and (glued := _GLUED_LINE_NUMBER.fullmatch(core, position, stop)):
            stop = glued.end(1)  # grep's `133-def`: the number is a token, the word after it the next
        last = stop == size
        before = core[position - 1] if position else ("<" if before_lt else "")
        if last and (mark == "\x02" or (mark == "\x03" and before in ("<", "/"))):
            break  # a JSON key or a markup tag: the format, not a fact
        word = _anchor_of(core[position:stop].replace("\x05", ":"))  # an ISO time's colons, marked
        if word is not None and word not in words:
            words.append(word)
        position = stop
    result = tuple(words)
    if len(_RUN_ANCHORS) >= _RUN_CACHE_SIZE or len(_PLAIN_RUNS) >= _RUN_CACHE_SIZE:
        _RUN_ANCHORS.clear()
        _PLAIN_RUNS.clear()
    if result:
        _RUN_ANCHORS[run] = result
    else:
        _PLAIN_RUNS.add(run)
    return result
