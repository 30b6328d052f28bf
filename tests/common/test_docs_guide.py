"""The architecture guide stays a guide and the decisions stay reachable: the guide is at
most 400 lines, the index links every decision file, and decision ids are unique. That
their links resolve is tests/common/test_docs_links.py's check."""

from __future__ import annotations

import re
from pathlib import Path

from tests.common.test_docs_links import links

ROOT = Path(__file__).resolve().parents[2]
DECISIONS = ROOT / "docs" / "decisions"
GUIDE = ROOT / "docs" / "architecture.md"
GUIDE_MAX_LINES = 400

_DECISION_ID = re.compile(r"^## ([A-Z]+[0-9]+)\. ", re.MULTILINE)


def test_the_guide_is_at_most_400_lines() -> None:
    lines = len(GUIDE.read_text().splitlines())
    assert lines <= GUIDE_MAX_LINES, f"docs/architecture.md has {lines} lines"


def test_the_index_links_every_decision_file() -> None:
    index = DECISIONS / "README.md"
    linked = {(index.parent / t.split("#")[0]).resolve() for t in links(index)}
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
