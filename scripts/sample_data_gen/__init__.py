"""Synthetic agent trajectories in ShareGPT form, as a library (the CLI is scripts/make_sample_data.py).

Why a package: the generator is mostly text (code templates, tables, web prose, hotel policy) around
a little logic; split by what each part is, every module can be read on its own:

    fragments.py       word lists, ${placeholder} templates, LinePool (budget-sized slices of lines)
    code_templates.py  Python source the fictional repositories are rendered from
    repos.py           fictional repositories: sources, grep hits, test logs, tracebacks
    tables.py          fictional CSV tables, rendered as pandas-style text
    articles.py        web research topics, sources and sentence templates
    pools.py           all of the above, built once per process from a fixed seed
    run.py             one run under construction, where the tool-call quirks are injected
    tools.py           the tool schemas of each family, and how the system prompt lists them
    family.py          the contract of a task family
    coding.py, data_analysis.py, web_research.py, customer_service.py   the four families
    trajectory.py      one row: its size band, family, quirks and loop of steps

Output is a pure function of (n, seed): every choice comes from `random.Random` instances seeded
from the seed and the row index, so row i does not depend on n, and the committed sample file can
be checked against the generator byte for byte. Any change to the order of random calls changes it.
"""

from __future__ import annotations

from .family import Family
from .trajectory import (
    FAMILIES,
    FAMILY_WEIGHTS,
    MODELS,
    SIZE_CLASSES,
    SizeClass,
    dumps_row,
    generate_trajectories,
    generate_trajectory,
    size_class_of,
)

__all__ = [
    "FAMILIES",
    "FAMILY_WEIGHTS",
    "MODELS",
    "SIZE_CLASSES",
    "Family",
    "SizeClass",
    "dumps_row",
    "generate_trajectories",
    "generate_trajectory",
    "size_class_of",
]
