"""Credential shapes found by the round-6 adversarial pass (each leaked before its rule), and the
ordinary text beside them that must pass unchanged, in every escaping layer."""

from __future__ import annotations

import json
import time

import pytest

from tests.summarize.test_redact import LAYERS
from trajectory_compressor.summarize.redact import REDACTED, redact_secrets

# Round 11, three gaps `docs/reliability.md` listed. A `.pgpass` line on any port (pgbouncer's
# 6432, Supabase's 6543), alone on its line or as one token (`echo '…' >> ~/.pgpass`): five
# fields, the second a port or `*`; only the password is masked.
PGPASS_LINES = [
    ("$ cat ~/.pgpass\ndb.example.com:6543:app:alice:{}", "S3cretPw!"),
    ("10.0.0.5:6432:*:deploy:{}", "Wq7xLm2pRt9v"),
    ("localhost:*:*:postgres:{}", "plainword"),
    ("echo 'db.example.com:5433:app:alice:{}' >> ~/.pgpass", "Wq7xLm2pRt9v"),
    ('echo "pg-primary:25060:defaultdb:doadmin:{}" > ~/.pgpass && chmod 600 ~/.pgpass', "Wq7xLm2pRt9v"),
    ("     3\tdb.internal:15432:app:deploy:{}", "Wq7xLm2pRt9v"),  # `cat -n`
    ("db.example.com:6543:app:alice:{}", "pa\\:ss9Wq7x"),  # `\:` is a colon in a password
]

# A password typed after a prompt, on the next line and alone on it (a terminal's transcript, a
# note): any word then, a plain one too.
PROMPTED_PASSWORDS = [
    ("$ su -\nPassword:\n{}", "hunter2Xy!"),
    ("password:\n{}", "Wq7xLm2pRt9v"),
    ("mysql -u root -p\nEnter password:\n{}", "Wq7xLm2pRt9v"),
    ("[sudo] password for alice:\n{}", "Wq7xLm2pRt9v"),
    ("alice@10.0.0.5's password: \n{}", "Wq7xLm2pRt9v"),
    ("Password for 'https://bob@github.com':\n{}", "Wq7xLm2pRt9v"),
    ("Enter PEM pass phrase:\n{}", "Wq7xLm2pRt9v"),
    ("Enter passphrase for key '/root/.ssh/id_ed25519':\n{}", "Wq7xLm2pRt9v"),
    ("Password (again):\n{}", "Wq7xLm2pRt9v"),
    ("(current) UNIX password:\n{}", "Wq7xLm2pRt9v"),
    ("Password:\n{}", "correcthorse"),
    ("Password:\n  {}  ", "Wq7xLm2pRt9v"),
    ("Password:\r\n{}\r\nLast login: Mon Jan  1 10:00:00 2024", "Wq7xLm2pRt9v"),
    ("Password:\nPassword:\n{}", "Wq7xLm2pRt9v"),
    ("New password:\n{0}\nRetype new password:\n{0}", "Wq7xLm2pRt9v"),
    ("Use this one: Password:\n{}", "Wq7xLm2pRt9v"),
    ("Enter password:\n{}", "20481024"),
]

# A URL's password holding an unencoded `/`, `?` or `#` (each ends the authority): to the token's
# last `@` that a host follows.
URL_PASSWORDS_WITH_DELIMITERS = [
    ("git clone https://alice:{}@git.example.com/repo.git", "pa/ss9Wq7x"),
    ("DATABASE_URL=postgres://u:{}@db:5432/x", "p?w#d9Wq7x"),
    ("mysql://app:{}@10.0.0.5:3306/app", "Wq7/xLm2?pRt#9"),
    ("redis://default:{}@localhost:6379/0", "a/b?c#d9Wq7"),
    ("amqp://guest:{}@rabbit.internal:5672/", "p@ss/w0rd9Wq"),
    ("postgresql://app:{}@db/app", "Wq7/xLm2pRt9"),
    ("https://u:{}@[::1]:8443/x", "Wq7/xLm2pRt9"),
    ("pip install git+https://deploy:{}@git.example.com/org/pkg.git#egg=pkg", "Wq7#xLm2/pRt9"),
    ("git remote add origin 'https://alice:{}@git.example.com'", "pa/ss9Wq7x"),
    ("[repo](https://alice:{}@git.example.com/r)", "pa/ss9Wq7x"),
]

