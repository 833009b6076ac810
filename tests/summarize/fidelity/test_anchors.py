"""Future-grounded fidelity: the anchors the kept turns need, and how many a summary holds."""

from __future__ import annotations

import json

from trajectory_compressor.summarize.fidelity.anchor_tokens import anchor_kind, anchors_in
from trajectory_compressor.summarize.fidelity.anchors import future_fidelity, needed_anchors
from trajectory_compressor.summarize.redact import redact_secrets
from trajectory_compressor.types import Turn


def call(name: str, **arguments: object) -> Turn:
    return Turn("gpt", f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>")


def result(content: object) -> Turn:
    return Turn("tool", f"<tool_response>\n{json.dumps({'content': content})}\n</tool_response>")


def test_anchors_are_exact_technical_strings_not_words() -> None:
    text = (
        "Edit /testbed/django/db/models/query.py and src/mesh.py: KeyError in iter_chunk_chunks, "
        "id EHGLP3 for mia_li_3668, commit 9f3c2ab71d, v1.2.3 on 2025-12-20, total 1234 or 19.99; "
        "see https://x.org/a?b=1 and getUser, not np.array, f.read or /bin/bash; the 42 cats"
    )
    assert list(anchors_in(text)) == [
        "/testbed/django/db/models/query.py", "src/mesh.py", "KeyError", "iter_chunk_chunks", "EHGLP3",
        "mia_li_3668", "9f3c2ab71d", "v1.2.3", "2025-12-20", "1234", "19.99", "https://x.org/a?b=1", "getUser",
    ]  # fmt: skip
    assert anchor_kind("the") is None and anchor_kind("42") is None and anchor_kind("e.g") is None


def test_json_escapes_do_not_glue_to_the_next_anchor() -> None:
    assert list(anchors_in('{"out": "ok\\nsrc/a.py\\tmia_li_3668"}')) == ["src/a.py", "mia_li_3668"]


def test_needed_anchors_are_used_later_introduced_in_the_region_and_not_visible_before() -> None:
    head = [Turn("human", "Cancel reservation for user mia_li_3668.")]
    region = [
        call("get_user", user_id="mia_li_3668"),
        result({"reservations": ["EHGLP3", "K2M9QX"], "gift_card": "gift_card_7219"}),
    ]
    after = [
        result({"note": "K2M9QX is shown again here"}),
        call("cancel_reservation", reservation_id="EHGLP3"),
        call("refund", reservation_id="K2M9QX", payment="gift_card_7219"),
        Turn("human", "And EHGLP3?"),
    ]
    # mia_li_3668: in the head; K2M9QX: a kept tool result showed it before its use
    assert needed_anchors(head, region, after) == ("EHGLP3", "gift_card_7219")


def test_score_is_the_share_the_summary_states() -> None:
    head = [Turn("human", "Fix the test.")]
    region = [call("view", path="geomesh/mesh.py"), result("def iter_chunk_chunks(n): ... line 245")]
    after = [call("edit", path="geomesh/mesh.py", line=245, new="iter_chunk_chunks")]
    full = future_fidelity(head, region, after, "Viewed mesh.py; iter_chunk_chunks at line 245.")
    assert full.score == 1.0 and full.to_metrics() == {"score": 1.0, "anchors": 3, "kept": 3, "missed": []}
    half = future_fidelity(head, region, after, "Looked at the chunking code (iter_chunk_chunks).")
    assert half.missed == ("geomesh/mesh.py", "245")
    assert half.to_metrics()["score"] == round(1 / 3, 4)
    assert future_fidelity(head, region, [Turn("gpt", "Done.")], "x").score is None


def test_missed_anchors_are_shown_with_credentials_masked() -> None:
    secret = "ghp_" + "Ab3dE5gH7jK9" * 3
    region = [result(f"token {secret} for build b_4417")]
    after = [call("push", token=secret, build="b_4417")]
    shown = future_fidelity([], region, after, "nothing").to_metrics()["missed"]
    assert shown == ["b_4417"]  # the token is a credential where it is used: not needed, not shown


def test_json_keys_and_markup_tags_are_the_format_not_anchors() -> None:
    text = '<tool_call>\n{"name": "get_user", "arguments": {"user_id": "mia_li_3668"}}\n</tool_call>'
    assert list(anchors_in(text)) == ["get_user", "mia_li_3668"]
    escaped = '{"content": "{\\"user_id\\": \\"mia_li_3668\\"}"}'
    assert list(anchors_in(escaped)) == ["mia_li_3668"]


def test_a_credential_by_the_key_it_is_given_to_is_never_needed() -> None:
    """`hunter2isgood77` is a word on its own; the `password` key around it in the turn that
    introduced it, or in the turn that uses it, makes it a credential no summary may state."""
    region = [
        call("login", user="bob", password="hunter2isgood77"),
        result("logged in; session s_9f3c2ab71d"),
        result("DB_PASSWORD=Kp3nX9vQ2mL7 written to .env"),
    ]
    after = [
        call("login", user="bob", password="hunter2isgood77"),
        call("psql", dsn="db_main_01", token="Kp3nX9vQ2mL7", session="s_9f3c2ab71d"),
    ]
    assert needed_anchors([], region, after) == ("s_9f3c2ab71d",)
    plain = [call("echo", text="hunter2isgood77")]  # no key says it is secret: an ordinary value
    assert needed_anchors([], plain, [call("grep", pattern="hunter2isgood77")]) == ("hunter2isgood77",)
    missed = future_fidelity([], region, after, "nothing").to_metrics()["missed"]
    assert missed == ["s_9f3c2ab71d"]


def test_an_email_is_one_anchor_whole() -> None:
    """A user quotes their email and later turns type it verbatim: `mia.li3818@example.com`, not
    `mia.li3818` and `example.com`; a sentence's full stop and a mail header's brackets around it
    are not part of it, nor is it a markup tag."""
    assert list(anchors_in("email: mia.li3818@example.com ok")) == ["mia.li3818@example.com"]
    assert list(anchors_in("It is yara_garcia_1905@gmail.com.")) == ["yara_garcia_1905@gmail.com"]
    assert list(anchors_in("Author: Jon Dufresne <jon.dufresne@gmail.com>")) == ["jon.dufresne@gmail.com"]
    assert list(anchors_in('{"email": "mia+travel@mail.example.co.uk"}')) == ["mia+travel@mail.example.co.uk"]
    escaped = '{"content": "{\\"email\\": \\"ivan.muller6623@example.com\\"}"}'
    assert list(anchors_in(escaped)) == ["ivan.muller6623@example.com"]
    assert anchor_kind("mia.li3818@example.com") == "email" and anchor_kind("mia@x") is None


def test_only_an_emails_at_joins_a_token() -> None:
    """Only an email's `@` joins a token: its domain must end in a top-level name of letters. A
    decorator, a package's version (`pkg@1.2.3`: the version is the anchor) and an ssh/scp target
    whose host has no domain are read as ever; an scp target with one (`git@github.com:org/repo.git`)
    names an account on a host, as an email does, and is read as one."""
    assert list(anchors_in("@property\n@app.route('/x')\ndef get_user(): ...")) == ["app.route", "get_user"]
    assert list(anchors_in("npm install lodash@4.17.21 @types/node@18.0.0")) == ["4.17.21", "types/node", "18.0.0"]
    assert list(anchors_in("scp out.log root@web01:/srv/app_logs")) == ["out.log", "web01", "/srv/app_logs"]
    assert list(anchors_in("git clone git@github.com:org/repo.git")) == ["git@github.com", "org/repo.git"]
    assert list(anchors_in("user@localhost x@1.2.3.4 a@b.c")) == ["1.2.3.4"]


def test_an_email_the_region_introduced_is_needed_whole_and_is_no_credential() -> None:
    region = [
        call("get_user_details", user_id="mia_li_3818"),
        result({"email": "mia.li3818@example.com", "password": "Hunter2isgood77"}),
    ]
    after = [
        Turn("human", "Send it to mia.li3818@example.com please."),
        call("send_certificate", to="mia.li3818@example.com", password="Hunter2isgood77"),
    ]
    assert needed_anchors([Turn("human", "I am mia_li_3818.")], region, after) == ("mia.li3818@example.com",)


def test_a_line_number_grep_glued_to_code_is_an_anchor_of_its_own() -> None:
    """grep -n / -C print `133:def ...` and `134-    return x`: a line of code at the left margin
    glues to its number by the `-` (`133-def`), which no later turn types. The number is a token
    of its own when one word without another `-` follows it; ids and dates with more dashes stay whole."""
    assert list(anchors_in("133-def foo(x):\n134-    return x")) == ["133", "134"]
    assert list(anchors_in("1210-CONSTANT_NAME = 3\n1211:class Meta:")) == ["1210", "CONSTANT_NAME", "1211"]
    grep = "src/geo/mesh.py:245:def iter_chunk_chunks(n):"  # with a file name, a match's prefix is `:`-separated
    assert list(anchors_in(grep)) == ["src/geo/mesh.py", "245", "iter_chunk_chunks"]
    assert list(anchors_in("a 4-digit year on 64-bit builds")) == []
    ids = ["2024-05-14", "550e8400-e29b-41d4", "mia_li_3668", "HAT069", "v1.2.3", "EHGLP3", "credit_card_4421486"]
    ids += ["06-Nov-26", "12345678-abcd-4ef0"]
    assert list(anchors_in(" ".join(ids))) == ids


def test_a_new_line_written_in_code_inside_json_ends_the_token_before_it() -> None:
    """A call's JSON holds `print('rows\\\\nSQL')` for the code `print('rows\\nSQL')`: the `n` is
    the new line's, not the start of a name `nSQL` no later turn types. A Windows path's
    backslash before a lower-case name (`C:\\\\new_dir`) is no new line: the name stays whole."""
    call_json = '{"command": "python -c \\"print(\'rows\\\\nSQL_QUERY\\\\nTesting now\')\\" && ls C:\\\\new_dir"}'
    assert list(anchors_in(call_json)) == ["SQL_QUERY", "new_dir"]
    assert list(anchors_in('"a\\\\tMAX_SIZE\\\\r\\\\n"')) == ["MAX_SIZE"]
    assert list(anchors_in("rows\\nSQL_QUERY")) == ["SQL_QUERY"]  # decoded: the text's own escape


def test_a_sed_address_is_read_as_its_line_number() -> None:
    """`sed -n '1140,1150p'` prints lines 1140 to 1150: the command glued to the last address
    (`p`rint, `d`elete) is not part of the value a later turn uses. A hex hash ending in `d` keeps it."""
    assert list(anchors_in("sed -n '1140,1150p' file.py")) == ["1140", "1150", "file.py"]
    assert list(anchors_in("sed -i '245d' src/a.py; sed -n 980p x.txt; sed -n 123456p y")) == [
        "245", "src/a.py", "980", "x.txt", "123456",
    ]  # fmt: skip
    assert list(anchors_in("commit 1234567d, build 4521d")) == ["1234567d", "4521"]


def test_a_url_cut_at_a_mask_is_read_without_its_query() -> None:
    """A mask (`[REDACTED]`) ends a URL as any bracket does, leaving `...?token=`, which names
    nothing a later turn types. A URL ending in `=` is read up to its query (its endpoint: no
    credential), or, with no query to drop, is no anchor; a URL with its values whole stays whole."""
    assert list(anchors_in("see https://example.com/a/b?token=[REDACTED]&x=1")) == ["https://example.com/a/b"]
    assert list(anchors_in("GET https://api.x.io/v1/?limit=50&key=[REDACTED]")) == ["https://api.x.io/v1"]
    assert list(anchors_in("https://x.io/a;sid=[REDACTED] and https://x.org/a?b=1")) == ["https://x.org/a?b=1"]


def test_a_url_whose_credentials_were_masked_is_read_whole_without_them() -> None:
    """Redaction keeps a URL's user and masks its password (`https://alice:[REDACTED]@host/x`):
    read as it stands, the mask cut it into `https://alice:` (naming nothing a later turn types)
    and a host-less rest. Without the masked credentials the URL is whole again."""
    masked = redact_secrets("git clone https://alice:hunter2pass@git.example.com/org/repo.git")
    assert "[REDACTED]@" in masked
    assert list(anchors_in(masked)) == ["https://git.example.com/org/repo.git"]
    assert list(anchors_in("x https://[REDACTED]@host.io/a y")) == ["https://host.io/a"]
    assert list(anchors_in("https://alice@host.io/a")) == ["https://alice@host.io/a"], "no mask: as written"
