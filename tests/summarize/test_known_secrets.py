"""A credential known in one place of a row and used bare in another (trust pass, round 8).

A rule masks `Authorization: Bearer <value>`, a call prints a token out of its file or writes it
into one; the agent then uses the value bare (`Logged in with <value>`). Read turn by turn, that
use has no credential's shape: it reached the LLM prompt, the extractive summary and, as an anchor
a later turn needs, the metrics (`summarize/known_secrets.py`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.summarize.secret_runs import texts_of_a_run
from trajectory_compressor.summarize import known_secrets, written_secrets
from trajectory_compressor.summarize.anchor_index import indexed_request
from trajectory_compressor.summarize.extractive import ExtractiveSummarizer
from trajectory_compressor.summarize.fidelity.anchors import needed_anchors
from trajectory_compressor.summarize.fidelity.windows import WindowFidelity
from trajectory_compressor.summarize.known_secrets import masked_known, row_secrets
from trajectory_compressor.summarize.llm.prompt import build_messages
from trajectory_compressor.summarize.redact import REDACTED, redact_secrets
from trajectory_compressor.summarize.revealed_secrets import secret_file
from trajectory_compressor.types import SummaryRequest, Turn

VALUE = "Zq8wXc7vBn6mAs5dFg4hJk3lPo2iUy1t"


def _call(command: str | None, name: str = "terminal", **arguments: str) -> str:
    given = {"command": command, **arguments} if command is not None else arguments
    return f"Doing it.\n<tool_call>\n{json.dumps({'name': name, 'arguments': given})}\n</tool_call>"


def _result(content: str) -> str:
    return f"<tool_response>\n{json.dumps({'name': 'terminal', 'content': content})}\n</tool_response>"


def _leaked(text: str, value: str = VALUE) -> bool:
    """Whether any 8 characters of `value` show in `text` (a clipped field shows a piece)."""
    return any(value[i : i + 8] in text for i in range(len(value) - 7))


def _read_by_summarizers(counter, turns: list[tuple[str, str]]) -> str:
    """What the LLM prompt and the extractive summary of a region of `turns` show."""
    request = SummaryRequest(turns=tuple(Turn(role, text) for role, text in turns), budget_tokens=300)
    asked, _ = indexed_request(request, counter.count, enabled=True, redact=True)
    prompt = "\n".join(message["content"] for message in build_messages(asked))
    return prompt + "\n" + asyncio.run(ExtractiveSummarizer(counter).summarize(request)).text


NAMED = {  # a rule masks the value where it is given; the next turn uses it bare
    "bearer header": (_call(f"curl -H 'Authorization: Bearer {VALUE}' http://api"), _result("ok")),
    "api key header": (_call(f"curl -H 'X-API-Key: {VALUE}' http://api"), _result("ok")),
    "basic auth": (_call(f"curl -u admin:{VALUE} http://api"), _result("ok")),
    "mysql password": (_call(f"mysql -uroot -p{VALUE} -e 'select 1'"), _result("1")),
    "token flag": (_call(f"hf upload --token {VALUE} org/repo"), _result("ok")),
    "git url": (_call(f"git clone https://{VALUE}@github.com/o/r"), _result("Cloning")),
    "json field": (_call("cat config.json"), _result(json.dumps({"db": {"password": VALUE}}))),
    "yaml field": (_call("cat values.yaml"), _result(f"auth:\n  clientSecret: {VALUE}\n")),
    "env dump": (_call("env"), _result(f"HOME=/root\nMY_SERVICE_SECRET={VALUE}\nPATH=/usr/bin")),
    "shell trace": (_call("bash -x deploy.sh"), _result(f"+ deploy --password {VALUE}")),
    # The rule's span takes in what follows the value (adversarial pass, round 8).
    "code span": (f"I exported `GITHUB_TOKEN={VALUE}` and retried.", _result("ok")),
    "sentence end": (f"Use Bearer {VALUE}.", _result("ok")),
    "next command": (_call(f"export API_KEY={VALUE};ls"), _result("ok")),
    "pipe": (_call(f"API_KEY={VALUE}| deploy"), _result("ok")),
    "sed script": (_call(f"sed -i 's/^API_KEY=.*/API_KEY={VALUE}/' .env"), _result("")),
    "huge log": (_call("bash deploy.sh"), _result(f"export API_KEY={VALUE}\n" + "step ok\n" * 150_000)),
}
WRITTEN = {  # a call writes the value into a credential's file
    "echo": _call(f"echo '{VALUE}' > ~/.vault-token"),
    "printf and tee": _call(f"printf '%s' {VALUE} | sudo tee /run/secrets/api_key"),
    "heredoc": _call(f"cat > ~/.config/hub/token <<'EOF'\n{VALUE}\nEOF"),
    "script": _call(f"python -c \"open('/run/secrets/db_password', 'w').write('{VALUE}')\""),
    "path write": _call(f"python -c \"Path('secrets/hf_token').write_text('{VALUE}')\""),
    "editor": _call(None, name="str_replace_editor", path="/root/.secrets/api_token", file_text=VALUE + "\n"),
    "tee --append": _call(f"echo {VALUE} | tee --append ~/.vault-token"),
    "install from stdin": _call(f"install -m 600 /dev/stdin ~/.config/app/token <<< '{VALUE}'"),
    "here-string": _call(f"cat <<< '{VALUE}' > /run/secrets/api_key"),
    "dd": _call(f"echo {VALUE} | dd of=/run/secrets/stripe"),
    "sed into the file": _call(f"sed -i 's/PLACEHOLDER/{VALUE}/' /run/secrets/api_key"),
    "redirection first": _call(f"> ~/.vault-token echo {VALUE}"),
    "open with mode=": _call(f"python -c \"open('/run/secrets/db_pw', mode='w').write('{VALUE}')\""),
    "expanduser": _call(f"python -c \"Path('~/.anthropic_key').expanduser().write_text('{VALUE}')\""),
    "node": _call(f"node -e \"fs.writeFileSync('/run/secrets/api_key', '{VALUE}')\""),
    "keyring set": _call(f"echo {VALUE} | keyring set svc me"),
    "pass insert": _call(f"echo {VALUE} | pass insert -e web/x"),
    "htpasswd": _call(f"htpasswd -b -c /etc/nginx/.htpasswd admin {VALUE}"),
    "chpasswd": _call(f"echo 'admin:{VALUE}' | chpasswd"),
}
STORES = [  # a client's own store asked for a credential
    "keyring get myservice me",
    "pass show web/github",
    "secret-tool lookup service github",
    "aws configure get aws_secret_access_key",
    "git config --get github.token",
    "npm config get //registry.npmjs.org/:_authToken",
    "dotenv get STRIPE_SECRET",
    "terraform output -raw db_password",
    "heroku config:get API_KEY",
    "bw get password github",
    "lpass show --password github",
    "sops -d --extract '[\"token\"]' secrets.yaml",
    "doctl auth token",
    "vault token create -field=token",
    "read -r T < ~/.vault-token; echo $T",
    # A file in a secrets folder, or named for a key, a password or credentials.
    *(f"cat {path}" for path in ("/run/secrets/db_pw", "/run/secrets/stripe", "~/.anthropic_key", "gcp-key.json")),
    *(f"cat {path}" for path in ("creds.txt", "~/.ansible/vault_pass.txt", "passphrase.txt", "signing_key")),
]


@pytest.mark.parametrize("shape", NAMED)
def test_a_value_a_rule_masks_is_masked_where_it_is_used_bare(counter, shape: str) -> None:
    call, result = NAMED[shape]
    shown = _read_by_summarizers(counter, [("gpt", call), ("tool", result), ("gpt", f"Logged in with {VALUE}.")])
    assert not _leaked(shown), shape


@pytest.mark.parametrize("shape", WRITTEN)
def test_a_value_written_into_a_credentials_file_is_masked_where_it_is_used(counter, shape: str) -> None:
    turns = [("gpt", WRITTEN[shape]), ("tool", _result("")), ("gpt", f"Stored {VALUE}; logging in.")]
    assert not _leaked(_read_by_summarizers(counter, turns)), shape


def test_a_credential_read_out_of_a_clients_own_store_is_masked() -> None:
    for command in STORES:
        masked = masked_known(["" + _call(command), _result(VALUE), f"got {VALUE}"], ["gpt", "tool", "gpt"])
        assert not _leaked("".join(masked)), command


def test_writes_and_settings_that_are_no_credential_are_kept() -> None:
    """A file not named as a credential's, a client's plain setting, a plain word a rule masked in
    one place (`SECRET_KEY = 'something'`: `something` elsewhere is a word)."""
    for call, result in [
        (_call(f"echo '{VALUE}' > notes.txt"), _result("")),
        (_call(f"cat > build.log <<'EOF'\n{VALUE}\nEOF"), _result("")),
        (_call("git config --get user.name"), _result(VALUE)),
        (_call("aws configure get region"), _result(VALUE)),
    ]:
        turns = [call, result, f"Using {VALUE}."]
        assert masked_known(turns, ["gpt", "tool", "gpt"])[2] == f"Using {VALUE}.", call
    turns = ["settings.py has SECRET_KEY = 'something'", "We need something else here."]
    assert masked_known(turns, ["tool", "gpt"])[1] == turns[1]
    assert "something" not in row_secrets(turns, ["tool", "gpt"])


def test_a_passphrase_a_rule_masked_whole_is_masked_where_it_is_used_again() -> None:
    """`PASSWORD='correct horse battery staple'` is masked whole; the phrase, used again bare (`logged
    in with …`), has no credential's shape. A phrase of single spaces is known as one value; a short
    one, or one laid out in columns, is not (a listing's line is no passphrase)."""
    phrase = "correct horse battery staple"
    turns = [f"{_call(f'export ADMIN_PASSWORD={phrase!r}')}", f"Logged in with {phrase} as admin."]
    masked = masked_known(turns, ["gpt", "gpt"])
    assert phrase not in "".join(masked) and masked[1] == f"Logged in with {REDACTED} as admin."
    assert phrase in row_secrets(turns, ["gpt", "gpt"])
    for spaced in ("blue Rocket42x", "blue  Rocket42x sky", "blue\tRocket42x sky"):  # short; two spaces; a tab
        text = f"DB_PASSWORD='{spaced}'"
        assert redact_secrets(text) == f"DB_PASSWORD='{REDACTED}'"
        assert spaced not in row_secrets([text], ["tool"]), spaced


def test_an_env_token_of_letters_and_digits_is_masked_and_a_models_special_token_is_not() -> None:
    assert redact_secrets("export GITHUB_TOKEN=ab12cd34ef56gh") == "export GITHUB_TOKEN=[REDACTED]"
    assert redact_secrets("deploy --token=ab12cd34ef56gh") == "deploy --token=[REDACTED]"
    for setting in ("EOS_TOKEN=endoftext1", "PAD_TOKEN=pad_token1", "MAX_TOKENS=4096", "SORT_KEY=created_at2"):
        assert redact_secrets(setting) == setting


def test_a_known_credential_is_never_a_needed_anchor_in_either_mode() -> None:
    """The anchors a later turn needs are listed in the metrics and told to the LLM when a summary
    missed them: a token a region printed (`cat`) or sent (`export API_KEY=`) and a kept turn uses
    bare was listed (single rows for the printed one; every window for both)."""
    head = [Turn("system", "You are an agent."), Turn("human", "Deploy it.")]
    later = Turn("gpt", f"Calling the API with {VALUE} as the key, from /srv/releases/app-4471.tar.gz.")
    for first, output in [(_call("cat /run/secrets/api_key"), VALUE), (_call(f"export API_KEY={VALUE}"), "")]:
        region = [
            Turn("gpt", first),
            Turn("tool", _result(output)),
            Turn("gpt", "Unpacking /srv/releases/app-4471.tar.gz now."),
        ]
        assert needed_anchors(head, region, [later]) == ("/srv/releases/app-4471.tar.gz",)
        windows = WindowFidelity([*head, *region, later], head=len(head))
        assert windows.needed(len(head) + len(region), len(head) + len(region) + 1, ()) == (
            "/srv/releases/app-4471.tar.gz",
        )


def test_an_anchor_a_later_turn_shows_as_a_credential_is_not_needed() -> None:
    """Neither the turn introducing it nor the one using it shows it as a credential: a kept
    result after both does (`GITHUB_TOKEN=…`). Only turns a rule masks something in are searched
    for it: a plain anchor beside such a turn is still needed."""
    token, build = "ab12cd34ef56gh78", "build-7719-rc"
    region = [Turn("gpt", _call("make release")), Turn("tool", _result(f"release {token} of {build} ready"))]
    later = [
        Turn("gpt", f"Publishing {token} and {build}."),
        Turn("tool", _result(f"export GITHUB_TOKEN={token}\nnothing else")),
    ]
    head = [Turn("system", "You are an agent."), Turn("human", "Release it.")]
    assert needed_anchors(head, region, later) == (build,)
    windows = WindowFidelity([*head, *region, *later], head=len(head))
    assert windows.needed(len(head) + len(region), len(head) + len(region) + 2, ()) == (build,)


def test_a_value_the_kept_head_sends_is_masked_in_the_requests_file_summaries_and_metrics(tmp_path: Path) -> None:
    """End to end: the head sends the token with its header (kept verbatim); the summarized turns
    and the last turn use it bare."""
    head_call = _call(f"curl -H 'Authorization: Bearer {VALUE}' http://api/login")
    prompts, written = texts_of_a_run(
        tmp_path, head_call, _result("ok"), f"token {VALUE} again.", f"Done; the session runs on {VALUE}."
    )
    assert not _leaked(prompts)
    assert not [name for name, text in written.items() if _leaked(text)]


def test_every_credentials_file_name_holds_a_word_the_writes_are_prefiltered_by() -> None:
    """`written_secrets` passes over a command holding none of its hints: each kind of name
    `secret_file` takes must hold one, or a write to it would go unread."""
    names = [
        "api_key", "apikey", "api-key.txt", ".pgpass", "pgpass", ".netrc", ".npmrc", ".pypirc", ".git-credentials",
        "id_rsa", "id_ed25519", "server.pem", "tls.key", "shadow", "db_password", "passwd.old", "vault-token",
        "client_secret.json", "private_key", "privatekey", "credentials",
    ]  # fmt: skip
    for name in names:
        assert secret_file(f"/etc/app/{name}"), name
        assert any(hint in name for hint in written_secrets._HINTS), name


def test_a_known_value_is_masked_with_its_slashes_escaped_or_percent_encoded() -> None:
    value = "Zq8w/Xc7v+Bn6mAs5dFg4hJk3lPo2iUy1t"
    turns = [_call(f"export API_KEY='{value}'"), json.dumps({"log": f"key {value}"}).replace("/", "\\/"), quote(value)]
    masked = masked_known([*turns, f"url ?k={quote(value, safe='')}"], ["gpt", "tool", "gpt", "gpt"])
    assert not any(_leaked(text, value) or _leaked(text, quote(value, safe="")) for text in masked), masked


def test_a_settings_value_read_or_written_beside_a_credential_is_not_masked_everywhere() -> None:
    """`echo $HF_TOKEN_PATH` prints a path, `echo $TOKEN_EXPIRY` a date: masked everywhere, the
    region's paths and dates were blanked (adversarial pass, round 8)."""
    for command, output in [
        ("echo $HF_TOKEN_PATH", "/root/.cache/huggingface/token"),
        ("echo $TOKEN_URL", "https://auth.example.com/oauth/token"),
        ("echo $GIT_ASKPASS", "/usr/lib/git-core/askpass_2"),
        ("cat api_key_rotation_date.txt", "2025-06-30"),
        ("echo $TOKEN_EXPIRY", "2025-06-30T12:00:00Z"),
    ]:
        later = f"Noted {output} for later."
        assert masked_known([_call(command), _result(output), later], ["gpt", "tool", "gpt"])[2] == later, command
    for command in ("echo build-2024abc > out.txt", "install -m 755 build/app_v2024 /usr/local/bin/app_v2024"):
        assert written_secrets_of(command) == [], command


def written_secrets_of(command: str) -> list[str]:
    return list(written_secrets.written_values([_call(command)], ["gpt"]))


def test_many_known_values_are_masked_right_row_after_row() -> None:
    """Over 32 forms the values are searched for by one automaton, kept for the next region of the
    same row: the next row's values must not be masked by the last row's."""
    first = [f"Tk{index:03d}x9Qw7Lp2Zr5" for index in range(20)]
    second = [f"Vm{index:03d}y8Hs6Kd3Nb4" for index in range(20)]
    for values in (first, second, first):
        text = " ".join([*first, *second])
        masked = masked_known([text], ["gpt"], values)[0]
        assert all(value not in masked for value in values)
        assert all(value in masked for value in {*first, *second} - set(values))


def test_the_called_values_of_a_huge_row_are_not_remembered() -> None:
    """A row's called values are remembered for its summary and its fidelity; a huge row's turns
    (a 240 MB log) must not be kept alive by that memo once the row is written."""
    small = [_call("cat /run/secrets/api_key"), _result(VALUE)]
    assert known_secrets.called_values(small, ["gpt", "tool"]) == (VALUE,)
    assert (tuple(small), ("gpt", "tool")) in known_secrets._called_of_rows
    huge = [*small, "x" * (known_secrets._MAX_ROW_CHARS + 1)]
    assert known_secrets.called_values(huge, ["gpt", "tool", "tool"]) == (VALUE,)
    assert (tuple(huge), ("gpt", "tool", "tool")) not in known_secrets._called_of_rows
