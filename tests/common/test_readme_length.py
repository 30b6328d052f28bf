"""The README stays what a newcomer reads in one sitting; the details live in docs/."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
MAX_LINES = 300


def test_the_readme_is_at_most_300_lines() -> None:
    lines = len(README.read_text().splitlines())
    assert 0 < lines <= MAX_LINES, f"README.md has {lines} lines: move details to docs/"
