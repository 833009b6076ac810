"""A corpus of planted secrets, one per rule family, pushed through both summarizers for real.

Each secret sits in the middle of a trajectory (in a tool output, a tool-call argument, the
value of a call's `password` argument, an error line and a user message), inside the region
that gets summarized, and again in the escaped forms real rows hold it in: a Hermes tool
result's JSON `content` (`\\n` between lines), JSON inside that (`\\\\n`), Gson's `\\u003d`,
OpenAI-style arguments (a JSON string inside the call) and a `<think>` block quoting JSON. The
extractive run through the CLI (with its `--html-report`), the LLM run against a local endpoint
that records every prompt and echoes it back (with the Authorization header it received), a
model that quotes the secrets back, the `requests` file and a `--batch` run must leave no
secret, and no 8-character fragment of one, in any prompt, request file, output file, stderr,
`--json` line or the cache. Control runs with `--no-redact-secrets` show the secrets do reach
the summaries and files, so the test can fail.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_jsonl, run_cli, write_jsonl
from tests.fake_batch_api import FakeBatchServer
from tests.fake_openai_server import FakeServerThread, prompt_text
from trajectory_compressor.summarize.anchor_index import plan_index
from trajectory_compressor.summarize.anchor_rank import ranked_anchors
from trajectory_compressor.summarize.redact import REDACTED, redact_secrets
from trajectory_compressor.types import SummaryRequest, Turn

_RNG = random.Random(20261123)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
UPPER_DIGITS = string.ascii_uppercase + string.digits


def _r(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _b64(n: int) -> str:
    return _r(n, ALNUM + "+/")


PEM_BODY = "\n".join(_b64(64) for _ in range(12))
PGP_BODY = "\n".join(_b64(64) for _ in range(8))
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiI" + _r(40) + "." + _r(43, ALNUM + "_-")


def _digitless_b64() -> str:
    """A base64 password with no digit in it (`cGFzc3dvcmQ=`): its letters alone read as a name."""
    while True:
        encoded = base64.b64encode(_r(10, string.ascii_lowercase).encode()).decode()
        if encoded.endswith("=") and not any(ch.isdigit() or ch in "+/" for ch in encoded):
            return encoded


DIGITLESS_B64 = _digitless_b64()


def _wrapped(token: str, width: int) -> str:
    """`token` as a terminal `width` columns wide prints it: a line break every `width` characters."""
    return "\n".join(token[i : i + width] for i in range(0, len(token), width))


# (family, text around the secret with {} where it goes, the secret)
PLANTED: list[tuple[str, str, str]] = [
    ("aws-key-id", "export AWS_ACCESS_KEY_ID={}", "AKIA" + _r(16, string.ascii_uppercase + string.digits)),
    ("aws-secret", "aws_secret_access_key = {}", _r(40, ALNUM + "/+")),
    ("gcp-api-key", "curl 'https://maps.googleapis.com/maps/api/geocode/json?key={}'", "AIza" + _r(35)),
    (
        "gcp-service-account",
        '{{"type": "service_account", "private_key": '
        '"-----BEGIN PRIVATE KEY-----\\n{}\\n-----END PRIVATE KEY-----\\n"}}',
        _b64(300),
    ),
    (
        "azure-storage",
        "DefaultEndpointsProtocol=https;AccountName=prodlogs;AccountKey={};EndpointSuffix=core.windows.net",
        _b64(86) + "==",
    ),
    ("github-classic", "git remote set-url origin https://{}@github.com/acme/api.git", "ghp_" + _r(36)),
    ("github-fine-grained", "GH_TOKEN={} gh pr list", "github_pat_" + _r(22) + "_" + _r(59)),
    ("gitlab", "PRIVATE-TOKEN: {}", "glpat-" + _r(20)),
    ("gitlab-deploy", "git clone https://deploy:{}@gitlab.example.com/g/p.git", "gldt-" + _r(20)),
    ("bitbucket", "BITBUCKET_APP_PASSWORD {} in use", "ATBB" + _r(32)),
    ("circleci", "circleci setup --token {}", "CCIPAT_" + _r(22) + "_" + _r(40, HEX)),
    ("slack-bot", "SLACK_BOT_TOKEN={}", "xoxb-" + _r(12, string.digits) + "-" + _r(13, string.digits) + "-" + _r(24)),
    ("slack-app", "app token {} loaded", "xapp-1-A0" + _r(9, string.ascii_uppercase) + "-" + _r(13, string.digits)),
    ("slack-webhook", "POST https://hooks.slack.com/services/{}", "T0" + _r(8) + "/B0" + _r(8) + "/" + _r(24)),
    ("discord-webhook", "https://discord.com/api/webhooks/{}", _r(18, string.digits) + "/" + _r(68, ALNUM + "_-")),
    (
        "discord-bot",
        "discord.py bot token: {}",
        "M" + _r(25, ALNUM) + "." + _r(6, ALNUM) + "." + _r(38, ALNUM),
    ),
    ("telegram", "curl https://api.telegram.org/bot{}/getMe", _r(10, string.digits) + ":AA" + _r(33, ALNUM + "_-")),
    ("stripe", "stripe.api_key = '{}'", "sk_live_" + _r(24)),
    ("stripe-restricted", "STRIPE_RK {}", "rk_live_" + _r(24)),
    ("square", "square access {}", "sq0atp-" + _r(22)),
    (
        "braintree",
        "BRAINTREE_TOKEN {}",
        "access_token$production$" + _r(16, string.ascii_lowercase + string.digits) + "$" + _r(32, HEX),
    ),
    ("npm", "//registry.npmjs.org/:_authToken={}", "npm_" + _r(36)),
    ("pypi", "twine upload -p {} dist/*", "pypi-AgEIcHlwaS5vcmc" + _r(60, ALNUM + "_-")),
    ("rubygems", "GEM_HOST_API_KEY {}", "rubygems_" + _r(48, HEX)),
    ("nuget", "dotnet nuget push -k {}", "oy2" + _r(43, string.ascii_lowercase + string.digits)),
    ("docker", "docker login -u acme -p {}", "dckr_pat_" + _r(27, ALNUM + "_-")),
    ("openai", "OPENAI_API_KEY={}", "sk-proj-" + _r(48)),
    ("anthropic", "x-api-key: {}", "sk-ant-api03-" + _r(93, ALNUM + "_-") + "AA"),
    ("huggingface", "huggingface-cli login --token {}", "hf_" + _r(34)),
    ("groq", "GROQ {}", "gsk_" + _r(52)),
    ("replicate", "REPLICATE {}", "r8_" + _r(37)),
    ("sendgrid", "sendgrid key {}", "SG." + _r(22, ALNUM + "_-") + "." + _r(43, ALNUM + "_-")),
    ("twilio", "twilio api key {}", "SK" + _r(32, HEX)),
    ("mailgun", "mailgun {}", "key-" + _r(32, HEX)),
    ("shopify", "X-Shopify-Access-Token: {}", "shpat_" + _r(32, HEX)),
    ("heroku", "HEROKU {}", "HRKU-" + _r(60, ALNUM + "_-")),
    ("digitalocean", "doctl auth init -t {}", "dop_v1_" + _r(64, HEX)),
    ("databricks", "databricks token {}", "dapi" + _r(32, HEX)),
    ("atlassian", "jira token {}", "ATATT3xFfGF0" + _r(180, ALNUM + "_-") + "=" + _r(8, HEX.upper())),
    ("linear", "LINEAR {}", "lin_api_" + _r(40)),
    ("notion", "NOTION {}", "secret_" + _r(43)),
    ("doppler", "DOPPLER {}", "dp.pt." + _r(43)),
    ("vault", "VAULT {}", "hvs." + _r(90, ALNUM + "_-")),
    ("jwt", "cookie: session={}", JWT),
    ("pem", "cat id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----", PEM_BODY),
    ("pgp", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{}\n-----END PGP PRIVATE KEY BLOCK-----", PGP_BODY),
    ("postgres-url", "DATABASE_URL=postgresql://app:{}@db.internal:5432/prod", "Xk9" + _r(17)),
    ("amqp-url", "broker amqp://guest:{}@rabbit:5672//", _r(18)),
    (
        "basic-auth",
        "curl -H 'Authorization: Basic {}' https://api.internal",
        base64.b64encode(b"deploy:" + _r(14).encode()).decode(),
    ),
    ("bearer", "Authorization: Bearer {}", _r(40, ALNUM + "._-")),
    ("github-token-header", "Authorization: token {}", "gho_" + _r(36)),
    ("password-assignment", 'DB_PASSWORD="{}"', "Tr0ub4dor-" + _r(10)),
    ("high-entropy-assignment", "WEBHOOK_SIGNING_KEY={}", _r(32)),
    ("aws-secret-env", "AWS_SECRET_ACCESS_KEY={}", _r(40, ALNUM + "/+")),
    ("service-token-env", "MY_SERVICE_TOKEN={}", _r(32)),
    ("internal-api-key-env", "INTERNAL_API_KEY={}", _r(32)),
    ("short-pass-name", "DB_PASS={}", "pw-" + _r(12)),
    ("mysql-pass-name", "MYSQL_PASS={}", "pw-" + _r(12)),
    ("smtp-pass-name", "SMTP_PASS={}", "pw-" + _r(12)),
    ("admin-pass-yaml", "ADMIN_PASS: {}", "pw-" + _r(12)),
    ("pgpassword-word", "PGPASSWORD={} psql -h db -U app", _r(12, string.ascii_lowercase)),
    ("password-option", "mysqldump --password={} app", _r(14)),
    ("password-option-spaced", "docker login -u ci --password {} registry.example.com", "pw-" + _r(14)),
    ("mysql-p", "mysql -uroot -p{} app", _r(14)),
    ("mysql-p-quoted", "mysql -h db -u root -p'{}' app", "pw " + _r(14)),
    ("sshpass", "sshpass -p '{}' ssh deploy@host", _r(14)),
    ("bcrypt-hash", "1|admin|{}|2024-01-01", "$2b$12$" + _r(53, ALNUM + "./")),
    ("shadow-line", "root:{}:19000:0:99999:7:::", "$6$" + _r(16, ALNUM) + "$" + _r(86, ALNUM + "./")),
    # Round 5: a token right after a terminal colour code (raw here; the trajectory's JSON layers
    # hold it as `\u001b[36m`), in every family that was seen kept.
    ("ansi-github", "gh auth status -t\n  - Token: \x1b[36m{}\x1b[0m", "ghp_" + _r(36)),
    ("ansi-aws", "\x1b[1;32mAWS_ACCESS_KEY_ID\x1b[0m=\x1b[33m{}\x1b[0m", "AKIA" + _r(16, UPPER_DIGITS)),
    ("ansi-openai", "\x1b[32m{}\x1b[0m loaded from .env", "sk-proj-" + _r(48)),
    ("ansi-slack", "\x1b[2K\x1b[1Gtoken=\x1b[35m{}", f"xoxb-{_r(12, string.digits)}-{_r(13, string.digits)}-{_r(24)}"),
    ("ansi-huggingface", "\x1b]8;;https://huggingface.co/settings/tokens\x1b\\{}\x1b]8;;\x1b\\", "hf_" + _r(34)),
    ("ansi-gitlab", "PRIVATE-TOKEN: \x1b[31m{}\x1b[39m", "glpat-" + _r(20)),
    # A query string's parameter that is not the last one, `&` or `;` after it.
    ("query-not-last", "< GET /v1/items?api_token={}&limit=50 HTTP/1.1", _r(32)),
    ("query-semicolon", '10.0.0.7 - - "GET /export?api_key={};format=csv HTTP/1.1" 200', "k-" + _r(24)),
    ("query-percent-encoded", "next=https%3A%2F%2Fapp%2Fcb%3Fclient_secret%3D{}%26state%3Dxyz", _r(28)),
    # Values ending in base64 padding, and a kubectl secret's (its letters alone look like a name).
    ("padded-secret-key", "SECRET_KEY={}", base64.b64encode(_r(13).encode()).decode()),
    ("padded-password", "DB_PASSWORD={}", _r(11) + "=="),
    ("kubectl-secret", "apiVersion: v1\ndata:\n  password: {}\n  username: YWRtaW4=\nkind: Secret", DIGITLESS_B64),
    # An `=` escaped for HTML or Python, an invisible character inside a token.
    ("html-escaped-equals", "<td>DB_PASSWORD&#61;{}</td>", "pw-" + _r(14)),
    ("hex-escaped-equals", "print('API_KEY\\x3d{}')", _r(30)),
    ("zero-width-github", "pushed with {} yesterday", "ghp_" + _r(10) + "\u200b" + _r(26)),
    ("soft-hyphen-aws", "key id {} in use", "AKIA" + _r(8, UPPER_DIGITS) + "\u00ad" + _r(8, UPPER_DIGITS)),
    ("word-joiner-openai", "OPENAI {}", "sk-proj-" + _r(20) + "\u2060" + _r(28)),
    ("bom-huggingface", "hf token {}", "hf_" + _r(17) + "\ufeff" + _r(17)),
    # Round 6: programs that take a password by a short option of their own, or on stdin; a
    # Go-style option; a whole URL percent-encoded.
    ("docker-login-p", "docker login -u ci -p {} registry.example.com", "pw-" + _r(14)),
    ("redis-cli-a", "redis-cli -h cache -a {} ping", _r(16)),
    ("ldapsearch-w", "ldapsearch -x -D cn=admin,dc=ex -w {} -b dc=ex", "pw-" + _r(14)),
    ("smbclient-user-percent", "smbclient //fs/share -U alice%{} -c ls", "pw-" + _r(14)),
    ("sudo-piped", "echo '{}' | sudo -S systemctl restart app", "pw-" + _r(14)),
    ("go-flag", "./server -password {} -listen :8080", "pw-" + _r(14)),
    ("percent-encoded-url-password", "GET /login?next=https%3A%2F%2Fdeploy%3A{}%40git.example.com", "pw" + _r(14)),
    # Round 7: Docker's config.json (`"auth"`: base64 of user:password), a `.netrc` written a
    # token pair a line.
    (
        "docker-config-auth",
        '{{"auths": {{"registry.example.com": {{"auth": "{}"}}}}}}',
        base64.b64encode(f"deploy:{_r(16)}".encode()).decode(),
    ),
    ("set-cookie-session", "< HTTP/1.1 200 OK\n< Set-Cookie: sessionid={}; Path=/; HttpOnly", _r(32)),
    ("cookie-header-curl", "curl -H 'Cookie: csrftoken=abc; session={}' https://app.example.com/api", _r(24)),
    ("curl-cookie-option", "curl -s -b 'sessionid={}' https://app.example.com/admin", _r(32)),
    ("url-token-user", "git clone https://{}@github.com/org/app.git", _r(40, HEX)),
    ("netrc-multiline", "machine api.example.com\n  login deploy\n  password {}", "pw-" + _r(16)),
    # Round 7: a credential through base64 or hex (`encoded_secrets`): a hex dump, an env file
    # piped through `base64 -d`, URL-safe base64 without padding, base64 twice.
    ("hex-dump-openai", "$ xxd -p key.bin\n{}", f"OPENAI_API_KEY=sk-proj-{_r(48)}".encode().hex()),
    (
        "base64-env-github",
        "echo {} | base64 -d > .env",
        base64.b64encode(f"GITHUB_TOKEN=ghp_{_r(36)}\n".encode()).decode(),
    ),
    (
        "base64url-aws",
        "?state={}&next=/",
        base64.urlsafe_b64encode(f"id=AKIA{_r(16, UPPER_DIGITS)}".encode()).decode().rstrip("="),
    ),
    (
        "base64-twice-slack",
        "blob: {}",
        base64.b64encode(
            base64.b64encode(f"xoxb-{_r(12, string.digits)}-{_r(13, string.digits)}-{_r(24)}".encode())
        ).decode(),
    ),
    # Round 8: a generated password's symbols, a name and its value given apart, AWS's secret
    # beside its key id, an Azure SAS signature, an unknown Authorization scheme, UUID tokens,
    # programs given a password as an argument, Oracle's user/password, SQL's ALTER USER.
    ("symbols-password", "docker run -e MYSQL_ROOT_PASSWORD={} mysql:8", "Xk9*" + _r(8) + "!(q)"),
    ("name-value-object", '{{"name": "DB_PASSWORD", "value": "{}"}}', "pw-" + _r(16)),
    ("getenv-default", 'os.getenv("API_KEY", "{}")', _r(24)),
    ("dockerfile-env", "ENV DB_PASSWORD {}", "pw-" + _r(16)),
    ("aws-credentials-csv", "AKIA" + _r(16, UPPER_DIGITS) + ",{}", _r(20, ALNUM) + "/" + _r(19, ALNUM)),
    ("azure-sas", "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sr=b&sp=r&sig={}", _r(30) + "%3D"),
    ("authorization-other-scheme", "Authorization: SSWS {}", "00" + _r(40, ALNUM + "_-")),
    ("uuid-token", "SNYK_TOKEN={}", f"{_r(8, HEX)}-{_r(4, HEX)}-4{_r(3, HEX)}-a{_r(3, HEX)}-{_r(12, HEX)}"),
    ("keytool-storepass", "keytool -importcert -keystore k.jks -storepass {} -file ca.pem", "pw-" + _r(16)),
    ("sqlplus-user-password", "sqlplus system/{}@//db:1521/XE", "pw" + _r(16)),
    ("sql-alter-user", "psql -c \"ALTER USER postgres PASSWORD '{}'\"", "pw-" + _r(16)),
    # Round 9: ODBC's braced value, a JSON body percent-encoded whole.
    ("odbc-braced", "Driver={{ODBC Driver 18}};Server=db;Uid=sa;Pwd={{{}}};", "pw;" + _r(16)),
    ("percent-encoded-json", "curl -d 'q=%7B%22password%22%3A%22{}%22%7D' https://api.example.com", "pw-" + _r(16)),
    # Round 10: a YAML block scalar, a JSON body percent-encoded twice.
    ("yaml-block-scalar", "cat config.yml\ndb:\n  password: |-\n    {}\n  host: db", "pw" + _r(16)),
    ("percent-encoded-twice", "GET /?q=%257B%2522password%2522%253A%2522{}%2522%257D", "pw-" + _r(16)),
    # Round 11: a `.pgpass` line on another port than Postgres's, a password typed after a prompt,
    # a URL's password holding an unencoded `/`, `?` and `#`.
    ("pgpass-other-port", "cat ~/.pgpass\ndb.example.com:6543:app:alice:{}", "pw" + _r(16)),
    # (a line after the password, as for the YAML block: a model quoting the line reads on after it)
    ("password-prompt", "$ su -\nPassword:\n{}\nroot@web-1:~# whoami", "pw" + _r(16)),
    ("url-password-delimiters", "git clone https://deploy:{}@git.example.com/g/p.git", f"pw/{_r(8)}?{_r(8)}#{_r(4)}"),
    # Round 12: a token a terminal wrapped over lines (a tmux pane's capture), a JWT cut inside
    # its payload; the line after it is one the wrap's pieces are no part of.
    (
        "terminal-wrapped-key",
        "root@box:/app# echo $OPENAI_API_KEY\n{}\nroot@box:/app# exit",
        _wrapped("sk-proj-" + _r(156), 80),
    ),
    ("terminal-wrapped-jwt", "$ echo $ID_TOKEN\n{}\n$ exit", _wrapped(JWT, 64)),
    # Vendor tokens known by their prefix alone, with no revealing name beside them.
    ("tavily-positional", 'client = TavilyClient("{}")', "tvly-" + _r(32)),
    ("supabase-piped", "echo {} | supabase login", "sbp_" + _r(40, HEX)),
    # A key given to its program as an argument, on stdin or through a process substitution.
    ("wandb-login", "wandb login --relogin {}", _r(40, HEX)),
    ("wrangler-stdin", "echo -n {} | npx wrangler secret put API_KEY", _r(32)),
    ("vault-password-substituted", "ansible-vault view --vault-password-file <(echo {}) vars.yml", "pw" + _r(16)),
]


def fragments(secret: str, size: int = 8) -> set[str]:
    """Every `size`-character piece of `secret`'s runs (line breaks split a PEM body)."""
    found: set[str] = set()
    for run in secret.split():
        found |= {run[i : i + size] for i in range(len(run) - size + 1)}
    return found


