"""`proxyfleet pools ls|get|apply|scale|rm` (an admin token)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from proxyfleet.cli import exitcodes, fmt, render
from proxyfleet.cli.poolfiles import PoolFileError, pool_documents
from proxyfleet.cli.render import Format
from proxyfleet.cli.state import state_of
from proxyfleet.client import NotFound, Pool, ProxyfleetError, TransportError

app = typer.Typer(help="Pools: list, show, apply from YAML, scale, delete (an admin token).")

Output = Annotated[Format, typer.Option("--output", "-o", help="table or json.")]
PoolName = Annotated[str, typer.Argument(metavar="NAME")]
COLUMNS = (
    "NAME", "OWNER", "DESIRED", "READY", "LEASED", "FREE", "DRAINING", "QUARANTINED", "OLDEST",
)  # fmt: skip


def row(pool: Pool) -> list[str]:
    """A pool's line: its counts as its controller last saw them ("-" before it has)."""
    name = pool.name + (" (deleting)" if pool.deleting else "")
    s = pool.status
    if s is None:
        return [name, pool.owner, str(pool.desired), *["-"] * 6]
    counts = (s.ready, s.leased, s.free, s.draining, s.quarantined)
    oldest = fmt.duration(s.oldest_age) if s.oldest_age else "-"
    return [name, pool.owner, str(pool.desired), *map(str, counts), oldest]


@app.command("ls")
def list_(ctx: typer.Context, output: Output = Format.table) -> None:
    """Every pool: desired size, ready, leased and free members, the age of the oldest."""
    with state_of(ctx).client() as client:
        found = client.pools()
    render.items(output, COLUMNS, found, row)


@app.command()
def get(ctx: typer.Context, name: PoolName, output: Output = Format.table) -> None:
    """Show one pool: its spec, its status, its conditions and last scaling decision."""
    with state_of(ctx).client() as client:
        pool = client.pool(name)
    if output is Format.json:
        render.emit_json(pool)
        return
    render.table(("FIELD", "VALUE"), details(pool))
    render.line("spec:")
    render.line(_indented(yaml.safe_dump(pool.spec, sort_keys=False)))
    if pool.status is not None and pool.status.conditions:
        render.table(
            ("CONDITION", "STATUS", "REASON", "MESSAGE", "SINCE"),
            [
                [c.type, str(c.status).lower(), c.reason, c.message, fmt.age(c.since)]
                for c in pool.status.conditions
            ],
        )


def details(pool: Pool) -> list[list[str]]:
    """The FIELD/VALUE rows of `pools get`."""
    owner = pool.owner + (f" ({pool.owner_ref})" if pool.owner_ref else "")
    rows = [
        ["name", pool.name + (" (deleting)" if pool.deleting else "")],
        ["owner", owner],
        ["generation", str(pool.gen)],
        ["desired", str(pool.desired)],
        ["age", fmt.age(pool.created_at)],
    ]
    s = pool.status
    if s is None:
        return [*rows, ["status", "none yet (no controller has looked at it)"]]
    members = (
        f"{s.ready} ready ({s.leased} leased, {s.free} free), {s.starting} starting, "
        f"{s.unhealthy} unhealthy, {s.draining} draining, {s.quarantined} quarantined, "
        f"{s.surge} surge"
    )
    rows += [
        ["members", members],
        ["oldest member", fmt.duration(s.oldest_age) if s.oldest_age else "-"],
        ["by provider", _counts(s.by_provider)],
        ["by zone", _counts(s.by_zone)],
        ["status of", f"generation {s.observed_gen}, {fmt.age(s.updated_at)} ago"],
    ]
    if (d := s.last_decision) is not None:
        decision = f"{d.action} {d.from_size} -> {d.to_size}, {fmt.age(d.time)} ago: {d.reason}"
        rows.append(["last decision", decision])
    if s.autoscale:
        rows.append(["autoscale saw", _counts(s.autoscale)])
    return rows


def _counts(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "-"


def _indented(text: str) -> str:
    return "\n".join("  " + line for line in text.rstrip("\n").splitlines())


@app.command()
def apply(
    ctx: typer.Context,
    file: Annotated[
        str,
        typer.Option(
            "--file", "-f", help="YAML: name: and the pool's spec, a document per pool; - is stdin."
        ),
    ],
    output: Output = Format.table,
) -> None:
    """Create or replace pools from YAML; says of each: created, changed or unchanged.

    A pool the API refuses is named on stderr and the rest are still applied; the exit
    code is that of the first failure."""
    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text()
        pools = pool_documents(text, "stdin" if file == "-" else file)
    except (OSError, PoolFileError) as e:
        raise typer.BadParameter(str(e), param_hint="--file") from None
    done: list[dict[str, Any]] = []
    failed: list[ProxyfleetError] = []
    with state_of(ctx).client() as client:
        for name, spec in pools:
            try:
                before = _existing(client.pool, name)
                after = client.apply_pool(name, spec)
            except TransportError:
                raise  # the API is away: every later pool would fail the same way
            except ProxyfleetError as e:
                render.note(f"proxyfleet: pool {name}: {exitcodes.message(e)}")
                failed.append(e)
                continue
            result = _result(before, after)
            done.append({"name": name, "result": result, "pool": after})
            if output is Format.table:
                render.line(f"pool/{name} {result}")
    if output is Format.json:
        render.emit_json(done)
    if failed:
        raise typer.Exit(exitcodes.for_error(failed[0]))


def _existing(read: Callable[[str], Pool], name: str) -> Pool | None:
    try:
        return read(name)
    except NotFound:
        return None


def _result(before: Pool | None, after: Pool) -> str:
    if before is None:
        return "created"
    return "unchanged" if before.gen == after.gen else "changed"


@app.command()
def scale(
    ctx: typer.Context,
    name: PoolName,
    size: Annotated[int, typer.Argument(metavar="N", min=0, help="Ready members to keep.")],
    output: Output = Format.table,
) -> None:
    """Set the pool's size (with autoscale: where it goes now, within min and max)."""
    with state_of(ctx).client() as client:
        pool = client.patch_pool(name, {"size": size})
    render.items(output, COLUMNS, [pool], row)


@app.command("rm")
def remove(
    ctx: typer.Context,
    name: PoolName,
    keep_proxies: Annotated[
        bool,
        typer.Option(help="Remove the pool now; keep its members as one-off proxies."),
    ] = False,
    output: Output = Format.table,
) -> None:
    """Delete a pool: its members drain (leases run to their end, or to its
    drain_timeout), are deleted, then the pool goes."""
    with state_of(ctx).client() as client:
        gone = client.delete_pool(name, keep_proxies=keep_proxies)
    if output is Format.json:
        render.emit_json(gone)
    elif isinstance(gone, Pool):
        render.line(f"pool/{name} deleting: its members drain, then go")
    else:
        render.line(f"pool/{name} removed; its proxies are kept, in no pool")
