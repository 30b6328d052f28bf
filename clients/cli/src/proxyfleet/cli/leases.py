"""`proxyfleet leases ls|get|grant|renew|report|release`: leases one call at a time (for
scripts; `proxyfleet lease -- CMD` holds one around a command)."""

from __future__ import annotations

import enum
from itertools import islice
from typing import Annotated

import typer

from proxyfleet.cli import fmt, render
from proxyfleet.cli.render import Format
from proxyfleet.cli.state import state_of
from proxyfleet.client import Client, LeaseState

app = typer.Typer(help="Leases: list, show, grant, renew, report, release.")

Output = Annotated[Format, typer.Option("--output", "-o", help="table or json.")]
LeaseId = Annotated[str, typer.Argument(metavar="LEASE_ID")]
Epoch = Annotated[
    int | None,
    typer.Option(help="The grant's epoch (default: the lease's, read from the API first)."),
]
COLUMNS = ("LEASE", "PROXY", "EPOCH", "STATE", "HOLDER", "TARGET", "CLIENT", "EXPIRES")
Ttl = Annotated[float | None, typer.Option(help="Seconds (default: the API's).", min=0.001)]
Wait = Annotated[float, typer.Option(help="Seconds to wait while no proxy is free (503).", min=0)]


class Distinct(enum.StrEnum):
    """What `grant --distinct` keeps apart from your other active leases."""

    subnet = "subnet"
    ip = "ip"


def row(lease: LeaseState) -> list[str]:
    expires = fmt.until(lease.expires_at) if lease.state == "active" else "-"
    state = lease.state + (f" ({lease.reason})" if lease.reason else "")
    return [
        lease.lease_id,
        lease.proxy_id,
        str(lease.epoch),
        state,
        lease.holder,
        lease.target,
        lease.client,
        expires,
    ]


@app.command("ls")
def list_(
    ctx: typer.Context,
    proxy: Annotated[str | None, typer.Option(help="Only this proxy's lease.")] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many.", min=1)] = None,
    output: Output = Format.table,
) -> None:
    """Active leases, soonest expiry first (a client token sees its own)."""
    with state_of(ctx).client() as client:
        found: list[LeaseState] = list(islice(client.iter_leases(proxy_id=proxy), limit))
    render.items(output, COLUMNS, found, row)


@app.command()
def get(ctx: typer.Context, lease_id: LeaseId, output: Output = Format.table) -> None:
    """Show one lease (active, released, expired or revoked, with why)."""
    with state_of(ctx).client() as client:
        lease = client.get_lease(lease_id)
    if output is Format.json:
        render.emit_json(lease)
    else:
        render.table(COLUMNS, [row(lease)])


@app.command()
def grant(
    ctx: typer.Context,
    ttl: Ttl = None,
    target: Annotated[str | None, typer.Option(help="Destination domain.")] = None,
    holder: Annotated[str | None, typer.Option(help="Who holds it (free text).")] = None,
    proxy: Annotated[str | None, typer.Option(help="This proxy and no other.")] = None,
    provider: Annotated[str | None, typer.Option()] = None,
    zone: Annotated[str | None, typer.Option()] = None,
    label: Annotated[
        list[str] | None, typer.Option("--label", "-l", help="KEY=VALUE (repeatable).")
    ] = None,
    pool: Annotated[str | None, typer.Option(help="A member of this pool.")] = None,
    distinct: Annotated[
        Distinct | None,
        typer.Option(
            help="An exit network (subnet) or address (ip) none of your other leases has."
        ),
    ] = None,
    wait: Wait = 0.0,
    output: Output = Format.json,
) -> None:
    """Grant a lease and print it with its proxy URL.

    JSON by default: it is for scripts (the URL carries the proxy's password)."""
    try:
        labels = fmt.pairs(label, "--label")
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    with state_of(ctx).client(max_wait=wait) as client:
        lease = client.grant_lease(
            ttl=ttl,
            target=target,
            holder=holder,
            proxy_id=proxy,
            provider=provider,
            zone=zone,
            labels=labels or None,
            pool=pool,
            distinct=distinct.value if distinct else None,
        )
    if output is Format.json:
        render.emit_json(lease)
        return
    render.table(
        ("LEASE", "EPOCH", "PROXY", "URL", "EGRESS", "EXPIRES"),
        [
            [
                lease.lease_id,
                str(lease.epoch),
                lease.proxy.id,
                lease.proxy.url,
                lease.proxy.egress_ip or "-",
                fmt.until(lease.expires_at),
            ]
        ],
    )


def _epoch(client: Client, lease_id: str, epoch: int | None) -> int:
    return epoch if epoch is not None else client.get_lease(lease_id).epoch


@app.command()
def renew(
    ctx: typer.Context,
    lease_id: LeaseId,
    epoch: Epoch = None,
    ttl: Ttl = None,
    output: Output = Format.table,
) -> None:
    """Extend a lease by TTL from now."""
    with state_of(ctx).client() as client:
        renewed = client.renew_lease(lease_id, _epoch(client, lease_id, epoch), ttl=ttl)
    if output is Format.json:
        render.emit_json(renewed)
    else:
        capped = " (capped by the API)" if renewed.ttl_capped else ""
        render.line(f"{renewed.lease_id}: expires {fmt.until(renewed.expires_at)}{capped}")


@app.command()
def report(
    ctx: typer.Context,
    lease_id: LeaseId,
    outcome: Annotated[
        str,
        typer.Argument(
            metavar="OUTCOME",
            help="ok, blocked (bans the proxy for the target) or failed (the proxy is probed now).",
        ),
    ],
    epoch: Epoch = None,
    target: Annotated[str | None, typer.Option(help="Default: the lease's.")] = None,
    output: Output = Format.table,
) -> None:
    """Tell the API how the proxy did."""
    if outcome not in ("ok", "blocked", "failed"):
        raise typer.BadParameter("OUTCOME is ok, blocked or failed")
    with state_of(ctx).client() as client:
        done = client.report_lease(
            lease_id, _epoch(client, lease_id, epoch), outcome, target=target
        )
    if output is Format.json:
        render.emit_json(done)
    else:
        render.line(f"{done.lease_id}: reported {done.outcome} for {done.target or '-'}")


@app.command()
def release(
    ctx: typer.Context, lease_id: LeaseId, epoch: Epoch = None, output: Output = Format.table
) -> None:
    """Give a lease back (its proxy cools down, then is free again)."""
    with state_of(ctx).client() as client:
        done = client.release_lease(lease_id, _epoch(client, lease_id, epoch))
    if output is Format.json:
        render.emit_json(done)
    else:
        render.line(f"{done.lease_id}: {done.state}")