def leaks(text: str) -> dict[str, list[str]]:
    """The planted secrets (by family) of which `text` shows any 8-character fragment."""
    shown = {}
    for family, _, secret in PLANTED:
        pieces = sorted(piece for piece in fragments(secret) if piece in text)
        if pieces:
            shown[family] = pieces[:3]
    return shown


@pytest.mark.parametrize(("family", "template", "secret"), PLANTED, ids=[p[0] for p in PLANTED])
def test_every_planted_secret_is_masked(family: str, template: str, secret: str) -> None:
    text = f"step 12 output:\n{template.format(secret)}\nexit code 0"
    redacted = redact_secrets(text)
    assert REDACTED in redacted
    assert not leaks(redacted), family


def _trajectory(index: int, family: str, template: str, secret: str) -> dict[str, Any]:
    """System, task, six filler steps, the secret in four plain and six escaped places, eight filler
    steps, the end."""
    line = template.format(secret)

    def call(text: str, command: str) -> dict[str, str]:
        payload = json.dumps({"name": "bash", "arguments": {"command": command}})
        return {"from": "gpt", "value": f"{text}\n<tool_call>\n{payload}\n</tool_call>"}

    def result(text: str) -> dict[str, str]:
        return {"from": "tool", "value": f"<tool_response>\n{text}\n</tool_response>"}

    def with_login(turn: dict[str, str], value: str) -> dict[str, str]:
        login = json.dumps({"name": "login", "arguments": {"user": "deploy", "password": value}})
        return {"from": "gpt", "value": f"{turn['value']}\n<tool_call>\n{login}\n</tool_call>"}

    def filler(step: int) -> list[dict[str, str]]:
        log = "\n".join(f"tests/test_app.py::test_case_{step}_{n} PASSED" for n in range(40))
        return [call(f"Step {step}: run the tests.", f"pytest -q tests/test_app.py -k case_{step}"), result(log)]

    turns = [
        {"from": "system", "value": "You are a deployment agent. Tools: bash."},
        {"from": "human", "value": f"Task {index}: deploy integration number {index} to staging."},
    ]
    for step in range(6):
        turns += filler(step)
    env_dump = f"APP_ENV=staging\n{line}\nLOG_LEVEL=info"
    openai_style = json.dumps({"name": "bash", "arguments": json.dumps({"command": f"cat <<'EOF'\n{env_dump}\nEOF"})})
    turns += [
        call("Read the environment file.", "cat .env"),
        result(env_dump),
        {"from": "human", "value": f"Use this one: {line}"},
        # The secret alone as the value of a `password` argument: only the key says what it is
        # (a value with white space in it is not taken for a password: `docs/reliability.md`).
        with_login(call("Deploy with the credential.", line), secret)
        if not any(char.isspace() for char in secret)
        else call("Deploy with the credential.", line),
        result(f"Error: authentication failed for {line}\nexit code 1"),
        # The escaped forms (turns 19-24): JSON content, JSON inside JSON, Gson, string arguments, <think>.
        call("Dump the environment.", f"env > /tmp/env.txt\n{line}\ncat /tmp/env.txt"),
        result(json.dumps({"tool_call_id": "call_1", "name": "bash", "content": f"<output>\n{env_dump}\n</output>"})),
        {"from": "gpt", "value": f"Read it as JSON.\n<tool_call>\n{openai_style}\n</tool_call>"},
        result(json.dumps({"name": "bash", "content": json.dumps({"stdout": env_dump, "code": 0})})),
        {
            "from": "gpt",
            "value": f"<think>\nThe tool said {json.dumps({'out': env_dump})}, so retry.\n</think>\n"
            + "Retry once.\n<tool_call>\n"
            + json.dumps({"name": "bash", "arguments": {"command": f"retry\n{line}"}}).replace("=", "\\u003d")
            + "\n</tool_call>",
        },
        result(json.dumps({"name": "bash", "content": f"retried:\n{env_dump}"}).replace("=", "\\u003d")),
    ]
    for step in range(6, 14):
        turns += filler(step)
    turns += [
        {"from": "gpt", "value": "The deploy is done."},
        {"from": "human", "value": "Thanks."},
        {"from": "gpt", "value": "You are welcome."},
    ]
    return {"id": f"row-{index}", "conversations": turns}


