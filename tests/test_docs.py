"""The documentation builds clean and its links lead somewhere (issue 32).

`mkdocs build --strict` turns every warning into an error, and mkdocs.yml's `validation` makes a
link to a missing page or anchor a warning; the CLI reference is generated from the click
definitions at each build (scripts/cli_reference.py, a mkdocs hook), and checked here to list
every command and option. The
README and ARCHITECTURE.md are read on GitHub, not built: their relative links are checked here,
with GitHub's anchors, which mkdocs.yml makes the site's anchors too (`pymdownx.slugs`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from pymdownx.slugs import slugify

from tests.conftest import REPO
from trajectory_compressor.cli import main
from trajectory_compressor.settings import walk
from trajectory_compressor.settings.cli_options import flag_names

# Meant to keep the module on one worker so the site is built once; pytest 9.2 with pytest-xdist 3.8.0
# groups nothing (tests/conftest.py), so each worker that runs one of these tests builds it.
pytestmark = pytest.mark.xdist_group("docs")

DOCS = REPO / "docs"
GITHUB_SLUG = slugify(case="lower")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`+[^`]*`+")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _prose(markdown: str) -> str:
    """The text outside fenced code blocks and code spans, where links are links."""
    return CODE_SPAN.sub("", FENCE.sub("", markdown))


def _heading_text(heading: str) -> str:
    """A heading as rendered: code spans' text, a link's text, no emphasis markers."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return text.replace("`", "").replace("**", "").replace("*", "")


def _slugs(markdown: str) -> list[str]:
    return [GITHUB_SLUG(_heading_text(heading), "-") for heading in HEADING.findall(FENCE.sub("", markdown))]


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors of a page: each heading's slug, a repeated one with -1, -2, ..."""
    seen: dict[str, int] = {}
    anchors = set()
    for slug in _slugs(markdown):
        anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for this module with warnings as errors."""
    site_dir = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about MkDocs 2.0: not a build warning
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return site_dir


def test_the_site_builds_with_warnings_as_errors(site: Path) -> None:
    pages = sorted(path.relative_to(DOCS).with_suffix("") for path in DOCS.glob("*.md"))
    for page in pages:
        built = site / "index.html" if page.name == "index" else site / page / "index.html"
        assert built.is_file(), f"docs/{page}.md was not built"


def _commands(command: click.Command, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], click.Command]]:
    found = [(path, command)]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            found += _commands(sub, (*path, name))
    return found


def test_the_cli_reference_lists_every_command_and_option(site: Path) -> None:
    page = (site / "cli" / "index.html").read_text(encoding="utf-8")
    missing = []
    for path, command in _commands(main, ("trajectory-compressor",)):
        if f'id="{GITHUB_SLUG(" ".join(path), "-")}"' not in page:
            missing.append(" ".join(path))
        for param in command.params:
            if isinstance(param, click.Option):
                missing += [f"{' '.join(path)} {opt}" for opt in param.opts + param.secondary_opts if opt not in page]
    assert not missing, f"not in the CLI reference: {missing}"


def test_headings_of_a_page_have_distinct_anchors() -> None:
    """GitHub numbers a repeated anchor `-1` and the site `_1`: with none repeated, both agree."""
    repeated = {}
    for page in sorted(DOCS.glob("*.md")):
        slugs = _slugs(page.read_text(encoding="utf-8"))
        if len(slugs) != len(set(slugs)):
            repeated[page.name] = sorted({slug for slug in slugs if slugs.count(slug) > 1})
    assert not repeated, repeated


@pytest.mark.parametrize("name", ["README.md", "ARCHITECTURE.md"])
def test_every_relative_link_leads_to_a_file_and_anchor_that_exist(name: str) -> None:
    source = REPO / name
    broken = []
    for target in LINK.findall(_prose(source.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        linked = (source.parent / file_part).resolve() if file_part else source
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked.read_text(encoding="utf-8")):
            broken.append(f"{target}: no such anchor in {linked.relative_to(REPO)}")
    assert not broken, f"{name}: {broken}"


def test_the_readme_links_every_page_of_the_docs() -> None:
    readme = _prose((REPO / "README.md").read_text(encoding="utf-8"))
    linked = {target.partition("#")[0] for target in LINK.findall(readme)}
    unlinked = [f"docs/{page.name}" for page in sorted(DOCS.glob("*.md")) if f"docs/{page.name}" not in linked]
    assert not unlinked, f"the README links no {unlinked}"


def test_every_file_the_docs_cite_exists() -> None:
    """`tests/...`, `scripts/...` and package paths (`summarize/redact.py`) named in the docs are real files."""
    package = REPO / "trajectory_compressor"
    folders = "|".join(["tests", "scripts", package.name, *(path.name for path in package.iterdir() if path.is_dir())])
    cited = re.compile(rf"`((?:{folders})/[\w/.-]+\.(?:py|sh|md))(?:::\w+)?`")
    missing = []
    for page in [REPO / "README.md", *sorted(DOCS.glob("*.md"))]:
        for path in cited.findall(page.read_text(encoding="utf-8")):
            if not (REPO / path).exists() and not (package / path).exists():
                missing.append(f"{page.relative_to(REPO)}: {path}")
    assert not missing, missing


def test_the_configuration_section_names_every_setting_that_has_no_yaml_key() -> None:
    """docs/usage.md says which flags no `--config` file can set; a setting added without a YAML key joins it."""
    usage = (DOCS / "usage.md").read_text(encoding="utf-8")
    section = usage.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    flagged = [(name, spec) for _, name, spec in walk() if not spec.yaml and spec.flag is not None]
    assert flagged
    unnamed = [
        flag_names(name, spec)[-1]
        for name, spec in flagged
        if not any(f"`{flag}`" in section for flag in flag_names(name, spec))
    ]
    assert not unnamed, f"docs/usage.md#configuration does not name {unnamed}"