# (text with {} where the secret goes, the secret that must disappear)
SHAPES = [
    # Generated passwords: their symbols are not code (`assignment_rules.assignment_value`).
    ("DB_PASSWORD={}", "Xk9*pQ2!mZ7v"),
    ("export DB_PASSWORD={}", "v8$Lq2#Rz0!w"),
    ("docker run -e MYSQL_ROOT_PASSWORD={} mysql:8", "T4(nR8)wQ2z!"),
    ("REDIS_PASSWORD: {}", "aB3{{kL9}}mN2p"),
    ("password: {}", "Qz7<rT2>pL9w"),
    ("SMTP_PASSWORD={}", "Ht6%Rq2^Lm9z"),
    ("password: {}", "Mn4[Qz8]Lp2w"),
    ("DB_PASSWORD={} npm start", "Lp5,Qz8;Tr2w"),  # an env value runs to white space
    ('{{"password": "{}"}}', "[Wq7xLm2pRt9"),
    ('password = "{}"', "it's-S3cret9"),
    ("db.connect(host=h, password={})", "pw4Wq7xLm2p"),
    # An environment's or a version's suffix on an upper-case name; `_PW`.
    ("SECRET_KEY_BASE={}", "9f3a" * 16),
    # Rails' own key, in lower case: its `secrets.yml` and its `config.secret_key_base =`.
    ("  secret_key_base: {}", "9f3a" * 16),
    ("config.secret_key_base = '{}'", "9f3a" * 16),
    ("DB_PASSWORD_PROD={}", "Wq7xLm2pRt9v"),
    ("API_KEY_V2={}", "Wq7xLm2pRt9v"),
    ("ADMIN_PW={}", "Wq7xLm2pRt9v"),
    # SQL.
    ("ALTER USER postgres PASSWORD '{}';", "Wq7xLm2pRt9v"),
    ("CREATE ROLE app LOGIN PASSWORD '{}';", "Wq7xLm2pRt9v"),
    ("CREATE USER 'app'@'%' IDENTIFIED WITH mysql_native_password BY '{}';", "Wq7xLm2pRt9v"),
    ("SET PASSWORD FOR 'app'@'localhost' = '{}';", "Wq7xLm2pRt9v"),
    # A name and its value given apart (`context_rules`).
    ('{{"name": "DB_PASSWORD", "value": "{}"}}', "Wq7xLm2pRt9v"),
    ('{{"Name": "/prod/db/password", "Type": "SecureString", "Value": "{}"}}', "Wq7xLm2pRt9v"),
    (
        '{{"id": "https://kv1.vault.azure.net/secrets/db/1f2e", "kid": null, "managed": null, "name": "db", '
        '"tags": {{}}, "value": "{}"}}',
        "Wq7xLm2pRt9v",
    ),
    ('os.getenv("DB_PASSWORD", "{}")', "Wq7xLm2pRt9v"),
    ("define('DB_PASSWORD', '{}');", "Wq7xLm2pRt9v"),
    ('monkeypatch.setenv("API_KEY", "{}")', "Wq7xLm2pRt9v"),
    ("const password = process.env.DB_PASSWORD || '{}';", "Wq7xLm2pRt9v"),
    ('r = requests.get(url, auth=("admin", "{}"))', "Wq7xLm2pRt9v"),
    ('auth = HTTPBasicAuth("admin", "{}")', "Wq7xLm2pRt9v"),
    ('{{"Name": "prod/api", "SecretString": "{}"}}', "Wq7xLm2pRt9v"),
    ("ENV DB_PASSWORD {}", "Wq7xLm2pRt9v"),
    ("ENV DB_PASSWORD {}", "plainword"),  # a Dockerfile's line: a plain word is the value
    ("Use this one: ENV DB_PASSWORD {}", "pw-Wq7xLm2p"),
    ("set -gx DB_PASSWORD {}", "Wq7xLm2pRt9v"),
    ("====== Data ======\nKey         Value\n---         -----\npassword    {}", "Wq7xLm2pRt9v"),
    # AWS's secret key beside its key id, and the `aws configure` prompt.
    ("AKIAIOSFODNN7EXAMPLE,{}", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("ACCESSKEY\tAKIAIOSFODNN7EXAMPLE\t2024-01-01T00:00:00Z\t{}\tActive", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("AWS Secret Access Key [None]: {}", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    # Azure SAS, Firebase, `.npmrc`'s `_auth`, UUID tokens.
    ("https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sr=b&sp=r&sig={}", "a1B2c3D4e5F6g7H8i9J0kLmN%2Bop%3D"),
    ("https://proj.firebaseio.com/users.json?auth={}", "Kq8Zr2Lm4Tx9Wv3Yb7Nc1Pd5"),
    ("//registry.example.com/:_auth={}", "dXNlcjpXcTd4TG0ycFJ0OXY="),
    ("NPM_TOKEN={}", "3f2b9c1e-7a4d-4e8b-9c2f-1d5e6a7b8c9d"),
    ('{{"token": "{}"}}', "3f2b9c1e-7a4d-4e8b-9c2f-1d5e6a7b8c9d"),
    # Authorization's other schemes and separators.
    ("Authorization: SSWS {}", "00QCjAl4MlV-WPXM8ba0wh2BcgS9Znt2xTh7KVeHlB"),
    ("Authorization: Klaviyo-API-Key {}", "pk_3f2b9c1e7a4d4e8b9c2f1d5e6a"),
    ('req.Header.Set("Authorization", "Basic {}")', "YWRtaW46V3E3eExtMnBSdDl2"),
    ('proxy_set_header Authorization "Basic {}";', "YWRtaW46V3E3eExtMnBSdDl2"),
    # Key blocks with other headers.
    ("---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\n{}\n---- END SSH2 ENCRYPTED PRIVATE KEY ----", "P2/56wAAAi4AAAA3"),
    ("-----BEGIN OpenVPN Static key V1-----\n{}\n-----END OpenVPN Static key V1-----", "9f3a1c2b" * 4),
    ("-----BEGIN PGP SECRET KEY BLOCK-----\n\n{}\n-----END PGP SECRET KEY BLOCK-----", "lQOYBF0AbCdEfGh"),
    # Programs given a password or a token as an argument of their own.
    ("keytool -genkey -alias app -keystore k.jks -storepass {} -keypass x9", "Wq7xLm2pRt9v"),
    ("ssh-keygen -t ed25519 -f key -N '{}'", "Wq7x Lm2p"),
    ("zip -r -P {} out.zip dir", "Wq7xLm2pRt9v"),
    ("7z a -p{} out.7z dir", "Wq7xLm2pRt9v"),
    ("openssl enc -aes-256-cbc -in a -out b -k {}", "Wq7xLm2pRt9v"),
    ("echo 'root:{}' | chpasswd", "Wq7xLm2pRt9v"),
    ("printf '{}' | docker secret create db_password -", "Wq7xLm2pRt9v"),
    ("requirepass {}", "Wq7xLm2pRt9v"),
    ("127.0.0.1:6379> AUTH {}", "Wq7xLm2pRt9v"),
    ("mysqladmin -u root password '{}'", "Wq7xLm2pRt9v"),
    ("rabbitmqctl add_user admin {}", "Wq7xLm2pRt9v"),
    ('gh secret set DB_PASSWORD --body "{}"', "Wq7xLm2pRt9v"),
    ("aws ssm put-parameter --name /prod/db/pw --type SecureString --value {}", "Wq7xLm2pRt9v"),
    ("ngrok config add-authtoken {}", "2aBcDeFgHiJkLmNoPqRsTuVwXyZ_1a2b3c"),
    ("vault login {}", "s.Wq7xLm2pRt9vKq8Zr2Lm4Tx"),
    ("poetry config http-basic.corp deploy {}", "Wq7xLm2pRt9v"),
    ("twine upload -u deploy -p {} dist/*", "Wq7xLm2pRt9v"),
    ("lftp -u deploy,{} sftp://host", "Wq7xLm2pRt9v"),
    ("vercel deploy --prod -t {}", "8aKqZ3vLr7Tn2Yb9Hd5Fg1Jk"),
    ("sqlplus system/{}@//db:1521/XE", "Wq7xLm2pRt9v"),
    ("jdbc:oracle:thin:scott/{}@db:1521:ORCL", "Wq7xLm2pRt9v"),
    ("<passphrase>{}</passphrase>", "Wq7xLm2pRt9v"),
    # A plain word in a config file under an INI section (`.my.cnf`), or in a libpq conninfo.
    ("[client]\nuser=root\npassword={}", "rootpass"),
    ("[database]\nhost = db\npassword = {}", "rootpassword"),
    ('psql "host=db user=app password={} dbname=app"', "correcthorsebattery"),
    ("$ cat ~/.pgpass\ndb.internal:5432:app:deploy:{}", "Wq7xLm2pRt9v"),
    ("*:*:*:postgres:{}", "postgres-pw"),
    # ODBC's braced value (`}}` is a `}` in it), a YAML tag before the value, a JSON body or a
    # header percent-encoded whole.
    ("Driver={{ODBC Driver 18 for SQL Server}};Server=tcp:db,1433;Uid=sa;Pwd={{{}}};Encrypt=yes", "Xk9*pQ2;mZ7v"),
    ("Server=db;Database=app;User Id=sa;Password={{{}}};", "Wq7x}}}}Lm2pRt9v"),
    ("password: !!str {}", "Wq7xLm2pRt9v"),
    ("curl -d 'payload=%7B%22password%22%3A%22{}%22%7D' https://api.example.com", "Wq7xLm2pRt9v"),
    ("GET /?h=Authorization%3A%20Bearer%20{} HTTP/1.1", "eyQ2b3NmTmpXWkxZdGhw8aKqXk9p"),
    # Round 9, after its adversarial pass: a percent-escape inside the value (the text is also
    # read as written), or starting it; any percent-escaped punctuation; ODBC's value in prose,
    # with blanks, a plain word or keywords only after it; YAML's properties before a value.
    ("https://example.com/login?user=bob&password={}", "correct%20horse%20battery%20staple"),
    ("postgres://app:{}@db.example.com:5432/app", "s3cr%20t9Pw"),
    ('{{"password": "{}"}}\nGET /files/My%20Doc.pdf 200', "Xk9%22pQ2mZ7v"),
    ("DATABASE_URL=postgres://app:{}@db:5432/app\nGET /files/My%20Doc.pdf 200", "Xk9%2FpQ2mZ7v"),
    ("postgres://app:{}@db/app", "%21Xk9pQ2mZ7v"),
    ("?password={}&x=1", "%21Xk9pQ2mZ7v"),
    ("q=%27password%27%3A%20%27{}%27", "Xk9pQ2mZ7v"),
    ("text=line1%0A{}", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("Use `Driver={{ODBC Driver 18}};Server=x;Uid=sa;Pwd={{{}}}` to connect", "Xk9pQ2mZ7v"),
    ("Driver={{ODBC Driver 18}};Server=x;Uid=sa;Pwd = {{{}}};", "Xk9;pQ2mZ7v"),
    ("Driver={{ODBC Driver 18}};Server=x;Uid=sa;Pwd={{{}}};", "CorrectHorseBatteryStaple"),
    ("Pwd={{{}}};Driver={{ODBC Driver 18}};Server=x;Uid=sa", "Xk9pQ2mZ7v"),
    ("Provider=MSDASQL;Initial Catalog=app;User=sa;Pwd={{{}}};", "Xk9pQ2mZ7v"),
    ("password: !<tag:yaml.org,2002:str> {}", "Wq7xLm2pRt9v"),
    ("password: &pw !!str {}", "Wq7xLm2pRt9v"),
    ("password: ! {}", "Wq7xLm2pRt9v"),
    ("password: {} extra", "!Xk9pQ2"),
    # Round 10: a YAML block scalar's lines, and text percent-encoded twice (`%25` is `%`).
    ("password: |\n  {}", "Xk9#mQ2vLp7wRt"),
    ("db:\n  password: >-\n    {}\n  host: db", "correcthorsebatterystaple"),
    ("DB_PASSWORD: |2-\n    {}\n", "Wq7xLm2pRt9v"),
    ("private_key: |\n  {}\n  QzLm2pRt9vWq7xLm2pRt9vQz", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"),
    # ... after its adversarial pass: shown by a tool (`cat -n`, `grep -n`, a diff), blanks after
    # the value, a tab, a tag before the header, a comment before it, lines after it that are not
    # one value (a truncation marker, a comment indented less).
    ("     2\t  password: |\n     3\t    {}\n     4\t  host: db", "Wq7xLm2pRt9v"),
    ("12:  password: |\n13-    {}", "Wq7xLm2pRt9v"),
    ("+  password: |\n+    {}\n   host: db", "Wq7xLm2pRt9v"),
    ("password: |\n  {} \nhost: db", "Wq7xLm2pRt9v"),
    ("password: |\n\t{}", "Wq7xLm2pRt9v"),
    ("password: !!str |\n  {}", "Wq7xLm2pRt9v"),
    ("password: &pw |\n  {}", "Wq7xLm2pRt9v"),
    ("password: |\n  # generated 2024\n  {}", "Wq7xLm2pRt9v"),
    ("password: |\n  {}\n  ... 3 more lines", "Wq7xLm2pRt9v"),
    ("password: >-\n    {}\n  # end", "Wq7xLm2pRt9v"),
    ("password: |-\n  '{}'", "Wq7xLm2pRt9v"),
    # A form body's `+` for a space (`urlencode({"q": json.dumps(body)})`), once and twice encoded.
    ("q=%7B%22password%22%3A+%22{}%22%7D", "Wq7xLm2pRt9v"),
    ("q=%257B%2522password%2522%253A%2B%2522{}%2522%257D", "Wq7xLm2pRt9v"),
    ("curl 'https://x/?q=%257B%2522password%2522%253A%2522{}%2522%257D'", "Wq7xLm2pRt9v"),
    ("data=password%253D{}%2526user%253Dbob", "Wq7xLm2pRt9v"),
    # A password set by a command that reads it on stdin or hashes it from an argument.
    ("echo '{}' | passwd --stdin root", "Zebra77Quartz1"),
    ("chpasswd <<< 'deploy:{}'", "Zebra77Quartz2"),
    ("echo 'deploy:{}' | chpasswd", "Zebra77Quartz2"),
    ("passwd --stdin root <<< {}", "Zebra77Quartz1"),
    ("usermod --password $(openssl passwd -1 {}) bob", "Zebra77Quartz3"),
    ("openssl passwd -6 -salt Qx7r {}", "Zebra77Quartz3"),
    ("htpasswd -b /etc/nginx/.htpasswd admin {}", "Zebra77Quartz4"),
    ("mysqladmin -u root -pOld1pw password {}", "Zebra77Quartz5"),
    ("sshpass -p {} ssh root@10.0.0.5", "Zebra77Quartz6"),
    # A credential named in a sentence (`prose_rules`): a linking word, or none after `password`.
    ("btw my password is {} if you need sudo", "zebra-Quartz-77-lamp"),
    ("error: login failed for user admin with password {}", "Tr0ub4dor&3xyz"),
    ("the admin password is {}.", "Kx9#mPq2"),
    ("ssh root@10.0.0.5 password {}", "Kx9#mPq2"),
    ("The secret is {}", "Kx9mPq2zz"),
    ("the secret key was {}", "Kx9mPq2zz"),
    ("use passphrase {} to unlock it", "Kx9mPq2zz"),
    ("credentials: admin / {}", "Kx9#mPq2zz"),
    ("credentials are deploy:{}", "Kx9#mPq2zz"),
    ("set password {}", "Kx9#mPq2zz"),
    ("password for root: {}", "Kx9#mPq2zz"),
    ("Password for 'https://bob@github.com': {}", "Kx9mPq2zz"),
    ("the password for user admin is '{}'", "hunter22"),
    ("I set the root password to {}!", "Kx9mPq2zz"),
    ("the DB_PASSWORD has been changed to `{}`", "Kx9mPq2zz"),
    ("created with a password of {} (keep it)", "Kx9mPq2zz"),
    *PGPASS_LINES,
    *PROMPTED_PASSWORDS,
    *URL_PASSWORDS_WITH_DELIMITERS,
]

# Ordinary code, schemas and references beside those shapes.
ORDINARY = [
    "connect(host=h, password=pw)",
    "password: Optional[str] = None",
    "password: Dict[str, Any]",
    'api_key=os.environ.get("X")',
    "password=hashlib.sha256(pw).hexdigest()",
    '"password": "${DB_PASSWORD}"',
    'PASSWORD="$(cat /run/secrets/pw)"',
    "password: '********'",
    'password: "<your-password-here>"',
    '"password": "{password}"',
    "password=self.password)",
    "password=func(a)[0]",
    "password: Array<string>",
    "password = crypt('x', gen_salt('bf'))",
    "password=sys.argv[1]",
    "password=%PASSWORD%",
    "PASSWORD_MIN_LENGTH=8",
    "password_prod=abc123x",  # a suffix counts in upper-case names only
    "pw = getpass.getpass()",
    'pw = "hunter22x"',  # `pw` alone is too short a name to trust
    '"properties": {"password": {"type": "string", "format": "password", "minLength": 8}}',
    '"volumes": [{"name": "certs", "secret": {"secretName": "tls-certs", "defaultMode": 420}}]',
    "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf",
    "resolved-key=sha512-8aKqZ3vLr7Tn2Yb9Hd5Fg1JkWq7xLm2pZk8vQ2mW9xLp4rT7yB3nC6dF1gH5jK0sA2eR8u",
    "publicKey: 04a5c9f3e2b1d8a7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2",
    '{"name": "TOKEN_TTL", "value": "3600"}',
    '{"name": "LOG_LEVEL", "value": "debug"}',
    'os.getenv("DB_PASSWORD", "")',
    'os.getenv("API_KEY", None)',
    "Authorization header is required",
    "authorization failed for user bob",
    "ENV PATH /usr/local/bin:$PATH",
    "ENV DB_PASSWORD_FILE /run/secrets/db",
    "The ENV DB_PASSWORD must be set before the build.",
    "password    reset    link",
    "vault login -method=userpass username=me",
    "zip -r out.zip dir",
    "7z x -p archive.7z",
    "ssh-keygen -t ed25519 -f key",
    "sqlplus / as sysdba",
    "https://example.com/page?sig=1&x=2",
    "def f(password=pw): pass",
    "[tool.x]\nkey = 1\n\ndef f(password=pw): pass",
    "def f():\n    password = secret_value",
    "[section]\n    password = getpass()",
    "[mysqld]\npassword = ${DB_PASS}",
    "00:11:22:33:44:55",
    "db:5432:app:deploy:$PGPASS",
    "listening on 0.0.0.0:5432: ready",
    'conn = f"DRIVER={{x}};SERVER=db;UID=app;PWD={password}"',
    "conn = f\"DRIVER={{x}};SERVER=db;UID=app;PWD={os.environ['DB_PW']}\"",
    "https://example.com/search?q=password%20reset%20help&page=2",
    "https://example.com/search?q=%22api_key%22%20rotation",
    'conn = "Driver={SQL Server};Server=" + host + ";Uid=" + user + ";Pwd={" + pwd + "};"',
    'sb.Append("Driver={SQL Server};Server=x;Uid=sa;Pwd={").Append(pwd).Append("};");',
    'f"Driver=x;Server={host};Uid={user};Pwd={pwd2};"',
    "f\"Driver=x;Server={host};Uid={user};Pwd={password or ''};\"",
    'f"Driver=x;Server=db;Uid=sa;Pwd={password!r};"',
    'f"Driver=x;Server=db;Uid=sa;Pwd={password:>10};"',
    'String.Format("Driver=x;Server={0};Uid={1};Pwd={2,-10};", a, b, c)',
    '"Driver=x;Server=db;Uid=sa;Pwd={$pwd};"',
    '"Driver=x;Server=db;Uid=sa;Pwd={DB_PASSWORD_2};"',
    '"Driver=x;Server=db;Uid=sa;Pwd={your password here};"',
    "password: !secret db_password",
    "MasterUserPassword: !Ref DBPassword",
    "password_length: !!int 12",
    '"password": [REDACTED]',
    "GET /files/My%20Doc.pdf%3Fv%3D2 200",
    "password=%PASSWORD%",
    "password: |\n  Must be at least 8 characters.\nnext: 1",
    "password: >\n  {{ vault_db_password }}\nnext: 1",
    "password: |\n  ${DB_PASS}\nnext: 1",
    "password: |\nnext: 1",
    "https://example.com/?q=100%2525%20sure%2520thing",
    "g++ -O2 a.cc && echo 'password+reset%20help'",
    "openssl passwd -6 -salt Qx7r",
    "openssl passwd -6 -stdin < pw.txt",
    "chpasswd < users.txt",
    "grep root /etc/passwd",
    "the password is correct",
    "password is required",
    "password is too short",
    "the password field",
    "reset your password via the link",
    "The password is incorrect. Try again.",
    "the password is sha256-hashed and base64-encoded",
    "the password must be 12-characters, the passphrase is aes-256-cbc",
    "the password is 'correcthorse' in the docs",
    "if password is None or secret is NotImplemented:",
    "Failed password for invalid user admin from 10.0.0.5 port 22 ssh2",
    "[sudo] password for ubuntu: Sorry, try again.",
    "the password is in /run/secrets/db_password",
    "the password is at https://vault.example.com/v1/db",
    "the password is v1.2.3, the secret is ${DB_SECRET}",
    "-p, --password PASSWORD   the password to use",
    "/etc/passwd is world-readable; pwd is /testbed",
    "credentials: ~/.aws/credentials, credentials: root/toor",
    "kubectl get secret db-creds-v2 -o yaml",
    "ERROR 1045 (28000): Access denied for user 'root'@'localhost' (using password: YES)",
    'FATAL:  password authentication failed for user "postgres"',
    "the secret is k8s-managed and the password is OAuth2-based",
    # What else reads `a:b:c:d:e` (round 11: a `.pgpass` line is five fields, the second a port):
    # diagnostics (blanks), `/etc/passwd` and `/etc/group`, times, IPv6, git refs, tracebacks,
    # images, Maven coordinates (the second field a name), a grep line with blanks in it.
    "src/a.c:12:5: error: expected ';' before '}' token",
    "root:x:0:0:root:/root:/bin/bash",
    "docker:x:999:alice",
    "12:30:45",
    "12:30:45:INFO:started",
    "fe80::1ff:fe23:4567:890a",
    "2001:db8:85a3:8d3:1319:8a2e:370:7348",
    "git push origin refs/heads/main:refs/remotes/origin/main && git show HEAD~1:src/app.py",
    '  File "/usr/lib/python3.11/site-packages/app/db.py", line 12, in connect',
    "image: registry.example.com:5000/app:1.2.3",
    "docker run -p 127.0.0.1:5432:5432 postgres:16",
    "[INFO] +- org.slf4j:slf4j-api:jar:1.7.30:compile",
    "app.py:12:def login(user, password):",
    "tests/test_db.py::test_connect PASSED",
    "db:6543:app:alice:[REDACTED]",
    # A password prompt followed by no answer alone on its line: nothing, a blank line, a sentence,
    # another prompt, terminal output, a shell's prompt; test logs; code and a schema.
    "Password:",
    "Password:\n",
    "Password:\n\nWelcome to Ubuntu 22.04",
    "Password:\n\nhunter2Xy!",
    "Password:\nSorry, try again.",
    "Password: \nsu: Authentication failure",
    "[sudo] password for alice:\nSorry, try again.\n[sudo] password for alice:\nsudo: 3 incorrect password attempts",
    "Password:\nPassword:\nPassword:",
    "Password:\n^C",
    "Password:\nroot@web-1:~#",
    "Password:\nbash-5.1#",
    "Password:\nmysql>",
    "Password:\n$",
    "Password:\n[REDACTED]",
    "Password:\nRequired",
    "PASS:\nPASSED",
    "test_password:\nPASSED",
    "tests/test_auth.py::test_password\nPASSED",
    "if not password:\n    return",
    "class Password:\n    pass",
    "def check(user, password):\n    return",
    "password:\n  type: string\n  minLength: 8",
    "password:\n  - required",
    "the password is stored in:\n/run/secrets/db",
    # An `@` in a URL with no password before it: no `user:` right after `scheme://` (a colon in a
    # path), a port before the path, mail addresses, scp-style git, package versions.
    "https://example.com/users/@alice",
    "https://github.com/a:b/c@d",
    "https://github.com/org/repo/blob/main/a:b/c@d.com",
    "mailto:alice@example.com",
    "git@github.com:org/repo.git",
    "ssh://git@github.com:org/repo.git",
    "http://localhost:8080/users/bob@example.com",
    "http://127.0.0.1:8000/api/users?email=bob@example.com#top",
    "https://registry.example.com:5000/v2/app/manifests/x@sha256.abc",
    "http://[::1]:8080/x@example.com",
    "https://web.archive.org/web/2020/https://example.com/@alice",
    "https://cdn.jsdelivr.net/npm/@scope/pkg@1.2.3/dist/x.js",
    "https://{user}:{password}@{host}/x",
    "https://deploy:[REDACTED]@npm.example.com/@scope/pkg",
]


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize(("template", "secret"), SHAPES)
def test_each_shape_is_masked_in_every_escaping_layer(template: str, secret: str, layer: str) -> None:
    encode, decode = LAYERS[layer]
    secret = secret.replace("{{", "{").replace("}}", "}")
    text = encode(f"A=1\n{template.format(secret)}\nHOME=/root")
    redacted = redact_secrets(text)
    assert redact_secrets(redacted) == redacted
    decoded = decode(redacted)
    assert secret not in decoded and REDACTED in decoded, redacted
    assert decoded.startswith("A=1") and decoded.endswith("HOME=/root"), redacted


@pytest.mark.parametrize("layer", ["plain", "json", "json-in-json", "gson"])
@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_beside_those_shapes_is_unchanged(text: str, layer: str) -> None:
    escaped = LAYERS[layer][0](text)
    assert redact_secrets(escaped) == escaped


@pytest.mark.parametrize("after", [{}, {"tool_call_id": "call_1"}])
def test_a_block_scalar_ending_a_json_string_keeps_the_json_whole(after: dict[str, str]) -> None:
    """The block's last line reads, decoded, into the string's closing quote and what follows it:
    its value ends at the quote (a mask past it broke the record and left the secret)."""
    text = json.dumps({"content": "db:\n  password: |\n    Wq7xLm2pRt9v", **after})
    redacted = redact_secrets(text)
    assert json.loads(redacted) == {"content": f"db:\n  password: |\n    {REDACTED}", **after}


def test_words_after_a_key_id_are_not_taken_for_its_secret() -> None:
    text = (
        "AKIAIOSFODNN7EXAMPLE is the key id of the example user in the docs, and ExampleUserNameOfFortyCharacters1 too"
    )
    assert redact_secrets(text) == text.replace("AKIAIOSFODNN7EXAMPLE", REDACTED)


def _seconds(text: str) -> float:
    """CPU seconds of this thread: what other work on the machine does not add to."""
    started = time.thread_time()
    redact_secrets(text)
    return time.thread_time() - started


_LINEAR_CASES = [
    ("", '{"name": "DB_PASSWORD", "x": "y", '),  # a name field, no value: read back at each name
    ("", 'f("password", '),
    ("", "password || "),
    ("", "ENV DB_PASSWORD "),
    ("", "password "),
    ("Key    Value\n---    -----\n", "password    x\n"),
    ("Key    Value\n---    -----\n", "password    x "),
    ("", "AKIAIOSFODNN7EXAMPLE "),
    ("", "sig=" + "a" * 20 + "&"),
    ("", 'SecretString": '),
    ("", "pwd={"),  # an ODBC brace never closed
    ("Server=x;", "Pwd={;;;;;;;;;;;;;;;;"),
    ("", "%20password: !!str "),
    ("", "password: |\n  x y\n"),  # each block read at most `_BLOCK_LINES` lines ahead
    ("", "password: |\n "),  # nested headers
    ("", "%2525password=x"),
    ("", "+%20"),  # every `+` a splice of the shown view
    ("", "chpasswd x "),  # a here-string looked for at most a line ahead
    ("", "openssl passwd -1 -salt x "),
    ("", "password for a b c "),  # `for <user>` and a link looked for at most a few words ahead
    ("", "password is "),
    ("", "credentials: a / "),
    ("", "db:6543:app:u:"),  # a port's host looked for behind it, a prompt's line too
    ("", "x 1:a:b:c:"),
    ("", "Password:\n"),
    ("", "[sudo] password for a b "),
    ("", "a://u:/@b"),  # every `@` of a URL's token tried for a host, within a bounded token
]


# The test command keeps the first three rules' cases; the others run in the slow suite (`variants`).
@pytest.mark.parametrize(
    ("head", "unit"),
    [case if n < 3 else pytest.param(*case, marks=pytest.mark.variants) for n, case in enumerate(_LINEAR_CASES)],
)
def test_the_context_rules_stay_linear(head: str, unit: str) -> None:
    """Four times the text costs about four times the time, not sixteen (each rule looks at a
    bounded window around its literal; a slice of the text before it made two of them quadratic).
    A ratio, so the machine's speed does not matter."""
    small = min(_seconds(head + unit * 8_000) for _ in range(2))
    large = _seconds(head + unit * 32_000)
    # Timed again only when it looks slow, up to the best of six: the slow suite's other worker
    # (a Ray cluster's processes) once made a linear case's thread time 9x (CI, 0.34 against 3.0 s;
    # 27 of 27 passed alone). A quadratic rule costs 16x, whatever the load.
    for _ in range(5):
        if large < 8 * small + 0.05:
            break
        large = min(large, _seconds(head + unit * 32_000))
    assert large < 8 * small + 0.05, (small, large)


def _pieces(text: str, size: int = 4) -> set[str]:
    return {text[i : i + size] for i in range(len(text) - size + 1)}


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize(("template", "secret"), PGPASS_LINES + PROMPTED_PASSWORDS + URL_PASSWORDS_WITH_DELIMITERS)
def test_round_11_shapes_leave_no_four_characters_of_the_password(template: str, secret: str, layer: str) -> None:
    """No 4-character piece of the password is left, in any layer (but what the text around it holds)."""
    encode, decode = LAYERS[layer]
    around = f"A=1\n{template}\nHOME=/root"
    redacted = redact_secrets(encode(around.format(secret)))
    assert redact_secrets(redacted) == redacted
    left = _pieces(secret) & _pieces(decode(redacted)) - _pieces(around)
    assert not left, (left, redacted)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("db.example.com:6543:app:alice:S3cretPw!", f"db.example.com:6543:app:alice:{REDACTED}"),
        ("*:*:*:postgres:hunter2", f"*:*:*:postgres:{REDACTED}"),
        ("echo 'db:6543:app:alice:S3cret' >> ~/.pgpass", f"echo 'db:6543:app:alice:{REDACTED}' >> ~/.pgpass"),
        ('{"content": "db:6543:app:alice:S3cret"}', f'{{"content": "db:6543:app:alice:{REDACTED}"}}'),
        (
            '{"out": "x\\ndb:6543:app:alice:S3cret", "code": 0}',
            f'{{"out": "x\\ndb:6543:app:alice:{REDACTED}", "code": 0}}',
        ),
    ],
)
def test_a_pgpass_line_keeps_all_but_its_password(text: str, expected: str) -> None:
    """Host, port, database and user stay (a summary may need them), and a JSON string that holds
    the line still closes: the password ends at its quote."""
    assert redact_secrets(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$ su -\nPassword:\nhunter2Xy!\n# whoami", f"$ su -\nPassword:\n{REDACTED}\n# whoami"),
        ("[sudo] password for alice:\r\nhunter2Xy!\r\n", f"[sudo] password for alice:\r\n{REDACTED}\r\n"),
        (
            '{"command": "retry\\nPassword:\\nhunter2Xy!", "timeout": 5}',
            f'{{"command": "retry\\nPassword:\\n{REDACTED}", "timeout": 5}}',
        ),
        ('{"out": "Password:\\n\'hunter2Xy!\'"}', f'{{"out": "Password:\\n\'{REDACTED}\'"}}'),
    ],
)
def test_a_prompted_password_is_masked_and_what_holds_it_stays(text: str, expected: str) -> None:
    """The value only: the prompt, the lines after it, quotes around it and a JSON string closing
    after it stay."""
    assert redact_secrets(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://alice:pa/ss@git.example.com/repo.git", f"https://alice:{REDACTED}@git.example.com/repo.git"),
        ("postgres://u:p?w#d@db:5432/x", f"postgres://u:{REDACTED}@db:5432/x"),
        ("amqp://guest:p@ss/w0rd@rabbit.internal:5672/", f"amqp://guest:{REDACTED}@rabbit.internal:5672/"),
        ('{"url": "https://alice:pa/ss@git.example.com"}', f'{{"url": "https://alice:{REDACTED}@git.example.com"}}'),
        # Credentials and an address later in the URL: masked to the last `@`, the host with it.
        ("https://u:pass@host.com/p?to=a@b.com", f"https://u:{REDACTED}@b.com"),
    ],
)
def test_a_url_password_with_a_delimiter_is_masked_to_the_hosts_at(text: str, expected: str) -> None:
    assert redact_secrets(text) == expected


# A passphrase with spaces in it, given to a credential's name in quotes: masked when a word of
# it is no message's (letters and digits both, 8 or more) or the name is an environment's or a
# config file's. Before, any white space in a quoted value passed it as a message.
SPACED_PASSPHRASES = [
    ('{{"password": "{}"}}', "pw Lqgi8Xv2Pz9wQ"),
    ("db_password = '{}'", "blue Rocket42x sky"),
    ("PASSWORD='{}'", "correct horse battery staple"),
    ('export ADMIN_PASSWORD="{}"', "Blue Sky 42 Rocket"),
]
# Messages and descriptions given to such a name stay: no word of letters and digits of 8 or more.
SPACED_MESSAGES = [
    '{"password": "must be 8 characters"}',
    'errors = {"password": "Password must contain at least 1 digit"}',
    '{"password": "correct horse battery staple"}',  # plain words in code: a message's shape (a gap)
    'help="the password to log in with (default: $DB_PASSWORD)"',
]


@pytest.mark.parametrize("layer", ["plain", "json", "json-in-json"])
@pytest.mark.parametrize(("template", "secret"), SPACED_PASSPHRASES)
def test_a_quoted_passphrase_with_spaces_is_masked_whole(template: str, secret: str, layer: str) -> None:
    encode, decode = LAYERS[layer]
    decoded = decode(redact_secrets(encode(template.format(secret))))
    assert decoded == template.format(REDACTED), decoded


@pytest.mark.parametrize("layer", ["plain", "json"])
@pytest.mark.parametrize("text", SPACED_MESSAGES)
def test_a_message_given_to_a_credentials_name_stays(text: str, layer: str) -> None:
    escaped = LAYERS[layer][0](text)
    assert redact_secrets(escaped) == escaped
