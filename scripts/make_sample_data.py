#!/usr/bin/env python3
"""Synthetic agent trajectories in ShareGPT form: the committed sample data and benchmark input.

Why synthetic: the project's tests and `sample_data/` must stand on their own, without real runs
whose licences and sizes we do not control, and the benchmark needs any number of rows on demand.
The rows imitate what tool-calling agents produce: a system prompt with tool schemas inside
`<tools>`, a task, gpt turns that think and call tools in `<tool_call>` blocks, tool turns with
`<tool_response>` blocks holding long outputs (listings, source files, test logs with tracebacks,
tables, web pages, booking records), follow-up messages and a final answer. A small share carries
the quirks a compressor must survive: a run that ends on a call with no response, arguments that
are not valid JSON, no system turn, a French or Chinese task, a top-level `tools` field.

Output is a pure function of (n, seed): every choice comes from `random.Random` instances seeded
from the seed and the row index (never global state or the clock), so the committed file can be
checked against this script, and row i does not depend on n (a small run is a prefix of a big one).

Speed matters (the benchmark makes ~20k rows): text is assembled from fragment pools built once
per process, so a row costs some dozens of joins and slices, never per-character work.

    python scripts/make_sample_data.py                          # rewrites sample_data/agent_runs.jsonl
    python scripts/make_sample_data.py --rows 20000 --seed 1 --out - | head -c 2000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate
from pathlib import Path
from typing import Any

import orjson

DEFAULT_ROWS = 250
DEFAULT_SEED = 7
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "sample_data" / "agent_runs.jsonl"

# Characters per token with the DeepSeek tokenizer, measured on this generator's output: each
# family sets its own for tool output and for prose (code and tables are denser than prose).
# Only used to steer row lengths; the README's numbers come from the real tokenizer.
CHARS_PER_TOKEN = (3.8, 3.6)  # (system/human/gpt, tool)
CJK_CHARS_PER_TOKEN = 1.3

Call = tuple[str, Any, Any]  # (tool name, arguments, content of the response)


# --------------------------------------------------------------------------------------------
# Row sizes: a fixed mix per block of 100 rows, so that every sample of a few hundred rows has
# the intended share of long rows instead of a binomial accident.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SizeClass:
    """A band of row lengths: how many rows per hundred, target tokens, and tool steps."""

    name: str
    per_hundred: int
    tokens: tuple[int, int]
    steps: tuple[int, int]
    skew: float  # > 1 pulls targets towards the low end of the band


SIZE_CLASSES: tuple[SizeClass, ...] = (
    SizeClass("very_long", 1, (40_000, 80_000), (60, 140), 1.3),
    SizeClass("long", 38, (15_800, 18_000), (10, 45), 1.8),
    SizeClass("mid", 3, (8_500, 14_000), (8, 28), 1.0),
    SizeClass("short", 58, (2_000, 6_000), (3, 14), 2.1),
)
_SIZE_BY_NAME = {size.name: size for size in SIZE_CLASSES}

FAMILY_WEIGHTS: dict[str, dict[str, int]] = {
    "very_long": {"coding": 7, "data_analysis": 3},
    "long": {"coding": 55, "data_analysis": 30, "web_research": 10, "customer_service": 5},
    "mid": {"coding": 35, "data_analysis": 25, "web_research": 25, "customer_service": 15},
    "short": {"coding": 25, "data_analysis": 20, "web_research": 20, "customer_service": 35},
}


@lru_cache(maxsize=16)
def _block_plan(seed: int, block: int) -> tuple[str, ...]:
    plan = [size.name for size in SIZE_CLASSES for _ in range(size.per_hundred)]
    random.Random(f"sizes:{seed}:{block}").shuffle(plan)
    return tuple(plan)


def size_class_of(seed: int, index: int) -> SizeClass:
    """The size band of row `index`: fixed by (seed, block of 100), independent of n."""
    block, position = divmod(index, 100)
    return _SIZE_BY_NAME[_block_plan(seed, block)[position]]


# --------------------------------------------------------------------------------------------
# Vocabulary and text pools (built once per process from a fixed seed).
# --------------------------------------------------------------------------------------------


def _words(text: str) -> tuple[str, ...]:
    """A word list written as one string, so long vocabularies stay a few lines long."""
    return tuple(text.split())


VERBS = _words(
    "parse load resolve merge normalize validate flush render split compute encode decode apply collect "
    "build fetch emit register format compare refresh expand serialize filter"
)
NOUNS = _words(
    "record entry token buffer route segment payload schema window batch span node ledger invoice metric "
    "sample frame chunk header cursor policy rule column offset"
)

REPOS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "ledgerkit",
        "Double-entry bookkeeping helpers for small businesses",
        _words("core accounts currency parser export cli rounding journal"),
    ),
    (
        "routegrid",
        "Shortest-path routing over tiled road graphs",
        _words("graph router cost loader geo cache cli tiles"),
    ),
    (
        "tinyqueue",
        "A small persistent job queue with retries",
        _words("queue worker backoff broker serializer scheduler metrics locks"),
    ),
    (
        "confparse",
        "Layered configuration files with environment overrides",
        _words("lexer parser schema env merge types dump loader"),
    ),
    (
        "chartly",
        "Declarative SVG charts for reports",
        _words("axes scale render palette legend layout svg ticks"),
    ),
    (
        "mailbatch",
        "Templated bulk e-mail with throttling",
        _words("templates sender throttle addresses mime retry cli store"),
    ),
    (
        "timewarp",
        "Time zone aware date parsing and recurrence rules",
        _words("zones parse format calendar delta recurrence compat clock"),
    ),
    (
        "geomesh",
        "Triangle meshes for terrain and map tiles",
        _words("mesh triangulate io bbox simplify projection index export"),
    ),
)

_PLACEHOLDER = re.compile(r"\$\{(\w+)\}")

CODE_HEADER = '''"""${doc}"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import datetime, timezone

from ${pkg}.errors import ${E}

logger = logging.getLogger(__name__)
_SEEN: set[str] = set()
'''

CODE_UNITS = (
    '''def ${v}_${n}(${n}, *, strict=False):
    """${V} one ${n} and return it, or None when it is empty.

    With strict=True an empty ${n} is an error instead, which the CLI relies on.
    """
    if ${n} is None:
        return None
    value = str(${n}).strip()
    if not value:
        if strict:
            raise ${E}(f"empty ${n}: {${n}!r}")
        return None
    return _canonical(value)''',
    """def ${v}_${m}s(items, limit=${k}):
    result = []
    for index, item in enumerate(items):
        if index >= limit:
            break
        if item.${m}_id in _SEEN:
            continue
        _SEEN.add(item.${m}_id)
        result.append(${v}_${m}(item))
    return result""",
    '''@dataclass(frozen=True)
class ${C}:
    """A ${n} as stored on disk; immutable so that it can be cached and hashed."""

    name: str
    ${m}: int = 0
    tags: tuple[str, ...] = ()
    created_at: float | None = None

    @property
    def is_empty(self) -> bool:
        return self.${m} == 0 and not self.tags

    def with_${m}(self, value: int) -> ${C}:
        return replace(self, ${m}=value)''',
    '''class ${C}Cache:
    """Keeps the last ${k} ${n}s; lookups are O(1) and eviction is least-recently-used."""

    def __init__(self, maxsize=${k}):
        self._data = OrderedDict()
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0

    def get(self, key):
        try:
            value = self._data.pop(key)
        except KeyError:
            self.misses += 1
            return None
        self._data[key] = value
        self.hits += 1
        return value

    def put(self, key, value):
        self._data.pop(key, None)
        self._data[key] = value
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)''',
    """def ${v}_line(line, lineno):
    line = line.rstrip("\\n")
    if not line or line.startswith("#"):
        return None
    key, sep, raw = line.partition("=")
    if not sep:
        raise ${E}(f"line {lineno}: expected key=value, got {line!r}")
    key = key.strip().lower()
    raw = raw.strip()
    if raw.startswith(("'", '"')) and raw.endswith(raw[0]):
        raw = raw[1:-1]
    return key, _coerce(raw)""",
    """def _coerce(raw):
    lowered = raw.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return raw""",
    '''def iter_${n}_chunks(stream, size=${k}):
    """Yield lists of at most `size` ${n}s so that callers never hold the whole stream."""
    chunk = []
    for ${n} in stream:
        chunk.append(${n})
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk''',
    """def ${v}_with_retry(func, *args, attempts=${k2}, base_delay=0.5, **kwargs):
    last_error = None
    for attempt in range(attempts):
        try:
            return func(*args, **kwargs)
        except (TimeoutError, ConnectionError) as exc:
            last_error = exc
            delay = base_delay * (2 ** attempt)
            logger.warning("attempt %d failed (%s); retrying in %.1fs", attempt + 1, exc, delay)
            time.sleep(delay)
    raise ${E}(f"gave up after {attempts} attempts") from last_error""",
    '''_REGISTRY = {}


def register_${n}(name):
    """Decorator: make a ${n} handler available by name to the command line."""

    def decorator(func):
        if name in _REGISTRY:
            raise ${E}(f"duplicate ${n} handler: {name}")
        _REGISTRY[name] = func
        return func

    return decorator


