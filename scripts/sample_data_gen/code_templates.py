"""Python source templates the fictional repositories are rendered from (pure text, no logic).

Why apart: these are a few hundred lines of code-shaped strings; next to the logic that renders
them (repos.py) they would bury it. `${v}`, `${n}`, `${m}`, `${C}`, `${E}`, `${k}`, `${k2}` are
filled with a verb, nouns, a class name, the repository's error class and sizes.
"""

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
