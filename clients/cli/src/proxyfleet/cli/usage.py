"""`proxyfleet usage`: a client's bytes and connections through the gateways per UTC day."""

from __future__ import annotations

from typing import Annotated

import typer

from proxyfleet.cli import render
from proxyfleet.cli.render import Format
from proxyfleet.cli.state import state_of

UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def size(count: int) -> str:
    """Bytes as a table reads them: 1536 -> 1.5 KiB."""
    value, unit = float(count), 0
    while value >= 1024 and unit < len(UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{count} B" if unit == 0 else f"{value:.1f} {UNITS[unit]}"


def usage(
    ctx: typer.Context,
    client: Annotated[
        str | None,
        typer.Option(help="The client token's name (default: yours; others: an admin token)."),
    ] = None,
    days: Annotated[int, typer.Option(help="Days up to today (UTC).", min=1, max=400)] = 7,
    output: Annotated[Format, typer.Option("--output", "-o", help="table or json.")] = Format.table,
) -> None:
    """A client's bytes (up: to the upstreams; down: back) and connections through the
    gateways, per UTC day, and the total."""
    with state_of(ctx).client() as api:
        got = api.usage(client, days)
    if output is Format.json:
        render.emit_json(got)
        return
    rows = [[d.day, size(d.bytes_up), size(d.bytes_down), str(d.connections)] for d in got.days]
    rows.append(["total", size(got.bytes_up), size(got.bytes_down), str(got.connections)])
    render.table(("DAY", "UP", "DOWN", "CONNECTIONS"), rows)
    render.line(f"client: {got.client}")
