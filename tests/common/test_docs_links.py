"""Every relative link of the README, the guides in docs/ and the decisions in
docs/decisions/ leads somewhere: the file exists, and an anchor into a Markdown file names
one of its headings."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs" / "decisions").glob("*.md")),
]
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)


def _prose(text: str) -> str:
    """The text outside code, where a `](` is a link and not code."""
    return _CODE.sub("", _FENCE.sub("", text))


def anchors(doc: Path) -> set[str]:
    """The anchors GitHub gives a file's headings: lower case, punctuation dropped,
    spaces as hyphens."""
    found = set()
    for heading in _HEADING.findall(_FENCE.sub("", doc.read_text())):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def links(doc: Path) -> list[str]:
    return [
        target
        for target in _LINK.findall(_prose(doc.read_text()))
        if not re.match(r"[a-z]+:", target)  # http:, https:, mailto: lead elsewhere
    ]


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: str(doc.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = []
    for target in links(doc):
        path, _, anchor = unquote(target).partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        if not dest.exists() or (dest.suffix == ".md" and anchor not in anchors(dest) | {""}):
            broken.append(target)
    assert not broken, f"{doc.relative_to(ROOT)}: no such file or heading: {broken}"


def test_links_are_found_and_anchors_are_github_s() -> None:
    readme = ROOT / "README.md"
    assert "docs/configuration.md" in links(readme)
    assert "the-providers-file" in anchors(ROOT / "docs" / "configuration.md")
    assert "the-proxyfleet-command" in anchors(ROOT / "docs" / "cli.md")
