"""The web research family's world: topics with their vocabulary, sources, and sentence templates.

Why apart: the paragraphs and titles of every fetched page are rendered from these once per
process (see pools.py); web_research.py only arranges them into pages and search results.
"""

from __future__ import annotations

import random

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


def render_sentence(rng: random.Random, topic: str, terms: tuple[str, ...], template: str) -> str:
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
