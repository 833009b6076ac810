"""`--help` in named groups, read from the group each setting declares: headings, order, each option once, examples.

The expected options come from the declarations themselves (`settings.walk()`), so a setting added
to the tree is checked here without a new test; one without a group is named by
`test_every_setting_with_a_flag_names_its_help_group`.
"""

from __future__ import annotations

import re
import shlex

import click
import pytest
from click.testing import CliRunner

from tests.conftest import run_cli
from trajectory_compressor.cli import COMPRESS_EXAMPLES, main
from trajectory_compressor.settings import walk
from trajectory_compressor.settings.cli_options import flag_names
from trajectory_compressor.settings.declare import DEFAULT_GROUP, HELP_GROUPS
from trajectory_compressor.settings.help_groups import GroupedCommand, GroupedOption

COMPRESS_HEADINGS = [
    "Input and output",
    "Budget and planning",
    "Tokenizer and counting",
    "Summarizer",
    "LLM endpoint",
    "Batch API",
    "Output files and messages",
    "Run control",
    "Other options",  # -h, --help alone
    "Examples",
]
_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def _sections(help_text: str) -> list[tuple[str, list[str]]]:
    """(heading, lines) of each section after the usage and the command's text, in order."""
    sections: list[tuple[str, list[str]]] = []
    for line in help_text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":") and not line.startswith("Usage"):
            sections.append((line[:-1], []))
        elif sections:
            sections[-1][1].append(line)
    return sections


def _options_of(lines: list[str]) -> list[str]:
    """The option strings of a section's option lines (indented two spaces; help text is indented more)."""
    found = []
    for line in lines:
        if re.match(r"  -", line):
            found += _OPTION.findall(re.split(r"\s{2,}", line.strip())[0])
    return found


def _help(command: str) -> str:
    result = run_cli(command, "--help")
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_compress_help_is_in_named_groups_in_the_order_a_user_needs_them() -> None:
    sections = _sections(_help("compress"))
    assert [heading for heading, _ in sections] == COMPRESS_HEADINGS


def test_the_budget_is_near_the_top_after_the_input_and_output() -> None:
    text = _help("compress")
    sections = dict(_sections(text))
    assert _options_of(sections["Input and output"])[:4] == ["-o", "--output", "--config", "--format"]
    assert _options_of(sections["Budget and planning"])[:2] == ["--target-max-tokens", "--summary-target-tokens"]
    line = next(number for number, line in enumerate(text.splitlines()) if "--target-max-tokens" in line)
    assert line < 25, f"--target-max-tokens on line {line + 1}"
    assert "-o OUTPUT [OPTIONS] INPUTS..." in text.splitlines()[0], "the required -o is in the usage line"


@pytest.mark.parametrize("command", ["compress", "analyze", "requests", "eval"])
def test_every_option_is_listed_exactly_once_as_declared(command: str) -> None:
    """Each declared setting of the command, and each of its own options, once; nothing else."""
    sections = _sections(_help(command))
    listed = [option for heading, lines in sections if heading != "Examples" for option in _options_of(lines)]
    declared = [param for param in main.commands[command].params if isinstance(param, click.Option)]
    expected = [name for param in declared for name in (*param.opts, *param.secondary_opts)] + ["-h", "--help"]
    assert sorted(listed) == sorted(expected)
    settings = {flag_names(name, spec)[-1] for _, name, spec in walk() if spec.flag and command in spec.commands}
    assert settings <= set(listed)


@pytest.mark.parametrize("command", ["compress", "analyze", "requests", "eval"])
def test_each_option_is_under_the_group_its_declaration_names(command: str) -> None:
    headings = {title: key for key, title in HELP_GROUPS.items()}
    under = {
        option: headings[h] for h, lines in _sections(_help(command)) if h in headings for option in _options_of(lines)
    }
    for _, name, spec in walk():
        if spec.flag is not None and command in spec.commands:
            assert under[flag_names(name, spec)[-1]] == (spec.group or DEFAULT_GROUP), name
    order = [heading for heading, _ in _sections(_help(command)) if heading in headings]
    assert order == sorted(order, key=list(headings).index), "groups in HELP_GROUPS order"


