"""A password given to an HTTP client's auth option: HTTPie's and xh's `-a user:pass`, `--auth`,
`--auth=`, a bearer token given to `-a`, and curl's `-u` glued (`-ualice:pw`), after other flags
(`-sSfu`), as `--proxy-user`, or quoted with a space. Each reached prompts and summaries (only
curl's spaced `-u user:pw` and `--user` were known)."""

from __future__ import annotations

import pytest

from tests.summarize.test_redact import LAYERS
from trajectory_compressor.summarize.redact import REDACTED, redact_secrets

SECRET = "S3cretPass"
LEAKED = [
    "http -a alice:{} GET https://api.example.com/",
    "$ http --auth alice:{} https://api.example.com/",
    "http --auth={} pie.dev/bearer -A bearer",
    "http --auth=alice:{} https://api.example.com/",
    "https -a 'alice:{}' api.example.com/me",
    "xh -a alice:{} api.example.com/me",
    "http -A bearer -a {} pie.dev/bearer",
    "http --auth-type=digest -a alice:{} pie.dev/digest",
    "http --verify=no \\\n  -a alice:{} \\\n  pie.dev/get",
    "curl -ualice:{} https://x.example.com",
    "curl -sSfu alice:{} https://x.example.com",
    "curl --proxy-user alice:{} -x proxy:3128 https://x.example.com",
    "curl --proxy-user=alice:{} https://x.example.com",
    "curl -u 'alice:{} two' https://x.example.com",
    # `;`, `|` and `&&` inside a quoted argument of the same command separate nothing.
    "curl -H 'Cookie: a=b; c=d' -u alice:{} https://x.example.com",
    "http 'pie.dev/get?a=1&&b=2|3' -a alice:{}",
    # The program run by its path (a Homebrew or venv install, `./xh`): it was looked for only
    # as a word standing alone, and the option passed unread.
    "/opt/homebrew/bin/http -a alice:{} pie.dev/basic-auth",
    "./xh -a alice:{} api.example.com/me",
    "/usr/bin/curl -sSfu alice:{} https://x.example.com",
    "C:\\tools\\curl.exe -ualice:{} https://x.example.com",
]


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("template", LEAKED)
def test_an_http_clients_auth_option_loses_its_password(template: str, layer: str) -> None:
    encode, decode = LAYERS[layer]
    redacted = redact_secrets(encode(template.format(SECRET)))
    decoded = decode(redacted)
    assert SECRET not in decoded and REDACTED in decoded, redacted
    assert " two" not in decoded or "two'" not in decoded  # a quoted password is masked whole
    assert redact_secrets(redacted) == redacted


KEPT = [
    "rsync -a host:/data/ ./backup",
    "ls -a ~/x:y",
    "git commit -a -m 'fix: parse host:port'",
    "http -a alice pie.dev/basic-auth",  # HTTPie asks for the password
    "http -a $USER:$PASS pie.dev/get",
    "docker run -u 1000:1000 image",
    "curl -u 1000:1000 x",
    "mongod --auth --bind_ip 0.0.0.0:27017",
    "curl -H 'User-Agent: a:b' --user-agent x:y https://x.example.com",
    "sort -u a:b | uniq",  # no curl on the line
    "tar -a -cf out.tar.gz src",
    "http --auth-type=bearer pie.dev/get",
    # Another command after the client's, joined by `&&`, `||`, `|` or `;`: its option is its own.
    "http pie.dev/get && rsync -a host:/data/ ./backup",
    "curl -s https://x.example.com | sort -u a:b",
    "curl https://x.example.com; sort -su a:b notes.txt",
    "xh pie.dev/get || ls -a host:/x",
    "cd ~/src/http && ls -a host:/x",  # a folder named as a client, then another command
    "python -m http.server -a 0.0.0.0:8000",
]


@pytest.mark.parametrize("text", KEPT)
def test_other_programs_and_placeholders_are_left_alone(text: str) -> None:
    assert redact_secrets(f"curl https://example.com/\n{text}\n") == f"curl https://example.com/\n{text}\n"
