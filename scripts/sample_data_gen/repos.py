"""Fictional Python repositories for the coding family: source files, grep hits, test logs, tracebacks.

Why pre-built: a coding run reads files, greps and runs pytest many times; rendering each repo
once per process (see pools.py) turns every such output into a slice of a `LinePool`.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from .code_templates import CODE_HEADER, CODE_UNITS, TEST_UNITS
from .fragments import NOUNS, VERBS, LinePool, substitute, words

REPOS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "ledgerkit",
        "Double-entry bookkeeping helpers for small businesses",
        words("core accounts currency parser export cli rounding journal"),
    ),
    (
        "routegrid",
        "Shortest-path routing over tiled road graphs",
        words("graph router cost loader geo cache cli tiles"),
    ),
    (
        "tinyqueue",
        "A small persistent job queue with retries",
        words("queue worker backoff broker serializer scheduler metrics locks"),
    ),
    (
        "confparse",
        "Layered configuration files with environment overrides",
        words("lexer parser schema env merge types dump loader"),
    ),
    (
        "chartly",
        "Declarative SVG charts for reports",
        words("axes scale render palette legend layout svg ticks"),
    ),
    (
        "mailbatch",
        "Templated bulk e-mail with throttling",
        words("templates sender throttle addresses mime retry cli store"),
    ),
    (
        "timewarp",
        "Time zone aware date parsing and recurrence rules",
        words("zones parse format calendar delta recurrence compat clock"),
    ),
    (
        "geomesh",
        "Triangle meshes for terrain and map tiles",
        words("mesh triangulate io bbox simplify projection index export"),
    ),
)


@dataclass(frozen=True)
class Repo:
    """A fictional repository: modules, rendered code units, and the lines grep and tracebacks show."""

    name: str
    summary: str
    modules: tuple[str, ...]
    error_class: str
    units: tuple[str, ...]
    test_units: tuple[str, ...]
    functions: tuple[str, ...]
    paths: tuple[str, ...]
    grep_lines: LinePool
    progress_lines: LinePool
    verbose_lines: LinePool
    find_lines: LinePool
    ls_text: str
    frames: tuple[str, ...]  # traceback frames; "@ROOT@" stands for the checkout folder
    sources: tuple[tuple[LinePool, LinePool], ...]  # whole source files: (plain, with line numbers)


def build_repo(rng: random.Random, name: str, summary: str, modules: tuple[str, ...]) -> Repo:
    error_class = name.capitalize() + "Error"
    units, tests = [], []
    for _ in range(60):
        values = {
            "v": rng.choice(VERBS),
            "n": rng.choice(NOUNS),
            "m": rng.choice(NOUNS),
            "C": rng.choice(NOUNS).capitalize() + rng.choice(("", "Spec", "Set", "Info", "State")),
            "E": error_class,
            "k": str(rng.choice((8, 16, 32, 64, 128, 256, 1000))),
            "k2": str(rng.randint(2, 6)),
        }
        values["V"] = values["v"].capitalize()
        units.append(substitute(rng.choice(CODE_UNITS), values))
        tests.append(substitute(rng.choice(TEST_UNITS), values))
    functions = sorted({m for unit in units for m in re.findall(r"^\s*def ([a-z_]\w*)\(", unit, re.M) if m[:2] != "__"})
    lines = sorted({line for unit in units for line in unit.split("\n") if len(line.strip()) > 12})
    paths = [f"{name}/__init__.py", f"{name}/errors.py", f"{name}/_compat.py"]
    paths += [f"{name}/{module}.py" for module in modules]
    paths += [f"tests/test_{module}.py" for module in modules]
    paths += [
        "tests/conftest.py",
        "README.md",
        "pyproject.toml",
        "CHANGELOG.md",
        "docs/index.md",
        "docs/usage.md",
        ".github/workflows/ci.yml",
        "scripts/release.sh",
        "tox.ini",
    ]
    sources = [p for p in paths if p.endswith(".py")]
    grep = tuple(f"{rng.choice(sources)}:{rng.randint(3, 420)}:{rng.choice(lines)}" for _ in range(1500))
    # Percentages climb to 100 and start again, so any slice reads like (part of) a real run.
    progress = tuple(
        f"tests/test_{rng.choice(modules)}.py {'.' * rng.randint(3, 60)} [{(i * 7) % 100 + 1:>3}%]" for i in range(300)
    )
    verbose = tuple(
        f"tests/test_{rng.choice(modules)}.py::test_{rng.choice(VERBS)}_{rng.choice(NOUNS)} "
        f"{rng.choice(('PASSED', 'PASSED', 'PASSED', 'PASSED', 'SKIPPED'))} [{i % 100 + 1:>3}%]"
        for i in range(1500)
    )
    ls = [f"total {rng.randint(40, 400)}"] + [
        f"-rw-r--r-- 1 agent agent {rng.randint(120, 48000):>6} Mar {rng.randint(1, 28):>2} "
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} {path}"
        for path in paths
        if "/" not in path or path.startswith(name)
    ]
    find = ["./" + p for p in paths] + [f"./build/lib/{p}" for p in sources]
    find += [f"./{p.rsplit('/', 1)[0]}/__pycache__/{p.rsplit('/', 1)[1][:-3]}.cpython-311.pyc" for p in sources]
    statements = [line for line in lines if not line.lstrip().startswith(("def ", "class ", "@", '"""'))]
    frames = tuple(
        f'  File "@ROOT@/{name}/{rng.choice(modules)}.py", line {rng.randint(12, 480)}, in {rng.choice(functions)}\n'
        f"    {rng.choice(statements).strip()}"
        for _ in range(200)
    )
    files = []
    for module in modules:
        header = substitute(
            CODE_HEADER, {"doc": f"{module.capitalize()} helpers for {name}.", "pkg": name, "E": error_class}
        )
        text = header + "\n\n" + "\n\n\n".join(rng.choices(units, k=90))
        plain = text.split("\n")
        files.append((LinePool(plain), LinePool(f"{i:>6}\t{line}" for i, line in enumerate(plain, 1))))
    return Repo(
        name=name,
        summary=summary,
        modules=modules,
        error_class=error_class,
        units=tuple(units),
        test_units=tuple(tests),
        functions=tuple(functions),
        paths=tuple(paths),
        grep_lines=LinePool(grep),
        progress_lines=LinePool(progress),
        verbose_lines=LinePool(verbose),
        find_lines=LinePool(find),
        ls_text="\n".join(ls),
        frames=frames,
        sources=tuple(files),
    )
