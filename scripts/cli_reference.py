"""The CLI reference page, generated from the click definitions each time mkdocs builds the site.

A mkdocs hook (`hooks:` in mkdocs.yml): the marker line of docs/cli.md becomes, for every command
of `trajectory_compressor.cli:main`, its usage, its text, its options in the groups its `--help`
shows (click's own help records, through `settings.help_groups`) and its examples. Nothing of it
is written by hand, so the page cannot drift from `--help`; tests/test_docs.py checks that every
command and option is on the built page.

`python scripts/cli_reference.py` prints the generated Markdown.
"""

from __future__ import annotations

import inspect
from typing import Any

import click
from pymdownx.slugs import slugify

from trajectory_compressor.cli import main
from trajectory_compressor.settings.declare import HELP_GROUPS
from trajectory_compressor.settings.help_groups import GroupedCommand, grouped_help_records

MARKER = "<!-- cli-reference: generated from trajectory_compressor.cli:main by scripts/cli_reference.py -->"
PROG = "trajectory-compressor"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """The mkdocs event: docs/cli.md's marker replaced by the reference."""
    if page.file.src_uri != "cli.md":
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"docs/cli.md lost its marker line: {MARKER}")
    return markdown.replace(MARKER, render())


def render() -> str:
    root = click.Context(main, info_name=PROG)
    return "\n".join(_command(main, root, level=2))


def _command(command: click.Command, ctx: click.Context, level: int) -> list[str]:
    lines = [f"{'#' * level} `{ctx.command_path}`", ""]
    lines += ["```text", f"Usage: {ctx.command_path} {' '.join(command.collect_usage_pieces(ctx))}", "```", ""]
    lines += _text(command.help or "")
    if isinstance(command, click.Group):
        lines += ["| command | what it does |", "|---|---|"]
        for name, sub in command.commands.items():
            what = sub.short_help or inspect.cleandoc(sub.help or "").partition("\n")[0]
            lines.append(f"| [`{name}`](#{_anchor(f'{ctx.command_path} {name}')}) | {_cell(what)} |")
        lines.append("")
    lines += _options(command, ctx, level)
    for what, example in getattr(command, "examples", ()):
        lines += [what, "", "```bash", example, "```", ""]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            lines += _command(sub, click.Context(sub, info_name=name, parent=ctx), level + 1)
    return lines


def _options(command: click.Command, ctx: click.Context, level: int) -> list[str]:
    if isinstance(command, GroupedCommand):  # the groups of its --help, in their order
        titled = {HELP_GROUPS[key]: records for key, records in grouped_help_records(command, ctx).items()}
    else:
        records = [param.get_help_record(ctx) for param in command.get_params(ctx) if isinstance(param, click.Option)]
        titled = {"Options": [record for record in records if record is not None]}
    lines: list[str] = []
    for title, records in titled.items():
        lines += [f"{'#' * (level + 1)} {title} {{: #{_anchor(f'{ctx.command_path} {title}')} }}", ""]
        lines += ["| option | what it does |", "|---|---|"]
        # A pipe in a code span stays in its cell on the site (Python-Markdown); in text it is escaped.
        lines += [f"| `{' '.join(names.split())}` | {_cell(text)} |" for names, text in records]
        lines.append("")
    return lines


def _text(help_text: str) -> list[str]:
    """A command's help as paragraphs (click's `\\b` no-rewrap markers dropped)."""
    lines = [line for line in inspect.cleandoc(help_text).splitlines() if line.strip() != "\b"]
    return [*lines, ""] if lines else []


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _anchor(text: str) -> str:
    """The heading id: GitHub's rule, as mkdocs.yml's slugify (lower case, spaces to dashes)."""
    return str(slugify(case="lower")(text, "-"))


if __name__ == "__main__":
    print(render())
