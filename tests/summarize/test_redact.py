"""Credential masking: every pattern catches its secret, and ordinary code and prose pass unchanged."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pytest

from trajectory_compressor.summarize.escapes import SHOWN_MARKERS
from trajectory_compressor.summarize.redact import ALL_RULES, REDACTED, redact_secrets, scrub
from trajectory_compressor.summarize.url_credentials import display_url, url_secrets

# (text with {} where the secret goes, the secret that must disappear)
TRUE_POSITIVES = [
    # A credential's name before a JSON list or object, and an argv's password item.
    ('{{"user": "bob", "password": ["{}"], "n": 1}}', "Pw1listAAA0001"),
    ('{{"auth": {{"password": {{"value": "{}"}}}}}}', "Pw1nestAAA0002"),
    ('{{"content": "{{\\"db_password\\": [\\"{}\\"]}}"}}', "Pw1escAAA00044"),
    ('{{"argv": ["mysqldump", "--password", "{}", "app"]}}', "Pw1argvAAA0003"),
    ("cmd = ['docker', 'login', '--password', '{}']", "Pw1argvAAA0009"),
    # A subscript before the operator, and credential options with a prefix or another name.
    ('os.environ["DB_PASSWORD"] = "{}"', "Pw1envAAA0011"),
    ("config['password'] = '{}'", "Pw1cfgAAA0012"),
    ("tool --api-key {} run", "Pw1apiAAA0013"),
    ("gh --auth-token {}", "ghtok_Pw1AAA0015"),
    ("app --db-password {} --port 5432", "Pw1dbAAA0016"),
    ('["--api-key", "{}"]', "Pw1lstAAA0017"),
    # Where a file format or a language names the credential.
    ("CREATE USER app IDENTIFIED BY '{}';", "Pw1sqlAAA0021"),
    ("ALTER ROLE app WITH ENCRYPTED PASSWORD '{}'", "Pw1sqlAAA0022"),
    ("<password>{}</password>", "Pw1xmlAAA0023"),
    ("<db:apiKey>{}</db:apiKey>", "Pw1xmlAAA0024"),
    ("machine api.example.com login bob password {}", "Pw1netAAA0025"),
    ("openssl enc -aes256 -pass pass:{} -in x", "Pw1sslAAA0026"),
    ("- name: DB_PASSWORD\n  value: {}", "Pw1k8sAAA0027"),
    ("$cfg = ['password' => '{}'];", "Pw1phpAAA0028"),
    ("DATABASE_URL=postgresql://admin:{}@db.example.com:5432/app", "Pw1@atAAAA0011x"),
    ("export OPENAI_API_KEY={}", "sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("key: {}", "sk-ant-api03-AbCdEfGh1234567890_IjKlMnOpQrSt-uvwx"),
    ("OpenRouter {}", "sk-or-v1-0123456789abcdef0123456789abcdef01234567"),
    ("legacy {} done", "sk-AbCdEf0123456789GhIjKlMnOpQr"),
    ("git clone https://{}@github.com/x/y", "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("token {} in use", "gho_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("GH_TOKEN={}", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ"),
    ("aws_access_key_id = {}", "AKIAIOSFODNN7EXAMPLE"),
    ('"AccessKeyId": "{}",', "ASIAY34FZKBOKMUTVV7A"),
    ("SLACK_BOT_TOKEN={}", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("url = '...?key={}'", "AIzaSyD-abcdefghijklmnopqrstuvwxyz0123456"),
    ("huggingface-cli login --token {}", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"),
    (
        "cookie: session={}",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    ("curl -H 'Authorization: Bearer {}' https://api", "abc123def456ghi789"),
    ("authorization: bearer {}", "9f8e7d6c5b4a"),
    ('password = "{}"', "correct-horse-battery-staple"),
    ("DB_PASSWORD={}", "s3cr3t!pass"),
    ('{{"api_key": "{}"}}', "live_1234abcd5678efgh"),
    ("api-key: {}", "q9w8e7r6t5y4"),
    ("client_secret: '{}'", "Zx9-Yw8_Vu7"),
    ("MYSQL_ROOT_PASSWORD={}", "hunter22"),
    ("postgres://admin:{}@db.internal:5432/app", "pa55w0rd"),
    ("redis://:{}@cache:6379/0", "verysecret"),
    ("https://user:{}@example.com/repo.git", "tok%40en"),
    # Password hashes (`/etc/shadow`, `.htpasswd`, a users table, Django's and Werkzeug's stored
    # forms): cracked offline from any copy.
    ("hash is {} ok", "$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW"),
    ("admin:{}", "$apr1$Zq8wXc7v$Bn6mAs5dFg4hJk3lPo2iU."),
    ("alice:{}:1000", "$1$Zq8w$Bn6mAs5dFg4hJk3lPo2iU."),
    (
        "root:{}:19000:0:99999:7:::",
        "$6$Zq8wXc7v$Bn6mAs5dFg4hJk3lPo2iUy1tQw9eR8tY7uI6oP5aS4dF3gH2jK1lZ0xC9vB8nM7qW6eR5tY4uI3oP2aS1dF0g.",
    ),
    ("u:{}:1", "$5$rounds=5000$salt$Bn6mAs5dFg4hJk3lPo2iUy1tQw9eR8tY7uI6oP5aS4d"),
    ("u:{}:19000", "$y$j9T$Zq8wXc7vBn6mAs5dFg4hJ.$Bn6mAs5dFg4hJk3lPo2iUy1tQw9eR8tY7uI6oP5aS4d"),
    ("1|admin|{}", "pbkdf2_sha256$600000$Zq8wXc7vBn6m$Bn6mAs5dFg4hJk3lPo2iUy1tQw9eR8tY7uI6oP5aS4="),
    ("stored {}", "$argon2id$v=19$m=65536,t=3,p=4$Zq8wXc7vBn6mAs5d$Fg4hJk3lPo2iUy1tQw9eR8tY7uI6oP5aS4dF3gH2jK1"),
    ("hash: {}", "pbkdf2:sha256:600000$Zq8wXc7v$9f2c4e8a1b7d3f6e0a5c9b2d8e4f1a7c3b6d0e9f2a5c8b1d4e7f0a3c6b9d2e5f"),
    ("hash: {}", "scrypt:32768:8:1$Zq8wXc7v$9f2c4e8a1b7d3f6e0a5c9b2d8e4f1a7c3b6d0e9f2a5c8b1d4e7f0a3c6b9d2e5f"),
    # A penetration test's or a CTF run's tools given a password or an NT hash (round 9).
    ("crackmapexec smb 10.0.0.5 -u admin -p {}", "Zq8w-Xc7vBn6m"),
    ("evil-winrm -i 10.0.0.5 -u admin -p '{}'", "Zq8w Xc7v!Bn6m"),
    ("nxc smb 10.0.0.5 -u admin -H {}", "31d6cfe0d16ae931b73c59d7e0c089c0"),
    ("hydra -l admin -p {} ssh://10.0.0.5", "Zq8w-Xc7vBn6m"),
    ("impacket-psexec admin:{}@10.0.0.5", "Zq8w-Xc7vBn6m"),
    ("GetUserSPNs.py corp.local/bob:{} -dc-ip 10.0.0.1 -request", "Zq8w-Xc7vBn6m"),
    ("python3 secretsdump.py -just-dc corp/admin:{}@10.0.0.1", "Zq8w-Xc7vBn6m"),
    ("xfreerdp /u:admin /p:{} /v:10.0.0.5", "Zq8w-Xc7vBn6m"),
    ("plink -ssh root@host -pw {}", "Zq8w-Xc7vBn6m"),
    ("cypher-shell -u neo4j -p {}", "Zq8w-Xc7vBn6m"),
    ("redis-cli -h cache AUTH {}", "Zq8w-Xc7vBn6m"),
    ("az storage blob upload --account-key {} -f x", "Zq8wXc7vBn6mAs5dFg4h=="),
    ("Administrator:500:{}:::", "aad3b435b51404eeaad3b435b51404ee:31d6cfe0d16ae931b73c59d7e0c089c0"),
    # A credential's name as one string, its value as the next (round 9, `pair_rules`).
    ('<add key="ApiKey" value="{}" />', "Zq8wXc7vBn6mAs5dFg4h"),
    ('<add key="DbPassword" value="{}" />', "Zq8w+Xc7v"),
    ('<add key="BotToken" value="{}"/>', "Zq8wXc7vBn6mAs5dFg4h"),
    ("INSERT OR IGNORE INTO users (username, password) VALUES ('admin','{}')", "Zq8w-Xc7v"),
    ("res.cookie('token', '{}')", "Zq8wXc7vBn6mAs5dFg4h"),
    (
        "$P$BZ1hB9ha6FuQgUXm9hRPW0IhyhfK5N/ {}",
        "pbkdf2-sha256$29000$N2YuJQd.Ae3r$Bn6mAs5dFg4hJk3lPo2iUy1tQw9eR8tY7uI6oP5aS4=",
    ),
    ("{}", "$P$BZ1hB9ha6FuQgUXm9hRPW0IhyhfK5N/"),
    ("CORP\\svc:aes256-cts-hmac-sha1-96:{}", "9f2c4e8a1b7d3f6e0a5c9b2d8e4f1a7c3b6d0e9f2a5c8b1d4e7f0a3c6b9d2e5f"),
    ("\t * NTLM     : {}", "31d6cfe0d16ae931b73c59d7e0c089c0"),
    ("sudo nxc smb h -u a -p={}", "Zq8w-Xc7vBn6m"),
    ("smbmap -H h -u admin -p {}", "Zq8w-Xc7vBn6m"),
    ("xfreerdp3 /v:h /u:a /p:{}", "Zq8w-Xc7vBn6m"),
    ("GetADUsers.py -all corp.local/admin:{} -dc-ip 10.0.0.1", "Zq8w-Xc7vBn6m"),
    ("tool --master-key {}", "Zq8w-Xc7vBn6m"),
    ("The generated password for the elastic built-in superuser is : {}", "Zq8w*Xc7vBn6m"),
    ("Unseal Key (will be hidden): {}", "Zq8wXc7vBn6mAs5dFg4hJk3lPo2iUy1t"),
    ('<property name="spring.datasource.password" value="{}"/>', "Zq8wXc7v!"),
    ('<string name="api_key">{}</string>', "Zq8wXc7vBn6mAs5dFg4h"),
    ('<entry key="password">{}</entry>', "Zq8w-Xc7v"),
    ('variable "db_password" {{\n  type = string\n  default = "{}"\n}}', "Zq8w-Xc7v"),
    ("define( 'SECURE_AUTH_KEY',  '{}' );", "Zq8w^Xc7v|Bn6m(As5d)Fg4h"),
    ("localStorage.setItem('authToken', '{}')", "Zq8wXc7vBn6mAs5dFg4h"),
    ("INSERT INTO users (username, password) VALUES ('admin', '{}');", "Zq8w-Xc7v"),
    ("INSERT INTO users (id, `password`, email) VALUES (1, '{}', 'a@b.c'), (2, 'x', 'y');", "Zq8w-Xc7v"),
    # A service's first-boot credentials in its log (`docker logs …`).
    ("[Server] A temporary password is generated for root@localhost: {}", "Zq8w;Xc7v>Bn6m"),
    (
        "Please use the following password to proceed to installation:\n\n{}\n\nThis may also be found at: x",
        "9f2c4e8a1b7d3f6e0a5c9b2d8e4f1a7c",
    ),
    ("Password for the [elastic] user successfully reset.\nNew value: {}", "Zq8w*Xc7vBn6mAs5dFg"),
    ("Unseal Key 1: {}\nUnseal Key 2: x", "Zq8wXc7vBn6mAs5dFg4hJk3lPo2iUy1t+abc="),
]

PEM = """-----BEGIN RSA PRIVATE KEY-----
MIIEpAIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aozN3tihPmljnnudb9G3HecNB
ukMeMNbb0ZZN7v1uYyvYm1w0p5CXYNOnPLuWUx+0Lz3dDlyo7fK3RvLYD4RVNZg
-----END RSA PRIVATE KEY-----"""


@pytest.mark.parametrize(("template", "secret"), TRUE_POSITIVES)
def test_credentials_are_masked(template: str, secret: str) -> None:
    redacted = redact_secrets(template.format(secret))
    assert secret not in redacted
    assert REDACTED in redacted


@pytest.mark.parametrize("text", [r'{"msg": "ok \ud83d\ude00"}', r"lone \ud800 and \\udfff", r"\ud83d"])
def test_text_with_escaped_surrogates_is_read_and_a_secret_beside_them_masked(text: str) -> None:
    # An emoji in a JSON dump (`\ud83d\ude00`) once stopped every run that redacts: the rules'
    # decoded view held lone surrogates, which the literal matcher cannot encode.
    assert redact_secrets(text) == text
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    redacted = redact_secrets(f"{text} token {secret}")
    assert secret not in redacted and REDACTED in redacted and redacted.startswith(text)


def test_pem_private_key_block_is_masked_whole() -> None:
    text = f"cat id_rsa\n{PEM}\nexit code 0"
    redacted = redact_secrets(text)
    assert "MIIEpAIBAAKCAQEA" not in redacted and "PRIVATE KEY" not in redacted
    assert redacted == f"cat id_rsa\n{REDACTED}\nexit code 0"


def test_truncated_pem_block_is_masked_to_the_end() -> None:
    assert redact_secrets("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA") == REDACTED


def test_pem_body_without_its_begin_line_is_masked() -> None:
    tail = PEM.split("\n", 1)[1]  # what is left when a transcript cut removed the BEGIN line
    assert redact_secrets(f"kept text\n{tail}\nexit 0") == f"kept text\n{REDACTED}\nexit 0"


@pytest.mark.parametrize(
    "text",
    [
        "a." * 50_000,
        "a-" * 50_000,
        "http://a:" * 10_000,
        "password=" * 10_000,
        "-----BEGIN RSA PRIVATE KEY-----\n" * 3_000,  # each BEGIN masked to the end: 13 s before
        "PuTTY-User-Key-File-2: " * 4_000,
        "sk-1" * 10_000,
        "\\" * 200_000,  # escape sequences: one long run, many short ones
        "password\\n" * 20_000,
        ("mysql -u root " + "-x " * 5_000) * 4,
        "--password " * 20_000,
        "Cookie: a=" * 400_000,  # each `cookie` read its 4,096 characters again: 2.4 s for 20,000 before
        "-b " * 20_000,
        "A" * 1_000_000,  # one blob, decoded once
        "\n".join(["QUFB" * 19] * 20_000),  # a wrapped blob of 20,000 lines
        # Each script's name read its flags to the line's end, the next name a flag's value: 24 s
        # for 100 KB (round-9 adversarial pass), many minutes for this.
        "secretsdump -x " * 27_000,
        "impacket-smbclient -no-pass " * 15_000,
    ],
)
@pytest.mark.timeout(120)  # a hang guard: linear, each takes about a second at most; quadratic, many minutes
def test_pathological_text_is_linear(text: str) -> None:
    redact_secrets(text)


def test_url_password_keeps_the_user_and_host() -> None:
    assert redact_secrets("postgres://admin:pa55w0rd@db:5432/app") == f"postgres://admin:{REDACTED}@db:5432/app"


def test_assignments_keep_their_shape() -> None:
    assert redact_secrets('password = "hunter22"') == f'password = "{REDACTED}"'
    assert redact_secrets("DB_PASSWORD=hunter22.") == f"DB_PASSWORD={REDACTED}."
    assert redact_secrets("Authorization: Bearer abc123def456") == f"Authorization: Bearer {REDACTED}"


# Ordinary code and prose that must pass unchanged.
FALSE_POSITIVES = [
    "password = getpass.getpass('Password: ')",
    "api_key = os.environ['OPENAI_API_KEY']",
    "api_key = os.environ.get('OPENAI_API_KEY')",
    "client = OpenAI(api_key=api_key)",
    "self.api_key = api_key",
    "def login(username: str, password: str) -> bool:",
    "password: Optional[str] = None",
    "if password == confirm_password:",
    "token = tokenizer.encode(text)",
    "max_tokens = 512",
    "secret_key = settings.SECRET_KEY",
    "api_key=args.api_key",
    "password=password",
    'raise ValueError("password must be at least 8 characters")',
    '"password": "The password of the user, at least 8 characters"',
    "export OPENAI_API_KEY=$OPENAI_API_KEY",
    'api_key: "${OPENAI_API_KEY}"',
    "password: {{ vault_db_password }}",
    "pip install scikit-learn sk-video",
    "The sk-learn-compatible-estimator-interface is documented here.",
    "Bearer tokens are sent in the Authorization header.",
    "The bearer of this letter is a friend.",
    "git checkout -b fix/ghp-rotation-handling",
    "hf_hub_download(repo_id='gpt2', filename='config.json')",
    "http://localhost:8080/api/v1/items?page=2",
    "ssh user@host.example.com 'ls -la'",
    "https://github.com/huggingface/transformers/blob/main/README.md",
    "Visit https://docs.python.org/3/library/re.html#re.sub for details.",
    "AKIA is the prefix of AWS access key ids.",
    "The JWT header starts with eyJ and has three dot-separated parts.",
    "x = {'a': 1, 'b': [1, 2, 3]}\nfor k, v in x.items():\n    print(k, v)",
    "tests/test_mod1.py::case3_14 PASSED",
    "Password reset emails are sent by the auth service.",
    "password: [REDACTED]",
    'f"s3://{access_key}:{secret_key}@{bucket}/{path}"',
    "postgres://$DB_USER:$DB_PASS@localhost/app",
    "用户要求修复登录功能的密码验证。",
    "pip install --user requests",
    "curl -u $USER:$TOKEN https://api.example.com",
    "docker run -u 1000:1000 image",
    "token_type: bearer",
    "sorted(items, key=lambda x: x[1])",
    "signature = inspect.signature(fn)",
    "max_tokens: 4096",
    "The key-value store keeps 32 entries; task-1234567890 is done.",
    "Authorization: required",
    'primary_key = "id"',
    "Our Discord server has 1,000 members.",
    "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a",
    'uuid = "123e4567-e89b-12d3-a456-426614174000"',
    "git@github.com:org/repo.git",
    '{"auth": "oauth2", "scopes": ["repo"]}',
    '{"auth": "bm9uZQ=="}',  # base64 of "none": no user:password pair
    "the build machine is down\nwe need a password reset",
    "git clone https://git@github.com/org/repo.git && ssh://deploy-user-production@host",
    "https://maintainer.support.team@example.com/profile",
    "cookie: true\nsecure_cookie: false",
    "Set-Cookie: theme=dark; Path=/",
    "document.cookie = 'lang=en'",
    "git checkout -b fix/issue-1234567890123 && curl -b cookies.txt https://example.com",
    # A shell's or awk's positional parameters and prices are no crypt hash.
    "awk '{print $1$2$3}' f; echo \"$1$HOME$PATH\"; cost $5$ and $6$ fees",
    "hashers: pbkdf2_sha256, argon2 ($argon2id$), bcrypt ($2b$12$ then 53 characters)",
    # A name and a value that is none: a label, a placeholder, a setting, a query's parameter.
    '<string name="password">Mot de passe</string>',
    '<string name="password">Passwort</string>',
    '<property name="password" value="${DB_PASSWORD}"/>',
    '<add key="Theme" value="dark" />',
    'variable "region" { default = "us-east-1" }',
    "INSERT INTO users (username, email) VALUES ('admin', 'a@b.c');",
    "INSERT INTO t (password) VALUES (%s)",
    "localStorage.setItem('theme', 'darkmode1')",
    # Found by the round-9 adversarial pass on the first version of these rules.
    'db.execute("INSERT INTO user (username, password) VALUES (?, ?)", (u, h))',
    "INSERT INTO t (username, password) VALUES (:username, :password)",
    "INSERT INTO t (a, password) VALUES (1, DEFAULT)",
    '"INSERT INTO t (id, api_key) VALUES (" + id + ", " + key + ")"',
    '<add key="RequireSecret" value="true" />',
    '<add name="reset-password" value="/account/reset" />',
    '<input type="submit" name="password" value="Sign in">',
    '<string name="label_password">Password:</string>',
    '<string name="prompt_password">Contraseña:</string>',
    '<string name="title_activity_forgot_password">ForgotPasswordActivity</string>',
    '<string name="app_secret">@string/app_secret_value</string>',
    '<string name="api_key">YOUR_API_KEY</string>',
    "setItem('authorName', 'JaneDoe42'); Cookies.set('sessionTheme', 'darkmode')",
    "response.set_cookie('sidebar_state', 'expanded')",
    'variable "create_secret" { default = "false" }',
    "define( 'AUTH_KEY', 'put your unique phrase here' );",
    "gpg --delete-secret-key 3AA5C34371567BD2 && gpg --export-secret-keys alice@example.com",
    "python my_app.py --cfg hydra -p hydra.run",
    # A wordlist, a local dump's files, a ping, a port, a getter: none is a password.
    "hydra -l admin -P /usr/share/wordlists/rockyou.txt ssh://10.0.0.5",
    "impacket-secretsdump -sam SAM -system SYSTEM LOCAL",
    "redis-cli -h cache ping",
    "state = obj.getstate(); x = getstats(y)",
    "Guest:501:::::",
]


@pytest.mark.parametrize("text", FALSE_POSITIVES)
def test_ordinary_text_is_unchanged(text: str) -> None:
    assert redact_secrets(text) == text


@pytest.mark.parametrize(("template", "secret"), TRUE_POSITIVES)
def test_redaction_is_idempotent(template: str, secret: str) -> None:
    once = redact_secrets(template.format(secret))
    assert redact_secrets(once) == once


def test_empty_text() -> None:
    assert redact_secrets("") == ""


def test_scrub_replaces_known_secrets_only() -> None:
    text = "sent key plainKey-123456 to host; key plainKey-123456 again"
    assert scrub(text, ["plainKey-123456", None, ""]) == f"sent key {REDACTED} to host; key {REDACTED} again"
    assert scrub("abc", ["ab"]) == "abc"  # too short to scrub safely


def test_display_url_drops_credentials() -> None:
    assert display_url("https://user:pass@example.com:8443/v1") == "https://example.com:8443/v1"
    assert display_url("https://token@example.com/v1/") == "https://example.com/v1/"
    assert display_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    assert "abc123secret" not in display_url("https://example.com/v1?api_key=abc123secret")
    assert display_url(None) == ""


def test_url_secrets_are_the_password_in_every_form_it_travels_in() -> None:
    found = url_secrets("https://bob:p%40ss-123@example.com/v1")
    assert "p%40ss-123" in found and "p@ss-123" in found  # raw and percent-decoded
    assert base64.b64encode(b"bob:p@ss-123").decode().rstrip("=") in found  # the HTTP Basic value aiohttp sends
    assert "bob" not in found  # a user name alone is not a secret...
    assert "tok3nAsUserName" in url_secrets("https://tok3nAsUserName@example.com/v1")  # ...unless it is the credential
    assert url_secrets("https://example.com/v1") == ()
    assert url_secrets(None) == ()


def test_scrub_removes_basic_credentials_echoed_back() -> None:
    secrets = url_secrets("http://user:password@host/v1")
    echoed = "refused Authorization: Basic " + base64.b64encode(b"user:password").decode()
    assert "dXNlcjpwYXNzd29yZA" not in scrub(echoed, secrets)


# Names and command-line forms beyond `password=` (issue 20, A2), with real newlines.
NAMED_TRUE_POSITIVES = [
    ("DB_PASS={}", "hunter22x"),
    ("MYSQL_PASS={}", "hunter22x"),
    ("SMTP_PASS='{}'", "mail-pw-7"),
    ("ADMIN_PASS: {}", "hunter22x"),
    ("export PGPASSWORD={} && psql -h db -U app", "postgres"),  # an env-style assignment: a plain word counts
    ("docker run -e POSTGRES_PASSWORD={} postgres:16", "example"),
    ("mysqldump --password={} app > dump.sql", "plainword"),
    ("docker login --password {} registry.example.com", "Tr0ub4dor&3"),
    ("tool --password '{}'", "two words"),
    ("mysql -uroot -p{} app", "S3cretPw"),
    ("mysql -h db.internal -u root -p'{}' app", "my secret pw"),
    ('mariadb-dump -u app -p"{}" app', "quoted-pw-9"),
    ("sshpass -p '{}' ssh deploy@host", "sshpw-123"),
    ("MYSQL_PWD={} mysql -u root", "rootpw"),
    ("services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: {}", "postgres"),  # docker-compose
]
# Programs that take a password by a short option of their own, or on stdin, and the settings
# commands that store one (`command_line_rules`).
SHORT_OPTION_TRUE_POSITIVES = [
    ("docker login -u deploy -p {} registry.example.com", "Dk-pw-2024"),
    ("podman login quay.io -u me -p'{}'", "pod man pw"),
    ("az login --service-principal -u http://app -p {} --tenant t1", "Az~Secret.9x"),
    ("mongosh --host db -u admin -p {} --authenticationDatabase admin", "M0ngo-pw"),
    ("mongodump -u admin -p '{}' --out /backup", "dump pw 1"),
    ("redis-cli -h cache -p 6379 -a {} ping", "r3dis-pw!"),
    ("sqlcmd -S db,1433 -U sa -P {} -Q 'SELECT 1'", "Sql-Pw-2022!"),
    ("ldapsearch -x -H ldap://ldap.example.com -D cn=admin,dc=ex -w {} -b dc=ex", "ldap-Pw9"),
    ("smbclient //fs/share -U alice%{} -c ls", "Smb-pw-77"),
    ("htpasswd -bc /etc/nginx/.htpasswd admin {}", "Ht-pw-55"),
    ("htpasswd -nb admin '{}'", "Ht pw 56"),
    ("./server -listen :8080 -password {}", "G0-flag-pw"),
    ("app -token={} -v", "tok-8f7e6d5c"),
    ("echo '{}' | sudo -S apt-get install -y nginx", "sud0-pw"),
    ("echo {} | docker login ghcr.io -u me --password-stdin", "ghcr-pw-1"),
    ("sudo -S true <<< {}", "sud0-pw2"),
    ("aws configure set aws_secret_access_key {}", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzz"),
    ("npm config set //registry.npmjs.org/:_authToken {}", "a1b2c3d4-e5f6"),
    ("curl -u :{} https://api.example.com/v1", "tok-3e4r5t"),
    ("GET /login?next=https%3A%2F%2Fdeploy%3A{}%40git.example.com%2Frepo", "Url-pw-42"),
]


def _json(text: str) -> str:
    return json.dumps(text)[1:-1]


def _thought(text: str) -> str:
    """The `out` a "think" layer quoted, decoded."""
    assert text.startswith("<think>\nThe output was ") and text.endswith("\n</think>\nNext."), text
    return json.loads(text.removeprefix("<think>\nThe output was ").removesuffix("\n</think>\nNext."))["out"]


# The escaping layers text reaches redaction in, each with its decoder: a JSON string (a Hermes
# tool result's `content`), JSON inside JSON (OpenAI tool arguments in a call), Gson's `\u003d`.
LAYERS: dict[str, tuple[Callable[[str], str], Callable[[str], str]]] = {
    "plain": (lambda t: t, lambda t: t),
    "json": (_json, lambda t: json.loads(f'"{t}"')),
    "json-in-json": (lambda t: _json(_json(t)), lambda t: json.loads('"' + json.loads(f'"{t}"') + '"')),
    "gson": (lambda t: _json(t).replace("=", "\\u003d").replace("'", "\\u0027"), lambda t: json.loads(f'"{t}"')),
    "think": (lambda t: f"<think>\nThe output was {json.dumps({'out': t})}\n</think>\nNext.", _thought),
}


TOKENS_ON_THEIR_OWN_LINE = [
    ("{}", "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("{}", "AKIAIOSFODNN7EXAMPLE"),
    ("{}", "sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("AWS_SECRET_ACCESS_KEY={}", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("MY_SERVICE_TOKEN={}", "9c1f0e7a5b3d4c2e8f6a1b0c9d7e5f3a"),
    ('"DB_PASSWORD": "{}"', "Tr0ub4dor-x9"),
    # An unsigned JWT (`alg: none`, empty signature) and a JWE (round-6 trust pass: not masked).
    ("{}", "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NTY3ODkwIiwiYWRtaW4iOnRydWV9."),
    (
        "Cookie: session={}",
        "eyJhbGciOiJkaXIiLCJlbmMiOiJBMTI4R0NNIn0..48V1_ALb6US04U3b.5eym8TW_c8SuK0ltJ3rpYIzOeDQz7TALvtu6UG9oMo4vpzs9tX_EFShS8iB7j6jiSdiwkIr3ajwQzaBtQD_A.XFBoMYUZodetZdvTiFvSkQ",
    ),
]
# Shown otherwise than they read: after a terminal colour code, in a query string before the
# next parameter, with base64 padding, behind an escaped `=`, with an invisible character inside.
SHOWN_TRUE_POSITIVES = [
    ("\x1b[36m{}\x1b[0m", "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("  Token: \x1b[1m{}\x1b[22m", "sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("\x1b[32mAKIA\x1b[0m{}", "IOSFODNN7EXAMPLE"),  # a colour change inside the token
    ("repr: '\\x1b[33m{}\\x1b[0m'", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("\x1b]0;title\x07{}", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"),
    ("curl -v 'https://api.example.com/items?access_token={}&limit=50'", "a1B2c3D4e5F6g7H8i9J0"),
    ("GET /export?api_key={};format=csv", "q9w8e7r6t5y4u3"),
    ("/cb?state=xyz&client_secret={}&code=abc", "Zx9-Yw8_Vu7-Ts6"),
    ("SECRET_KEY={}", "VHIwdWI0ZG9yM3h5elE="),
    ("DB_PASSWORD={}", "abc123XYZqq=="),
    ("data:\n  password: {}\n  username: YWRtaW4=", "cGFzc3dvcmQ="),
    ("password%3D{}", "hunter22x"),
    ("?password={}&x=1", "p%40ssw0rd"),
    ("DB_PASSWORD={}", "p%40ss%2Fw0rd"),
    ("DB_PASSWORD%3d{}%26next%3D1", "hunter22x"),
    ("DB_PASSWORD&#61;{}", "hunter22x"),
    ("DB_PASSWORD&#x3D;{}", "hunter22x"),
    ("API_KEY\\x3d{}", "q9w8e7r6t5y4"),
    ("{}", "ghp_AbCdEfGhIj\u200bKlMnOpQrStUvWxYz0123456789"),
    ("{}", "AKIAIOSF\u00adODNN7EXAMPLE"),
    ("{}", "sk-proj-Ab3dEf\u2060GhIjKlMnOpQrStUvWxYz0123456789"),
    ("{}", "hf_AbCdEfGh\ufeffIjKlMnOpQrStUvWxYz01234567"),
    ("{}", "xoxb-123456789012-12345\u200d67890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    # A token's own characters escaped for HTML or a URL (round-6 trust pass: passed unread).
    ("<td>{}</td>", "&#103;hp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("<td>{}</td>", "".join(f"&#x{ord(c):x};" for c in "sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789")),
    ("{}", "%67hp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("https://x.example.com/cb?next={}", "".join(f"%{ord(c):02X}" for c in "AKIAIOSFODNN7EXAMPLE")),
]
ALL_TRUE_POSITIVES = (
    TRUE_POSITIVES
    + NAMED_TRUE_POSITIVES
    + SHORT_OPTION_TRUE_POSITIVES
    + TOKENS_ON_THEIR_OWN_LINE
    + SHOWN_TRUE_POSITIVES
)


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize(("template", "secret"), ALL_TRUE_POSITIVES)
def test_credentials_are_masked_in_every_escaping_layer(template: str, secret: str, layer: str) -> None:
    """An env dump with the secret on one line, escaped: masked, and the escaping still decodes."""
    encode, decode = LAYERS[layer]
    for separator in ("\n", "\t", "\r\n"):
        text = encode(f"A=1{separator}{template.format(secret)}{separator}HOME=/root")
        redacted = redact_secrets(text)
        assert redact_secrets(redacted) == redacted
        decoded = decode(redacted)  # valid escaping: no sequence cut in half
        assert secret not in decoded and REDACTED in decoded, (separator, redacted)
        assert decoded.startswith("A=1") and decoded.endswith("HOME=/root"), redacted


def test_an_env_dump_in_a_hermes_tool_result_is_masked_in_place() -> None:
    content = (
        "A=1\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nDB_PASSWORD=Tr0ub4dor-x9\n"
        "PWD=/testbed\nHOME=/root"
    )
    text = json.dumps({"content": content})
    expected = {"content": f"A=1\nAWS_SECRET_ACCESS_KEY={REDACTED}\nDB_PASSWORD={REDACTED}\nPWD=/testbed\nHOME=/root"}
    assert json.loads(redact_secrets(text)) == expected


NEW_FALSE_POSITIVES = [
    'if config["password"] == "":',
    "<password>${DB_PASS}</password> <token>abc</token>",
    "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef: {name: db}",
    "The machine has a password prompt; 'pass' => true",
    'os.environ["DB_PASSWORD"] = getpass()',
    "llm --max-tokens 100 --token-file /etc/token --secret-name app",
    "usage: x [--api-key KEY] [--token TOKEN]; see the --api-key option",
    "tool --api-key $API_KEY --token 12345",
    "docker run -p 8080:80 nginx",
    "ssh -p 2222 deploy@host",
    "mkdir -p /var/lib/mysql && chown mysql /var/lib/mysql",
    "python -m pytest -p no:cacheprovider tests/",
    "mysql -u root -p\\nEnter password:",
    "mysql -u root -p app < dump.sql",
    "mysql -h db -P3306 -u root app",
    "docker run --name mysql -p3306:3306 -p127.0.0.1:33060:33060 -d mysql:8",
    'mysql -u root -p"$MYSQL_ROOT_PASSWORD" app',
    "DB_PASS=$DB_PASS",
    'MYSQL_PASS="${MYSQL_PASS}"',
    "bypass=True",
    "compass=north",
    "n_pass=1000",
    "PWD=/testbed\nOLDPWD=/root\nHOME=/root",
    "docker login --password-stdin < token.txt",
    "usage: tool [-h] [--password PASSWORD] [--pass-file FILE]",
    "  -p, --password TEXT  the password to use",
    "Pass the --password option when prompted.",
    'print("password:\\n")',
    "passes = 3",
    'PASSWORD_FIELD = "password"',
    "DB_PASSWORD=os.environ['DB_PASSWORD']",
    "API_KEY=settings.API_KEY",
    "class Settings:\n    SECRET_KEY: Final = load()\n    DB_PASSWORD: SecretStr\n    API_KEY: Any",
    "PASS: tests/test_x.sh\nPASS: test_1\nFAIL: test_2",  # test results, not passwords
    "--- PASS: TestFoo/sub_case_1 (0.00s)",
    "ok 1 - pass: t/01-basic.t",
    # A short option is a password only for the program that defines it.
    "docker run -d -p 27017:27017 --name db mongo",
    "docker login -u me -p $REGISTRY_PASSWORD registry.example.com",
    "mongod --port 27017 --dbpath /data/db",
    "bcp dbo.t out t.dat -S db -T -P $SA_PASSWORD",
    "redis-cli -h cache -p 6379 ping",
    'redis-cli -a "$REDIS_PASSWORD" ping',
    "ldapsearch -x -W -D cn=admin,dc=ex -b dc=ex",
    "smbclient -L //fs -U alice",
    "htpasswd -c /etc/nginx/.htpasswd admin",
    "go test -run TestToken -v ./...",
    "the -token flag sets it; -password is required",
    "echo $SUDO_PASS | sudo -S true",
    "echo done | sudo tee /etc/motd",
    "printf 'x\\n' | sudo tee -a /etc/hosts",
    "aws configure set region us-east-1",
    "npm config set registry https://registry.npmjs.org/",
    "curl -u :$TOKEN https://api.example.com",
    "GET /search?q=https%3A%2F%2Fexample.com%2Fdocs%40v2",
]
# What the views of round 5 (terminal escapes, query strings, padding, escaped `=`, invisible
# characters) must leave alone.
SHOWN_FALSE_POSITIVES = [
    "http://localhost:8080/api/v1/items?page=2&limit=50",
    "GET /search?q=python&sort=stars;order=desc HTTP/1.1",
    "https://example.com/a?x=1&amp;y=2&#38;z=3",
    "https://www.google.com/search?q=a%3Db%26c&hl=en",
    "<p>x &#61; 1 &amp;&amp; y &#x3D; 2</p>",
    '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6k'
    'gAAAABJRU5ErkJggg==">',
    '{"image": "data:image/jpeg;base64,/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAAYEBQYFBAYGBQYGBgcHBgkIBwcHBwcJCAkJCAkJ"}',
    "\x1b[32m.\x1b[0m\x1b[32m.\x1b[0m\x1b[31mF\x1b[0m [100%]\n\x1b[31m\x1b[1m1 failed\x1b[0m, \x1b[32m2 passed\x1b[0m",
    "\x1b[33mcommit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a\x1b[m\nAuthor: Dev <dev@example.com>",
    "\x1b[1mid\x1b[0m: 123e4567-e89b-12d3-a456-426614174000",
    "\x1b]8;;https://docs.python.org/3/\x1b\\docs\x1b]8;;\x1b\\",
    "max_tokens = 512\x1b[K",
    "family: \U0001f468\u200d\U0001f469\u200d\U0001f467 emoji",
    "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 password reset",
    "\ufeffimport os\nkey = os.environ['KEY']",
    "hyphen\u00adated word in an article",
    "b64 = base64.b64encode(data)  # ends with '=='",
    'password = "%s" % args.password',
    "password=%(password)s",
]


@pytest.mark.parametrize("layer", ["plain", "json", "json-in-json", "gson"])
@pytest.mark.parametrize("text", FALSE_POSITIVES + NEW_FALSE_POSITIVES + SHOWN_FALSE_POSITIVES)
def test_ordinary_text_is_unchanged_in_every_escaping_layer(text: str, layer: str) -> None:
    escaped = LAYERS[layer][0](text)
    assert redact_secrets(escaped) == escaped


def test_no_rule_literal_holds_a_character_an_escape_decodes_to() -> None:
    """`find_secrets` reads the decoded view only when the text holds a literal (or `\\u`, `\\/`): sound
    only while no escape sequence other than those can make a literal appear."""
    for rule in ALL_RULES:
        for literal in rule.literals:
            assert not set(literal) & set("\n\r\t\b\f\"'\\"), (rule.name, literal)


def test_no_rule_literal_is_a_marker_of_shown_text() -> None:
    """The markers `as_shown` looks for ride in the literals' automaton with no rule of their own."""
    literals = {literal.lower() for rule in ALL_RULES for literal in rule.literals}
    assert not literals & set(SHOWN_MARKERS)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a \x1b[36mghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\x1b[0m b", f"a \x1b[36m{REDACTED}\x1b[0m b"),
        ("?access_token=a1B2c3D4e5F6g7H8i9J0&limit=50", f"?access_token={REDACTED}&limit=50"),
        ("SECRET_KEY=VHIwdWI0ZG9yM3h5elE=\nDEBUG=1", f"SECRET_KEY={REDACTED}\nDEBUG=1"),
        ("x ghp_AbCdEfGhIj\u200bKlMnOpQrStUvWxYz0123456789 y", f"x {REDACTED} y"),
        ("<td>DB_PASSWORD&#61;hunter22x</td>", f"<td>DB_PASSWORD&#61;{REDACTED}</td>"),
        # A CI checkout's remote (`git remote -v`): the token is the URL's password, the host and
        # path stay (read as a `token:` assignment, the value ran to `.git`).
        (
            "origin\thttps://x-access-token:Zq8wXc7vBn6mAs5dFg4hJk3l@github.com/o/r.git (fetch)",
            f"origin\thttps://x-access-token:{REDACTED}@github.com/o/r.git (fetch)",
        ),
        (
            "https://gitlab-ci-token:Zq8wXc7vBn6mAs5d@gitlab.com/g/p.git",
            f"https://gitlab-ci-token:{REDACTED}@gitlab.com/g/p.git",
        ),
        # `cat /proc/1/environ`: entries separated by NULs, raw or JSON-escaped; each value ends at one.
        (
            "HOSTNAME=abc\x00DB_PASSWORD=Zq8wXc7vBn6mAs5d\x00HOME=/root\x00",
            f"HOSTNAME=abc\x00DB_PASSWORD={REDACTED}\x00HOME=/root\x00",
        ),
        (
            "HOSTNAME=abc\\u0000API_TOKEN=Zq8wXc7vBn6mAs5dFg4hJk3l\\u0000HOME=/root",
            f"HOSTNAME=abc\\u0000API_TOKEN={REDACTED}\\u0000HOME=/root",
        ),
    ],
)
def test_what_is_shown_around_a_secret_is_kept(text: str, expected: str) -> None:
    """The colour codes around a token, the next query parameter, the tag after a value stay."""
    assert redact_secrets(text) == expected
