"""Settings are type-checked where they enter: YAML file, command line, Python API.

Each bad value is one line naming the key (and the file), exit 2, never a traceback, an
"internal error" or a silently wrong run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import make_trajectory, run_cli, write_jsonl
from trajectory_compressor.settings import ConfigError, LLMConfig, RunConfig, build_run_config, load_yaml_overrides


def _one_row(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "in.jsonl", [make_trajectory(0, steps=2)])


def _assert_one_line_exit_2(result, *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("yaml_text", "fragments"),
    [
        ("output:\n  summary_notice_text: 5\n", ["output.summary_notice_text", "must be a string"]),
        ("summarization:\n  extra_body: [1, 2]\n", ["summarization.extra_body", "mapping"]),
        ('processing:\n  skip_under_target: "maybe"\n', ["processing.skip_under_target", "true or false"]),
        ('processing:\n  per_trajectory_timeout: "soon"\n', ["processing.per_trajectory_timeout", "number"]),
        ("processing:\n  per_trajectory_timeout: -1\n", ["per_trajectory_timeout", "> 0"]),
        ("compression:\n  target_max_tokens: 15250.5\n", ["compression.target_max_tokens", "integer"]),
        ("summarization:\n  temperature: .nan\n", ["summarization.temperature", "finite"]),
        ("summarization:\n  max_concurrency: 0\n", ["summarization.max_concurrency", ">= 1"]),
        ("summarization:\n  rpm: 0\n", ["summarization.rpm", "> 0"]),
        ("summarization:\n  model: 12\n", ["summarization.model", "string"]),
        ("protected_turns:\n  last_n_turns: -2\n", ["protected_turns.last_n_turns", ">= 0"]),
        ("tokenizer:\n  count_mode: tokens\n", ["tokenizer.count_mode", "values, chat-template"]),
    ],
)
@pytest.mark.parametrize("command", ["compress", "analyze"])
def test_bad_yaml_values_are_one_line_errors_naming_key_and_file(
    tmp_path: Path, yaml_text: str, fragments: list[str], command: str
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml_text)
    args = [command, str(_one_row(tmp_path)), "--config", str(config)]
    if command == "compress":
        args += ["-o", str(tmp_path / "o.jsonl")]
    _assert_one_line_exit_2(run_cli(*args), str(config), *fragments)


@pytest.mark.parametrize("command", ["compress", "analyze"])
def test_config_file_with_invalid_utf8_is_exit_2(tmp_path: Path, command: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_bytes(b'output:\n  summary_notice_text: "\xff\xfe"\n')
    args = [command, str(_one_row(tmp_path)), "--config", str(config)]
    if command == "compress":
        args += ["-o", str(tmp_path / "o.jsonl")]
    _assert_one_line_exit_2(run_cli(*args), str(config), "UTF-8")


@pytest.mark.parametrize(
    ("flag", "value", "fragment"),
    [
        ("--window", "-1", ">= 1"),
        ("--window", "0", ">= 1"),
        ("--row-timeout", "-1", "> 0"),
        ("--row-timeout", "0", "> 0"),
        ("--temperature", "nan", "finite"),
        ("--temperature", "-0.5", ">= 0"),
        ("--rpm", "inf", "finite"),
        ("--tpm", "-5", "> 0"),
        ("--max-concurrency", "0", ">= 1"),
        ("--max-retries", "-1", ">= 0"),
        ("--request-timeout", "0", "> 0"),
        ("--retry-delay", "nan", "finite"),
        ("--summary-target-tokens", "0", ">= 1"),
        ("--target-max-tokens", "-3", ">= 1"),
        ("--protect-last-n-turns", "-1", ">= 0"),
        ("--sample-percent", "0", "> 0"),
        ("--sample-percent", "101", "<= 100"),
        ("--limit", "-1", ">= 0"),
        ("--price-in", "-1", ">= 0"),
        ("--max-prompt-chars", "10", ">= 1000"),
    ],
)
def test_out_of_range_flags_are_exit_2(tmp_path: Path, flag: str, value: str, fragment: str) -> None:
    result = run_cli("compress", str(_one_row(tmp_path)), "-o", str(tmp_path / "o.jsonl"), flag, value)
    _assert_one_line_exit_2(result, flag, fragment)
    assert not (tmp_path / "o.jsonl").exists()


def test_yaml_boolean_words_and_durations_mean_what_they_say(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        'processing:\n  skip_under_target: "no"\n  per_trajectory_timeout: "10m"\n'
        'summarization:\n  redact_secrets: "Off"\n  request_timeout: "1.5h"\n  rpm: 1e3\n'
        "protected_turns:\n  first_tool: yes\n"
    )
    run = build_run_config(load_yaml_overrides(config))
    assert run.skip_under_target is False
    assert run.row_timeout == 600
    assert run.llm.redact_secrets is False
    assert run.llm.request_timeout == 5400
    assert run.llm.rpm == 1000
    assert run.plan.protect_first_tool is True


def test_python_api_values_are_type_checked_too() -> None:
    with pytest.raises(ConfigError, match="skip_under_target"):
        RunConfig(skip_under_target="no").validate()  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="row_timeout"):
        RunConfig(row_timeout="10m").validate()  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="extra_body"):
        RunConfig(llm=LLMConfig(extra_body=[1, 2])).validate()  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="temperature"):
        RunConfig(llm=LLMConfig(temperature=float("nan"))).validate()
    RunConfig().validate()


def test_chat_template_with_a_syntax_error_stops_at_start(tmp_path: Path) -> None:
    template = tmp_path / "t.jinja"
    template.write_text("{% for m in messages %}{{ m.content }\n")
    result = run_cli(
        "compress", str(_one_row(tmp_path)), "-o", str(tmp_path / "o.jsonl"),
        "--count-mode", "chat-template", "--chat-template", str(template),
    )  # fmt: skip
    _assert_one_line_exit_2(result, str(template), "not a valid Jinja template")
    assert not (tmp_path / "o.jsonl").exists()


def test_module_cli_lists_every_command() -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "trajectory_compressor.cli", "--help"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    for command in ("compress", "analyze", "merge"):
        assert command in result.stdout
