"""Masking credentials in text that leaves the machine, and in text we write down.

Two different jobs live here:

* `redact_secrets` masks *patterns* of credentials (API keys, tokens, private keys, passwords in
  assignments, URLs and headers) in trajectory text before it is sent to the summarizing
  endpoint, in the summaries of every summarizer (LLM and extractive), and in error snippets.
  Trajectories are often recorded from real agents that printed their environment; a training
  set should not carry those keys further. `find_secrets` gives the spans, so that a caller
  that cuts text (prompt elision) can mask a secret a cut falls into, whole.
* `scrub` removes *known* secrets (our own API key, the credentials in the base URL, in every
  form they travel in: `url_credentials`) from any text that we put into an error message, a log
  line, a metric, the cache or a dataset.

Coverage (the rules live in `secret_rules`, one line each; modelled on the default rules of
gitleaks, trufflehog and detect-secrets):

- private keys: PEM (RSA, EC, DSA, OPENSSH, ENCRYPTED, PKCS#8), PGP, PuTTY, age; also a PEM body
  whose BEGIN line was cut away;
- cloud: AWS key ids (AKIA, ASIA, ABIA, ACCA) and secret keys (by name), GCP API keys (AIza),
  OAuth client secrets (GOCSPX-) and access tokens (ya29.), service-account `private_key`,
  Azure `AccountKey=` / `SharedAccessKey=` and AD client secrets, DigitalOcean (dop_v1_),
  Heroku (HRKU-), Databricks (dapi), Vault (hvs., hvb.), Doppler (dp.pt.), Pulumi, Terraform;
- VCS and CI: GitHub (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), GitLab (glpat-, gldt-, glrt-,
  glptt-, glsoat-, glcbt-, ..., GR1348941), Bitbucket (ATBB), Atlassian (ATATT3), CircleCI
  (CCIPAT_), Grafana, Sentry, Postman; Travis and others by their variable names;
- chat: Slack (xox*, xapp-, hooks.slack.com webhooks), Discord bot tokens and webhooks,
  Telegram bot tokens;
- payment: Stripe (sk_/rk_ live/test, whsec_), Square, PayPal/Braintree, Shopify;
- package registries: npm_, pypi-AgE, rubygems_, NuGet oy2, Docker dckr_pat_;
- AI providers: sk- (OpenAI, Anthropic, OpenRouter, DeepSeek, ...), hf_, api_org_, Groq gsk_,
  Replicate r8_, Perplexity pplx-, xAI, LangSmith;
- SaaS: SendGrid SG., Twilio SK, Mailgun key-, Mailchimp, Linear lin_api_, Notion secret_ and
  ntn_, JWTs (unsigned and JWEs too);
- more vendors by their prefix alone (`vendor_rules`: tvly-, sbp_, fm2_, pscale_, NRAK-, LTAI, ...);
- any of these in a hex dump (`hex_dumps`: `xxd .env`, `hexdump -C`), inside a base64 or hex blob
  (`encoded_secrets`), two encodings deep, or wrapped
  over lines by a terminal (`wrapped_lines`: a tmux pane's capture of a 164-character key);
- passwords in URLs (`scheme://user:password@host`, any scheme, a `/`, `?` or `#` in the
  password too: `url_rules`; a random token as the user,
  `https://TOKEN@host`), session cookies (`Cookie:`, `Set-Cookie:`, `curl -b`), `Authorization:` headers
  (Basic, Bearer, token, ...), `Bearer <token>`, `curl -u user:password`
  (`-sSfu`, `-uuser:...`, `--proxy-user`) and HTTPie's `http -a user:password` (`http_auth_rules`);
- passwords on command lines: `--password[=| ]VALUE` (`--passwd`, `--passphrase`, a prefix:
  `--db-password`; `--api-key`, `--secret`, `--token`, `--auth-token`), also as an argv list
  (`"--password", "VALUE"`), the MySQL / MariaDB clients' `-pVALUE` / `-p'...'`, `sshpass -p`,
  `openssl -pass pass:`;
- programs given one as an argument (`keytool -storepass`, `ssh-keygen -N`, `zip -P`, `vault login`,
  `wandb login`, `doctl auth init -t`, `git config github.token`, `netlify env:set API_KEY`,
  `openssl passwd`, `gh secret set --body`, Oracle's `user/password@db`, ...:
  `command_line_rules.PROGRAM_ARGUMENTS`), or on stdin (`echo ... | passwd --stdin`, `chpasswd <<< ...`);
- named in a sentence (`prose_rules`): `my password is ...`, `... with password ...`, `password
  for root: ...`, `the secret is ...`, `credentials: admin / ...`, when the value looks like a
  secret (a digit, a symbol or a capital inside a word: not English);
- by what stands near it (`context_rules`): a name and its value given apart (`{"name":
  "DB_PASSWORD", "value": ...}`, `getenv("API_KEY", "...")`, `ENV DB_PASSWORD ...`), AWS's secret
  beside its key id, an Azure SAS `sig=`, `.npmrc`'s `_auth=`;
- by the line it stands on (`line_rules`): a `.pgpass` line (`host:port:db:user:…`, any port), a
  password typed after a prompt, alone on the next line (`Password:` / `hunter2`);
- config files and SQL: `IDENTIFIED BY '...'`, `WITH PASSWORD '...'`, `<password>...</password>`,
  `.netrc`, Docker's `config.json` `auth`, a Kubernetes env entry's `value:` after a secret's `name:`, PHP's `=>`;
- assignments: literal values assigned to password / passwd / pwd / passphrase / pass
  (`DB_PASS`, not `bypass`) / secret / api_key / access_key / private_key / client_secret /
  auth, refresh, bearer and session *_token names (connection strings' `Password=` included;
  a plain word too in `NAME=value` or `NAME: value` with an upper-case name, or `--name=value`:
  `PGPASSWORD=postgres`), and
  high-entropy values (Shannon entropy, detect-secrets' limits) assigned to any *token / *key /
  *secret / *credential(s) / *signature name; a subscript's name too (`os.environ["DB_PASSWORD"]
  = "..."`), and a JSON list or object given to such a name (`assignment_rules`), a YAML or code
  list (`markup_rules`: `password:` then `  - ...`, `password = ["..."]`);
- an HTML password field's value (`<input type="password" value="...">`: `markup_rules`).

Every rule reads escaped text as it reads decoded (`escapes`): a JSON string once or nested
(`\\n`, `\\t`, `\\"`, `\\\\n`, `\\u003d`), so an env dump inside a tool result's JSON is
masked like a plain one, and the masked text keeps valid escaping. Every rule also reads text as
it is shown (`escapes.as_shown`): terminal colour codes and invisible characters are not there,
and an `=` escaped for a URL or HTML is an `=`, so `\\x1b[36mghp_...` and `gh<U+200B>p_...` are
masked, the codes around the token kept. A bare value ends at a query string's next parameter
(`?access_token=...&limit=50`) or an HTML tag, and a value ending in base64 padding
(`SECRET_KEY=VHIw...elE=`) or holding percent-escapes (`p%40ss`) is a value, not code.

Speed: a rule runs only when one of its literals occurs in the text, so ordinary text costs one
scan for every literal at once, and one for the runs a blob could be (`encoded_secrets`; see
scripts/bench.py: tens of MB/s, against ~3 MB/s for token counting). The
assignment rules are deliberately conservative: ordinary code such as `password = getpass()`
or `api_key=args.api_key` must pass through untouched, or the summaries of coding
trajectories would fill with noise.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

from ahocorasick_rs import AhoCorasick, Implementation

from trajectory_compressor.summarize.assignment_rules import ASSIGNMENT_RULES
from trajectory_compressor.summarize.command_line_rules import COMMAND_LINE_RULES
from trajectory_compressor.summarize.context_rules import CONTEXT_RULES
from trajectory_compressor.summarize.encoded_secrets import MAX_DEPTH, encoded_secret_spans
from trajectory_compressor.summarize.escapes import SHOWN_MARKERS, as_shown, unescaped
from trajectory_compressor.summarize.hash_rules import HASH_RULES
from trajectory_compressor.summarize.hex_dumps import hex_dump_spans
from trajectory_compressor.summarize.http_auth_rules import HTTP_AUTH_RULES
from trajectory_compressor.summarize.line_rules import LINE_RULES
from trajectory_compressor.summarize.markup_rules import MARKUP_RULES
from trajectory_compressor.summarize.pair_rules import PAIR_RULES
from trajectory_compressor.summarize.pentest_rules import PENTEST_RULES
from trajectory_compressor.summarize.prose_rules import PROSE_RULES
from trajectory_compressor.summarize.secret_rules import REDACTED, RULES, Span, whole_token
from trajectory_compressor.summarize.url_rules import URL_RULES
from trajectory_compressor.summarize.vendor_rules import VENDOR_RULES
from trajectory_compressor.summarize.wrapped_lines import split_literals, unwrapped

ALL_RULES = (
    *RULES,
    *VENDOR_RULES,
    *URL_RULES,
    *HASH_RULES,
    *COMMAND_LINE_RULES,
    *PENTEST_RULES,
    *HTTP_AUTH_RULES,
    *ASSIGNMENT_RULES,
    *CONTEXT_RULES,
    *MARKUP_RULES,
    *PAIR_RULES,
    *LINE_RULES,
    *PROSE_RULES,
)

# The base64 body and END line of a PEM key whose BEGIN line was cut away (a transcript cut).
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY_LINE = re.compile(r"[A-Za-z0-9+/=]*|[A-Za-z-]+:.*")  # base64, or Proc-Type:/DEK-Info: headers
# Lower-cases ASCII letters only, so that the copy has the length of the original.
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _orphan_pem_spans(text: str) -> list[Span]:
    """Spans of `...base64...\n-----END ... PRIVATE KEY-----` left without their BEGIN line.

    Found by walking back line by line from each END marker (found with a literal search)
    rather than by a regex over base64 lines, which would be quadratic on large blobs.
    """
    spans: list[Span] = []
    for match in _PEM_END.finditer(text):
        start = match.start()
        while start > 0 and text[start - 1] == "\n":  # walk back over whole body lines
            newline = start - 1
            line_start = text.rfind("\n", 0, newline) + 1
            line = text[line_start:newline].strip()
            if not line or _PEM_BODY_LINE.fullmatch(line) is None:
                break
            start = line_start
        spans.append((start, match.end()))
    return spans


def _automaton() -> tuple[AhoCorasick, list[tuple[int, ...]], int, int, list[int], frozenset[int]]:
    """One automaton over every rule's literal (lower-cased), and the rules of each literal.

    The markers of text shown otherwise than it reads (`escapes.SHOWN_MARKERS`: a terminal
    escape, an invisible character, an escaped `=`) come next, with no rule: the same pass says
    whether `as_shown` is needed, at no cost for the ordinary text that holds none. Last, with no
    rule either, the literals a terminal's wrap cut (`wrapped_lines.split_literals`: `gh\\np_`),
    with where their line break stands."""
    rules_of: dict[str, list[int]] = {}
    for index, rule in enumerate(ALL_RULES):
        for literal in rule.literals:
            rules_of.setdefault(literal.lower(), []).append(index)
    literals = list(rules_of)
    first_marker = len(literals)
    literals += SHOWN_MARKERS  # no marker is a rule's literal (tests/summarize/test_redact.py)
    first_split = len(literals)
    cut = split_literals(rules_of)
    literals += cut
    # A DFA: more memory (a few MB), twice the speed of the default NFA.
    automaton = AhoCorasick(literals, implementation=Implementation.DFA)
    rules = [tuple(rules_of.get(literal, ())) for literal in literals]
    # A token's own prefix (`sk-`, `ghp_`, `eyJ`): a line may end a few characters after it (a wrap).
    prefixes = frozenset(
        index
        for index, literal in enumerate(literals[:first_marker])
        if any(ALL_RULES[rule].span is whole_token for rule in rules_of[literal])
    )
    return automaton, rules, first_marker, first_split, list(cut.values()), prefixes


_LITERALS, _RULES_OF_LITERAL, _FIRST_MARKER, _FIRST_SPLIT, _SPLIT_NEWLINE, _PREFIXES = _automaton()


def find_secrets(text: str, depth: int = MAX_DEPTH) -> list[Span]:
    """Sorted, non-overlapping (start, end) spans of the credentials in `text`.

    One pass finds every rule literal in a lower-cased copy (same length: ASCII letters only);
    each rule's pattern is then matched where its literal sits, on the original text or, for
    case-insensitive rules, on the copy. Text with escape sequences (`\\n`, `\\"`,
    `\\u003d`, `\\x1b`, nested) is matched as it reads decoded (`escapes.unescaped`), and text
    holding terminal escapes, invisible characters or an escaped `=` as it is shown
    (`escapes.as_shown`); the spans are taken back to whole sequences of the original. The
    decoding costs a second pass, paid only when there is something to find: a literal, or an
    escape that could make one appear (`\\/`, `\\u`, `\\x`)
    (tests/summarize/test_redact.py: `test_no_rule_literal_holds_a_character_an_escape_decodes_to`).
    A base64 or hex blob whose decoded text holds a credential is masked whole, blobs within it
    read while `depth` lasts (`encoded_secrets`).
    """
    if not text:
        return []
    lowered, hits = _literal_hits(text)
    # `\\n0000`: a hex dump's escaped lines (`hex_dumps`), whose spaced-out letters hold no literal.
    if "\\" in text and (
        hits or "PRIVATE KEY" in text or "\\u" in text or "\\/" in text or "\\x" in text or "\\n0000" in text
    ):
        view = unescaped(text)
        if view is not None:
            found = _find_shown(view.text, depth)
            return merge_spans([view.original_span(start, end) for start, end in found])
    return _find_shown(text, depth, lowered, hits)


_PERCENT_LAYERS = 2  # `%2522` read as `"`; three deep is not read, as with the other encodings


def _find_shown(
    text: str,
    depth: int,
    lowered: str | None = None,
    hits: list[tuple[int, int, int]] | None = None,
    layers: int = _PERCENT_LAYERS,
) -> list[Span]:
    """The spans the rules find in `text` as written and as it is shown (`escapes.as_shown`), in
    `text`'s offsets. Both: a percent-escape inside a value (`password=correct%20horse`) cuts it
    short in the shown view, and one anywhere in the text switches the whole text to that view.
    Text percent-encoded twice (`%2522password%2522`: `%25` is `%`) is shown once more, while
    `layers` last."""
    if lowered is None or hits is None:
        lowered, hits = _literal_hits(text)
    found = _find_in(text, lowered, hits, depth)
    if hits and "\n" in text:  # a token a terminal wrapped over lines (`wrapped_lines`), read whole
        starts = [start for literal, start, _ in hits if literal < _FIRST_MARKER]
        breaks = [
            start + _SPLIT_NEWLINE[literal - _FIRST_SPLIT]
            for literal, start, _ in hits
            if literal >= _FIRST_SPLIT and _SPLIT_NEWLINE[literal - _FIRST_SPLIT] >= 0
        ]
        prefixes = [start for literal, start, _ in hits if literal in _PREFIXES]
        joined = unwrapped(text, starts, breaks, prefixes)
        if joined is not None:
            in_joined = _find_in(joined.text, *_literal_hits(joined.text), depth)
            found = merge_spans([*found, *(joined.original_span(start, end) for start, end in in_joined)])
    if any(_FIRST_MARKER <= literal < _FIRST_SPLIT for literal, _, _ in hits):
        shown = as_shown(text)
        if shown is not None:
            if layers > 1 and "%25" in lowered:
                in_view = _find_shown(shown.text, depth, layers=layers - 1)
            else:
                in_view = _find_in(shown.text, *_literal_hits(shown.text), depth)
            return merge_spans([*found, *(shown.original_span(start, end) for start, end in in_view)])
    return found


def _literal_hits(text: str) -> tuple[str, list[tuple[int, int, int]]]:
    """The lower-cased copy of `text` and every rule literal in it (literal, start, end), by start."""
    lowered = text.lower()
    if len(lowered) != len(text):  # "İ" lowers to two characters: keep the offsets aligned
        lowered = text.translate(_ASCII_LOWER)
    hits = _LITERALS.find_matches_as_indexes(lowered, overlapping=True)
    hits.sort(key=lambda hit: hit[1])
    return lowered, hits


def _find_in(text: str, lowered: str, hits: list[tuple[int, int, int]], depth: int) -> list[Span]:
    """The spans the rules find at `hits` in `text` (its lower-cased copy: `lowered`), and the
    blobs whose decoded text holds a credential (while `depth` lasts)."""
    spans: list[Span] = []
    tried: set[tuple[int, int]] = set()
    scanned: set[int] = set()
    # Where each rule's last secret ended: a later occurrence of its literal inside that secret
    # (`sk-1sk-1sk-1...`, a BEGIN line repeated in a key masked to the end) is not matched
    # again, which keeps the work linear in the text.
    reach: dict[int, int] = {}
    for literal, start, _ in hits:
        for index in _RULES_OF_LITERAL[literal]:
            rule = ALL_RULES[index]
            haystack = lowered if rule.folded else text
            if rule.scan:
                if index not in scanned:
                    scanned.add(index)
                    matches = list(rule.pattern.finditer(haystack))
                else:
                    continue
            else:
                if (index, start) in tried or start < reach.get(index, 0):
                    continue
                tried.add((index, start))
                match = rule.pattern.match(haystack, start)
                matches = [match] if match is not None else []
            for match in matches:
                span = rule.span(match, text) if rule.span is not None else match.span()
                if span is not None:
                    spans.append(span)
                    reach[index] = max(reach.get(index, 0), span[1])
    if "PRIVATE KEY" in text:
        spans.extend(_orphan_pem_spans(text))
    spans.extend(encoded_secret_spans(text, find_secrets, depth))
    spans.extend(hex_dump_spans(text, find_secrets, depth))
    return merge_spans(spans)


def merge_spans(spans: list[Span]) -> list[Span]:
    """`spans` sorted, those that overlap or touch made one."""
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def mask_spans(text: str, spans: Iterable[Span], start: int = 0, end: int | None = None) -> str:
    """`text[start:end]` with every span that touches it replaced by `[REDACTED]`.

    A span that crosses `start` or `end` is masked whole on the kept side: no cut leaves a
    fragment of a secret.
    """
    end = len(text) if end is None else end
    pieces: list[str] = []
    position = start
    for span_start, span_end in spans:
        if span_end <= start or span_start >= end:
            continue
        pieces += [text[position : max(position, span_start)], REDACTED]
        position = max(position, min(span_end, end))
    pieces.append(text[position:end])
    return "".join(pieces)


_WORD_LIMIT = 1 << 16  # how far a window's edge moves to take in the word it falls in
_WHITE_SPACE = re.compile(r"\s")


def word_end(text: str, position: int) -> int:
    """`position`, moved on to the end of the word (a run with no white space) it falls in, within
    `_WORD_LIMIT` characters: text searched up to there holds whole the long token a window
    edge cuts (a 3,000-character JWT is masked only by its whole `eyJ….eyJ….sig` shape)."""
    found = _WHITE_SPACE.search(text, position, position + _WORD_LIMIT)
    return found.start() if found else min(len(text), position + _WORD_LIMIT)


def word_start(text: str, position: int) -> int:
    """`position`, moved back to the start of the word it falls in (as `word_end`)."""
    low = max(0, position - _WORD_LIMIT)
    found = max(text.rfind(char, low, position) for char in " \t\n\r\f\v")
    return found + 1 if found >= 0 else low


def redact_secrets(text: str) -> str:
    """Mask credentials in `text` with `[REDACTED]`. Idempotent: redacting twice changes nothing."""
    spans = find_secrets(text)
    return mask_spans(text, spans) if spans else text


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """Replace every occurrence of each known secret in `text` with `[REDACTED]`.

    Used on anything we write into an error, a log or a metric, whatever its origin (a server
    may echo our Authorization header in its error body).
    """
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, REDACTED)
    return text
