"""Credentials a document's structure names: a list given to a credential's name outside JSON,
and the value of an HTML password field.

`assignment_rules` masks a JSON list or object given to a credential's name (`"password": [...]`).
Written otherwise it reached summaries whole (the extractive summary's exact values quoted it):
a YAML block sequence (`password:` then `  - VALUE` lines), a YAML flow sequence or a code list
with an unquoted name (`password: [VALUE]`, `password = ["VALUE"]`); and a form's password field
in a page an agent fetched (`<input type="password" value="VALUE">`), whose name is an attribute
apart from its value.
"""

from __future__ import annotations

import re

from trajectory_compressor.summarize.assignment_rules import (
    ASSIGNMENT_STEMS,
    CREDENTIAL_NAMES,
    assignment_value,
    starts_name,
)
from trajectory_compressor.summarize.secret_rules import Rule, Span, credential_value

_ITEMS = 64  # list items read at most after a name
_ITEM_CHARS = 512

# A credential's name, `:` or `=`, then a flow list's `[` or a block list's first `- ` item.
_LIST = re.compile(
    r"(?P<name>" + CREDENTIAL_NAMES + r")[\"']?[ \t]{0,4}(?::|=)[ \t]{0,16}"
    r"(?:(?P<flow>\[)|[ \t]*\r?\n(?P<indent>[ \t]{0,32})-[ \t])"
)
_BLOCK_ITEM = re.compile(r"[ \t]{0,32}-[ \t]+([^\r\n]{1,512})")


def _list_span(match: re.Match[str], text: str) -> Span | None:
    """The items of the list given to the name: inside the flow list's brackets (on its line), or
    every `- ` item at the first item's indent."""
    if not starts_name(text, match.start("name")):
        return None
    if match.group("flow") is not None:
        opening = match.end() - 1
        close = text.find("]", opening, opening + _ITEM_CHARS)
        newline = text.find("\n", opening, opening + _ITEM_CHARS)
        if close < 0 or (0 <= newline < close):
            return None
        inside = text[opening + 1 : close]
        if "(" in inside:  # code: `password = [get_password()]`
            return None
        return (opening + 1, close) if _holds_a_value(inside.split(",")) else None
    indent = match.group("indent")
    start = end = match.end()
    items = []
    position = match.start("indent")
    for _ in range(_ITEMS):
        item = _BLOCK_ITEM.match(text, position)
        if item is None or text[position : position + len(indent) + 1] != indent + "-":
            break
        end = item.end(1)
        items.append(item.group(1))
        newline = text.find("\n", end)
        if newline < 0:
            break
        position = newline + 1
    return (start, end) if _holds_a_value(items) else None


# A validator's rule with its argument (Laravel's `min:8`, `max:64`, `regex:/[A-Z]/`, `same:pw`):
# the field's constraints, listed under its name as a value would be.
_VALIDATION_RULE = re.compile(
    r"(?:min|max|size|between|digits(?:_between)?|gte?|lte?|(?:not_)?regex|same|different|(?:not_)?in"
    r"|required_(?:if|unless|with|without)(?:_all)?|starts_with|ends_with|exists|unique|confirmed"
    r"|min_length|max_length|minlength|maxlength|length|pattern):\S{0,128}",
    re.IGNORECASE,
)


def _holds_a_value(items: list[str]) -> bool:
    """Whether a list's items hold a credential's value, judged as an assignment's value is
    (`assignment_rules.assignment_value`): a word (`required`, `min`), a placeholder or a
    validator's rule (`min:8`) is none."""
    for item in items:
        item = item.strip(" \t\r")
        quoted = item[:1] in "\"'" and item[-1:] == item[:1] and len(item) > 1
        value = item[1:-1] if quoted else item
        if _VALIDATION_RULE.fullmatch(value) is not None:
            continue
        if "REDACTED" not in value and credential_value(value) and assignment_value(value, quoted):
            return True
    return False


# An HTML password field: the `value` attribute of an `<input>` whose type is `password`.
_INPUT_TAG = re.compile(r"<input\b[^<>]{0,1024}>", re.IGNORECASE)
_PASSWORD_TYPE = re.compile(r"\btype\s{0,4}=\s{0,4}[\"']?password\b", re.IGNORECASE)
_VALUE_ATTRIBUTE = re.compile(r"\svalue\s{0,4}=\s{0,4}(?:\"([^\"]{1,512})\"|'([^']{1,512})'|([^\s\"'>]{1,512}))", re.I)


def _password_field(match: re.Match[str], text: str) -> Span | None:
    if _PASSWORD_TYPE.search(match.group()) is None:
        return None
    value = _VALUE_ATTRIBUTE.search(text, match.start(), match.end())
    if value is None:
        return None
    group = next(index for index in (1, 2, 3) if value.group(index) is not None)
    return value.span(group) if credential_value(value.group(group)) else None


MARKUP_RULES = (
    Rule("credential-list", ASSIGNMENT_STEMS, _LIST, _list_span, folded=True),
    Rule("html-password-field", ("<input",), _INPUT_TAG, _password_field),
)