BUDGET = ["--target-max-tokens", "3000", "--summary-target-tokens", "900"]


def _corpus(tmp_path: Path) -> Path:
    rows = [_trajectory(i, *planted) for i, planted in enumerate(PLANTED)]
    return write_jsonl(tmp_path / "planted.jsonl", rows)


def _written(root: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", errors="replace") for p in sorted(root.rglob("*")) if p.is_file())


def _summaries(out: Path) -> dict[int, str]:
    """Row index -> the summary turn, checking the planted turns were inside the summarized region."""
    metrics = read_jsonl(out.parent / f"{out.stem}.metrics.jsonl")
    rows = read_jsonl(out)
    found = {}
    for m in metrics:
        assert m["was_compressed"], m
        region = m["compression_region"]
        assert region["start_idx"] <= 14 and region["end_idx"] >= 24, region  # turns 14-24 hold the secret
        found[m["index"]] = rows[m["index"]]["conversations"][region["start_idx"]]["value"]
    assert len(found) == len(PLANTED)
    return found


def test_extractive_summaries_carry_no_planted_secret(tmp_path: Path) -> None:
    source = _corpus(tmp_path)
    out = tmp_path / "out" / "x.jsonl"
    report = out.parent / "report.html"
    flags = ("--summarizer", "extractive", "--json", "--html-report", str(report))
    result = run_cli("compress", str(source), "-o", str(out), *BUDGET, *flags)
    assert result.returncode == 0, result.stderr
    _summaries(out)
    assert REDACTED in report.read_text()  # the example row shows a masked secret
    assert leaks(_written(out.parent)) == {}
    assert leaks(result.stdout + result.stderr) == {}

    # Control: without redaction the same summaries do carry the secrets.
    bare = tmp_path / "bare" / "x.jsonl"
    flags = ("--summarizer", "extractive", "--no-redact-secrets")
    control = run_cli("compress", str(source), "-o", str(bare), *BUDGET, *flags)
    assert control.returncode == 0, control.stderr
    carried = leaks("\n".join(_summaries(bare).values()))
    assert len(carried) >= len(PLANTED) - 2, sorted(set(p[0] for p in PLANTED) - set(carried))


def test_llm_prompts_replies_and_cache_carry_no_planted_secret(tmp_path: Path) -> None:
    source = _corpus(tmp_path)
    out = tmp_path / "out" / "x.jsonl"
    cache = tmp_path / "cache" / "s.sqlite3"
    password = "pw-" + _r(20)
    basic = base64.b64encode(f"svc:{password}".encode()).decode()
    with FakeServerThread(default="echo") as server:
        base_url = server.base_url.replace("http://", f"http://svc:{password}@")
        result = run_cli(
            "compress", str(source), "-o", str(out), *BUDGET, "--summarizer", "llm", "--base-url", base_url,
            "--model", "m", "--cache", str(cache), "--retry-delay", "0.01", "--json",
        )  # fmt: skip
        prompts = [json.dumps(r.body) for r in server.requests]
        headers = [r.authorization for r in server.requests]
    assert result.returncode == 0, result.stderr
    assert prompts and all(h == f"Basic {basic}" for h in headers)  # the credentials were really sent
    assert all("[REDACTED]" in p for p in prompts)
    assert leaks("\n".join(prompts)) == {}
    _summaries(out)
    # An echo of the prompt is a transcript (its `[Turn N] ROLE:` lines): refused, the rows summarized
    # by the fallback. `test_a_model_quoting_the_secrets_back_...` keeps a model's quotes as summaries.
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert all("the reply is a transcript, not a summary" in m["last_error"] for m in metrics)
    everything = _written(out.parent) + cache.read_bytes().decode("utf-8", errors="replace")
    everything += result.stdout + result.stderr
    assert leaks(everything) == {}
    assert basic not in everything and password not in everything


def _quoted_secrets(prompt: str) -> str:
    """What a model that quotes what it saw answers: the row's secrets, plain and escaped."""
    index = int(prompt.split("Task ", 1)[1].split(":", 1)[0])
    line = PLANTED[index][1].format(PLANTED[index][2])
    dump = f"A=1\n{line}\nB=2"
    return f"The agent found {line} in .env. Raw tool output: {json.dumps({'content': dump})}"


@pytest.mark.variants
def test_a_model_quoting_the_secrets_back_leaves_none_in_summaries_or_cache(tmp_path: Path) -> None:
    source = _corpus(tmp_path)
    out = tmp_path / "out" / "x.jsonl"
    cache = tmp_path / "cache" / "s.sqlite3"

    def quoting(_: int, body: Any) -> dict[str, str]:
        return {"content": _quoted_secrets(prompt_text(body))}

    with FakeServerThread(faults=quoting) as server:
        result = run_cli(
            "compress", str(source), "-o", str(out), *BUDGET, "--summarizer", "llm", "--base-url", server.base_url,
            "--model", "m", "--cache", str(cache), "--retry-delay", "0.01", "--json",
        )  # fmt: skip
        prompts = "\n".join(json.dumps(r.body) for r in server.requests)
    assert result.returncode == 0, result.stderr
    assert leaks(prompts) == {}
    summaries = _summaries(out)
    assert all("Raw tool output" in s and REDACTED in s for s in summaries.values())
    everything = _written(out.parent) + cache.read_bytes().decode("utf-8", errors="replace")
    assert leaks(everything + result.stdout + result.stderr) == {}


@pytest.mark.variants
def test_the_requests_file_carries_no_planted_secret(tmp_path: Path) -> None:
    source = _corpus(tmp_path)
    requests = tmp_path / "out" / "requests.jsonl"
    result = run_cli("requests", str(source), "-o", str(requests), *BUDGET, "--model", "m")
    assert result.returncode == 0, result.stderr
    lines = read_jsonl(requests)
    assert len(lines) == len(PLANTED) and all(REDACTED in json.dumps(line) for line in lines)
    assert leaks(_written(requests.parent) + result.stdout + result.stderr) == {}

    bare = tmp_path / "bare" / "requests.jsonl"
    control = run_cli("requests", str(source), "-o", str(bare), *BUDGET, "--model", "m", "--no-redact-secrets")
    assert control.returncode == 0, control.stderr
    assert len(leaks(bare.read_text())) == len(PLANTED)


@pytest.mark.variants
def test_a_batch_run_uploads_and_stores_no_planted_secret(tmp_path: Path) -> None:
    """The request files uploaded to the provider, and a model quoting secrets back in the batch output."""
    source = _corpus(tmp_path)
    out = tmp_path / "out" / "x.jsonl"
    cache = tmp_path / "cache" / "s.sqlite3"

    def quoting(_batch: int, _index: int, line: dict[str, Any]) -> str:
        return "text:" + _quoted_secrets(prompt_text(line["body"]))

    server = FakeBatchServer(line_faults=quoting)
    with FakeServerThread(server=server):
        result = run_cli(
            "compress", str(source), "-o", str(out), *BUDGET, "--summarizer", "llm", "--base-url", server.base_url,
            "--model", "m", "--cache", str(cache), "--batch", "--batch-poll-interval", "0.01",
            "--batch-poll-max", "0.02", "--json",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    uploaded = [f["content"] for f in server.files.values() if f["purpose"] == "batch"]
    assert uploaded and len(server.batch_lines()) == len(PLANTED) and len(server.requests) == 0
    uploaded_text = "\n".join(c.decode() if isinstance(c, bytes) else str(c) for c in uploaded)
    assert REDACTED in uploaded_text and leaks(uploaded_text) == {}
    summaries = _summaries(out)
    assert all("Raw tool output" in s and REDACTED in s for s in summaries.values())
    everything = _written(out.parent) + cache.read_bytes().decode("utf-8", errors="replace")
    assert leaks(everything + result.stdout + result.stderr) == {}


def test_basic_credentials_echoed_in_a_401_appear_nowhere(tmp_path: Path) -> None:
    source = _corpus(tmp_path)
    out = tmp_path / "out" / "x.jsonl"
    password = "pw-" + _r(20)
    basic = base64.b64encode(f"svc:{password}".encode()).decode()
    with FakeServerThread(default="echo_auth:401") as server:
        base_url = server.base_url.replace("http://", f"http://svc:{password}@")
        result = run_cli(
            "compress", str(source), "-o", str(out), *BUDGET, "--summarizer", "llm", "--base-url", base_url,
            "--model", "m", "--no-cache", "--retry-delay", "0.01", "--json",
        )  # fmt: skip
        assert server.requests and server.requests[0].authorization == f"Basic {basic}"
    assert result.returncode == 2, result.stderr
    assert "401" in result.stderr
    everything = result.stdout + result.stderr + (_written(out.parent) if out.parent.exists() else "")
    assert basic not in everything and basic[:12] not in everything and password not in everything


def test_an_api_key_echoed_in_replies_is_not_stored(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [_trajectory(i, *PLANTED[i]) for i in range(3)])
    out = tmp_path / "out" / "x.jsonl"
    cache = tmp_path / "cache" / "s.sqlite3"
    key = "plain-provider-key-" + _r(24)  # no known shape: only scrubbing can catch it
    with FakeServerThread(default="echo:200") as server:  # short enough to be kept as the summary
        result = run_cli(
            "compress", str(source), "-o", str(out), *BUDGET, "--summarizer", "llm", "--base-url", server.base_url,
            "--model", "m", "--cache", str(cache), "--retry-delay", "0.01", "--no-redact-secrets", "--json",
            env={"OPENAI_API_KEY": key},
        )  # fmt: skip
        assert server.requests and all(r.authorization == f"Bearer {key}" for r in server.requests)
    assert result.returncode == 0, result.stderr
    assert any("Authorization: Bearer [REDACTED]" in s for s in _summaries_of(out))
    everything = _written(out.parent) + cache.read_bytes().decode("utf-8", errors="replace")
    assert key not in everything + result.stdout + result.stderr


def _summaries_of(out: Path) -> list[str]:
    rows = read_jsonl(out)
    return [turn["value"] for row in rows for turn in row["conversations"] if turn["value"].startswith("[CONTEXT")]


@pytest.mark.variants
def test_eval_pages_and_probe_questions_carry_no_planted_secret(tmp_path: Path) -> None:
    """`eval --html-report --probes`: the example rows and summaries drawn, every question and
    context sent and every answer (a model that echoes its prompt) hold no planted secret. A last
    turn names the secret line's other values, so questions are asked about the lines holding it."""
    rows = [_trajectory(i, *planted) for i, planted in enumerate(PLANTED)]
    for row, (_, template, _) in zip(rows, PLANTED, strict=True):
        row["conversations"].insert(-2, {"from": "gpt", "value": "Done with " + template.format("that value")})
    source = write_jsonl(tmp_path / "planted.jsonl", rows)
    out = tmp_path / "out" / "x.jsonl"
    assert run_cli("compress", str(source), "-o", str(out), *BUDGET, "--summarizer", "extractive").returncode == 0
    page, cache = tmp_path / "eval.html", tmp_path / "cache.sqlite3"
    with FakeServerThread(default="echo") as server:
        result = run_cli(
            "eval", str(out), "--input", str(source), "--html-report", str(page), "--probes", "--json",
            "--base-url", server.base_url, "--model", "m", "--cache", str(cache), "--retry-delay", "0.01",
        )  # fmt: skip
        prompts = [json.dumps(r.body) for r in server.requests]
    assert result.returncode == 0, result.stderr
    questions = [p.split("hidden as ____:", 1)[1] for p in prompts]
    assert len(prompts) >= len(PLANTED) and sum("[REDACTED]" in q for q in questions) >= len(PLANTED) // 2
    assert leaks("\n".join(prompts)) == {}
    assert REDACTED in page.read_text()  # the example rows show masked secrets
    everything = page.read_text() + cache.read_bytes().decode("utf-8", errors="replace") + result.stdout + result.stderr
    assert leaks(everything) == {}


def test_no_anchor_a_summary_could_list_is_a_planted_secret_in_any_encoding() -> None:
    """The anchor index lists exact strings of the region: every anchor the ranking could ever
    list (all of them, not only what fits a budget), read from each planted trajectory's turns in
    all their encodings, holds no planted secret, and neither does an index of all of them, for
    both summarizers. Control: read without redaction, the same ranking carries them."""
    index_leaks, bare_leaks = {}, 0
    for i, planted in enumerate(PLANTED):
        turns = tuple(Turn(t["from"], t["value"]) for t in _trajectory(i, *planted)["conversations"])
        listed = " ".join(ranked_anchors(turns[2:], known=turns[1].value, redact=redact_secrets))
        index_leaks.update(leaks(listed))
        request = SummaryRequest(turns=turns[2:], budget_tokens=100_000, task=turns[1].value)
        index = plan_index(request, len, redact=redact_secrets)
        index_leaks.update(leaks(" ".join(index.anchors) if index else ""))
        bare_leaks += bool(leaks(" ".join(ranked_anchors(turns[2:]))))
    assert index_leaks == {}
    assert bare_leaks >= len(PLANTED) // 4  # the others are opaque blobs, or never anchors