def get_${n}_handler(name):
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise ${E}(f"unknown ${n} handler {name!r}; known: {known}") from None''',
    """def ${v}_${m}_options(base, override):
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = ${v}_${m}_options(merged[key], value)
        elif value is not None:
            merged[key] = value
    return merged""",
    """def ${v}_timestamp(value, tz=None):
    if isinstance(value, (int, float)):
        dt = datetime.fromtimestamp(value, tz=timezone.utc)
    elif isinstance(value, str):
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    else:
        dt = value
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=tz or timezone.utc)
    return dt.astimezone(tz or timezone.utc)""",
    """def summarize_${n}s(${n}s):
    total = 0
    count = 0
    largest = None
    for item in ${n}s:
        size = item.${m}
        total += size
        count += 1
        if largest is None or size > largest.${m}:
            largest = item
    mean = total / count if count else 0.0
    return {"count": count, "total": total, "mean": round(mean, 3), "largest": largest}""",
    '''class ${C}Parser:
    """Streaming parser for ${n} files; keeps line numbers for the error report."""

    def __init__(self, source, *, strict=False):
        self.source = source
        self.strict = strict
        self.errors = []

    def __iter__(self):
        for lineno, line in enumerate(self.source, start=1):
            try:
                parsed = ${v}_line(line, lineno)
            except ${E} as exc:
                if self.strict:
                    raise
                self.errors.append(str(exc))
                continue
            if parsed is not None:
                yield parsed

    def ${v}_all(self):
        return dict(self)''',
    """def ${v}_${n}_window(values, start, width=${k}):
    if width <= 0:
        raise ${E}(f"width must be positive, got {width}")
    end = min(len(values), start + width)
    window = values[start:end]
    if len(window) < width and values:
        logger.debug("short ${n} window at %d: %d of %d", start, len(window), width)
    return window""",
    """def _canonical(value):
    value = value.replace("\\t", " ")
    while "  " in value:
        value = value.replace("  ", " ")
    return value.casefold()""",
)

TEST_UNITS = (
    """def test_${v}_${n}_strips_whitespace():
    assert ${v}_${n}("  abc  ") == "abc"


def test_${v}_${n}_empty_returns_none():
    assert ${v}_${n}("") is None


def test_${v}_${n}_strict_raises():
    with pytest.raises(${E}):
        ${v}_${n}("", strict=True)""",
    """@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("true", True),
        ("off", False),
        ("12", 12),
        ("1.5", 1.5),
        ("text", "text"),
    ],
)
def test_coerce(raw, expected):
    assert _coerce(raw) == expected""",
    """def test_${n}_cache_evicts_oldest():
    cache = ${C}Cache(maxsize=2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("c", 3)
    assert cache.get("a") is None
    assert cache.get("c") == 3
    assert cache.hits == 1""",
    """def test_iter_${n}_chunks_keeps_remainder():
    chunks = list(iter_${n}_chunks(range(7), size=3))
    assert chunks == [[0, 1, 2], [3, 4, 5], [6]]""",
    """def test_summarize_${n}s_empty():
    summary = summarize_${n}s([])
    assert summary["count"] == 0
    assert summary["mean"] == 0.0""",
    """def test_${v}_timestamp_naive_is_utc():
    value = ${v}_timestamp("2024-03-01T12:00:00")
    assert value.tzinfo is not None
    assert value.hour == 12""",
)

EXCEPTIONS = (
    ("AssertionError", "assert {a} == {b}"),
    ("KeyError", "'{n}_id'"),
    ("TypeError", "unsupported operand type(s) for +: 'NoneType' and 'int'"),
    ("ValueError", "invalid literal for int() with base 10: '{b}x'"),
    ("AttributeError", "'NoneType' object has no attribute '{n}'"),
    ("IndexError", "list index out of range"),
    ("{E}", "empty {n}: ''"),
)

BUG_CAUSES = (
    "it compares the raw {n} instead of the normalized one",
    "the loop stops one element early when the input length is a multiple of the chunk size",
    "None is passed through to `{fn2}` without a check",
    "the default argument is a mutable list shared between calls",
    "the time zone offset is applied twice for naive datetimes",
    "the cache key ignores the `strict` flag, so a lenient result is reused in strict mode",
    "an empty {n} falls through to the numeric branch",
    "the error is caught and silently replaced with a default value",
    "the module-level `_SEEN` set is never cleared between runs",
)

REASONING = (
    "The failure mentions `{fn}`, so the problem is probably in how {n}s are prepared before they reach it.",
    "There are several call sites; only the one in `{path}` passes `strict=True`.",
    "If I change the signature I also have to update every caller, so a local fix inside the function is safer.",
    "The test expects {a} but gets {b}, which looks like an off-by-one in the {n} handling.",
    "I should check whether the same pattern exists in the sibling modules before editing.",
    "The issue says this started after the last release, so a recent refactor may have changed a default.",
    "Before editing, I want to confirm the behaviour with a minimal reproduction.",
    "The traceback ends in `{fn}`, but the bad value is created earlier, in `{fn2}`.",
    "Keeping the change minimal: one condition in `{fn}` plus a regression test.",
    "The existing tests only cover the happy path, which is why this slipped through.",
    "The output is long; the relevant part is the assertion at the end of the first failure.",
    "`{fn2}` is only used by the CLI, so changing its return type would not affect the library API.",
    "Nothing in the diff touches serialization, so the round-trip tests should still pass.",
    "I am not sure yet whether the empty case is intended; the docstring suggests it should return None.",
    "The grep shows the helper is duplicated in two modules, and only one copy was updated.",
)

ACKS = ("Understood.", "Got it.", "Sure, noted.", "Okay, I'll take that into account.", "Thanks for the heads-up.")


def _sub(template: str, values: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


class LinePool:
    """Pre-rendered lines with prefix sums of their lengths: a budget-sized run of lines is a
    bisect and a join instead of a Python loop per line (the benchmark makes ~20k rows)."""

    __slots__ = ("_ends", "lines")

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = tuple(lines)
        self._ends = list(accumulate(len(line) + 1 for line in self.lines))

    def __len__(self) -> int:
        return len(self.lines)

    @property
    def chars(self) -> int:
        return self._ends[-1] if self._ends else 0

    def take(self, start: int, budget_chars: int) -> str:
        """Consecutive lines from `start`, wrapping around once, until about `budget_chars`."""
        if budget_chars <= 0:
            return ""
        n = len(self.lines)
        start %= n
        before = self._ends[start - 1] if start else 0
        end = bisect_left(self._ends, before + budget_chars)
        if end < n:
            return "\n".join(self.lines[start : end + 1])
        rest = budget_chars - (self._ends[-1] - before)
        wrapped = min(start, bisect_left(self._ends, rest) + 1)
        return "\n".join(self.lines[start:] + self.lines[:wrapped])


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


def _build_repo(rng: random.Random, name: str, summary: str, modules: tuple[str, ...]) -> Repo:
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
        units.append(_sub(rng.choice(CODE_UNITS), values))
        tests.append(_sub(rng.choice(TEST_UNITS), values))
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
        header = _sub(CODE_HEADER, {"doc": f"{module.capitalize()} helpers for {name}.", "pkg": name, "E": error_class})
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


# Web research: topics with their own vocabulary; organisations and places are invented or generic.
TOPICS = (
    (
        "heat pumps in cold climates",
        ("heat pump", "coefficient of performance", "backup resistance heating", "defrost cycle", "retrofit"),
    ),
    (
        "microplastics in drinking water",
        ("microplastic particles", "filtration", "polymer fragments", "sampling protocol", "treatment plant"),
    ),
    (
        "the history of container shipping",
        ("standard container", "port automation", "break-bulk cargo", "intermodal rail", "freight rates"),
    ),
    (
        "urban tree canopy and street temperature",
        ("canopy cover", "surface temperature", "heat island", "street trees", "shade index"),
    ),
    ("sodium-ion batteries", ("sodium-ion cell", "energy density", "cathode material", "cycle life", "grid storage")),
    ("four-day work week trials", ("reduced hours", "productivity", "employee retention", "pilot program", "burnout")),
    (
        "desalination energy costs",
        ("reverse osmosis", "brine disposal", "energy recovery", "membrane fouling", "water tariff"),
    ),
    (
        "community solar programs",
        ("subscription model", "net metering", "low-income households", "interconnection queue", "bill credits"),
    ),
)
ORGS = (
    "the Halvorsen Institute",
    "Meridian Energy Lab",
    "the Coastal Policy Center",
    "Brightwater Analytics",
    "the Open Infrastructure Forum",
    "Kestrel University",
    "the Lindqvist Foundation",
    "Tallgrass Research",
)
PLACES = (
    "northern Sweden",
    "Ontario",
    "Hokkaido",
    "the Atacama region",
    "the Netherlands",
    "Texas",
    "Kerala",
    "Victoria, Australia",
    "Scotland",
    "Bavaria",
)
DOMAINS = (
    "news.example.com",
    "research.example.org",
    "blog.example.net",
    "journal.example.edu",
    "wiki.example.org",
    "policy.example.gov",
    "magazine.example.com",
)
SENTENCES = (
    "According to {org}, {term} improved by about {pct}% between {year} and {year2}.",
    "A {year} survey of {num} households in {place} found that {pct}% had some experience with {term}.",
    "Critics argue that the benefits of {term} are overstated, because most studies measure {term2} "
    "over short periods.",
    "The biggest uncertainty remains {term2}, which varies strongly with local conditions.",
    "In {place}, early adopters reported lower costs once {term} was combined with {term2}.",
    "{Org} estimates that scaling up {term} would need roughly {num} million in public funding over a decade.",
    "Researchers caution that comparisons across regions are difficult because definitions of {term} differ.",
    "The report notes that {term2} accounted for about {pct}% of total costs in the projects it reviewed.",
    "Most of the evidence on {topic} still comes from pilot programs rather than long-term deployments.",
    "One practical lesson is that {term} performs best when it is planned together with {term2}.",
    "Between {year} and {year2}, the number of projects involving {term} roughly {mult}.",
    "Industry groups dispute these figures, pointing to newer data on {term2}.",
    "A follow-up study by {org} could not reproduce the largest effect sizes reported earlier.",
    "Local regulations in {place} have been a major factor in how quickly {term} spread.",
    "Interviews with operators highlight the upkeep of {term2} as an overlooked expense.",
    "The median project in the sample reached a payback period of {small} years.",
    "Data from {place} suggest the effect is smaller in winter months.",
    "{Org}'s {year2} review covers {num} studies and rates the overall evidence as {quality}.",
    "Public support for {topic} has shifted, rising to {pct}% in recent polling.",
    "Several authors recommend reporting results per unit of output so that studies can be compared.",
    "The authors stress that their sample over-represents larger organisations.",
    "When {term2} is excluded, the estimated benefit falls to roughly {small}%.",
    "A common objection is that {term} shifts costs rather than removing them.",
    "The dataset behind the {year2} figures has not been published, which limits independent checks.",
    "By {year2}, {place} had become a reference case for {term}, cited in most later reviews.",
)
SECTIONS = (
    "Background",
    "What the data shows",
    "Costs and trade-offs",
    "Regional differences",
    "Open questions",
    "Methodology",
    "Key findings",
    "Policy implications",
    "Limitations",
)
TITLES = (
    "{Topic}: what the {year} data shows",
    "A practical guide to {term}",
    "Why {term} matters for {topic}",
    "{Org} report on {topic} ({year})",
    "Five myths about {term}",
    "{Topic} explained",
    "New study questions the case for {term}",
    "Lessons from {place} on {topic}",
)


def _render_sentence(rng: random.Random, topic: str, terms: tuple[str, ...], template: str) -> str:
    term, term2 = rng.sample(terms, 2)
    org = rng.choice(ORGS)
    year = rng.randint(2012, 2021)
    return template.format(
        org=org,
        Org=org[0].upper() + org[1:],
        term=term,
        term2=term2,
        topic=topic,
        place=rng.choice(PLACES),
        year=year,
        year2=year + rng.randint(1, 3),
        pct=rng.randint(4, 78),
        num=rng.randint(120, 9000),
        small=rng.randint(3, 14),
        mult=rng.choice(("doubled", "tripled", "grew fivefold", "fell by half")),
        quality=rng.choice(("moderate", "limited", "strong for short-term outcomes", "mixed")),
    )


# Data analysis: fictional tables, rendered once as CSV and as pandas-style text.
# Each table's output tokenizes differently (numbers are dense, padding is cheap): the last item
# is its measured characters per token, which keeps row lengths on target.
DATASETS: tuple[tuple[str, tuple[str, ...], float], ...] = (
    (
        "sales_2023.csv",
        _words("order_id order_date region store_id product category units unit_price discount revenue"),
        3.08,
    ),
    (
        "sensor_readings.csv",
        _words("sensor_id timestamp site temp_c humidity_pct pressure_hpa battery_v status"),
        2.81,
    ),
    (
        "customers_churn.csv",
        _words("customer_id signup_date plan tenure_months monthly_charges support_tickets last_login_days churned"),
        3.77,
    ),
    (
        "taxi_trips_march.csv",
        _words("trip_id pickup_time pickup_zone dropoff_zone distance_km fare tip payment_type passengers"),
        3.02,
    ),
)
REGIONS = ("North", "South", "East", "West", "Central")
CATEGORIES = ("Outdoor", "Kitchen", "Office", "Garden", "Toys", "Electronics")
ZONES = ("Harbor", "Midtown", "Old Town", "Airport", "University", "Riverside", "Market", "Northgate")


def _is_label(value: str) -> bool:
    """A categorical cell (a region, a plan), as opposed to an id, a date or a number."""
    return value.replace("-", "").isalpha() and value != "NaN"


def _data_row(rng: random.Random, file: str, i: int) -> tuple[str, ...]:
    day = f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if file.startswith("sales"):
        units, price, disc = rng.randint(1, 40), round(rng.uniform(2, 250), 2), rng.choice((0, 0, 0.05, 0.1, 0.2))
        return (
            str(100000 + i),
            day,
            rng.choice(REGIONS),
            f"S{rng.randint(1, 48):03d}",
            f"P-{rng.randint(100, 999)}",
            rng.choice(CATEGORIES),
            str(units),
            f"{price:.2f}",
            str(disc),
            f"{units * price * (1 - disc):.2f}",
        )
    if file.startswith("sensor"):
        status = rng.choice(("ok", "ok", "ok", "ok", "degraded", "offline"))
        temp = "NaN" if status == "offline" else f"{rng.gauss(18, 7):.2f}"
        return (
            f"TS-{rng.randint(1, 64):03d}",
            f"{day} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00",
            rng.choice(("plant-a", "plant-b", "depot", "roof")),
            temp,
            f"{rng.uniform(20, 95):.1f}",
            f"{rng.gauss(1012, 6):.1f}",
            f"{rng.uniform(3.1, 4.2):.2f}",
            status,
        )
    if file.startswith("customers"):
        plan = rng.choice(("basic", "standard", "premium", "family"))
        return (
            f"C{200000 + i}",
            day,
            plan,
            str(rng.randint(1, 72)),
            f"{rng.uniform(9, 120):.2f}",
            str(rng.choice((0, 0, 0, 1, 1, 2, 3, 5, 8))),
            str(rng.randint(0, 180)),
            str(int(rng.random() < 0.27)),
        )
    return (
        f"T{7000000 + i}",
        f"2023-03-{rng.randint(1, 31):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
        rng.choice(ZONES),
        rng.choice(ZONES),
        f"{rng.expovariate(0.25):.2f}",
        f"{rng.uniform(4, 80):.2f}",
        f"{rng.choice((0, 0, 1, 2, 3.5, 5)):.2f}",
        rng.choice(("card", "card", "cash", "app")),
        str(rng.choice((1, 1, 1, 2, 2, 3, 4))),
    )


@dataclass(frozen=True)
class Dataset:
    """A fictional table: its CSV lines and a pandas-style rendering, sliced to fit a budget."""

    file: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    table_header: str
    table_lines: LinePool
    total_rows: int
    chars_per_token: float
    groups: tuple[str, ...]
    pivot_lines: LinePool  # a day-by-group table, for pivots of any length


def _build_dataset(rng: random.Random, file: str, columns: tuple[str, ...], per_token: float) -> Dataset:
    rows = tuple(_data_row(rng, file, i) for i in range(1500))
    widths = [max(len(c), *(len(r[j]) for r in rows[:200])) + 2 for j, c in enumerate(columns)]
    header = "      " + "".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))
    table = tuple(f"{i:<6d}" + "".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) for i, r in enumerate(rows))
    groups = tuple(sorted({r[2] for r in rows}))[:6]
    pivot = [f"{'date':<12}" + "".join(g.rjust(14) for g in groups)]
    pivot += [
        f"2023-{m:02d}-{d:02d}  " + "".join(f"{rng.uniform(0, 9000):>14.2f}" for _ in groups)
        for m in range(1, 13)
        for d in range(1, 29)
    ]
    return Dataset(
        file=file,
        columns=columns,
        rows=rows,
        table_header=header,
        table_lines=LinePool(table),
        total_rows=rng.randint(12_000, 480_000),
        chars_per_token=per_token,
        groups=groups,
        pivot_lines=LinePool(pivot),
    )


@dataclass(frozen=True)
class Pools:
    """Every pre-built fragment; built once per process so rows are cheap to assemble."""

    repos: tuple[Repo, ...]
    datasets: tuple[Dataset, ...]
    paragraphs: dict[str, tuple[str, ...]]
    titles: dict[str, tuple[str, ...]]


@lru_cache(maxsize=1)
def pools() -> Pools:
    """Build the fragment pools from a fixed seed (independent of the caller's seed)."""
    rng = random.Random("make_sample_data pools v1")
    repos = tuple(_build_repo(rng, *spec) for spec in REPOS)
    datasets = tuple(_build_dataset(rng, *spec) for spec in DATASETS)
    paragraphs, titles = {}, {}
    for topic, terms in TOPICS:
        paragraphs[topic] = tuple(
            " ".join(_render_sentence(rng, topic, terms, rng.choice(SENTENCES)) for _ in range(rng.randint(3, 6)))
            for _ in range(80)
        )
        titles[topic] = tuple(
            rng.choice(TITLES).format(
                Topic=topic[0].upper() + topic[1:],
                topic=topic,
                term=rng.choice(terms),
                org=rng.choice(ORGS),
                Org=rng.choice(ORGS).replace("the ", "The ", 1),
                year=rng.randint(2015, 2024),
                place=rng.choice(PLACES),
            )
            for _ in range(40)
        )
    return Pools(repos, datasets, paragraphs, titles)


# --------------------------------------------------------------------------------------------
# One run under construction: turns, a running token estimate, and the call/response plumbing
# (where the quirks are injected, so that every family gets them for free).
# --------------------------------------------------------------------------------------------


class _StopRun(Exception):
    """Ends a run right after a tool call, before any response: the "interrupted run" quirk."""


def _schema(name: str, description: str, params: dict[str, tuple[str, str]], required: Sequence[str]) -> dict:
    properties = {key: {"type": kind, "description": text} for key, (kind, text) in params.items()}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(required)},
        },
    }


def _call_block(name: str, arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n</tool_call>"


def _broken_call_block(rng: random.Random, name: str, arguments: Any) -> tuple[str, str]:
    """A call block whose arguments do not parse, and the error a harness would return for it."""
    text = json.dumps(arguments, ensure_ascii=False)
    style = rng.randrange(3)
    if style == 0 and len(text) > 24:  # generation cut off mid-string
        cut = rng.randint(len(text) // 2, len(text) - 3)
        block = '{"name": "' + name + '", "arguments": ' + text[:cut]
        return (
            f"<tool_call>\n{block}\n</tool_call>",
            f"Expecting ',' delimiter: line 1 column {cut + 30} (char {cut + 29})",
        )
    if style == 1:  # single quotes, as some models write Python dicts
        block = '{"name": "' + name + '", "arguments": ' + text.replace('"', "'") + "}"
        return (
            f"<tool_call>\n{block}\n</tool_call>",
            "Expecting property name enclosed in double quotes: line 1 column 2",
        )
    block = json.dumps({"name": name, "arguments": text[1:-1] if len(text) > 2 else text}, ensure_ascii=False)
    return f"<tool_call>\n{block}\n</tool_call>", "arguments must be a JSON object, got a string"


@dataclass
class Run:
    """Turns of one trajectory being generated, with the switches for its quirks."""

    rng: random.Random
    lang: str = "en"
    chars_per_token: tuple[float, float] = CHARS_PER_TOKEN
    reasoning: bool = False
    thinks_aloud: bool = False
    id_style: int = 0
    merge_parallel: float = 0.5
    break_next_call: bool = False
    stop_at_next_call: bool = False
    ack_pending: bool = False
    turns: list[dict[str, str]] = field(default_factory=list)
    tokens: float = 0.0
    calls: int = 0

    def add(self, role: str, value: str) -> None:
        self.turns.append({"from": role, "value": value})
        per_token = self.chars_per_token[role == "tool"]
        if self.lang == "zh":
            wide = (len(value.encode()) - len(value)) // 2
            self.tokens += (len(value) - wide) / per_token + wide / CJK_CHARS_PER_TOKEN
        else:
            self.tokens += len(value) / per_token

    def _call_id(self) -> str:
        self.calls += 1
        if self.id_style == 0:
            return f"call_{self.rng.getrandbits(96):024x}"
        if self.id_style == 1:
            return f"toolu_01{self.rng.getrandbits(88):022x}"
        return f"call_{self.calls}"

    def gpt(self, text: str, thought: str = "") -> None:
        """A gpt turn without tool calls (a reply to the user or the final answer)."""
        self.add("gpt", self._prose(text, thought))

    def _prose(self, text: str, thought: str) -> str:
        if thought and self.reasoning:
            text = f"<think>\n{thought}\n</think>\n{text}" if text else f"<think>\n{thought}\n</think>"
        elif thought and self.thinks_aloud:
            text = f"{thought}\n\n{text}" if "\n" in text else f"{thought} {text}"
        if self.ack_pending:
            self.ack_pending = False
            ack = self.rng.choice(ACKS)
            text = text.replace("</think>\n", f"</think>\n{ack} ", 1) if text.startswith("<think>") else f"{ack} {text}"
        return text

    def act(self, text: str, calls: Sequence[Call], thought: str = "") -> None:
        """A gpt turn with tool calls, then the responses: separate tool turns or one merged turn."""
        blocks, responses = [], []
        for i, (name, arguments, content) in enumerate(calls):
            call_id = self._call_id()
            if i == 0 and self.break_next_call:
                self.break_next_call = False
                block, error = _broken_call_block(self.rng, name, arguments)
                blocks.append(block)
                content = f"Error: could not parse tool call: {error}. Send the arguments as a JSON object."
            else:
                blocks.append(_call_block(name, arguments))
            responses.append(self._response(call_id, name, content))
        prose = self._prose(text, thought)
        self.add("gpt", prose + "\n" + "\n".join(blocks) if prose else "\n".join(blocks))
        if self.stop_at_next_call:
            raise _StopRun
        if len(responses) > 1 and self.rng.random() < self.merge_parallel:
            self.add("tool", "\n".join(responses))
        else:
            for response in responses:
                self.add("tool", response)

    @staticmethod
    def _response(call_id: str, name: str, content: Any) -> str:
        body = orjson.dumps(content).decode()
        return (
            f'<tool_response>\n{{"tool_call_id": "{call_id}", "name": "{name}", "content": {body}}}\n</tool_response>'
        )


def _fit_lines(lines: Sequence[str], start: int, budget_chars: int) -> list[str]:
    """Consecutive lines from `start` (wrapping around) until about `budget_chars` are used."""
    out, used, n = [], 0, len(lines)
    i = start % n
    while used < budget_chars and len(out) < n:
        line = lines[i]
        out.append(line)
        used += len(line) + 1
        i = (i + 1) % n
    return out


# --------------------------------------------------------------------------------------------
# Task families. Each knows its tools, its system prompt, its task, one step of work (a gpt turn
# plus responses, sized to a budget), a mid-run follow-up from the user, and its final answer.
# --------------------------------------------------------------------------------------------

TOOL_FORMAT = (
    "You can call the functions described below. Their signatures are JSON Schema objects inside "
    "<tools></tools>:\n<tools>\n{schemas}\n</tools>\n\n"
    "To call a function, write one JSON object per call with the function name and its arguments, "
    'inside <tool_call></tool_call> tags:\n<tool_call>\n{{"name": <function-name>, "arguments": '
    "<arguments-object>}}\n</tool_call>\nYou may make several calls in one message when they do not "
    "depend on each other. Results come back in <tool_response></tool_response> blocks."
)


class Family:
    """A kind of task; subclasses fill in the tools, the prompts and the steps."""

    name = "family"
    intro = ""
    chars_per_token: tuple[float, float] = CHARS_PER_TOKEN

    def __init__(self, rng: random.Random, lang: str) -> None:
        self.rng = rng
        self.lang = lang

    @staticmethod
    def tool_schemas(variant: str = "") -> list[dict]:
        """The function definitions offered to the model (a static function of the variant)."""
        raise NotImplementedError

    def tools(self) -> list[dict]:
        return self.tool_schemas(self.variant())

    def system_prompt(self, with_schemas: bool) -> str:
        if not with_schemas:
            return self.intro
        indent = 2 if self.rng.random() < 0.3 else None
        return self.intro + "\n\n# Tools\n\n" + TOOL_FORMAT.format(schemas=self.tools_json(indent))

    def tools_json(self, indent: int | None = None) -> str:
        """The tool schemas as JSON text, cached: they are the same for every row of a kind."""
        return _tools_json(type(self), self.variant(), indent)

    def variant(self) -> str:
        """What `tools()` depends on besides the class (the coding harness)."""
        return ""

    def task(self) -> str:
        raise NotImplementedError

    def opening(self, run: Run) -> None:
        """Turns before the task (only customer service greets first)."""

    def step(self, run: Run, budget: int, progress: float) -> None:
        raise NotImplementedError

    def followup(self) -> str:
        raise NotImplementedError

    def final(self, run: Run) -> None:
        raise NotImplementedError

    def meta(self) -> dict[str, Any]:
        return {}


# ---- coding ---------------------------------------------------------------------------------

CODING_TASKS = {
    "en": (
        "The test `{test}` started failing after the last merge. The failure is:\n\n```\n{exc}: {msg}\n```\n\n"
        "Please find the cause in `{path}` and fix it. Keep the change small and do not edit unrelated tests.",
        "Bug report from a user of {repo}:\n\n> When I call `{fn}` with an empty value I get `{exc}` instead of "
        "`None`. This worked in the previous release.\n\nReproduce it, fix it, and add a regression test.",
        "Our CI is red on main. `pytest {testfile}` fails with {exc}. Investigate and fix the code "
        "(not the tests). The repository is checked out at `{root}`.",
        "Can you look into `{fn}` in `{path}`? It seems to {symptom}. Please fix it and make sure the full "
        "test suite still passes.",
    ),
    "fr": (
        "Le test `{test}` échoue depuis la dernière fusion, avec l'erreur `{exc}: {msg}`. Peux-tu trouver la "
        "cause dans `{path}` et corriger le code, sans modifier les tests existants ?",
        "Bonjour ! Quand j'appelle `{fn}` avec une valeur vide, j'obtiens `{exc}` au lieu de `None`. Ça "
        "marchait dans la version précédente. Merci de reproduire le problème, de le corriger et d'ajouter un "
        "test de non-régression.",
    ),
    "zh": (
        "合并最新代码后，测试 `{test}` 开始失败，错误信息是 `{exc}: {msg}`。请在 `{path}` 中找出原因并修复，"
        "改动尽量小，不要修改无关的测试。",
        "用户反馈：调用 `{fn}` 时传入空值会抛出 `{exc}`，而不是返回 `None`。上一个版本是正常的。请复现问题、"
        "修复它，并补充一个回归测试。",
    ),
}
CODING_SYMPTOMS = (
    "drop the last item of every batch",
    "return stale values after a config reload",
    "ignore the strict flag",
    "shift timestamps by one hour for naive datetimes",
    "raise on empty input instead of returning None",
)
CODING_FOLLOWUPS = {
    "en": (
        "Also, please make sure it still works on Python 3.9.",
        "Quick note: don't touch the public API.",
        "Any progress? Please keep the diff minimal.",
        "FYI the same bug was reported for the CLI path too.",
        "Please also run the linters before you finish.",
    ),
    "fr": ("Au fait, il faut que ça reste compatible avec Python 3.9.", "Merci de ne pas toucher à l'API publique."),
    "zh": ("另外，请确认在 Python 3.9 下也能运行。", "请不要修改公开的 API。"),
}
CODING_FINAL = {
    "en": "I fixed the bug in `{path}`.\n\n**Cause:** {cause}.\n\n**Fix:** `{fn}` now handles that case "
    "explicitly, and I added a regression test in `{testfile}`.\n\n**Verification:** `pytest` passes "
    "({passed} passed, {skipped} skipped). The diff touches {files} file(s).",
    "fr": "J'ai corrigé le bug dans `{path}`.\n\n**Cause :** {cause}.\n\n**Correction :** `{fn}` traite "
    "désormais ce cas explicitement, et j'ai ajouté un test de non-régression dans `{testfile}`.\n\n"
    "**Vérification :** `pytest` passe ({passed} réussis, {skipped} ignorés).",
    "zh": "已修复 `{path}` 中的问题。\n\n**原因：** {cause}。\n\n**修复：** `{fn}` 现在会显式处理这种情况，"
    "并在 `{testfile}` 中添加了回归测试。\n\n**验证：** `pytest` 全部通过（{passed} 个通过，{skipped} 个跳过）。",
}
CODING_SAY = {
    "explore": (
        "Let me look at the repository layout first.",
        "I'll start with an overview of the project.",
        "First, let me see which files are in the package and where the tests live.",
    ),
    "read": (
        "Now let me read `{path}`.",
        "Let me open `{path}` around the function from the traceback.",
        "I need to see the rest of `{path}` before changing anything.",
        "Let me check how `{fn}` is written.",
    ),
    "grep": (
        "Let me find every place that uses `{fn}`.",
        "I'll search for `{fn}` across the package.",
        "Searching for related call sites.",
    ),
    "test": (
        "Let me run the failing test.",
        "Running the test module to see where we stand.",
        "Now the full suite, to check for regressions.",
        "Let me re-run the tests.",
    ),
    "repro": ("Let me write a small script that reproduces the issue.", "I'll reproduce this in isolation first."),
    "edit": (
        "The bug is in `{fn}`: {cause}. I'll fix that.",
        "I'll update `{fn}` accordingly.",
        "Let me apply the fix.",
        "Adding a guard for the empty case.",
    ),
    "diff": ("Let me review the full diff before finishing.", "Checking the final diff."),
}


class Coding(Family):
    """Bug fixing in a fictional Python repository, through a shell or an editor toolset."""

    name = "coding"

    def __init__(self, rng: random.Random, lang: str) -> None:
        super().__init__(rng, lang)
        self.repo = rng.choice(pools().repos)
        self.harness = rng.choice(("shell", "editor"))
        self.exit_style = rng.randrange(2)
        self.root = rng.choice(("/workspace", "/testbed", "/repo", "/home/agent/src")) + "/" + self.repo.name
        self.module = rng.choice(self.repo.modules)
        self.path = f"{self.repo.name}/{self.module}.py"
        self.testfile = f"tests/test_{self.module}.py"
        self.fn = rng.choice(self.repo.functions)
        self.fn2 = rng.choice(self.repo.functions)
        self.test = f"{self.testfile}::test_{self.fn.lstrip('_')}"
        self.cause = rng.choice(BUG_CAUSES).format(n=rng.choice(NOUNS), fn2=self.fn2)
        exc, msg = rng.choice(EXCEPTIONS)
        self.exc = exc.format(E=self.repo.error_class)
        self.msg = msg.format(a=rng.randint(0, 9), b=rng.randint(10, 99), n=rng.choice(NOUNS))
        self.passed = rng.randint(80, 900)
        self.steps_done = 0
        self.thoughts = tuple(
            t.format(
                fn=self.fn,
                fn2=self.fn2,
                path=self.path,
                n=rng.choice(NOUNS),
                a=rng.randint(0, 9),
                b=rng.randint(10, 99),
            )
            for t in REASONING
        )
        self.intro = (
            f"You are an autonomous software engineering agent working in a checkout of `{self.repo.name}` "
            f"({self.repo.summary.lower()}) at `{self.root}`. Solve the user's request with the smallest correct "
            "change. Explore before editing, run the tests to verify your work, and never modify tests to make "
            "them pass unless asked. When you are done, reply with a short summary of the cause and the fix."
        )

    @staticmethod
    def tool_schemas(variant: str = "") -> list[dict]:
        bash = _schema(
            "bash",
            "Run a shell command in the repository and return its output and exit code.",
            {
                "command": ("string", "The command to run."),
                "timeout": ("integer", "Seconds before the command is killed (default 120)."),
            },
            ["command"],
        )
        if variant == "shell":
            return [bash]
        return [
            bash,
            _schema(
                "view_file",
                "Show a file with line numbers, optionally only a range of lines.",
                {
                    "path": ("string", "Path relative to the repository root."),
                    "start_line": ("integer", "First line to show (1-based)."),
                    "end_line": ("integer", "Last line to show (inclusive)."),
                },
                ["path"],
            ),
            _schema(
                "search",
                "Search the repository for a regular expression, like grep -rn.",
                {"pattern": ("string", "Regular expression."), "path": ("string", "Folder to search.")},
                ["pattern"],
            ),
            _schema(
                "str_replace",
                "Replace one exact occurrence of old_str with new_str in a file.",
                {
                    "path": ("string", "File to edit."),
                    "old_str": ("string", "Exact text to replace."),
                    "new_str": ("string", "Replacement text."),
                },
                ["path", "old_str", "new_str"],
            ),
            _schema(
                "run_tests",
                "Run pytest on a path or node id and return the report.",
                {
                    "target": ("string", "Test path or node id; empty for the whole suite."),
                    "extra_args": ("string", "Extra pytest arguments."),
                },
                [],
            ),
        ]

    def task(self) -> str:
        return self.rng.choice(CODING_TASKS[self.lang]).format(
            test=self.test,
            exc=self.exc,
            msg=self.msg,
            path=self.path,
            fn=self.fn,
            repo=self.repo.name,
            testfile=self.testfile,
            root=self.root,
            symptom=self.rng.choice(CODING_SYMPTOMS),
        )

    def followup(self) -> str:
        return self.rng.choice(CODING_FOLLOWUPS[self.lang])

    def meta(self) -> dict[str, Any]:
        return {"repo": self.repo.name, "harness": self.harness}

    def variant(self) -> str:
        return self.harness

    # outputs ---------------------------------------------------------------------------

    def _shell(self, output: str, code: int = 0) -> str:
        if self.exit_style == 0:
            return f"exit_code: {code}\n--- output ---\n{output}"
        return f"{output}\n[process exited with code {code}]"

    def _view(self, budget: int) -> tuple[str, str, int, int]:
        """A module's path and a run of its numbered lines (cat -n), with the first and last line."""
        target = self.repo.modules.index(self.module)
        index = target if self.rng.random() < 0.6 else self.rng.randrange(len(self.repo.sources))
        numbered = self.repo.sources[index][1]
        start = self.rng.randrange(max(1, int(len(numbered) * (1 - budget / numbered.chars))))
        text = numbered.take(start, budget)
        return f"{self.repo.name}/{self.repo.modules[index]}.py", text, start + 1, start + text.count("\n") + 1

    def _numbered(self, text: str, budget: int) -> tuple[str, int, int]:
        lines = text.split("\n")
        start = self.rng.randrange(max(1, len(lines) - 20))
        chosen = _fit_lines(lines, start, budget)
        numbered = "\n".join(f"{start + i + 1:>6}\t{line}" for i, line in enumerate(chosen))
        return numbered, start + 1, start + len(chosen)

    def _listing(self, budget: int) -> tuple[str, str]:
        if self.rng.random() < 0.5:
            return f"ls -la {self.repo.name}", self.repo.ls_text
        return "find . -type f -not -path './.git/*'", self.repo.find_lines.take(0, max(budget, 400))

    def _grep(self, budget: int) -> str:
        lines = self.repo.grep_lines
        return lines.take(self.rng.randrange(len(lines)), budget)

    def _traceback(self, frames: int) -> str:
        chosen = self.rng.sample(self.repo.frames, min(frames, len(self.repo.frames)))
        body = "\n".join(chosen).replace("@ROOT@", self.root)
        return f"Traceback (most recent call last):\n{body}\n{self.exc}: {self.msg}"

    def _pytest(self, budget: int, failing: int) -> str:
        rng = self.rng
        total = self.passed + failing + rng.randint(0, 12)
        head = (
            "============================= test session starts ==============================\n"
            f"platform linux -- Python 3.11.{rng.randint(2, 9)}, pytest-8.{rng.randint(0, 3)}.{rng.randint(0, 2)}, "
            f"pluggy-1.5.0\nrootdir: {self.root}\nconfigfile: pyproject.toml\nplugins: cov-5.0.0, timeout-2.3.1\n"
            f"collected {total} items\n"
        )
        verbose = budget > 9000 and rng.random() < 0.6
        pool = self.repo.verbose_lines if verbose else self.repo.progress_lines
        reserve = failing * 900 + 400
        body = pool.take(rng.randrange(len(pool)), budget - reserve - len(head))
        failures = []
        for _ in range(failing):
            test_unit = rng.choice(self.repo.test_units).split("\n\n\n")[0]
            lines = test_unit.split("\n")
            first = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("assert")), len(lines) - 1)
            marked = "\n".join((">   " if i == first else "    ") + ln for i, ln in enumerate(lines[: first + 1]))
            name = re.search(r"def (\w+)", test_unit)
            title = name.group(1) if name else "test_case"
            failures.append(
                f"{'_' * 30} {title} {'_' * 30}\n\n{marked}\n"
                f"E       {self.exc}: {self.msg}\n\n{self.testfile}:{rng.randint(10, 300)}: {self.exc}\n"
                "----------------------------- Captured log call ------------------------------\n"
                f"WARNING  {self.repo.name}.{self.module}:{self.module}.py:{rng.randint(20, 400)} "
                f"attempt 1 failed (timed out); retrying in 0.5s"
            )
        tail = f"{failing} failed, " if failing else ""
        seconds = rng.uniform(0.8, 40)
        summary = f"========== {tail}{self.passed} passed, {rng.randint(0, 9)} skipped in {seconds:.2f}s =========="
        parts = [head, body]
        if failures:
            parts.append(
                "=================================== FAILURES ===================================\n"
                + "\n".join(failures)
            )
            parts.append(
                "=========================== short test summary info ============================\n"
                + "\n".join(f"FAILED {self.test} - {self.exc}: {self.msg}" for _ in range(failing))
            )
        parts.append(summary)
        return "\n".join(parts)

    def _diff(self, budget: int) -> str:
        rng = self.rng
        unit = rng.choice(self.repo.units).split("\n")
        at = rng.randint(10, 300)
        context = unit[: max(3, min(len(unit), budget // 60))]
        cut = max(1, len(context) // 2)
        body = [" " + ln for ln in context[:cut]]
        body += [
            "-" + context[cut] if cut < len(context) else "-    pass",
            "+    if value is None:",
            "+        return None",
        ]
        body += [" " + ln for ln in context[cut + 1 :]]
        return (
            f"diff --git a/{self.path} b/{self.path}\nindex {rng.getrandbits(28):07x}..{rng.getrandbits(28):07x} "
            f"100644\n--- a/{self.path}\n+++ b/{self.path}\n@@ -{at},{len(context)} +{at},{len(context) + 1} @@\n"
            + "\n".join(body)
        )

    # steps -----------------------------------------------------------------------------

    def step(self, run: Run, budget: int, progress: float) -> None:
        rng = self.rng
        if progress < 0.12:
            weights = {"explore": 5, "grep": 3, "read": 2}
        elif progress < 0.45:
            weights = {"read": 4, "grep": 3, "test": 2, "repro": 2, "explore": 1}
        elif progress < 0.8:
            weights = {"edit": 3, "test": 3, "read": 2, "grep": 1, "repro": 1}
        else:
            weights = {"test": 4, "diff": 2, "read": 1, "edit": 1}
        kind = rng.choices(list(weights), weights=list(weights.values()))[0]
        parallel = kind in ("read", "grep") and rng.random() < 0.2
        count = rng.randint(2, 3) if parallel else 1
        calls = [self._call(kind, budget // count, progress) for _ in range(count)]
        opened = calls[0][1].get("path", self.path) if count == 1 else self.path
        say = rng.choice(CODING_SAY[kind]).format(path=opened, fn=self.fn, cause=self.cause)
        if self.steps_done == 0:  # nothing has been seen yet, so no reasoning about outputs
            thought = f"The task points at `{self.fn}` in `{self.path}`; I'll get oriented before changing anything."
        else:
            thought = " ".join(rng.sample(self.thoughts, rng.randint(1, 4)))
        self.steps_done += 1
        run.act(say, calls, thought)

    def _call(self, kind: str, budget: int, progress: float) -> Call:
        rng, shell = self.rng, self.harness == "shell"
        if kind == "explore":
            command, output = self._listing(budget)
            return "bash", {"command": command}, self._shell(output)
        if kind == "read":
            path, text, first, last = self._view(budget)
            if shell:
                if rng.random() < 0.5:
                    index = rng.randrange(len(self.repo.sources))
                    path = f"{self.repo.name}/{self.repo.modules[index]}.py"
                    return "bash", {"command": f"cat {path}"}, self._shell(self.repo.sources[index][0].take(0, budget))
                return "bash", {"command": f"cat -n {path} | sed -n '{first},{last}p'"}, self._shell(text)
            return "view_file", {"path": path, "start_line": first, "end_line": last}, text
        if kind == "grep":
            pattern = rng.choice((self.fn, self.fn2, rng.choice(NOUNS) + "_id", self.repo.error_class))
            output = self._grep(budget)
            if shell:
                return "bash", {"command": f"grep -rn '{pattern}' {self.repo.name} tests"}, self._shell(output)
            return "search", {"pattern": pattern, "path": "."}, output
        if kind == "test":
            failing = 0 if progress > 0.8 else rng.choice((0, 1, 1, 2, 3))
            output = self._pytest(budget, failing)
            target = rng.choice((self.testfile, self.test, ""))
            if shell:
                return (
                    "bash",
                    {"command": f"python -m pytest {target} -x -q".replace("  ", " ")},
                    self._shell(output, 1 if failing else 0),
                )
            return "run_tests", {"target": target}, output
        if kind == "repro":
            script = (
                f"from {self.repo.name}.{self.module} import {self.fn}\n\n"
                f"print({self.fn}(''))\nprint({self.fn}('  x  '))\n"
            )
            output = self._traceback(rng.randint(2, 6 + budget // 900))
            return (
                "bash",
                {"command": f"cat > /tmp/repro.py << 'EOF'\n{script}EOF\npython /tmp/repro.py"},
                self._shell(output, 1),
            )
        if kind == "edit":
            unit = rng.choice(self.repo.units).split("\n")
            i = rng.randrange(max(1, len(unit) - 2))
            old = "\n".join(unit[i : i + 2])
            new = old + "\n        if value is None:\n            return None"
            snippet, _, _ = self._numbered("\n".join(unit), min(budget, 1600))
            if shell:
                command = (
                    f"python - << 'EOF'\nfrom pathlib import Path\np = Path('{self.path}')\n"
                    f"s = p.read_text()\ns = s.replace({old!r}, {new!r}, 1)\np.write_text(s)\nEOF"
                )
                return "bash", {"command": command}, self._shell("")
            note = f"Edited {self.path}: 1 replacement. The edited region now reads:\n{snippet}"
            return "str_replace", {"path": self.path, "old_str": old, "new_str": new}, note
        return "bash", {"command": "git diff"}, self._shell(self._diff(budget))

    def final(self, run: Run) -> None:
        text = CODING_FINAL[self.lang].format(
            path=self.path,
            cause=self.cause,
            fn=self.fn,
            testfile=self.testfile,
            passed=self.passed + 1,
            skipped=self.rng.randint(0, 9),
            files=self.rng.randint(1, 3),
        )
        run.gpt(text, "All tests pass now and the diff is small; time to summarize.")


# ---- data analysis --------------------------------------------------------------------------

DATA_TASKS = {
    "en": (
        "I uploaded `data/{file}`. Can you give me an overview of the data quality and the main patterns? "
        "In particular I care about `{col}`.",
        "Using `data/{file}`, find what drives `{col}` and produce a short report with one chart. Please check "
        "for missing values and outliers first.",
        "Quick analysis request: compare `{col}` across groups in `data/{file}` and tell me if the differences "
        "are meaningful. A table is fine, no need for fancy plots.",
    ),
    "fr": ("J'ai déposé `data/{file}`. Peux-tu analyser la colonne `{col}` et me dire ce qui ressort ?",),
    "zh": (
        "我上传了 `data/{file}`。请分析 `{col}` 的分布和主要影响因素，先检查缺失值和异常值，最后给出简短结论。",
        "请用 `data/{file}` 比较不同分组的 `{col}`，判断差异是否显著，并生成一张图表。",
    ),
}
DATA_FOLLOWUPS = {
    "en": (
        "Can you also break it down by month?",
        "Ignore rows with status 'offline', they are test devices.",
        "Please save the final table as CSV too.",
        "Use the median rather than the mean, the data is skewed.",
    ),
    "fr": ("Peux-tu aussi faire la répartition par mois ?",),
    "zh": ("能否再按月份拆分一下？", "请使用中位数而不是平均值，数据是偏态的。"),
}
DATA_SAY = {
    "look": ("Let me load the file and look at the first rows.", "First, a look at the raw data."),
    "info": ("Checking column types and missing values.", "Let me check the schema and null counts."),
    "describe": ("Summary statistics for the numeric columns.", "Let me get descriptive statistics."),
    "group": ("Now let me aggregate by group.", "Grouping to compare segments."),
    "pivot": ("Let me pivot by day to see the trend.", "A day-by-group pivot next."),
    "error": ("Let me compute the breakdown.", "Computing the per-group figures."),
    "sql": ("The same data is in the warehouse; let me query it there.", "Let me cross-check with SQL."),
    "plot": ("Let me make the chart.", "Plotting the trend."),
    "dump": ("Let me look at the top rows sorted by the target.", "Printing the largest values to inspect outliers."),
}
DATA_REASONING = {
    "look": (
        "I should look at the raw rows before computing anything.",
        "The file may be large, so I'll start with the shape and the first rows.",
    ),
    "info": (
        "Some numeric columns may have been read as strings; I'll check dtypes and null counts.",
        "The null counts decide whether I can aggregate directly or must impute first.",
    ),
    "describe": (
        "The distribution may be right-skewed, so I want to compare the mean with the median.",
        "The column has some missing values, so the means could be biased; I should report counts too.",
    ),
    "group": (
        "The groups have very different sizes, so percentages are more comparable than raw counts.",
        "There might be duplicated ids; the counts per group will show it.",
    ),
    "pivot": (
        "Dates are stored as strings, so I need to parse them before grouping by day.",
        "A trend over time will show whether the differences between groups are stable.",
    ),
    "error": ("Now the per-group totals.", "Let me get the breakdown the user asked for."),
    "sql": ("The warehouse table should match the CSV; a cross-check will catch export problems.",),
    "plot": (
        "A bar chart of the medians is enough for the report.",
        "I have enough to answer the main question; a chart will make it easier to read.",
    ),
    "dump": ("A few extreme values dominate the totals; I'll look at them separately.",),
    "final": ("I have the numbers for every part of the question; time to write it up.",),
}
DATA_FINAL = {
    "en": "## Summary of `{file}`\n\n- {rows:,} rows, {cols} columns; {missing:.1f}% of `{col}` is missing.\n"
    "- The median `{col}` is {median:.2f}; the top group is **{group}** ({share:.1f}% above the overall median).\n"
    "- {outliers} extreme values (beyond 3 IQR) were excluded from the comparisons.\n"
    "- The month-over-month trend is {trend}.\n\nThe chart is saved at `output/{col}_by_group.png`.",
    "fr": "## Résumé de `{file}`\n\n- {rows:,} lignes, {cols} colonnes ; {missing:.1f} % de `{col}` manquant.\n"
    "- Médiane de `{col}` : {median:.2f} ; groupe principal : **{group}**.\n- Tendance mensuelle : {trend}.",
    "zh": "## `{file}` 分析结论\n\n- 共 {rows:,} 行、{cols} 列；`{col}` 缺失 {missing:.1f}%。\n"
    "- `{col}` 的中位数为 {median:.2f}，表现最好的分组是 **{group}**。\n- 剔除了 {outliers} 个极端值。\n"
    "- 月度趋势：{trend}。",
}
TRENDS = (
    "broadly flat",
    "rising in the second half of the year",
    "seasonal, with a peak in summer",
    "declining since the spring",
)


class DataAnalysis(Family):
    """Exploring a fictional table with a Python sandbox and a SQL tool."""

    name = "data_analysis"
    chars_per_token = (3.8, 3.14)

    def __init__(self, rng: random.Random, lang: str) -> None:
        super().__init__(rng, lang)
        self.data = rng.choice(pools().datasets)
        self.chars_per_token = (3.8, self.data.chars_per_token)
        self.col = rng.choice(self.data.columns[3:])
        self.group_col = self.data.columns[2]
        self.failed_column = ""
        self.queue = ["look", "info", "describe"] if rng.random() < 0.7 else ["look", "info"]
        self.last_kind = ""
        self.plotted = False
        self.errored = False
        categorical = [c for c, v in zip(self.data.columns, self.data.rows[0], strict=True) if _is_label(v)]
        self.other_group = rng.choice(categorical)
        self.intro = (
            "You are a data analysis assistant with a Python sandbox (pandas, numpy, matplotlib installed) and "
            "read-only access to the analytics warehouse. Work step by step: inspect the data before drawing "
            "conclusions, state assumptions, and keep answers short and quantitative. Files uploaded by the user "
            "are under `data/`; write outputs under `output/`."
        )

    @staticmethod
    def tool_schemas(variant: str = "") -> list[dict]:
        return [
            _schema(
                "python",
                "Execute Python code in a persistent Jupyter-like kernel; returns stdout and errors.",
                {"code": ("string", "Python source to run.")},
                ["code"],
            ),
            _schema(
                "list_files", "List files in a folder of the sandbox.", {"path": ("string", "Folder path.")}, ["path"]
            ),
            _schema(
                "sql",
                "Run a read-only SQL query on the warehouse; returns rows as JSON objects.",
                {"query": ("string", "A SELECT statement."), "limit": ("integer", "Maximum rows (default 200).")},
                ["query"],
            ),
        ]

    def task(self) -> str:
        return self.rng.choice(DATA_TASKS[self.lang]).format(file=self.data.file, col=self.col)

    def followup(self) -> str:
        return self.rng.choice(DATA_FOLLOWUPS[self.lang])

    def meta(self) -> dict[str, Any]:
        return {"dataset": self.data.file}

    def _table(self, budget: int, start: int | None = None) -> str:
        if start is None:
            start = self.rng.randrange(len(self.data.table_lines))
        return self.data.table_header + "\n" + self.data.table_lines.take(start, budget)

    def _next_kind(self, budget: int, progress: float) -> str:
        """Load, inspect and describe first; then varied analyses, one chart near the end."""
        if self.queue:
            return self.queue.pop(0)
        if self.failed_column:
            return "group"
        if progress > 0.75 and not self.plotted:
            self.plotted = True
            return "plot"
        kinds = ["pivot", "dump", "sql"] if budget >= 1500 else ["group", "sql", "describe"]
        if not self.errored and budget < 1500:
            kinds.append("error")
        kind = self.rng.choice([k for k in kinds if k != self.last_kind] or kinds)
        self.errored = self.errored or kind == "error"
        return kind

    def step(self, run: Run, budget: int, progress: float) -> None:
        rng = self.rng
        kind = self._next_kind(budget, progress)
        self.last_kind = kind
        calls = [self._call(kind, budget)]
        if kind == "describe" and rng.random() < 0.3:
            calls.append(("list_files", {"path": "data/"}, self._files()))
        thought = rng.choice(DATA_REASONING[kind])
        if self.failed_column and kind == "group":
            thought = (
                f"The KeyError says there is no `{self.failed_column}` column: the real name is "
                f"`{self.col}`. Retrying with the right name."
            )
            self.failed_column = ""
        elif kind == "error":
            self.failed_column = calls[0][1]["code"].split("['")[1].split("']")[0]
        run.act(rng.choice(DATA_SAY[kind]), calls, thought)

    def _files(self) -> str:
        rng = self.rng
        return "\n".join(f"{rng.randint(10, 90_000):>8} KB  data/{d.file}" for d in pools().datasets)

    def _call(self, kind: str, budget: int) -> Call:
        rng, d, f = self.rng, self.data, f"data/{self.data.file}"
        if kind == "look":
            table = self._table(budget, 0)
            shown = table.count("\n")
            code = f"import pandas as pd\n\ndf = pd.read_csv('{f}')\nprint(df.shape)\nprint(df.head({shown}))"
            return "python", {"code": code}, f"({d.total_rows}, {len(d.columns)})\n" + table
        if kind == "info":
            lines = [
                "<class 'pandas.core.frame.DataFrame'>",
                f"RangeIndex: {d.total_rows} entries, 0 to {d.total_rows - 1}",
                f"Data columns (total {len(d.columns)} columns):",
                " #   Column            Non-Null Count   Dtype  ",
                "---  ------            --------------   -----  ",
            ]
            for i, c in enumerate(d.columns):
                value = d.rows[0][i]
                dtype = "int64" if value.isdigit() else "float64" if value.replace(".", "", 1).isdigit() else "object"
                lines.append(f" {i:<3} {c:<17} {d.total_rows - rng.randint(0, 900):>8} non-null   {dtype}")
            lines.append(f"memory usage: {rng.uniform(1, 90):.1f}+ MB")
            code = "df.info()\nprint(df.isna().sum())"
            nulls = "\n".join(f"{c:<18}{rng.choice((0, 0, 0, rng.randint(1, 900)))}" for c in d.columns)
            return "python", {"code": code}, "\n".join(lines) + "\n" + nulls + "\ndtype: int64"
        if kind == "describe":
            cols = [c for c, v in zip(d.columns, d.rows[0], strict=True) if v.replace(".", "", 1).isdigit()][-5:]
            columns = []  # per column: count, mean, std, min, 25%, 50%, 75%, max
            for _ in cols:
                low, high = rng.uniform(0, 10), rng.uniform(20, 5000)
                q1, q2, q3 = sorted(rng.uniform(low, high / 3) for _ in range(3))
                count = float(d.total_rows - rng.randint(0, 900))
                columns.append((count, (q2 + q3) / 2, (q3 - q1) * 1.4, low, q1, q2, q3, high))
            out = ["        " + "".join(c.rjust(18) for c in cols)]
            for i, stat in enumerate(("count", "mean", "std", "min", "25%", "50%", "75%", "max")):
                out.append(f"{stat:<8}" + "".join(f"{values[i]:>18.6f}" for values in columns))
            return "python", {"code": "print(df.describe())"}, "\n".join(out)
        if kind == "group":
            code = (
                f"df['{self.col}'] = pd.to_numeric(df['{self.col}'], errors='coerce')\n"
                f"summary = df.groupby('{self.group_col}')['{self.col}'].agg(['count', 'mean', 'median', 'std'])\n"
                f"print(summary.sort_values('median', ascending=False).to_string())"
            )
            header = f"{self.group_col:<14}{'count':>10}{'mean':>14}{'median':>14}{'std':>14}"
            body = "\n".join(
                f"{g:<14}{rng.randint(900, 90000):>10}{rng.uniform(1, 900):>14.4f}"
                f"{rng.uniform(1, 900):>14.4f}{rng.uniform(1, 300):>14.4f}"
                for g in d.groups
            )
            return "python", {"code": code}, f"{header}\n{body}"
        if kind == "pivot":
            code = (
                f"df['date'] = pd.to_datetime(df['{d.columns[1]}']).dt.date\n"
                f"pivot = df.pivot_table(index='date', columns='{self.group_col}', values='{self.col}', "
                f"aggfunc='sum')\nprint(pivot.to_string())"
            )
            return "python", {"code": code}, d.pivot_lines.lines[0] + "\n" + d.pivot_lines.take(1, budget)
        if kind == "dump":
            table = self._table(budget)
            shown = table.count("\n")
            code = f"print(df.sort_values('{self.col}', ascending=False).head({shown}).to_string())"
            return "python", {"code": code}, table
        if kind == "error":
            wrong = self.col.title().replace("_", "")
            code = f"df.groupby('{self.group_col}')['{wrong}'].sum()"
            frames = "\n".join(
                f'  File "/opt/conda/lib/python3.11/site-packages/pandas/core/{m}.py", line {rng.randint(200, 9000)}, '
                f"in {fn}\n    {src}"
                for m, fn, src in (
                    ("groupby/generic", "__getitem__", "return super().__getitem__(key)"),
                    ("base", "__getitem__", 'raise KeyError(f"Column not found: {key}")'),
                )
            )
            content = (
                f"---------------------------------------------------------------------------\nKeyError"
                f"                                  Traceback (most recent call last)\nCell In[{rng.randint(3, 40)}], "
                f"line 1\n----> 1 {code}\n\n{frames}\nKeyError: 'Column not found: {wrong}'"
            )
            return "python", {"code": code}, content
        if kind == "sql":
            start = rng.randrange(len(d.rows))
            count = max(1, budget // (25 * len(d.columns)))
            rows = [dict(zip(d.columns, row, strict=True)) for row in (d.rows[start:] + d.rows[:start])[:count]]
            query = (
                f"SELECT *\nFROM analytics.{d.file.split('.')[0]}\nWHERE {self.other_group} = "
                f"'{rows[0][self.other_group]}'\nORDER BY {self.col} DESC\nLIMIT {count}"
            )
            return "sql", {"query": query, "limit": count}, rows
        code = (
            f"import matplotlib.pyplot as plt\n\nax = df.groupby('{self.group_col}')['{self.col}'].median().plot"
            f"(kind='bar', figsize=(10, 5))\nax.set_title('{self.col} by {self.group_col}')\n"
            f"plt.tight_layout()\nplt.savefig('output/{self.col}_by_group.png', dpi=120)"
        )
        return "python", {"code": code}, f"<Figure size 1000x500 with 1 Axes>\nSaved output/{self.col}_by_group.png"

    def final(self, run: Run) -> None:
        rng = self.rng
        text = DATA_FINAL[self.lang].format(
            file=self.data.file,
            rows=self.data.total_rows,
            cols=len(self.data.columns),
            col=self.col,
            missing=rng.uniform(0, 8),
            median=rng.uniform(1, 500),
            group=rng.choice(self.data.rows)[2],
            share=rng.uniform(2, 40),
            outliers=rng.randint(0, 60),
            trend=rng.choice(TRENDS),
        )
        run.gpt(text, rng.choice(DATA_REASONING["final"]))


# ---- web research ---------------------------------------------------------------------------

WEB_TASKS = {
    "en": (
        "Research {topic} for me. What does the evidence say, where do experts disagree, and what are the most "
        "reliable sources? Give me a short brief with links.",
        "I'm writing a policy memo on {topic}. Find recent reports and summarize the key numbers, with citations.",
        "What's the current state of {topic}? Please check several sources rather than relying on one.",
    ),
    "fr": (
        "Fais-moi une synthèse des études récentes sur le sujet suivant : {topic}. Cite tes sources, s'il te "
        "plaît, et indique les points de désaccord.",
    ),
    "zh": ("请帮我调研“{topic}”这个主题：目前的证据怎么说？专家在哪些方面有分歧？请附上来源链接。",),
}
WEB_FOLLOWUPS = {
    "en": (
        "Please prioritise sources from the last three years.",
        "Can you include at least one critical view?",
        "Keep the final brief under 300 words.",
    ),
    "fr": ("Merci de privilégier les sources des trois dernières années.",),
    "zh": ("请优先使用近三年的资料。",),
}
WEB_SAY = {
    "search": (
        "Let me search for recent sources.",
        "Searching for more specific studies.",
        "Let me look for critical perspectives as well.",
    ),
    "fetch": (
        "This result looks relevant; let me read it.",
        "Opening the report to check the numbers.",
        "Let me read the full article.",
    ),
    "note": ("Saving the key points so far.", "Let me record what I have found."),
}
WEB_REASONING = {
    "first": (
        "I'll start broad and narrow down once I know the main sources.",
        "A general search first, to see which organisations publish on this.",
    ),
    "search": (
        "The first results are mostly opinion pieces; I need primary studies with numbers.",
        "I have a few solid sources now; one more on the critical side would balance the brief.",
        "Two sources cite the same survey, so they are not independent evidence; I need another one.",
    ),
    "fetch": (
        "This result looks like a primary source, so it is worth reading in full.",
        "The snippet mentions concrete figures; I want to check them in context.",
        "The figures differ between sources, probably because of different baselines; let me check this one.",
    ),
    "failed": ("The last fetch failed; I'll try another source instead of retrying the same page.",),
    "note": ("I have enough for one section of the brief; saving notes before continuing.",),
    "final": ("I have enough independent sources to write the brief.",),
}
WEB_FINAL = {
    "en": "## Brief: {topic}\n\n{para}\n\n**Where sources disagree:** {para2}\n\n**Sources**\n{links}",
    "fr": "## Synthèse : {topic}\n\n{para}\n\n**Points de désaccord :** {para2}\n\n**Sources**\n{links}",
    "zh": "## 调研摘要：{topic}\n\n{para}\n\n**分歧点：** {para2}\n\n**来源**\n{links}",
}


class WebResearch(Family):
    """Answering a research question with search, page fetches and notes."""

    name = "web_research"
    chars_per_token = (4.25, 4.7)

    def __init__(self, rng: random.Random, lang: str) -> None:
        super().__init__(rng, lang)
        self.topic, self.terms = rng.choice(TOPICS)
        self.urls: list[str] = []
        self.last_failed = False
        self.intro = (
            "You are a research assistant with web access. Search broadly, read primary sources where possible, "
            "and cite every claim with a link. Distinguish clearly between established findings and contested "
            "ones. Pages may be long or fail to load; work around failures instead of retrying endlessly."
        )

    @staticmethod
    def tool_schemas(variant: str = "") -> list[dict]:
        return [
            _schema(
                "web_search",
                "Search the web and return result titles, URLs and snippets.",
                {"query": ("string", "Search query."), "max_results": ("integer", "Number of results (1-10).")},
                ["query"],
            ),
            _schema(
                "fetch_page",
                "Fetch a web page and return its main text as Markdown.",
                {"url": ("string", "Absolute URL.")},
                ["url"],
            ),
            _schema(
                "save_note",
                "Append a note to the research notebook.",
                {"title": ("string", "Short title."), "text": ("string", "Note body.")},
                ["title", "text"],
            ),
        ]

    def task(self) -> str:
        return self.rng.choice(WEB_TASKS[self.lang]).format(topic=self.topic)

    def followup(self) -> str:
        return self.rng.choice(WEB_FOLLOWUPS[self.lang])

    def meta(self) -> dict[str, Any]:
        return {"topic": self.topic}

    def _url(self) -> str:
        rng = self.rng
        slug = "-".join(rng.sample(self.terms[0].split() + self.topic.split(), 3)) + f"-{rng.randint(100, 9999)}"
        return f"https://{rng.choice(DOMAINS)}/{rng.randint(2016, 2024)}/{slug.replace(' ', '-')}"

    def _page(self, budget: int) -> str:
        rng, paragraphs = self.rng, pools().paragraphs[self.topic]
        parts = [
            "[Skip to content] | Home | Topics | Newsletter | Subscribe",
            "",
            "# " + rng.choice(pools().titles[self.topic]),
            "",
            f"*By staff writers · updated {rng.randint(1, 28)} {rng.choice(('March', 'June', 'October'))} "
            f"{rng.randint(2019, 2024)} · {rng.randint(4, 25)} min read*",
            "",
        ]
        used = 0
        while used < budget:
            if rng.random() < 0.25:
                parts += ["## " + rng.choice(SECTIONS), ""]
            para = rng.choice(paragraphs)
            parts += [para, ""]
            used += len(para) + 2
        parts += [
            "Related articles:",
            *(f"- {t}" for t in rng.sample(pools().titles[self.topic], 4)),
            "",
            "© Example Media. All rights reserved. | Privacy | Cookies | Contact",
        ]
        return "\n".join(parts)

    def step(self, run: Run, budget: int, progress: float) -> None:
        rng = self.rng
        if not self.urls or progress < 0.1:
            kind = "search"
        else:
            kind = rng.choices(("search", "fetch", "note"), weights=(2, 6, 1))[0]
        thought = rng.choice(WEB_REASONING["failed" if self.last_failed else "first" if not self.urls else kind])
        self.last_failed = False
        if kind == "search":
            query = f"{self.topic} {rng.choice(self.terms)} {rng.choice(('study', 'report', 'data', 'evidence', ''))}"
            results = []
            for _ in range(rng.randint(5, 10)):
                url = self._url()
                self.urls.append(url)
                snippet = rng.choice(pools().paragraphs[self.topic])[:220] + "…"
                results.append({"title": rng.choice(pools().titles[self.topic]), "url": url, "snippet": snippet})
            calls: list[Call] = [("web_search", {"query": query.strip(), "max_results": len(results)}, results)]
        elif kind == "fetch":
            count = rng.randint(2, 3) if rng.random() < 0.2 else 1
            calls = []
            for _ in range(count):
                url = rng.choice(self.urls)
                roll = rng.random()
                if roll < 0.08:
                    content = rng.choice(
                        (
                            "Error: HTTP 403 Forbidden",
                            "Error: request timed out after 20 s",
                            "Error: HTTP 404 Not Found",
                        )
                    )
                    self.last_failed = True
                elif roll < 0.14:
                    content = (
                        self._page(budget // count)[: max(2000, budget // count)] + "\n\n[truncated: page too long]"
                    )
                else:
                    content = self._page(budget // count)
                calls.append(("fetch_page", {"url": url}, content))
        else:
            text = " ".join(rng.sample(pools().paragraphs[self.topic], 2))
            calls = [("save_note", {"title": rng.choice(SECTIONS), "text": text}, "Saved.")]
        run.act(rng.choice(WEB_SAY[kind]), calls, thought)

    def final(self, run: Run) -> None:
        rng = self.rng
        paragraphs = pools().paragraphs[self.topic]
        urls = rng.sample(self.urls, min(4, len(self.urls))) if self.urls else [self._url()]
        text = WEB_FINAL[self.lang].format(
            topic=self.topic,
            para=rng.choice(paragraphs),
            para2=rng.choice(paragraphs),
            links="\n".join(f"{i}. {u}" for i, u in enumerate(urls, 1)),
        )
        run.gpt(text, rng.choice(WEB_REASONING["final"]))


# ---- customer service -----------------------------------------------------------------------

CITIES = ("Lisbon", "Chicago", "Osaka", "Toronto", "Denver", "Edinburgh", "Austin", "Seville", "Melbourne", "Montreal")
HOTEL_SUFFIXES = ("Downtown", "Riverside", "Airport", "Old Town", "Harbor", "Central Station")
ROOM_TYPES = ("standard_queen", "standard_twin", "deluxe_king", "junior_suite", "family_room")
FIRST_NAMES = _words(
    "Ana Ben Chloe Dev Elena Farid Grace Hiro Ines Jonas Kemi Liam Maya Noor Owen Priya Quinn Rosa Sami Tara"
)
LAST_NAMES = _words(
    "Alvarez Brooks Chen Dubois Eriksen Fischer Garcia Haddad Ito Jensen Kowalski Lopez Moreau Nakamura "
    "Okafor Patel Rossi Silva"
)
POLICY_SECTIONS = (
    "## Verifying the guest\n\nBefore looking up or changing any booking, confirm the guest's identity with the "
    "email address on file and either the booking number or the last four digits of the card used. Never reveal "
    "booking details to someone who cannot be verified. After three failed attempts, offer a transfer to a human "
    "colleague and do not continue.",
    "## Making changes\n\nBefore any action that changes a booking (creating it, changing dates or room type, "
    "cancelling, adding extras), list the exact details of the action and ask the guest to confirm with an explicit "
    "yes. Make one tool call at a time, and do not reply to the guest in the same message as a tool call.",
    "## Rates and refunds\n\nFlexible rates can be cancelled free of charge until 48 hours before check-in; after "
    "that the first night is charged. Saver rates are prepaid and non-refundable, but the dates can be changed once "
    "for a fee of $35 if the new stay is at the same hotel. Refunds go back to the original payment method and take "
    "5 to 10 business days. Gift cards are refunded as gift card balance.",
    "## Loyalty tiers\n\nMembers are Blue, Silver, Gold or Platinum. Gold and Platinum members may change dates once "
    "per booking without a fee, even on Saver rates. Platinum members get a late checkout until 2 pm when the hotel "
    "confirms availability. Tier benefits apply only to the member's own room, not to rooms booked for others.",
    "## Compensation\n\nOffer a goodwill voucher only when the hotel was at fault (room not ready at check-in, "
    "maintenance problem, billing error), and only after checking the booking. Vouchers are $50 per affected night "
    "for Blue and Silver members and $100 per affected night for Gold and Platinum members, up to $400 per booking. "
    "Never offer cash, and never offer compensation the guest did not ask for.",
    "## Payment methods\n\nA booking can be paid with up to one card and up to two gift cards. The card on file must "
    "be used for any balance. Do not accept card numbers in the chat: ask the guest to add new cards in their "
    "account, then refresh the profile.",
    "## Extras\n\nBreakfast costs $18 per adult per night and is free for children under 6. Parking is $25 per night "
    "where available. Extras can be added or removed until check-in and are charged at the hotel.",
    "## Groups and long stays\n\nBookings of more than 5 rooms or longer than 21 nights are handled by the groups "
    "desk. Do not create them yourself; transfer the guest with a summary of what they need.",
    "## Accessibility\n\nAccessible rooms exist in every hotel but are limited. When a guest mentions accessibility "
    "needs, search only rooms flagged `accessible: true`, and never move a guest out of an accessible room without "
    "asking.",
    "## Tone\n\nBe concise and friendly. Use the guest's name once verified. Do not speculate about things you cannot "
    "check with your tools, do not invent policies, and do not promise upgrades.",
)
# Each guest request is one action; its wording opens the run or comes up mid-conversation.
CS_REQUESTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "cancel_booking": (
        (
            "Hi, I need to cancel my stay in {city}. The booking number is {bid}.",
            "Hello, please cancel reservation {bid}. My plans changed.",
        ),
        ("Actually, could you cancel {bid} as well?", "One more: please cancel {bid}, I won't need it."),
    ),
    "change_dates": (
        (
            "Hello! I'd like to change the dates of my reservation {bid}. Something came up at work.",
            "Can I move booking {bid} to start on {date} instead?",
        ),
        ("Can you also move {bid} so that it starts on {date}?",),
    ),
    "add_extras": (
        ("hey, can you add breakfast to my booking {bid}? thx",),
        ("Could you add breakfast to {bid} too?", "Is breakfast included in {bid}? If not, please add it."),
    ),
    "issue_voucher": (
        (
            "My room in {city} was not ready when I arrived yesterday and I waited three hours. I'd like this to be "
            "acknowledged. Booking {bid}.",
        ),
        ("Also, during my stay on {bid} the heating was broken for two nights. Can something be done about that?",),
    ),
    "create_booking": (
        ("Hi there, I want to book a room in {city} for {nights} nights starting {date}, for two adults.",),
        ("Thanks! While I have you, could you find me a room in {city} from {date} for {nights} nights?",),
    ),
}
CS_LABELS = {
    "cancel_booking": "cancel the booking",
    "change_dates": "change the dates",
    "add_extras": "add breakfast",
    "issue_voucher": "issue a goodwill voucher",
    "create_booking": "create a new booking",
}
CS_DONE = {
    "cancel_booking": "cancelled the booking",
    "change_dates": "changed the dates",
    "add_extras": "added breakfast",
    "issue_voucher": "issued a goodwill voucher",
    "create_booking": "created the booking",
}
CS_REPLIES = {
    "verify": ("Sure, it's {email}.", "My email is {email}, and the card ends in {last4}.", "{email}"),
    "confirm": ("Yes, please go ahead.", "yes", "Yes, that's correct.", "Okay, do it."),
    "close": ("No, that's all. Thank you!", "That's everything, thanks for your help.", "nope, all good"),
}
CS_VERIFY = (
    "I can help with that. To verify your identity, could you give me the email address on the booking?",
    "Happy to help! First, please confirm the email address associated with your account.",
)
CS_REASONING = {
    "guest": ("The guest gave an email; I need their profile before touching any booking.",),
    "booking": (
        "The guest is verified; next I need the booking details to check the rate plan.",
        "I should look at the booking before proposing anything.",
    ),
    "search": ("Before searching availability I need the city, the dates and the number of guests; I have them.",),
    "confirm": (
        "I must list the action details and get an explicit yes before calling the tool.",
        "The rate plan and the tier decide the fee; I'll state it before asking for confirmation.",
    ),
    "act": ("The guest confirmed with a clear yes, so I can proceed.",),
}


class CustomerService(Family):
    """A hotel support agent following a written policy, with many short user turns.

    Each guest request runs as verify (once) → profile (once) → look up the booking or search
    rooms → list the details and ask for a yes → act → report and hear the next request.
    """

    name = "customer_service"
    chars_per_token = (3.9, 3.06)

    def __init__(self, rng: random.Random, lang: str) -> None:
        super().__init__(rng, lang)
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        self.first = first
        self.guest_id = f"{first}_{last}_{rng.randint(1000, 9999)}".lower()
        self.email = f"{first}.{last}{rng.randint(1, 99)}@example.com".lower()
        self.name_ = f"{first} {last}"
        self.tier = rng.choice(("Blue", "Silver", "Gold", "Platinum"))
        self.card = f"{rng.randint(0, 9999):04d}"
        self.bookings = [self._booking_id() for _ in range(rng.randint(2, 5))]
        self.action = rng.choice(tuple(CS_REQUESTS))
        self.current = self.bookings[0]
        self.record: dict[str, Any] = {}
        self.records: dict[str, dict] = {}  # so a booking looks the same every time it is fetched
        self.wanted = {"city": rng.choice(CITIES), "check_in": self._date(), "nights": rng.randint(2, 6)}
        self.phase = "verify"
        sections = [s for s in POLICY_SECTIONS if rng.random() < 0.85]
        today = f"2025-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}"
        self.intro = (
            f"# Larkspur Hotels: guest support policy\n\nThe current time is {today} 10:{rng.randint(10, 59)} "
            "local time. You are the virtual support agent for Larkspur Hotels. You help guests find rooms, "
            "make and change bookings, cancel stays, and resolve billing questions, following the rules "
            "below.\n\n" + "\n\n".join(sections)
        )

    def _booking_id(self) -> str:
        return "".join(self.rng.choices("ABCDEFGHJKLMNPQRSTUVWXYZ23456789", k=6))

    @staticmethod
    def tool_schemas(variant: str = "") -> list[dict]:
        guest = {"guest_id": ("string", "Guest id, such as 'ana_silva_1234'.")}
        booking = {"booking_id": ("string", "Six-character booking number.")}
        dates = {"check_in": ("string", "YYYY-MM-DD."), "check_out": ("string", "YYYY-MM-DD.")}
        return [
            _schema("find_guest", "Find a guest id by e-mail address.", {"email": ("string", "E-mail.")}, ["email"]),
            _schema("get_guest", "Get a guest profile: tier, payment methods and bookings.", guest, ["guest_id"]),
            _schema("get_booking", "Get the details of a booking.", booking, ["booking_id"]),
            _schema(
                "search_rooms",
                "Search available rooms in a city.",
                {"city": ("string", "City."), **dates, "guests": ("integer", "Number of adults.")},
                ["city", "check_in", "check_out"],
            ),
            _schema(
                "create_booking",
                "Book a room for a verified guest.",
                {
                    **guest,
                    "hotel_id": ("string", "Hotel id from search_rooms."),
                    "room_type": ("string", "Room type."),
                    **dates,
                    "rate_plan": ("string", "'flexible' or 'saver'."),
                    "payment": ("string", "Payment method id."),
                },
                ["guest_id", "hotel_id", "room_type", "check_in", "check_out", "rate_plan", "payment"],
            ),
            _schema(
                "cancel_booking",
                "Cancel a booking.",
                {**booking, "reason": ("string", "Reason.")},
                ["booking_id", "reason"],
            ),
            _schema(
                "change_dates",
                "Move a booking to new dates.",
                {**booking, **dates},
                ["booking_id", "check_in", "check_out"],
            ),
            _schema(
                "add_extras",
                "Add breakfast or parking to a booking.",
                {**booking, "extras": ("array", "Items such as 'breakfast' or 'parking'.")},
                ["booking_id", "extras"],
            ),
            _schema(
                "issue_voucher",
                "Issue a goodwill voucher.",
                {**guest, "amount": ("number", "USD."), "reason": ("string", "Why.")},
                ["guest_id", "amount", "reason"],
            ),
            _schema(
                "transfer_to_human",
                "Hand the conversation to a human agent.",
                {"summary": ("string", "What the guest needs.")},
                ["summary"],
            ),
        ]

    def opening(self, run: Run) -> None:
        if self.rng.random() < 0.4:
            run.gpt("Hi! Welcome to Larkspur Hotels support. How can I help you today?")

    def _request(self, opening: bool) -> str:
        rng = self.rng
        self.wanted = {"city": rng.choice(CITIES), "check_in": self._date(), "nights": rng.randint(2, 6)}
        template = rng.choice(CS_REQUESTS[self.action][0 if opening else 1])
        w = self.wanted
        return template.format(city=w["city"], bid=self.current, nights=w["nights"], date=w["check_in"])

    def task(self) -> str:
        return self._request(opening=True)

    def followup(self) -> str:
        """The guest's next request: pick a new action (and booking) first, then phrase it."""
        self.action = self.rng.choice(tuple(CS_REQUESTS))
        self.current = self.rng.choice(self.bookings)
        return self._request(opening=False)

    def meta(self) -> dict[str, Any]:
        return {"domain": "hotel", "tier": self.tier}

    def _date(self, after: str | None = None, nights: int = 0) -> str:
        if after:
            year, month, day = after.split("-")
            day_number = min(28, int(day) + nights)
            return f"{year}-{month}-{day_number:02d}"
        return f"2025-{self.rng.randint(1, 12):02d}-{self.rng.randint(1, 21):02d}"

    def _booking(self, booking_id: str) -> dict:
        if booking_id not in self.records:
            self.records[booking_id] = self._new_booking(booking_id)
        return dict(self.records[booking_id])

    def _new_booking(self, booking_id: str) -> dict:
        rng = self.rng
        nights = rng.randint(1, 7)
        rate = rng.choice((119, 145, 189, 230, 315))
        check_in = self._date()
        return {
            "booking_id": booking_id,
            "guest_id": self.guest_id,
            "hotel": f"Larkspur {rng.choice(CITIES)} {rng.choice(HOTEL_SUFFIXES)}",
            "room_type": rng.choice(ROOM_TYPES),
            "check_in": check_in,
            "check_out": self._date(check_in, nights),
            "nights": nights,
            "rate_plan": rng.choice(("flexible", "saver")),
            "guests": [{"name": self.name_, "adult": True}],
            "nightly_prices": [{"night": i + 1, "price": rate + rng.choice((0, 0, 10, 25))} for i in range(nights)],
            "extras": rng.choice(([], ["parking"], ["breakfast"])),
            "status": "confirmed",
            "payments": [{"method": "card", "last4": self.card, "amount": rate * nights}],
        }

    def _offers(self, city: str, budget: int) -> list[dict]:
        rng, offers = self.rng, []
        for _ in range(max(1, budget // 300)):
            offers.append(
                {
                    "hotel_id": f"LH-{rng.randint(100, 999)}",
                    "hotel": f"Larkspur {city} {rng.choice(HOTEL_SUFFIXES)}",
                    "room_type": rng.choice(ROOM_TYPES),
                    "accessible": rng.random() < 0.2,
                    "rates": {"flexible": rng.randint(120, 400), "saver": rng.randint(90, 300)},
                    "rooms_left": rng.randint(1, 9),
                    "distance_to_center_km": round(rng.uniform(0.2, 18), 1),
                }
            )
        return offers

    def _terms(self) -> str:
        """What the confirmation message says about money, from the booking, the rate and the tier."""
        r, action = self.record, self.action
        if action == "cancel_booking":
            if r.get("rate_plan") == "flexible":
                return f"Refund: ${r['payments'][0]['amount']} to the card ending {self.card} (5 to 10 business days)"
            return "Refund: none, this is a non-refundable Saver rate"
        if action == "change_dates":
            free = self.tier in ("Gold", "Platinum") or r.get("rate_plan") == "flexible"
            return f"New dates: {r['new_check_in']} to {r['new_check_out']}; " + (
                "no change fee applies" if free else "change fee: $35"
            )
        if action == "add_extras":
            return "Breakfast: $18 per adult per night, charged at the hotel"
        if action == "issue_voucher":
            return f"Voucher: ${r['voucher']} ({self.tier} member, {r['nights_affected']} night(s) affected)"
        return f"Total: ${r['total']} on the card ending {self.card}, {r['rate_plan']} rate"

    def step(self, run: Run, budget: int, progress: float) -> None:
        rng, phase = self.rng, self.phase
        thought = rng.choice(CS_REASONING.get(phase, CS_REASONING["act"]))
        if phase == "verify":
            run.gpt(rng.choice(CS_VERIFY))
            run.add("human", rng.choice(CS_REPLIES["verify"]).format(email=self.email, last4=self.card))
            self.phase = "guest"
        elif phase == "guest":
            run.act("", [("find_guest", {"email": self.email}, {"guest_id": self.guest_id})], thought)
            profile = {
                "guest_id": self.guest_id,
                "name": self.name_,
                "email": self.email,
                "tier": self.tier,
                "payment_methods": [
                    {"id": f"card_{self.card}", "type": "card", "last4": self.card},
                    {"id": "gift_card_1", "type": "gift_card", "balance": rng.randint(0, 300)},
                ],
                "bookings": self.bookings,
                "member_since": self._date(),
            }
            run.act("", [("get_guest", {"guest_id": self.guest_id}, profile)])
            self.phase = "lookup"
        elif phase == "lookup" and self.action == "create_booking":
            city, check_in, nights = self.wanted["city"], self.wanted["check_in"], self.wanted["nights"]
            args = {"city": city, "check_in": check_in, "check_out": self._date(check_in, nights), "guests": 2}
            offers = self._offers(city, budget)
            run.act("", [("search_rooms", args, offers)], CS_REASONING["search"][0])
            pick = rng.choice(offers)
            rate_plan = rng.choice(("flexible", "saver"))
            self.record = {**args, **pick, "rate_plan": rate_plan, "total": pick["rates"][rate_plan] * nights}
            self.phase = "confirm"
        elif phase == "lookup":
            self.record = self._booking(self.current)
            run.act("", [("get_booking", {"booking_id": self.current}, self.record)], thought)
            new_in = self._date()
            self.record.update(
                new_check_in=new_in,
                new_check_out=self._date(new_in, self.record["nights"]),
                voucher=rng.choice((50, 100, 200)),
                nights_affected=rng.randint(1, 2),
            )
            self.phase = "confirm"
        elif phase == "confirm":
            r = self.record
            lines = [
                f"- Booking: {self.current}" if self.action != "create_booking" else "- New booking",
                f"- Hotel: {r['hotel']}, {r['room_type'].replace('_', ' ')}",
                f"- Action: {CS_LABELS[self.action]}",
                f"- {self._terms()}",
            ]
            run.gpt(
                "Here is what I'm about to do:\n\n" + "\n".join(lines) + "\n\nShall I proceed? Please answer "
                "yes to confirm.",
                thought,
            )
            run.add("human", rng.choice(CS_REPLIES["confirm"]))
            self.phase = "act"
        else:
            self._act(run, thought)

    def _act(self, run: Run, thought: str) -> None:
        rng, r, tool = self.rng, self.record, self.action
        args: dict[str, Any]
        if tool == "cancel_booking":
            args = {
                "booking_id": self.current,
                "reason": rng.choice(("change of plans", "travel restrictions", "found another option")),
            }
        elif tool == "change_dates":
            args = {"booking_id": self.current, "check_in": r["new_check_in"], "check_out": r["new_check_out"]}
        elif tool == "add_extras":
            args = {"booking_id": self.current, "extras": ["breakfast"]}
        elif tool == "issue_voucher":
            args = {"guest_id": self.guest_id, "amount": r["voucher"], "reason": "hotel at fault: room not ready"}
        else:
            args = {
                "guest_id": self.guest_id,
                "hotel_id": r["hotel_id"],
                "room_type": r["room_type"],
                "check_in": r["check_in"],
                "check_out": r["check_out"],
                "rate_plan": r["rate_plan"],
                "payment": f"card_{self.card}",
            }
        if rng.random() < 0.1:
            result: dict[str, Any] = {
                "status": "error",
                "message": "Booking is locked by the hotel; ask the front desk.",
            }
            reply = (
                "I'm sorry, the hotel has locked this booking, so I can't change it from here. I can transfer you "
                "to a colleague at the front desk, or help with something else."
            )
        else:
            booking_id = self._booking_id() if tool == "create_booking" else self.current
            result = {"status": "ok", "booking_id": booking_id, "action": tool}
            reply = rng.choice(
                (
                    "Done: I {label} for {bid}. {terms}. Is there anything else I can help with?",
                    "All set ({bid}): I {label}. {terms}. Anything else?",
                )
            )
            reply = reply.format(label=CS_DONE[tool], bid=booking_id, terms=self._terms())
            if tool == "create_booking":
                self.bookings.append(booking_id)
            elif tool == "cancel_booking" and len(self.bookings) > 1:
                self.bookings.remove(booking_id)
        run.act("", [(tool, args, result)], thought)
        run.gpt(reply)
        run.add("human", self.followup())
        self.phase = "lookup"

    def final(self, run: Run) -> None:
        if run.turns[-1]["from"] == "human":
            run.gpt(
                "I've noted that request and passed it to the front desk team; they will e-mail you within 24 "
                "hours. Is there anything else I can help you with today?"
            )
        else:
            run.gpt(f"That's done, {self.first}. Is there anything else I can help you with?")
        run.add("human", self.rng.choice(CS_REPLIES["close"]))
        run.gpt(f"You're welcome, {self.first}! Have a lovely stay.")


@lru_cache(maxsize=64)
def _tools_json(kind: type[Family], variant: str, indent: int | None) -> str:
    return json.dumps(kind.tool_schemas(variant), indent=indent, ensure_ascii=False)


FAMILIES: dict[str, type[Family]] = {
    "coding": Coding,
    "data_analysis": DataAnalysis,
    "web_research": WebResearch,
    "customer_service": CustomerService,
}
MODELS = ("sim-agent-coder-34b", "sim-agent-general-70b", "sim-agent-mini-8b", "sim-agent-reasoner-32b")


# --------------------------------------------------------------------------------------------
# Putting a row together.
# --------------------------------------------------------------------------------------------


def generate_trajectory(index: int, seed: int = 0) -> dict[str, Any]:
    """Row `index` of the stream for `seed`: a pure function of both, independent of other rows."""
    rng = random.Random(f"trajectory:{seed}:{index}")
    size = size_class_of(seed, index)
    weights = FAMILY_WEIGHTS[size.name]
    family_name = rng.choices(list(weights), weights=list(weights.values()))[0]

    quirks: list[str] = []
    lang = "en"
    roll = rng.random()
    if family_name in ("coding", "web_research") and roll < 0.06:
        lang = "fr"
    elif family_name in ("coding", "data_analysis") and 0.06 <= roll < 0.12:
        lang = "zh"
    if lang != "en":
        quirks.append(f"non_english_{lang}")
    no_system = rng.random() < 0.04
    tools_field = no_system or rng.random() < 0.10
    ends_on_call = rng.random() < 0.04
    bad_call = rng.random() < 0.05
    followups = rng.choice((0, 0, 0, 0, 1, 1, 2)) if family_name != "customer_service" else 0
    if no_system:
        quirks.append("no_system_turn")
    if tools_field:
        quirks.append("tools_field")

    family = FAMILIES[family_name](rng, lang)
    run = Run(
        rng,
        lang=lang,
        chars_per_token=family.chars_per_token,
        reasoning=rng.random() < 0.4,
        thinks_aloud=rng.random() < 0.3,
        id_style=rng.randrange(3),
        merge_parallel=rng.choice((0.0, 0.5, 1.0)),
    )
    if not no_system:
        run.add("system", family.system_prompt(with_schemas=not tools_field))
    family.opening(run)
    run.add("human", family.task())

    low, high = size.tokens
    target = low + (high - low) * rng.random() ** size.skew
    steps = rng.randint(*size.steps)
    per_step = max(60.0, (target - run.tokens) / steps)
    bad_at = rng.uniform(0.2, 0.7) if bad_call else 2.0
    followup_at = sorted(rng.uniform(0.15, 0.85) for _ in range(followups))
    try:
        while run.tokens < target:
            progress = run.tokens / target
            if bad_at <= progress:
                run.break_next_call, bad_at = True, 2.0
                quirks.append("invalid_tool_call_json")
            if followup_at and followup_at[0] <= progress and run.turns[-1]["from"] == "tool":
                followup_at.pop(0)
                run.add("human", family.followup())
                run.ack_pending = True
                if "human_followup" not in quirks:
                    quirks.append("human_followup")
            budget_tokens = min(per_step * rng.lognormvariate(0, 0.6), target - run.tokens + 200, 9000.0)
            family.step(run, int(max(40.0, budget_tokens) * run.chars_per_token[1]), progress)
        if ends_on_call:
            run.stop_at_next_call = True
            quirks.append("ends_on_tool_call")
            for _ in range(8):  # customer service may need a turn or two before its next call
                family.step(run, int(per_step * run.chars_per_token[1]), 1.0)
        family.final(run)
    except _StopRun:
        pass

    row: dict[str, Any] = {
        "id": f"sample-{index:06d}",
        "conversations": run.turns,
        "source": "synthetic",
        "task_family": family_name,
        "model": rng.choice(MODELS),
        "language": lang,
        "outcome": "interrupted"
        if "ends_on_tool_call" in quirks
        else rng.choice(("completed", "completed", "max_steps")),
        "quirks": quirks,
        "meta": {"generator": "scripts/make_sample_data.py", "seed": seed, "size_class": size.name, **family.meta()},
    }
    if tools_field:
        row["tools"] = family.tools_json()
    return row


def generate_trajectories(n: int, seed: int = 0) -> Iterator[dict[str, Any]]:
    """Yield `n` synthetic trajectories; the same (n, seed) always gives the same rows."""
    for index in range(n):
        yield generate_trajectory(index, seed)


def dumps_row(row: dict[str, Any]) -> bytes:
    """One JSONL line (UTF-8, no ASCII escaping), the exact bytes of the committed file."""
    return orjson.dumps(row) + b"\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: write `--rows` rows for `--seed` to `--out` (a path, or - for stdout)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS, help=f"number of rows (default {DEFAULT_ROWS})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})")
    parser.add_argument(
        "--out",
        default=str(DEFAULT_OUT),
        help="output JSONL path, or - for stdout (default sample_data/agent_runs.jsonl)",
    )
    args = parser.parse_args(argv)
    if args.rows < 0:
        parser.error("--rows must be >= 0")
    if args.out == "-":
        try:
            write = sys.stdout.buffer.write
            for row in generate_trajectories(args.rows, args.seed):
                write(dumps_row(row))
            sys.stdout.buffer.flush()
        except BrokenPipeError:  # `| head`: the reader has seen enough, which is not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as handle:
        for row in generate_trajectories(args.rows, args.seed):
            handle.write(dumps_row(row))
    print(f"wrote {args.rows} rows to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
