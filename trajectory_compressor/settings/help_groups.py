"""A command's `--help` in named groups, read from the group each option declares.

A setting names its group where it is declared (`setting(..., group="budget")`, see
`settings.declare.HELP_GROUPS`); `cli_options` builds its option as a `GroupedOption` carrying
it, and a command's own options (`-o`, `--config`, `--json`) say theirs the same way. A
`GroupedCommand` lists them under one heading per group, groups in `HELP_GROUPS` order, the
options marked `common` first in each, then in declaration order. An option naming no group
(a new setting not yet placed) is listed under `DEFAULT_GROUP` rather than refused.

click's own `Command.format_options` is the one place overridden: usage, the command's text and
its epilog (the examples) are click's, and so is each option's line (`get_help_record`).
"""

from __future__ import annotations

from typing import Any

import click

from trajectory_compressor.settings.declare import DEFAULT_GROUP, HELP_GROUPS


class GroupedOption(click.Option):
    """A click option that knows its `--help` group, and whether it is among the first listed."""

    def __init__(self, *args: Any, help_group: str = "", common: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if help_group and help_group not in HELP_GROUPS:
            raise ValueError(f"unknown help group {help_group!r} (one of {', '.join(HELP_GROUPS)})")
        self.help_group = help_group or DEFAULT_GROUP
        self.common = common


def help_group(param: click.Parameter) -> str:
    """The group `param` is listed under (`--help` itself, and any plain option, under the default)."""
    return getattr(param, "help_group", DEFAULT_GROUP)


def grouped_help_records(command: click.Command, ctx: click.Context) -> dict[str, list[tuple[str, str]]]:
    """The help lines of `command`'s options by group, groups in `HELP_GROUPS` order, empty ones left out."""
    rows: dict[str, list[tuple[bool, int, tuple[str, str]]]] = {key: [] for key in HELP_GROUPS}
    for position, param in enumerate(command.get_params(ctx)):
        record = param.get_help_record(ctx)
        if record is not None and not isinstance(param, click.Argument):  # as click's own: options only
            rows[help_group(param)].append((not getattr(param, "common", False), position, record))
    return {key: [record for *_, record in sorted(lines)] for key, lines in rows.items() if lines}


class GroupedCommand(click.Command):
    """A click command whose `--help` lists its options in named groups, then its examples.

    `examples`: (what it does, the command line) pairs, shown last, the lines as written.
    """

    def __init__(self, *args: Any, examples: tuple[tuple[str, str], ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.examples = examples

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for key, records in grouped_help_records(self, ctx).items():
            with formatter.section(HELP_GROUPS[key]):
                formatter.write_dl(records)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        if not self.examples:
            return
        with formatter.section("Examples"):
            for number, (what, line) in enumerate(self.examples):
                if number:
                    formatter.write("\n")
                formatter.write_text(what)  # wrapped like any help text
                with formatter.indentation():  # a command line as written (with its `\` breaks): never rewrapped
                    for text in line.splitlines():
                        formatter.write(f"{'':>{formatter.current_indent}}{text}\n")
