"""The settings tree: each declared setting reaches the run by flag, by YAML key and by keyword, checked by type.

Parametrized over the declarations themselves, so a setting added to `settings/tree.py` is
covered here without a new test.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from trajectory_compressor.cli import build_config, main
from trajectory_compressor.run.settings_record import settings_record
from trajectory_compressor.settings import ConfigError, RunConfig, load_yaml_overrides, walk
from trajectory_compressor.settings.cli_options import flag_names
from trajectory_compressor.settings.tree import PARTS

SETTINGS = list(walk())
IDS = [f"{part}.{name}" for part, name, _ in SETTINGS]


def _id(value: Any) -> str:
    return value if isinstance(value, str) else ""


# A value of the wrong kind, and a good one different from every default, per kind.
BAD = {
    "int": "many",
    "number": "lots",
    "duration": "soon",
    "bool": "maybe",
    "str": 3,
    "url": 3,
    "path": 3,
    "dict": "[1, 2]",
    "choice": "no-such-choice",
    "list": 3,
}
GOOD = {"int": 99_999, "number": 0.5, "duration": 7.0, "str": "x", "url": "http://127.0.0.1:9/v1", "path": "p.txt"}


def _good(spec: Any) -> Any:
    if spec.kind == "choice":
        return spec.choices[-1]
    if spec.kind == "dict":
        return {"top_k": 3}
    if spec.kind == "list":
        return ["a.jsonl"]
    return GOOD.get(spec.kind)


def _value_of(config: RunConfig, part: str, name: str) -> Any:
    return getattr(config if part == "run" else getattr(config, part), name)


def _parts_with(part: str, name: str, value: Any) -> RunConfig:
    if part == "run":
        return RunConfig(**{name: value})
    return RunConfig(**{part: PARTS[part](**{name: value})})


@pytest.mark.parametrize(("part", "name", "spec"), SETTINGS, ids=IDS)
def test_a_wrong_type_through_the_python_api_is_a_config_error_naming_the_setting(part, name, spec) -> None:
    with pytest.raises(ConfigError, match=name):
        _parts_with(part, name, BAD[spec.kind] if spec.kind != "dict" else [1, 2]).validate()


@pytest.mark.parametrize(("part", "name", "spec"), [s for s in SETTINGS if s[2].yaml], ids=_id)
def test_each_yaml_key_sets_its_setting_and_refuses_a_wrong_type(tmp_path: Path, part, name, spec) -> None:
    section, key = spec.yaml[0].split(".")
    good = tmp_path / "good.yaml"
    value = _good(spec) if spec.kind != "bool" else "off"
    good.write_text(
        f"{section}:\n  {key}: {value!r}\n" if not isinstance(value, dict) else f"{section}:\n  {key}: {{top_k: 3}}\n"
    )
    overrides = load_yaml_overrides(good)
    expected = False if spec.kind == "bool" else value
    assert overrides[part][name] == expected
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"{section}:\n  {key}: {BAD[spec.kind]!r}\n")
    with pytest.raises(ConfigError, match=f"{section}.{key}"):
        load_yaml_overrides(bad)


def _parsed(command: str, args: list[str]) -> RunConfig:
    """The config a command line gives, parsed by the real click command without running it."""
    required = {"compress": ["-o", "o.jsonl"], "requests": ["-o", "r.jsonl"], "eval": ["--input", "in.jsonl"]}
    # The group's context settings, as when run under it: a command caches its help option (-h) at the first context.
    arguments = [*args, "in.jsonl", *required.get(command, [])]
    context = main.commands[command].make_context(command, arguments, **main.context_settings)
    params = dict(context.params)
    for own in ("inputs", "output", "outputs", "metrics", "json_output"):
        params.pop(own, None)
    return build_config(params.pop("config_file", None), params)


@pytest.mark.parametrize(("part", "name", "spec"), [s for s in SETTINGS if s[2].flag is not None], ids=_id)
def test_each_flag_sets_its_setting_on_every_command_that_declares_it(part, name, spec) -> None:
    flag = flag_names(name, spec)[-1]
    default = _value_of(RunConfig(), part, name)
    for command in spec.commands:
        if spec.flag_style == "switch":
            args, expected = [f"--no-{flag[2:]}" if default else flag], not default
        elif spec.flag_style == "flag":
            args, expected = [flag], True
        elif spec.flag_style == "off":
            args, expected = [flag], False
        else:
            good = _good(spec)
            text = '{"top_k": 3}' if spec.kind == "dict" else (good[0] if spec.kind == "list" else str(good))
            args, expected = [flag, text], good
        extra = ["--num-shards", "100000"] if name == "shard_index" else []
        extra += ["--target-max-tokens", "1000000"] if name == "summary_target_tokens" else []
        extra += ["--prune-tool-outputs"] if name == "summarizer" else []  # none: pruning only
        config = _parsed(command, [*extra, *args])
        assert _value_of(config, part, name) == expected, (command, args)


@pytest.mark.parametrize(
    ("part", "name", "spec"),
    [s for s in SETTINGS if s[2].flag is not None and s[2].flag_style == "value"],
    ids=lambda s: str(s),
)
def test_a_wrong_value_on_the_command_line_is_exit_2_naming_the_flag(tmp_path: Path, part, name, spec) -> None:
    if spec.kind in ("str", "url", "path", "list"):
        pytest.skip("any text is a valid string")
    flag = flag_names(name, spec)[-1]
    result = CliRunner().invoke(
        main,
        [
            spec.commands[0],
            str(tmp_path / "in.jsonl"),
            *(["-o", str(tmp_path / "o.jsonl")] if spec.commands[0] == "compress" else []),
            flag,
            "no-such-value",
        ],
    )
    assert result.exit_code == 2, result.output
    assert flag in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("command", ["compress", "analyze"])
def test_help_lists_each_flag_once(command: str) -> None:
    help_text = CliRunner().invoke(main, [command, "--help"], terminal_width=200).output.split("\nExamples:")[0]
    # The option column of each option line (help text may mention other flags).
    text = "\n".join(line.strip().split("  ")[0] for line in help_text.splitlines() if line.lstrip().startswith("-"))
    for _, name, spec in SETTINGS:
        if spec.flag is None or command not in spec.commands:
            continue
        flag = flag_names(name, spec)[-1]
        assert len(re.findall(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text)) == 1, flag


def test_the_settings_record_keeps_every_key_reports_have_always_had() -> None:
    """Reports from before the settings tree record the same keys (resume and merge compare them);
    every setting declared `record=True` is in the record, so a new one is recorded by its declaration."""
    record = settings_record(RunConfig(), "bundled")
    assert set(record) >= {
        "tokenizer", "count_mode", "chat_template", "plan", "summarizer", "llm", "on_summary_failure",
        "skip_under_target", "dry_run", "sample_percent", "seed", "limit", "over_limit", "num_shards",
        "shard_index", "output_format", "split", "conversation_key", "format",
    }  # fmt: skip
    assert set(record["plan"]) == {f.name for f in dataclasses.fields(RunConfig().plan)}
    assert set(record["llm"]) >= {
        "base_url",
        "model",
        "temperature",
        "extra_body",
        "redact_secrets",
        "max_prompt_chars",
    }
    assert "api_key_env" not in record["llm"] and record["tokenizer"] == "bundled"
    for part, name, spec in SETTINGS:
        if spec.record:
            assert name in (record[part] if part in ("plan", "llm") else record), name


def test_a_url_is_recorded_without_its_credentials() -> None:
    config = RunConfig(llm=dataclasses.replace(RunConfig().llm, base_url="http://bob:hunter2secret@127.0.0.1:9/v1"))
    record = settings_record(config, "t")
    assert "hunter2secret" not in str(record) and "127.0.0.1:9" in record["llm"]["base_url"]


def test_a_json_setting_is_recorded_with_its_credentials_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--extra-body` goes to the report and `--json`: a value under a credential's name, a
    credential's shape and the run's own API key (from its environment) are masked there; the
    rest is kept as given."""
    monkeypatch.setenv("OPENAI_API_KEY", "plain-words-key-0451")
    body = {
        "headers": {"Authorization": "Bearer tok-9f8e7d6c5b4a39281706"},
        "api_key": "xyz123secretvalue",
        "metadata": {"note": "plain-words-key-0451", "aws": "AKIAIOSFODNN7EXAMPLE"},
        "top_k": 20,
        "stop": ["\n\n"],
    }
    config = RunConfig(llm=dataclasses.replace(RunConfig().llm, extra_body=body))
    recorded = settings_record(config, "t")["llm"]["extra_body"]
    for secret in ("tok-9f8e7d6c5b4a39281706", "xyz123secretvalue", "plain-words-key-0451", "AKIAIOSFODNN7EXAMPLE"):
        assert secret not in str(recorded), secret
    assert recorded["top_k"] == 20 and recorded["stop"] == ["\n\n"]
    assert config.llm.extra_body == body, "the request still carries what was given"
