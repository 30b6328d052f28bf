"""`proxyfleet proxies ls|get|create|rm` (an admin token)."""

from __future__ import annotations

from itertools import islice
from typing import Annotated

import typer

from proxyfleet.cli import exitcodes, fmt, render
from proxyfleet.cli.render import Format
from proxyfleet.cli.state import state_of
from proxyfleet.client import Proxy, ProxyfleetError, TransportError

app = typer.Typer(
    help="Proxies: list, show, create, delete, quarantine and release (an admin token)."
)

Output = Annotated[Format, typer.Option("--output", "-o", help="table or json.")]
COLUMNS = (
    "ID", "PROVIDER", "ZONE", "POOL", "PHASE", "LEASED", "AGE", "LATENCY", "EGRESS", "REASON",
)  # fmt: skip


def _row(p: Proxy) -> list[str]:
    latency = f"{p.latency_ms:.0f} ms" if p.last_probe_at else "-"
    leased = f"yes (epoch {p.epoch})" if p.leased else "no"
    return [
        p.id,
        p.provider,
        p.zone,
        p.pool or "-",
        _phase(p),
        leased,
        fmt.age(p.created_at),
        latency,
        egress(p),
        p.withheld_reason if p.withheld else p.reason,
    ]


def egress(p: Proxy) -> str:
    """Its exit address, with `(xN)` when N proxies (itself included) share it."""
    if not p.egress_ip:
        return "-"
    return f"{p.egress_ip} (x{p.egress_shared})" if p.egress_shared > 1 else p.egress_ip


def _phase(p: Proxy) -> str:
    """The phase, and `QUARANTINED` or `DRAINING` when it is withheld from grants."""
    return f"{p.phase} {p.withheld.upper()}" if p.withheld else p.phase


@app.command("ls")
def list_(
    ctx: typer.Context,
    provider: Annotated[str | None, typer.Option(help="Only this provider's.")] = None,
    zone: Annotated[str | None, typer.Option(help="Only this zone's.")] = None,
    phase: Annotated[str | None, typer.Option(help="Only proxies in this phase.")] = None,
    label: Annotated[
        list[str] | None, typer.Option("--label", "-l", help="KEY=VALUE (repeatable).")
    ] = None,
    pool: Annotated[str | None, typer.Option(help="Only this pool's members.")] = None,
    include_deleted: Annotated[bool, typer.Option(help="Deleted proxies too.")] = False,
    limit: Annotated[int | None, typer.Option(help="At most this many.", min=1)] = None,
    output: Output = Format.table,
) -> None:
    """List proxies (every page), in creation order; DRAINING or QUARANTINED after the
    phase of one withheld from grants."""
    labels = _pairs(label, "--label")
    with state_of(ctx).client() as client:
        pages = client.iter_proxies(
            provider=provider,
            zone=zone,
            phase=phase,
            labels=labels,
            pool=pool,
            include_deleted=include_deleted,
        )
        found: list[Proxy] = list(islice(pages, limit))  # limit None: every page
    render.items(output, COLUMNS, found, _row)


@app.command()
def get(
    ctx: typer.Context,
    proxy_id: Annotated[str, typer.Argument(metavar="ID")],
    output: Output = Format.table,
) -> None:
    """Show one proxy."""
    with state_of(ctx).client() as client:
        proxy = client.get_proxy(proxy_id)
    if output is Format.json:
        render.emit_json(proxy)
        return
    rows = [
        ["id", proxy.id],
        ["provider", proxy.provider],
        ["zone", proxy.zone],
        ["phase", proxy.phase + (f" ({proxy.reason})" if proxy.reason else "")],
        ["pool", proxy.pool or "-"],
        ["withheld", _withheld(proxy)],
        ["address", f"{proxy.host}:{proxy.port}" if proxy.host else "-"],
        ["leased", f"yes: {proxy.lease_id} (epoch {proxy.epoch})" if proxy.leased else "no"],
        ["labels", ", ".join(f"{k}={v}" for k, v in proxy.labels.items()) or "-"],
        ["age", fmt.age(proxy.created_at)],
        ["last probe", _probe(proxy)],
        ["egress ip", egress(proxy)],
    ]
    render.table(("FIELD", "VALUE"), rows)


