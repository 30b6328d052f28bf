"""The architecture guide stays a guide, and the decisions stay reachable: the guide is
at most 400 lines, the index links every decision file, decision ids are unique, and every
relative link in the guide, the known gaps and the decisions resolves (anchors included)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
DECISIONS = DOCS / "decisions"
GUIDE = DOCS / "architecture.md"
GUIDE_MAX_LINES = 400

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_CODE_BLOCK = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
_HEADING = re.compile(r"^#{1,6} +(.+?) *$", re.MULTILINE)
_DECISION_ID = re.compile(r"^## ([A-Z]+[0-9]+)\. ", re.MULTILINE)


def _linked_docs() -> list[Path]:
    return [GUIDE, DOCS / "known-gaps.md", *sorted(DECISIONS.glob("*.md"))]


def _prose(path: Path) -> str:
    return _CODE_BLOCK.sub("", path.read_text())


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    """The anchors of `path`'s headings, and "" for a link that names none."""
    return {"", *(_slug(h) for h in _HEADING.findall(_prose(path)))}


def _relative_links(path: Path) -> list[str]:
    return [t for t in _LINK.findall(_prose(path)) if not re.match(r"[a-z]+:", t)]


def test_the_guide_is_at_most_400_lines() -> None:
    lines = len(GUIDE.read_text().splitlines())
    assert lines <= GUIDE_MAX_LINES, f"docs/architecture.md has {lines} lines"


def test_the_index_links_every_decision_file() -> None:
    index = DECISIONS / "README.md"
    linked = {(index.parent / t.split("#")[0]).resolve() for t in _relative_links(index)}
    files = {p.resolve() for p in DECISIONS.glob("*.md") if p.name != "README.md"}
    assert files, "no decision files"
    assert sorted(p.name for p in files - linked) == []


def test_decision_ids_are_unique() -> None:
    seen: dict[str, str] = {}
    for path in sorted(DECISIONS.glob("*.md")):
        for decision in _DECISION_ID.findall(path.read_text()):
            assert decision not in seen, f"{decision} in {path.name} and {seen[decision]}"
            seen[decision] = path.name
    assert len(seen) > 100


@pytest.mark.parametrize("doc", _linked_docs(), ids=lambda p: p.name)
def test_relative_links_resolve(doc: Path) -> None:
    broken = []
    for target in _relative_links(doc):
        file_part, _, anchor = target.partition("#")
        path = (doc.parent / file_part).resolve() if file_part else doc
        if not path.exists() or (path.suffix == ".md" and anchor not in _anchors(path)):
            broken.append(target)
    assert broken == []
