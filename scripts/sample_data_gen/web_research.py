"""The web research family: answering a question with searches, page fetches and notes.

Why its own module: its tool turns are long prose pages (with failed fetches and truncated
pages among them), a different shape from code and tables.
"""

from __future__ import annotations

import random
from typing import Any

from .articles import DOMAINS, SECTIONS, TOPICS
from .family import Family
from .pools import pools
from .run import Call, Run
from .tools import web_research_tools

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

    tool_schemas = staticmethod(web_research_tools)

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
