"""Output: tables for people (rich), JSON for scripts (`-o json`, the API's own fields)."""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import msgspec
from rich import box
from rich.console import Console
from rich.table import Table

T = TypeVar("T")


class Format(enum.StrEnum):
    table = "table"
    json = "json"


def _console() -> Console:
    # Piped output is not cut to 80 columns: `grep` sees whole lines.
    wide = None if sys.stdout.isatty() else 1000
    return Console(width=wide, highlight=False, soft_wrap=False)


def emit_json(value: Any) -> None:
    """Indented JSON of structs, lists and dicts, on stdout."""
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(value), indent=2).decode() + "\n")
    sys.stdout.flush()


def emit_json_line(value: Any) -> None:
    """One compact JSON document per line (a stream: `proxyfleet events -o json`)."""
    sys.stdout.write(msgspec.json.encode(value).decode() + "\n")
    sys.stdout.flush()


def table(
    columns: Sequence[str], rows: Sequence[Sequence[str]], *, title: str | None = None
) -> None:
    t = Table(*columns, box=box.SIMPLE_HEAD, title=title, title_justify="left", pad_edge=False)
    for row in rows:
        t.add_row(*row)
    _console().print(t)


def items(
    output: Format, columns: Sequence[str], found: Sequence[T], row: Callable[[T], Sequence[str]]
) -> None:
    """Structs as a JSON list, or as a table of one row each."""
    if output is Format.json:
        emit_json(found)
    else:
        table(columns, [row(x) for x in found])


def line(text: str) -> None:
    """A plain line on stdout, flushed (a live stream reads it at once)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def note(text: str) -> None:
    """A line for the person on stderr (progress, warnings): never mixed into JSON."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
