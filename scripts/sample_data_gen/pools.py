"""Every pre-built fragment (repositories, tables, web paragraphs), built once per process.

Why a fixed seed of its own: the pools are the same whatever seed the caller asks for, so rows
differ by what they pick from the pools, and building them costs once, not once per row.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

from .articles import ORGS, PLACES, SENTENCES, TITLES, TOPICS, render_sentence
from .repos import REPOS, Repo, build_repo
from .tables import DATASETS, Dataset, build_dataset


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
    repos = tuple(build_repo(rng, *spec) for spec in REPOS)
    datasets = tuple(build_dataset(rng, *spec) for spec in DATASETS)
    paragraphs, titles = {}, {}
    for topic, terms in TOPICS:
        paragraphs[topic] = tuple(
            " ".join(render_sentence(rng, topic, terms, rng.choice(SENTENCES)) for _ in range(rng.randint(3, 6)))
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
