"""A credential an agent read out of its file or variable (`cat /run/secrets/api_key`, `printenv
DB_PASSWORD`, `echo $API_TOKEN`): its tool result is the bare value, with no name or prefix beside
it, and it reached the LLM prompt and the extractive summary (trust pass, round 7)."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest

from tests.conftest import write_jsonl
from tests.summarize.secret_runs import messages_run, prompts_of, texts_of_a_run
from trajectory_compressor.summarize.anchor_index import indexed_request
from trajectory_compressor.summarize.extractive import ExtractiveSummarizer
from trajectory_compressor.summarize.known_secrets import masked_known
from trajectory_compressor.summarize.llm.prompt import build_messages
from trajectory_compressor.summarize.masking import split_secrets_masked
from trajectory_compressor.summarize.redact import REDACTED, redact_secrets
from trajectory_compressor.types import SummaryRequest, Turn

VALUE = "Zq8wXc7vBn6mAs5dFg4hJk3lPo2iUy1t"


def _call(command: str, name: str = "terminal") -> str:
    return f"Checking.\n<tool_call>\n{json.dumps({'name': name, 'arguments': {'command': command}})}\n</tool_call>"


def _result(content: str, name: str = "terminal") -> str:
    return f"<tool_response>\n{json.dumps({'name': name, 'content': content})}\n</tool_response>"


def _masked(*turns: tuple[str, str]) -> list[str]:
    return masked_known([text for _, text in turns], [role for role, _ in turns])


def test_the_output_of_reading_a_credentials_file_or_variable_is_masked_everywhere_in_the_region() -> None:
    for command in [
        "cat /run/secrets/api_key",
        "head -n 1 ~/.vault-token",
        "sudo cat /etc/app/db_password.txt",
        "printenv DB_PASSWORD",
        'echo "${GITHUB_TOKEN}"',
        "python -c 'import os; print(os.environ[\"API_KEY\"])'",
    ]:
        later = f"Using it: the key {VALUE} works."
        masked = _masked(("gpt", _call(command)), ("tool", _result(VALUE + "\n")), ("gpt", later))
        assert VALUE not in "".join(masked), command
        assert masked[2] == f"Using it: the key {REDACTED} works.", command
        assert masked[0] == _call(command)


def test_an_editor_views_a_token_file_and_a_shell_observation_turn() -> None:
    arguments = {"command": "view", "path": "/w/secrets/hf_token"}
    view = f"<tool_call>\n{json.dumps({'name': 'str_replace_editor', 'arguments': arguments})}\n</tool_call>"
    assert _masked(("gpt", view), ("tool", _result(VALUE)))[1] == _result(REDACTED)
    observed = _masked(("gpt", "Let me read it.\n```bash\ncat ~/.vault-token\n```"), ("human", VALUE))
    assert observed[1] == REDACTED


def test_only_the_revealing_calls_result_and_only_one_word_lines_are_taken() -> None:
    two_calls = (  # two tools: each result is known by its name (one tool's several calls: see below)
        '<tool_call>\n{"name": "git", "arguments": {"command": "git rev-parse HEAD"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "terminal", "arguments": {"command": "cat /run/secrets/api_key"}}\n</tool_call>'
    )
    commit = "4f9c2d1e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e"
    masked = _masked(
        ("gpt", two_calls), ("tool", _result(commit, "git")), ("tool", _result(VALUE)), ("gpt", f"{commit} {VALUE}")
    )
    assert commit in masked[1] and commit in masked[3] and VALUE not in "".join(masked)
    # Not a credential's file or variable, a listing, a short word, a sentence: nothing taken.
    listing = "\n".join(f"tokenword{n:04d}" for n in range(50))
    for command, output in [
        ("cat README.md", VALUE),
        ("cat /etc/passwd", VALUE),
        ("echo $PATH", VALUE),
        ("cat vocab_tokens.txt", listing),
        ("cat /run/secrets/api_key", "abc123"),
        ("cat /run/secrets/api_key", "No such file or directory"),
    ]:
        turns = (("gpt", _call(command)), ("tool", _result(output)), ("gpt", f"{VALUE} tokenword0001"))
        assert _masked(*turns) == [text for _, text in turns], command


def test_parallel_calls_answered_out_of_order_are_matched_by_the_results_names() -> None:
    """A harness answers parallel calls as each finishes: the k-th result need not answer the k-th
    call. A result named for another tool than the call at its place answers the calls of its name
    (read in place, the secret was taken for the commit's result and the commit for a secret)."""
    read = {"name": "read_file", "arguments": {"path": "/app/secrets/api_key"}}
    head = {"name": "terminal", "arguments": {"command": "git rev-parse HEAD"}}
    calls = "".join(f"<tool_call>\n{json.dumps(call)}\n</tool_call>\n" for call in (read, head))
    commit = "4f9c2d1e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e"
    answers = _result(commit, "terminal") + "\n" + _result(VALUE, "read_file")  # the quicker call first
    for results in (
        [("tool", answers)],
        [("tool", _result(commit, "terminal")), ("tool", _result(VALUE, "read_file"))],
    ):
        masked = _masked(("gpt", calls), *results, ("gpt", f"{commit} {VALUE}"))
        assert VALUE not in "".join(masked) and masked[-1] == f"{commit} {REDACTED}"
    # In order, the one call of its name; a third call of the secret's tool answered between them.
    in_order = _result(VALUE, "read_file") + "\n" + _result(commit, "terminal")
    assert _masked(("gpt", calls), ("tool", in_order), ("gpt", commit))[-1] == commit
    config = {"name": "read_file", "arguments": {"path": "/app/config/version.txt"}}
    three = "".join(f"<tool_call>\n{json.dumps(call)}\n</tool_call>\n" for call in (read, config, head))
    answers = "\n".join((_result(commit, "terminal"), _result(VALUE, "read_file"), _result("v2.4.1-rc7", "read_file")))
    assert _masked(("gpt", three), ("tool", answers), ("gpt", f"{commit} {VALUE}"))[-1] == f"{commit} {REDACTED}"
    # Unnamed, a name no call has, or one of several calls of its name: any call may be the one.
    same_name = _call("git rev-parse HEAD") + "\n" + _call("cat /run/secrets/api_key")  # both `terminal`
    for results in (
        f"<tool_response>\n{VALUE}\n</tool_response>\n<tool_response>\n{commit}\n</tool_response>",
        _result(VALUE, "functions.read_file") + "\n" + _result(commit, "functions.terminal"),
    ):
        assert VALUE not in "".join(_masked(("gpt", calls), ("tool", results), ("gpt", VALUE)))
    reversed_results = _result(VALUE) + "\n" + _result(commit)  # the secret's call answered first
    assert VALUE not in "".join(_masked(("gpt", same_name), ("tool", reversed_results), ("gpt", VALUE)))


def test_parallel_tool_messages_answered_out_of_order_reveal_nothing_to_the_requests_file(tmp_path: Path) -> None:
    """A messages input: two parallel `terminal` calls, their tool messages in the order they
    finished (ids r2, r1); the ids name the results only, so the secret's result is read as any
    `terminal` call's."""
    messages = messages_run()
    commands = {"r1": "cat /run/secrets/api_key", "r2": "git rev-parse HEAD"}
    calls = [
        {"id": key, "type": "function", "function": {"name": "terminal", "arguments": json.dumps({"command": command})}}
        for key, command in commands.items()
    ]
    messages[6:6] = [
        {"role": "assistant", "content": "Reading both.", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "r2", "content": "4f9c2d1e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e"},
        {"role": "tool", "tool_call_id": "r1", "content": VALUE},
        {"role": "assistant", "content": f"Logged in with {VALUE}."},
        {"role": "user", "content": "Go on."},
    ]
    messages.append({"role": "assistant", "content": "Done."})
    prompts = prompts_of(tmp_path, write_jsonl(tmp_path / "in.jsonl", [{"id": "r0", "messages": messages}]))
    assert "Logged in with" in prompts and VALUE not in prompts


def test_the_prompt_and_the_extractive_summary_show_no_revealed_value(counter) -> None:
    filler = "looking at the deployment output " * 20
    turns = (
        Turn("gpt", f"Step 1.\n{filler}\n" + _call("cat /run/secrets/api_key")),
        Turn("tool", _result(VALUE)),
        Turn("gpt", f"The key is {VALUE}; next, the deploy.\n{filler}\n" + _call(f"deploy --key-file k --id {VALUE}")),
        Turn("tool", _result(f"deployed with {VALUE}\n{filler}")),
        Turn("gpt", f"Done.\n{filler}"),
    )
    request = SummaryRequest(turns=turns, budget_tokens=300)
    assert not _leaked_token_value("\n".join(turn.value for turn in split_secrets_masked(request).turns))
    asked, _ = indexed_request(request, counter.count, enabled=True, redact=True)
    prompt = "\n".join(message["content"] for message in build_messages(asked))
    assert "/run/secrets/api_key" in prompt and not _leaked_token_value(prompt)
    summary = asyncio.run(ExtractiveSummarizer(counter).summarize(request)).text
    assert not _leaked_token_value(summary), summary


def _leaked_token_value(text: str) -> bool:
    """Whether any 8 characters of the value show in `text` (a clipped field shows a piece)."""
    return any(VALUE[i : i + 8] in text for i in range(len(VALUE) - 7))


def test_a_result_given_as_a_json_object_or_numbered_by_an_editor_is_read_for_its_value() -> None:
    """A Hermes agent's terminal gives `{"output": ..., "exit_code": 0}` (as a string or an object);
    an editor's view numbers its lines (`     1\\tvalue`, `cat -n`; `1→value`): the value is no line."""
    command = _call("cat /run/secrets/api_key")
    as_object = json.dumps({"name": "terminal", "content": {"output": VALUE + "\n", "exit_code": 0}})
    for result in [
        _result(json.dumps({"output": VALUE + "\n", "exit_code": 0, "error": None})),
        f"<tool_response>\n{as_object}\n</tool_response>",
        _result(json.dumps({"content": [{"type": "text", "text": VALUE}], "isError": False})),  # an MCP tool's
        _result(json.dumps([{"type": "text", "text": VALUE + "\n"}])),
        _result(f"Here's the result of running `cat -n` on /w/secrets/hf_token:\n     1\t{VALUE}\n"),
        _result(f"     1\u2192{VALUE}\n"),
    ]:
        masked = _masked(("gpt", command), ("tool", result), ("gpt", f"Using {VALUE}."))
        assert VALUE not in "".join(masked), result
        assert masked[2] == f"Using {REDACTED}."
    status = _result(json.dumps({"output": VALUE, "status": "completed"}))
    assert "completed" in _masked(("gpt", command), ("tool", status), ("gpt", "completed"))[2]


def test_a_secret_managers_cli_a_filter_or_a_script_reading_a_credential_reveals_it() -> None:
    """`gh auth token`, `vault kv get -field=password`, `sed -n 1p FILE`, `open('FILE')` print a
    credential as surely as `cat` does; a filter over an ordinary file, or a listing, does not."""
    for command in [
        "gh auth token",
        "vault kv get -field=password secret/db",
        "aws secretsmanager get-secret-value --secret-id prod/db --query SecretString --output text",
        "gcloud auth print-access-token",
        "az account get-access-token --query accessToken -o tsv",
        "op read op://dev/db/pw",
        "security find-generic-password -s github -w",
        "kubectl get secret db -o jsonpath='{.data.password}' | base64 -d",
        "sed -n 1p /run/secrets/api_key",
        "awk 'NR==1' /run/secrets/api_key",
        "jq -r .token ~/.config/app/config.json",
        "jq -r '.auths[\"ghcr.io\"].auth' ~/.docker/config.json",  # a registry's user:password, in base64
        "yq '.registries.main.auth' config.yml",
        "jq -r '.auths[\"ghcr.io\"] | .auth' ~/.docker/config.json",  # the filter's own pipe
        "/usr/bin/jq -r '.auths[]|.auth' /root/.docker/config.json",
        "jq -r '.creds | .token' app.json",
        "cat < /run/secrets/api_key",
        "bash -c 'cat /run/secrets/api_key'",
        "python -c \"print(open('/run/secrets/api_key').read())\"",
        "printf '%s' \"$API_KEY\"",
    ]:
        _assert_reveals(command, VALUE + "\n")
    for command in [
        "sed -n 1p README.md",
        "grep -rl token src/",
        "jq -r .version package.json",
        "jq -r .author package.json",
        "jq -r .auth_url config.json",
        "jq -r '.auths | keys[]' ~/.docker/config.json",  # the registries' names
        "jq -r '.auth.type' config.json",
        "jq . auth",
        "awk NF ids",
    ]:
        _assert_keeps(command)


def _assert_reveals(command: str, output: str) -> None:
    """`command`'s output `output` is taken for a credential: masked in the turn after too."""
    masked = _masked(("gpt", _call(command)), ("tool", _result(output)), ("gpt", f"Using {VALUE}."))
    assert VALUE not in "".join(masked), command


def _assert_keeps(command: str) -> None:
    """`command` reveals nothing: its one-word output stays, there and after."""
    turns = (("gpt", _call(command)), ("tool", _result(VALUE)), ("gpt", VALUE))
    assert _masked(*turns) == [text for _, text in turns], command


def test_a_reader_tools_absolute_path_and_a_command_given_as_an_argv_are_read() -> None:
    """Gemini CLI's `read_file` takes `absolute_path`; some harnesses give a command as its argv."""
    for name, arguments in [
        ("read_file", {"absolute_path": "/run/secrets/api_key"}),
        ("terminal", {"command": ["cat", "/run/secrets/api_key"]}),
    ]:
        call = f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"
        assert VALUE not in "".join(_masked(("gpt", call), ("tool", _result(VALUE)), ("gpt", VALUE))), name
    call = f"<tool_call>\n{json.dumps({'name': 'get_user', 'arguments': {'profile': 'secret-store'}})}\n</tool_call>"
    assert _masked(("gpt", call), ("tool", _result(VALUE)))[1] == _result(VALUE)


def test_a_credentials_key_cut_in_two_over_a_turn_boundary_masks_its_value() -> None:
    """A streamed output cut mid-name (`DB_PASS` | `WORD=value`): only the joined text has the key."""
    from trajectory_compressor.summarize.masking import masked_across_turns

    masked = masked_across_turns(["connecting with DB_PASS", "WORD=hunter2horse and retrying"])
    assert masked == ["connecting with DB_PASS", f"WORD={REDACTED} and retrying"]
    assert masked_across_turns(["the run passed", "WORD=hunter2horse"]) == ["the run passed", "WORD=hunter2horse"]


@pytest.mark.timeout(10)  # a hang guard: one pass of an automaton, well under a second; values x turns, minutes
def test_thousands_of_reads_each_of_its_own_value_are_masked_in_linear_time() -> None:
    reads = 20_000
    turns = [
        turn
        for n in range(reads)
        for turn in (("gpt", _call("cat /run/secrets/api_key")), ("tool", _result(f"{VALUE}{n:05d}")))
    ]
    turns.append(("gpt", f"Ünïcode first, then {VALUE}00042 and {VALUE}19999."))
    masked = _masked(*turns)
    assert masked[-1] == f"Ünïcode first, then {REDACTED} and {REDACTED}."
    assert masked[1] == _result(REDACTED) and VALUE not in "".join(masked)


def test_a_source_file_named_for_a_credential_is_code_and_its_lines_are_kept() -> None:
    """`sed -n 40,47p django/contrib/auth/tokens.py` prints code: `continue` was masked everywhere."""
    code = "        try:\n            ts_b36 = token.split('-')\n        except ValueError:\n            continue\n"
    for command in ["sed -n 40,43p django/contrib/auth/tokens.py", "head -n 4 src/secrets_manager.ts"]:
        turns = (("gpt", _call(command)), ("tool", _result(code)), ("gpt", "Add `continue` after `finally:`."))
        assert _masked(*turns) == [text for _, text in turns], command


def test_a_variable_read_by_node_powershell_or_cmd_reveals_it() -> None:
    for command in [
        'node -e "console.log(process.env.API_KEY)"',
        "echo $env:GITHUB_TOKEN",
        "$env:OPENAI_API_KEY",
        "cmd /c echo %DB_PASSWORD%",
    ]:
        _assert_reveals(command, VALUE + "\r\n")
    _assert_keeps("echo $env:PATH")


def test_a_variable_echoed_with_a_default_a_check_or_a_slice_reveals_it() -> None:
    """`${API_KEY:-}` (a default), `${API_KEY:?}` (a check), `${API_KEY:0:8}` (a slice) each print
    the value; `${API_KEY:+set}` prints the word instead, and a setting's name no credential."""
    defaults = ["echo ${API_KEY:-}", 'echo "${GITHUB_TOKEN:?unset}"', "echo ${DB_PASSWORD-}", "echo ${API_KEY:0:32}"]
    for command in defaults:
        _assert_reveals(command, VALUE + "\n")
    _assert_keeps("echo ${API_KEY:+set}")
    _assert_keeps("echo ${API_KEY_PATH:-/run/key}")


def test_a_script_printing_a_credentials_field_of_what_it_loaded_reveals_it() -> None:
    """`print(json.load(f)['api_key'])` prints the credential as `jq -r .api_key f` does: the
    printed expression's last accessor names it, in Python, Node, Ruby, PHP or Perl."""
    for command in [
        "python3 -c \"import json; print(json.load(open('config.json'))['api_key'])\"",
        "python3 -c \"import json;print(json.load(open('/root/.docker/config.json'))['auths']['ghcr.io']['auth'])\"",
        "cat config.json | python -c \"import sys,json; print(json.load(sys.stdin)['password'])\"",
        "python -c \"import yaml;print(yaml.safe_load(open('settings.yml'))['db']['password'], flush=True)\"",
        "python -c \"print(json.load(open('c.json')).get('client_secret', ''))\"",
        "python -c \"import json; print(json.load(open('c.json'))['api_key'].strip(), end='')\"",
        'python -c "print(f\'{cfg[\\"token\\"]}\')"',
        "node -e \"console.log(require('./config.json').token)\"",
        "node -e \"console.log(require('./c.json').dbPassword)\"",
        "node -e 'console.log(`${require(\"./c.json\").apiKey}`)'",
        "node -p \"require('./config.json').auth.token\"",
        'ruby -e \'require "json"; puts JSON.parse(File.read("c.json"))["access_token"]\'',
        'ruby -e \'puts YAML.load_file("config/secrets.yml")["production"]["secret_key_base"]\'',
        "php -r 'echo json_decode(file_get_contents(\"c.json\"))->token;'",
        "perl -MJSON -e 'print decode_json(`cat c.json`)->{token}'",
        "python manage.py shell -c 'from django.conf import settings; print(settings.SECRET_KEY)'",
        "cfg = json.load(open('c.json'))\ncfg['githubToken']",  # a notebook shows its last expression
    ]:
        _assert_reveals(command, VALUE + "\n")


def test_a_script_printing_a_credentials_getter_or_its_holders_token_reveals_it() -> None:
    """`print(HfFolder.get_token())`, `print(keyring.get_password(...))`, `print(app.auth.token)`:
    a getter named for a credential, or a bare `token` of an issuer or holder of credentials (`auth`,
    `session`, `settings`), prints the value as a field of loaded data does."""
    for command in [
        "python -c 'import app; print(app.auth.token)'",
        "python -c 'from huggingface_hub import HfFolder; print(HfFolder.get_token())'",
        "python -c 'from huggingface_hub import get_token; print(get_token())'",
        'python -c \'import keyring; print(keyring.get_password("svc", "bob"))\'',
        "node -e 'console.log(getApiKey())'",
        "python -c 'print(settings.token)'",
        "python -c 'print(self.client.get_access_token().strip())'",
        "python -c 'print(session.token)'",
        "node -e 'const f = async () => { console.log(await getToken()) }; f()'",
        "php -r 'echo $client->getAccessToken();'",
    ]:
        _assert_reveals(command, VALUE + "\n")


def test_a_lexers_or_a_parsers_token_or_a_getter_used_inside_another_call_reveals_nothing() -> None:
    """A token of a lexer, a tokenizer or a parser is a piece of text, not a credential, whether
    read as an attribute or by its getter; a getter's value used by another call is not printed."""
    for command in [
        "python -c 'import shlex; lex = shlex.shlex(\"a b\"); print(lex.get_token())'",
        "python -c 'print(lexer.get_token())'",
        "python -c 'print(Lexer(src).get_token())'",
        "python -c 'print(tokenizer.get_token(5))'",
        "python -c 'print(parser.token)'",
        "python -c 'print(len(get_password()))'",
        "python -c 'print(get_token().type)'",
        # Found by an adversarial pass: a holder only starting with an issuer's word, a parser's getter.
        "python -c 'print(config_lexer.token)'",
        "python -c 'print(environment.token)'",
        "python -c 'print(author.token)'",
        "python -c 'print(read_token())'",
        "php -r 'echo $lexer->getToken();'",
        "node -e 'console.log(await lexer.getToken())'",
    ]:
        _assert_keeps(command)


def test_a_field_a_script_uses_without_printing_it_or_no_credentials_field_reveals_nothing() -> None:
    """Found by an adversarial pass: a test id ending in `_access_token` or `.auth`, a field inside
    another call, a lexer's or a tokenizer's token and a constant were each taken for a printed
    credential, and the run's output (a test report's rule, `pbkdf2_sha256`, `IDENTIFIER`) was
    masked across the row."""
    for command in [
        "cd /testbed && python tests/runtests.py auth_tests.test_views.PasswordResetTest.test_confirm_invalid_token",
        "python -m unittest tests.test_client.TestClient.test_access_token",
        "python -m django test django.contrib.auth",
        "cat > reproduce.py << 'EOF'\nprint(identify_hasher(encoded).algorithm)\nprint(check(user.password))\nEOF\n"
        "python reproduce.py",
        "python -c \"from lexer import Lexer; l=Lexer('foo+bar'); l.advance(); print(l.current_token)\"",
        'python -c "print(lexer.token)"',
        "node -e \"const t=require('./tokens'); console.log(t.EOF_TOKEN)\"",
        "python -c \"from transformers import AutoTokenizer as T; print(T.from_pretrained('gpt2').eos_token)\"",
        "python -c \"print(resp['next_token'])\"",
        "python -c \"print(len(cfg['tokens']))\"",
        "python -c \"print(len(cfg['token']))\"",
        'python -c "print(cfg.token.upper())"',
        "python -c \"print(cfg['token_type'])\"",
        "python -c \"print(cfg['password_hash'])\"",
        "python -c \"cfg['token'] = 'x'; save(cfg); print('saved')\"",
        "python -c \"import json; print(json.load(open('package.json'))['author'])\"",
        "python -c \"settings.configure(INSTALLED_APPS=['django.contrib.auth']); print(run())\"",
        "python -c \"print(info['pwd'])\"",
    ]:
        _assert_keeps(command)


def test_a_query_selecting_a_credentials_column_or_a_stores_credential_key_reveals_it() -> None:
    """`SELECT password FROM users` in any client prints the bare value, as a bare line, a cell of a
    box (MySQL's `| value |`) or of psql's aligned table; so do a Redis key or a `dasel` selector
    naming a credential, and Laravel's `key:generate --show`."""
    for command, output in [
        ("sqlite3 app.db 'select password from users limit 1'", VALUE + "\n"),
        (
            "mysql -e 'SELECT api_key FROM accounts LIMIT 1' app",
            f"+---------+\n| api_key |\n+---------+\n| {VALUE} |\n",
        ),
        ("mysql -e 'SELECT api_key FROM accounts LIMIT 1' app", f"api_key\n{VALUE}\n"),
        ("psql -c 'select u.access_token from users u'", f" access_token \n--------------\n {VALUE}\n(1 row)\n"),
        ("psql -c 'select name, \"password\" as p from users'", f" p\n---\n {VALUE}\n"),
        ("redis-cli -h localhost GET session:api_token", f'"{VALUE}"\n'),
        ("dasel -f config.toml '.auth.token'", VALUE + "\n"),
        # Found by an adversarial pass: a row of several columns, a query over lines, a key
        # ending on the credential's name.
        ("sqlite3 app.db 'select id, password from users'", f"1|{VALUE}\n"),
        ("sqlite3 -csv app.db 'select id, password from users'", f"1,{VALUE}\n"),
        ("mysql -e 'select username, api_key from t'", f"+-------+\n| admin | {VALUE} |\n"),
        ("mysql -N -B -e 'select username, api_key from t'", f"admin\t{VALUE}\n"),
        ("sqlite3 -box app.db 'select password from users'", f"\u2502 {VALUE} \u2502\n"),
        ("psql <<'EOF'\nSELECT\n  password\nFROM users;\nEOF", f" password\n----------\n {VALUE}\n(1 row)\n"),
        ("redis-cli get user:1:password", VALUE + "\n"),
        ("redis-cli -h db -p 6379 hget user:1 password", VALUE + "\n"),
        ("dasel -f config.yaml '.database.password'", VALUE + "\n"),
    ]:
        _assert_reveals(command, output)
    key = f"base64:{VALUE}"
    masked = _masked(("gpt", _call("php artisan key:generate --show")), ("tool", _result(key)), ("gpt", f"Set {key}."))
    assert VALUE not in "".join(masked)


def test_a_script_printing_the_rows_of_a_query_selecting_a_credentials_column_reveals_it() -> None:
    """A driver's rows as Python prints them (`('value',)`, `[(1, 'value')]`), a Node client's
    field, and a framework's `dbshell` fed a query: each cell is read."""
    for command, output in [
        (
            "python -c \"import sqlite3; cur=sqlite3.connect('app.db').cursor(); "
            "cur.execute('select password from users'); print(cur.fetchone())\"",
            f"('{VALUE}',)\n",
        ),
        (
            "python3 - <<'EOF'\nimport sqlite3\ncon = sqlite3.connect('app.db')\n"
            "print(con.execute('SELECT api_key FROM accounts').fetchall())\nEOF",
            f"[('{VALUE}',)]\n",
        ),
        (
            "python -c \"import psycopg2; c=psycopg2.connect('dbname=app').cursor(); "
            "c.execute('SELECT id, password FROM users'); print(c.fetchall())\"",
            f"[(1, '{VALUE}')]\n",
        ),
        (
            "node -e \"const {Client}=require('pg'); const c=new Client(); "
            "c.connect().then(()=>c.query('select api_key from accounts')).then(r=>console.log(r.rows[0].api_key))\"",
            VALUE + "\n",
        ),
        ('echo "select password from auth_user where id=1" | python manage.py dbshell', VALUE + "\n"),
    ]:
        _assert_reveals(command, output)
    for command in [
        'python -c "import sqlite3; print(sqlite3.sqlite_version)"',
        "git log --oneline -S 'psycopg2' | head -1",
        "grep -rn 'import psycopg2' .",
    ]:
        _assert_keeps(command)


def test_a_ci_checkouts_remote_token_is_known_by_itself_and_masked_where_it_is_used_bare() -> None:
    """`git remote -v` in a CI checkout shows `https://x-access-token:TOKEN@github.com/…`: the
    token (not the token and the URL after it) is known in the row, so its later bare use is masked."""
    remote = f"origin\thttps://x-access-token:{VALUE}@github.com/o/r.git (fetch)\n"
    masked = _masked(("gpt", _call("git remote -v")), ("tool", _result(remote)), ("gpt", f"Using {VALUE}."))
    assert masked[2] == f"Using {REDACTED}."
    assert "@github.com/o/r.git (fetch)" in masked[1]


def test_a_variable_named_for_a_credential_by_its_last_word_reveals_it() -> None:
    """`$OPENAI_KEY`, `$GH_PAT`, `$STRIPE_SK`, `$DB_PW`, `$AUTH`, `$CREDS`, `$LICENSE_KEY`: read by
    the name's words (found by the round-9 adversarial pass)."""
    for name in (
        "OPENAI_KEY",
        "ANTHROPIC_KEY",
        "GH_PAT",
        "STRIPE_SK",
        "DB_PW",
        "MYSQL_ROOT_PW",
        "AUTH",
        "CREDS",
        "LICENSE_KEY",
    ):
        _assert_reveals(f"echo ${name}", VALUE + "\n")


def test_data_named_with_a_credentials_word_reveals_nothing() -> None:
    """Found by the round-9 adversarial pass, each masked across the row before: a variable whose
    word only holds a credential's (`$TOKENIZER_MODEL`, `$PASSENGER_APP_ENV`) or is a setting about
    one (`$API_KEY_ENV_VAR`, `$AIRFLOW__SECRETS__BACKEND`), a data key (`$SORT_KEY`), a
    benchmark's and a tokenizer's files, a service account's namespace, and a `jq` filter ending
    on a bare `key` (a Jira issue's, an S3 object's) or a data key's name."""
    for command in [
        "echo $TOKENIZER_MODEL",
        "echo $TOKENIZERS_PARALLELISM",
        "echo $PASSENGER_APP_ENV",
        "echo $API_KEY_ENV_VAR",
        "echo $AIRFLOW__SECRETS__BACKEND",
        "echo $SORT_KEY",
        "echo $KEY",
        "echo $NO_AUTH",
        "echo $SKIP_AUTH",
        "aws secretsmanager list-secrets --query 'SecretList[].Name' --output text",
        "cut -d= -f2 .env.example",
        "cat FAIL_TO_PASS.txt",
        "cat PASS_TO_PASS.json",
        "cat tokenizer/added_tokens.json",
        "cat special_tokens_map.json",
        "head -n 5 data/tokens.txt",
        "cat /var/run/secrets/kubernetes.io/serviceaccount/namespace",
        "jq -r '.issues[0].key' jira.json",
        "jq -r '.Contents[0].Key' listing.json",
        "jq -r .primary_key table.json",
    ]:
        _assert_keeps(command)
    for command in [
        "jq -r .key creds.json",
        "cat /var/run/secrets/kubernetes.io/serviceaccount/token",
        "jq -r .api_key config.json",
    ]:
        _assert_reveals(command, VALUE + "\n")


def test_a_revealed_value_that_encodes_text_is_known_decoded_too() -> None:
    """A Kubernetes secret's `.data.password` is base64: printed, then decoded by a later `echo … |
    base64 -d`, the password stands bare in that call's output and after it; a registry's `auth`
    encodes `user:password`, and the password is used bare (round-9 adversarial pass)."""
    encoded = base64.b64encode(VALUE.encode()).decode()
    masked = _masked(
        ("gpt", _call("kubectl get secret db -o jsonpath='{.data.password}'")),
        ("tool", _result(encoded)),
        ("gpt", _call(f"echo {encoded} | base64 -d")),
        ("tool", _result(VALUE + "\n")),
        ("gpt", f"Using {VALUE}."),
    )
    assert VALUE not in "".join(masked) and encoded not in "".join(masked)
    auth = base64.b64encode(f"deploy:{VALUE}".encode()).decode()
    masked = _masked(
        ("gpt", _call("jq -r '.auths[\"ghcr.io\"].auth' ~/.docker/config.json")),
        ("tool", _result(auth)),
        ("gpt", f"The registry password is {VALUE}."),
    )
    assert masked[2] == f"The registry password is {REDACTED}."


def test_a_cloud_clis_credential_or_one_field_of_it_picked_as_text_reveals_it() -> None:
    """`aws … --query AccessKey.SecretAccessKey --output text`, `az … --query password -o tsv`, an
    SSM parameter decrypted, a storage account's keys, `kubectl create token`, `fly auth token`,
    `netlify env:get API_KEY` (round-9 adversarial pass); an instance id or an account is none."""
    for command in [
        "aws ssm get-parameter --name /prod/db/password --with-decryption --query Parameter.Value --output text",
        "aws sts get-session-token --query Credentials.SessionToken --output text",
        "aws iam create-access-key --user-name ci --query AccessKey.SecretAccessKey --output text",
        "aws codeartifact get-authorization-token --domain d --query authorizationToken --output text",
        "az storage account keys list -g rg -n acct --query '[0].value' -o tsv",
        "az ad sp credential reset --id x --query password -o tsv",
        "az acr credential show -n reg --query 'passwords[0].value' -o tsv",
        "kubectl create token default",
        "fly auth token",
        "netlify env:get API_KEY",
        "railway variables get OPENAI_API_KEY",
    ]:
        _assert_reveals(command, VALUE + "\n")
    for command in [
        "aws ec2 describe-instances --query 'Reservations[].Instances[].InstanceId' --output text",
        "aws ssm get-parameter --name /app/region --query Parameter.Value --output text",
        "az account show --query id -o tsv",
        "aws sts get-caller-identity --query Account --output text",
    ]:
        _assert_keeps(command)


def test_redis_asked_for_its_password_and_powershells_environment_table_reveal_it() -> None:
    """`redis-cli CONFIG GET requirepass` replies `1) "requirepass"` / `2) "…"` (the name stays);
    PowerShell's `Get-ChildItem Env:` prints a `Name  Value` table (round-9 adversarial pass)."""
    for output in (f'1) "requirepass"\n2) "{VALUE}"\n', f"requirepass\n{VALUE}\n"):
        masked = _masked(
            ("gpt", _call("redis-cli -h cache CONFIG GET requirepass")), ("tool", _result(output)), ("gpt", VALUE)
        )
        assert VALUE not in "".join(masked) and "requirepass" in masked[1]
    rows = [("Name", "Value"), ("----", "-----"), ("HOME", "/root"), ("OPENAI_API_KEY", VALUE)]
    table = "".join(f"{name:<31}{value}\n" for name, value in rows)
    assert redact_secrets(table) == table.replace(VALUE, REDACTED)


def test_a_stores_setting_or_a_secrets_name_reveals_nothing() -> None:
    """Found by the round-9 adversarial pass, each masked across the row before: a setting's file
    in a secrets folder, a store asked for a setting's field, Kubernetes secrets' names and kinds."""
    for command in [
        "cat /run/secrets/db_host",
        "cat /run/secrets/username",
        "cat /var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
        "vault kv get -field=host secret/db",
        "op item get db --fields username",
        "doppler secrets get DB_HOST --plain",
        "kubectl get secrets -o name",
        "kubectl get secret db -o jsonpath='{.metadata.name}'",
        "kubectl get secret db -o jsonpath='{.type}'",
    ]:
        _assert_keeps(command)
    for command in [
        "cat /run/secrets/stripe",
        "vault kv get -field=password secret/db",
        "doppler secrets get DB_PASSWORD --plain",
        "op item get db --fields password",
        "kubectl get secret db -o jsonpath='{.data.password}'",
    ]:
        _assert_reveals(command, VALUE + "\n")


def test_a_command_making_a_new_secret_reveals_it() -> None:
    """`openssl rand -hex 32`, `secrets.token_urlsafe()`, random bytes in base64, `pwgen`, `rails
    secret`, `wg genkey`: a key the run is about to use, with no shape of its own; a random number,
    a UUID or the public half of a new key pair is none."""
    for command in [
        "openssl rand -hex 32",
        "openssl rand -base64 32",
        "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'",
        'python -c "import secrets; print(secrets.token_hex(32))"',
        "python -c 'import os, base64; print(base64.b64encode(os.urandom(32)).decode())'",
        "head -c 32 /dev/urandom | base64",
        "tr -dc A-Za-z0-9 </dev/urandom | head -c 32; echo",
        "pwgen -s 32 1",
        "bin/rails secret",
        "node -e \"console.log(require('crypto').randomBytes(32).toString('hex'))\"",
        "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'",
        "wg genkey",
    ]:
        _assert_reveals(command, VALUE + "\n")
    for command in [
        'python -c "import random; print(random.random())"',
        "uuidgen",
        "wg genkey | tee privatekey | wg pubkey",
        "grep -rn randint src/",
        # A search for the code that makes one prints paths; a search in history, commits.
        "rg -l 'secrets.token_urlsafe(' django",
        "grep -rln 'os.urandom(' --include=*.py .",
        "git log --format=%h -1 -S 'openssl rand'",
    ]:
        _assert_keeps(command)


def test_an_env_files_values_cut_out_without_a_name_or_a_variable_read_by_perl_ruby_rust_or_deno_reveal_it() -> None:
    """`cut -d= -f2 .env` prints every value bare (a credential's among them); so do an `awk`
    after a filter, Perl's `$ENV{…}`, Ruby's `ENV.fetch`, Rust's `env::var`, Deno's `env.get`, and
    PowerShell's `Select-Object -ExpandProperty` of a credential's field."""
    for command in [
        "cut -d= -f2 .env",
        "awk -F= '{print $2}' .env",
        "grep -v '^#' .env.local | awk -F= '{print $2}'",
        "cat config/prod.env | cut -d '=' -f 2-",
        "perl -e 'print $ENV{API_KEY}'",
        "ruby -e 'puts ENV.fetch(\"API_KEY\")'",
        'cargo run -q --example show -- \'println!("{}", std::env::var("DB_PASSWORD").unwrap())\'',
        "deno eval 'console.log(Deno.env.get(\"GITHUB_TOKEN\"))'",
        'pwsh -c "Get-Content config.json | ConvertFrom-Json | Select-Object -ExpandProperty token"',
        "Get-Content secrets.json | ConvertFrom-Json | select -expand auth.password",
    ]:
        _assert_reveals(command, VALUE + "\n")
    for command in [
        "cut -d= -f1 .env",
        "grep -c KEY .env",
        "cat .env.example | head -3",
        "Get-Process | Select-Object -ExpandProperty name",
        "perl -e 'print $ENV{HOME}'",
    ]:
        _assert_keeps(command)


def test_a_query_using_a_credentials_column_without_selecting_it_reveals_nothing() -> None:
    for command in [
        "sqlite3 app.db 'select count(password) from users'",
        "sqlite3 app.db 'select id from users where password is null'",
        "sqlite3 app.db 'select password_hash_algo, token_type from settings'",
        "sqlite3 app.db 'select id from users where password in (select password from leaked)'",
        "redis-cli GET mykey",
        # Found by an adversarial pass: a query named, not sent to a database (the commit hash or
        # the file paths a search printed were masked across the row); a key or a selector
        # merely holding a credential's word.
        'git log --format=%H -S "SELECT password FROM auth_user"',
        "grep -rl 'SELECT password FROM' django tests",
        "pytest -k 'select password from'",
        "redis-cli get rl:auth:127.0.0.1",
        "dasel -f docker-compose.yml '.services.auth.image'",
        "dasel -f tokenizer_config.json '.eos_token'",
        "dasel put -f c.yml -t string -v x '.auth.token'",
    ]:
        _assert_keeps(command)


def test_a_credentials_field_cut_out_of_a_config_files_line_reveals_it() -> None:
    """`grep password database.yml | awk '{print $2}'` prints the bare password, as `grep API_KEY
    .env | cut -d= -f2` does, and so do a `sed` substitution, `$NF`, a look-behind `grep -oP` and
    a Perl capture."""
    for command in [
        "grep password config/database.yml | awk '{print $2}'",
        "grep password config/database.yml | awk '{print $NF}'",
        "grep password config/database.yml | sed 's/.*: //'",
        "grep API_KEY config.ini | cut -d= -f2",
        "grep -E '^(password|token)=' app.conf | cut -d= -f2",
        'grep -o \'"token": "[^"]*"\' settings.json | cut -d\'"\' -f4',
        "grep -oP '(?<=password: ).*' config/database.yml",
        "awk -F'\"' '/token/{print $4}' config.json",
        "sed -n 's/^password=//p' app.conf",
        'sed -n \'s/.*"token": "\\(.*\\)".*/\\1/p\' config.json',
        "perl -ne 'print $1 if /password\\s*=\\s*(\\S+)/' app.conf",
    ]:
        _assert_reveals(command, VALUE + "\n")


def test_a_config_files_key_line_or_a_field_holding_a_credentials_word_reveals_nothing() -> None:
    """Found by an adversarial pass: a key (`cut -f1`, `print $1`), a file list, field names, a
    field merely holding a credential's word and an extraction in another command of the line
    were each taken for a credential's value, masked across the row."""
    for command in [
        "grep -l token app.json",
        "grep password config.yml",  # the whole line: the rules mask it by its key
        "awk '/passed/{print $1}' results.json",
        "grep tokenizer config.json | cut -d: -f2",
        "grep version package.json | awk -F'\"' '{print $4}'",
        'grep -rn "access_token" tests/fixtures/*.json | cut -d: -f1 | sort -u',
        "grep -o '\"[a-z_]*_token\"' settings.json | sort -u",
        "grep -ow '[a-z_]*token[a-z_]*' config.json",
        "awk '/password_hash_algo/ {print $2}' config/auth.yml",
        "grep secretName k8s/ingress.yaml | awk '{print $2}'",
        "grep token_type settings.json | cut -d'\"' -f4",
        "grep password docker-compose.yml | awk '{print $1}'",
        "cut -d, -f1 data.csv; grep secret config.yml",
        "sed -i 's/a/b/g' ./pkg/a.py; grep -n api_key settings.toml",
        "sed -i 's/np\\.Inf/np.inf/g' ./pvlib/singlediode.py",
    ]:
        _assert_keeps(command)


def test_the_working_folder_printed_is_no_credential_and_stays_in_every_path() -> None:
    """`echo $PWD` printed `/testbed`, which `pwd` in its name made a credential: masked in every
    path of the row (`[REDACTED]/src/app.py`). MySQL's `MYSQL_PWD` is still one."""
    for command in ["echo $PWD", "printenv PWD", "echo $OLDPWD"]:
        turns = (("gpt", _call(command)), ("tool", _result("/testbed\n")), ("gpt", "I will edit /testbed/src/app.py."))
        assert _masked(*turns) == [text for _, text in turns], command
    _assert_reveals("echo $MYSQL_PWD", VALUE + "\n")


def test_a_value_read_before_the_region_in_the_kept_head_is_masked_in_the_region(counter) -> None:
    """The head reads the token and is kept; the region summarized only uses it (`--client-id`)."""
    from trajectory_compressor.read.formats import detect_format
    from trajectory_compressor.run.prepare import CountedRow
    from trajectory_compressor.run.row.summary_step import region_request
    from trajectory_compressor.types import SourceRecord

    turns = [Turn("system", "s"), Turn("human", "Deploy."), Turn("gpt", _call("cat /run/secrets/api_key"))]
    turns += [Turn("tool", _result(VALUE + "\n"))]
    for n in range(3):
        turns += [Turn("gpt", _call(f"./deploy.sh --region eu-{n} --client-id {VALUE}")), Turn("tool", _result("ok"))]
    record = {"conversations": [{"from": turn.role, "value": turn.value} for turn in turns]}
    row = CountedRow(0, 1, SourceRecord("mem.jsonl", 1, record), detect_format(record), turns, [0] * len(turns))
    request = region_request(row, 4, len(turns), 300)
    asked, _ = indexed_request(request, counter.count, enabled=True, redact=True)
    prompt = "\n".join(message["content"] for message in build_messages(asked))
    assert "--client-id" in prompt and not _leaked_token_value(prompt)
    summary = asyncio.run(ExtractiveSummarizer(counter).summarize(request)).text
    assert not _leaked_token_value(summary), summary


def test_a_credentials_line_picked_out_of_an_env_file_reveals_its_value() -> None:
    for command in [
        "grep API_KEY .env | cut -d= -f2",
        "awk -F= '/DB_PASSWORD/ {print $2}' config/.env.production",
        "sed -n 's/^GITHUB_TOKEN=//p' .env",
    ]:
        masked = _masked(("gpt", _call(command)), ("tool", _result(VALUE + "\n")), ("gpt", f"Using {VALUE}."))
        assert VALUE not in "".join(masked), command
    turns = (("gpt", _call("grep NODE_ENV .env | cut -d= -f2")), ("tool", _result("production")), ("gpt", "production"))
    assert _masked(*turns) == [text for _, text in turns]


def test_a_read_beside_a_huge_result_or_a_huge_write_is_still_read() -> None:
    """A turn over 256 K characters is read block by block, its huge blocks left unparsed (a 240 MB
    log parsed again was copied whole): the small result beside a huge log, and the read beside a
    call writing a huge file, are still read."""
    huge = "log line 12345\n" * 20_000  # 300 K characters
    two_calls = _call("cat build.log") + _call("cat /run/secrets/api_key")
    two_results = _result(huge) + _result(VALUE)
    masked = _masked(("gpt", two_calls), ("tool", two_results), ("gpt", f"Using {VALUE}."))
    assert len(two_results) > 1 << 18 and VALUE not in masked[2]
    write_then_read = _call(f"cat > data.txt <<EOF\n{huge}EOF") + _call("printenv DB_PASSWORD")
    masked = _masked(("gpt", write_then_read), ("tool", _result("ok") + _result(VALUE)), ("gpt", f"Using {VALUE}."))
    assert VALUE not in masked[2]
    harmless = _call("cat build.log") + _call("cat notes.txt")  # the same shape, nothing revealing
    turns = (("gpt", harmless), ("tool", _result(huge) + _result(VALUE)), ("gpt", f"Using {VALUE}."))
    assert _masked(*turns)[2] == f"Using {VALUE}."


def test_a_value_the_head_read_is_masked_in_the_requests_file_and_both_modes_summaries(tmp_path: Path) -> None:
    """The head (kept verbatim) reads the key; the summarized turns use it bare. The region alone
    has no revealing call: the turns before it come with the request (`SummaryRequest.known_secrets`)."""
    head = (_call("cat /run/secrets/api_key"), _result(VALUE))
    prompts, written = texts_of_a_run(tmp_path, *head, f"the key {VALUE} again.", "Done.")
    assert not _leaked_token_value(prompts)
    assert not [name for name, text in written.items() if _leaked_token_value(text)]


def test_long_commands_of_accessors_filters_and_reads_are_read_in_linear_time() -> None:
    """A command of many `sed` expressions, `awk`s, `cut`s, reads or credential accessors: the
    first version of the field rules (and the `read … <` rule before it) backtracked over the
    whole command at each occurrence, minutes for a few KB; each of these now takes milliseconds
    (the suite's timeout catches a return of that)."""
    for command in [
        " && ".join(f"sed -i 's/token{i}/tok{i}/g' src/f{i}.py" for i in range(2000)),
        "token sed s/" + "a/" * 32_000,
        "token " + "cut x " * 10_000,
        "token " + "awk print " * 6_000,
        "token " + "read a " * 9_000,
        "print " + ".token)" * 9_000,
        "token " + ").a" * 20_000,
        "sqlite3 token from " + "select " * 20_000,
        "sqlite3 pass from select" + " " * 30_000,  # the first query rule: 8 s at 3,000, minutes here
        "sqlite3 " + ("select" + " " * 600) * 64 + " from pass",  # and 27 s
        "token " + ".get_token()" * 9_000,
        "token redis-cli" + " " * 240 + "get " + "a" * 200_000,
        "token dasel" + " " * 250 + "a" * 200_000,
    ]:
        assert _masked(("gpt", _call(command)), ("tool", _result(VALUE)), ("gpt", VALUE))[2] == VALUE, command[:40]