def _withheld(p: Proxy) -> str:
    if not p.withheld:
        return "no"
    return f"{p.withheld} {fmt.age(p.withheld_at)} ago: {p.withheld_reason or '-'}"


def _probe(p: Proxy) -> str:
    if not p.last_probe_at:
        return "none yet"
    result = f"{p.latency_ms:.0f} ms" if not p.last_probe_error else p.last_probe_error
    return f"{fmt.age(p.last_probe_at)} ago: {result}"


@app.command()
def create(
    ctx: typer.Context,
    provider: Annotated[str, typer.Option(help="A provider name (`proxyfleet status`).")],
    count: Annotated[int, typer.Option("--count", "-n", min=1, max=1000)] = 1,
    zone: Annotated[str | None, typer.Option(help="Default: spread by the API.")] = None,
    label: Annotated[
        list[str] | None, typer.Option("--label", "-l", help="KEY=VALUE (repeatable).")
    ] = None,
    placement: Annotated[
        list[str] | None, typer.Option(help="KEY=VALUE, provider-specific (repeatable).")
    ] = None,
    idempotency_key: Annotated[
        str | None, typer.Option(help="Retrying with the same key creates nothing more.")
    ] = None,
    output: Output = Format.table,
) -> None:
    """Create proxies (they turn ready after their first good probe)."""
    labels = _pairs(label, "--label")
    places = _pairs(placement, "--placement")
    with state_of(ctx).client() as client:
        made = client.create_proxies(
            provider,
            count=count,
            zone=zone,
            labels=labels or None,
            placement=places or None,
            idempotency_key=idempotency_key,
        )
    render.items(output, COLUMNS, made, _row)


@app.command("rm")
def remove(
    ctx: typer.Context,
    proxy_ids: Annotated[list[str], typer.Argument(metavar="ID...")],
    force: Annotated[bool, typer.Option(help="Even a leased one (its lease is revoked).")] = False,
    output: Output = Format.table,
) -> None:
    """Delete proxies (a leased one is a conflict unless --force). One that cannot be
    deleted is named on stderr and the rest are still deleted; the exit code is that of
    the first failure."""
    gone: list[Proxy] = []
    failed: list[ProxyfleetError] = []
    with state_of(ctx).client() as client:
        for pid in proxy_ids:
            try:
                gone.append(client.delete_proxy(pid, force=force))
            except TransportError:
                raise  # the API is away: every later id would fail the same way
            except ProxyfleetError as e:
                render.note(f"proxyfleet: {pid}: {exitcodes.message(e)}")
                failed.append(e)
    render.items(output, COLUMNS, gone, _row)
    if failed:
        raise typer.Exit(exitcodes.for_error(failed[0]))


@app.command()
def quarantine(
    ctx: typer.Context,
    proxy_id: Annotated[str, typer.Argument(metavar="ID")],
    reason: Annotated[str, typer.Option(help="Why (up to 200 characters).")],
    output: Output = Format.table,
) -> None:
    """Set a proxy aside for inspection: never granted (a lease it has runs on), never
    deleted by its pool, which replaces it. `proxyfleet proxies release ID` undoes it."""
    with state_of(ctx).client() as client:
        proxy = client.quarantine(proxy_id, reason)
    render.items(output, COLUMNS, [proxy], _row)


@app.command()
def release(
    ctx: typer.Context,
    proxy_id: Annotated[str, typer.Argument(metavar="ID")],
    output: Output = Format.table,
) -> None:
    """Put a quarantined proxy back in rotation."""
    with state_of(ctx).client() as client:
        proxy = client.unquarantine(proxy_id)
    render.items(output, COLUMNS, [proxy], _row)


def _pairs(values: list[str] | None, what: str) -> dict[str, str]:
    try:
        return fmt.pairs(values, what)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
