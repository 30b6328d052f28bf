"""`proxyfleet entries ls|add|rm PROVIDER` (an admin token): proxies added at run time to a
provider that lists the proxies it is given. Passwords are never printed: the API masks
them, and a refused line is named by its position, not its text."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from proxyfleet.cli import exitcodes, fmt, render
from proxyfleet.cli.render import Format
from proxyfleet.cli.state import state_of
from proxyfleet.client import ProviderEntry, ProxyfleetError, TransportError

app = typer.Typer(
    help="Proxies you bring: add them to a provider that lists them, list and remove them "
    "(an admin token)."
)

Output = Annotated[Format, typer.Option("--output", "-o", help="table or json.")]
Provider = Annotated[str, typer.Argument(metavar="PROVIDER", help="A provider name.")]
COLUMNS = ("ID", "URL", "ZONE", "NAME", "LABELS")


def _row(e: ProviderEntry) -> list[str]:
    labels = ", ".join(f"{k}={v}" for k, v in e.labels.items())
    return [e.id, e.url, e.zone or "-", e.name or "-", labels or "-"]


def lines_of(given: list[str], stdin: str | None) -> list[str]:
    """The lines to add: the arguments, `-` standing for stdin's lines (blank ones and
    `#` comments skipped)."""
    out: list[str] = []
    for arg in given:
        if arg != "-":
            out.append(arg)
            continue
        for raw in (stdin or "").splitlines():
            text = raw.strip()
            if text and not text.startswith("#"):
                out.append(text)
    return out


@app.command("ls")
def list_(ctx: typer.Context, provider: Provider, output: Output = Format.table) -> None:
    """List the proxies added to PROVIDER at run time, passwords masked."""
    with state_of(ctx).client() as client:
        found = client.provider_entries(provider)
    render.items(output, COLUMNS, found, _row)


@app.command()
def add(
    ctx: typer.Context,
    provider: Provider,
    urls: Annotated[
        list[str],
        typer.Argument(
            metavar="URL...",
            help="Proxy URLs, or lines as the provider's files take them; `-` reads them "
            "from stdin, one a line (keeps passwords out of the shell's history).",
        ),
    ],
    zone: Annotated[str | None, typer.Option(help="One of the provider's zones.")] = None,
    label: Annotated[
        list[str] | None, typer.Option("--label", "-l", help="KEY=VALUE (repeatable).")
    ] = None,
    name: Annotated[str | None, typer.Option(help="A name for people.")] = None,
    output: Output = Format.table,
) -> None:
    """Add proxies to PROVIDER (an entry there already is left as it is). A refused one is
    named by its position on stderr and the rest are still added; the exit code is that
    of the first failure."""
    try:
        labels = fmt.pairs(label, "--label")
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    lines = lines_of(urls, sys.stdin.read() if "-" in urls else None)
    added: list[ProviderEntry] = []
    failed: list[ProxyfleetError] = []
    with state_of(ctx).client() as client:
        for n, line in enumerate(lines, 1):
            try:
                added.append(
                    client.add_provider_entry(
                        provider, line, zone=zone, labels=labels or None, name=name
                    )
                )
            except TransportError:
                raise  # the API is away: every later line would fail the same way
            except ProxyfleetError as e:
                render.note(f"proxyfleet: entry {n}: {exitcodes.message(e)}")
                failed.append(e)
    render.items(output, COLUMNS, added, _row)
    if failed:
        raise typer.Exit(exitcodes.for_error(failed[0]))


@app.command("rm")
def remove(
    ctx: typer.Context,
    provider: Provider,
    entry_ids: Annotated[list[str], typer.Argument(metavar="ID...")],
) -> None:
    """Remove entries: their proxies drain (leases run to their end), then are
    forgotten. One that cannot be removed is named on stderr, the rest still are."""
    failed: list[ProxyfleetError] = []
    with state_of(ctx).client() as client:
        for entry_id in entry_ids:
            try:
                client.remove_provider_entry(provider, entry_id)
            except TransportError:
                raise
            except ProxyfleetError as e:
                render.note(f"proxyfleet: {entry_id}: {exitcodes.message(e)}")
                failed.append(e)
                continue
            render.line(f"entry/{entry_id} removed: its proxy drains, then is forgotten")
    if failed:
        raise typer.Exit(exitcodes.for_error(failed[0]))
