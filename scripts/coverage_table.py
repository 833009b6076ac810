#!/usr/bin/env python3
"""Per-module statement coverage before and after a change, as a Markdown table.

Each side is the JSON report of one run of the whole suite (`pytest -m "" --cov=trajectory_compressor
--cov-report=json:FILE`), the before run on a checkout of the older commit:

    python scripts/coverage_table.py before.json after.json > table.md
    python scripts/coverage_table.py before.json after.json --changed 0.5   # only modules that moved

A module present on one side only (added, removed or split) shows `-` on the other. The totals
line counts every statement of the package on each side. Exit code 1 when the total dropped.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def module_coverage(report: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """(covered, statements) of each module of a coverage JSON report, by dotted name."""
    found = {}
    for path, data in report["files"].items():
        name = path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        summary = data["summary"]
        found[name] = (summary["covered_lines"], summary["num_statements"])
    return found


def percent(covered: int, statements: int) -> float:
    return 100.0 * covered / statements if statements else 100.0


def total(modules: dict[str, tuple[int, int]]) -> float:
    """The package's coverage: every statement of every module."""
    return percent(sum(c for c, _ in modules.values()), sum(s for _, s in modules.values()))


def table(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], changed: float) -> list[str]:
    """The Markdown lines: a header, one row per module (all, or those that moved by `changed`
    points or more, or exist on one side only), then the totals."""
    lines = ["| module | statements | before | after | change |", "|---|---:|---:|---:|---:|"]
    for name in sorted(before.keys() | after.keys()):
        old = percent(*before[name]) if name in before else None
        new = percent(*after[name]) if name in after else None
        if old is not None and new is not None and abs(new - old) < changed:
            continue
        statements = (after.get(name) or before[name])[1]
        delta = f"{new - old:+.1f}" if old is not None and new is not None else "new" if old is None else "gone"
        lines.append(f"| `{name}` | {statements} | {_shown(old)} | {_shown(new)} | {delta} |")
    old_total, new_total = total(before), total(after)
    statements = sum(s for _, s in after.values())
    lines.append(f"| **total** | {statements} | {old_total:.1f} | {new_total:.1f} | {new_total - old_total:+.1f} |")
    return lines


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--changed", type=float, default=0.0, help="only modules that moved this many points [all]")
    args = parser.parse_args(argv)
    before = module_coverage(json.loads(args.before.read_text()))
    after = module_coverage(json.loads(args.after.read_text()))
    print("\n".join(table(before, after, args.changed)))
    return 1 if total(after) < total(before) else 0


if __name__ == "__main__":
    sys.exit(main())