def test_the_common_options_come_first_in_their_group() -> None:
    endpoint = _options_of(dict(_sections(_help("compress")))["LLM endpoint"])
    assert endpoint[:5] == ["--api", "--base-url", "--model", "--api-key-env", "--max-concurrency"]
    batch = _options_of(dict(_sections(_help("compress")))["Batch API"])
    assert batch[:2] == ["--batch", "--no-wait"]


def test_every_setting_with_a_flag_names_its_help_group() -> None:
    """A setting added without `group=` is still listed (under "Other options"), and named here."""
    unplaced = [f"{part}.{name}" for part, name, spec in walk() if spec.flag is not None and not spec.group]
    assert not unplaced, f"give these settings a group= (one of {', '.join(HELP_GROUPS)}): {unplaced}"


def test_an_option_without_a_group_is_listed_under_the_default_group_not_refused() -> None:
    @click.command(cls=GroupedCommand)
    @click.option("--placed", cls=GroupedOption, help_group="budget", help="In its group.")
    @click.option("--new-one", cls=GroupedOption, help="Declared without a group.")
    @click.option("--plain", help="A plain click option.")
    def command(**_: object) -> None:
        """A command."""

    sections = dict(_sections(CliRunner().invoke(command, ["--help"]).output))
    assert _options_of(sections["Budget and planning"]) == ["--placed"]
    assert _options_of(sections[HELP_GROUPS[DEFAULT_GROUP]]) == ["--new-one", "--plain", "--help"]
    with pytest.raises(ValueError, match="unknown help group"):
        GroupedOption(["--typo"], help_group="budgt")


def test_the_examples_are_last_and_each_is_a_command_line_compress_accepts() -> None:
    text = _help("compress")
    heading, lines = _sections(text)[-1]
    assert heading == "Examples" and 4 <= len(COMPRESS_EXAMPLES) <= 6
    shown = "\n".join(lines)
    for what, line in COMPRESS_EXAMPLES:
        assert what in " ".join(shown.split()) and line.splitlines()[0] in shown
        words = shlex.split(line.replace("\\\n", " "))
        assert words[:2] == ["trajectory-compressor", "compress"]
        main.commands["compress"].make_context("compress", words[2:], **main.context_settings)  # it parses
    assert all(len(line) <= 80 for line in lines), "an example fits an 80-column terminal"


def test_analyze_requests_and_eval_are_grouped_the_same_way() -> None:
    analyze = dict(_sections(_help("analyze")))
    assert list(analyze)[:2] == ["Input and output", "Budget and planning"]
    assert _options_of(analyze["Budget and planning"])[0] == "--target-max-tokens"
    requests = dict(_sections(_help("requests")))
    assert _options_of(requests["Input and output"])[:2] == ["-o", "--output"]
    evaluate = dict(_sections(_help("eval")))
    assert _options_of(evaluate["Input and output"])[:2] == ["-i", "--input"]
    assert _options_of(evaluate["LLM endpoint"])[0] == "--probes"


@pytest.mark.parametrize("command", ["compress", "analyze", "requests", "eval"])
def test_every_choice_option_names_its_default_at_the_end_of_its_help(command: str) -> None:
    """A bracket inside the help text (`pip install "trajectory-compressor[ray]"`) is not a default."""
    choices = [
        param
        for param in main.commands[command].params
        if isinstance(param, click.Option) and isinstance(param.type, click.Choice)
    ]
    assert choices
    unnamed = [param.opts[-1] for param in choices if not re.search(r"\[[^\]]+\]\.?$", param.help or "")]
    assert not unnamed, f"no [default] at the end of the help of {unnamed}"
