"""The `proxyfleet` command: the root options, `login`, `status`, `events`, `lease`, and
the `proxies`, `leases`, `pools` and `entries` groups."""

from __future__ import annotations

import collections
import getpass
import signal
import socket
import time
from pathlib import Path
from typing import Annotated

import typer

from proxyfleet.cli import (
    __version__,
    entries,
    exitcodes,
    fmt,
    leases,
    pools,
    proxies,
    render,
    runner,
    usage,
)
from proxyfleet.cli.childenv import default_holder
from proxyfleet.cli.config import Config, config_path, write_config
from proxyfleet.cli.render import Format
from proxyfleet.cli.state import State, state_of
from proxyfleet.client import Client, Event, Forbidden, Gap, Probe

app = typer.Typer(
    name="proxyfleet",
    help="Proxyfleet from a shell: the fleet, proxies, leases, pools, live events, and "
    "`proxyfleet lease -- CMD` to run a command through a leased proxy.",
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    no_args_is_help=True,
)
app.add_typer(proxies.app, name="proxies")
app.add_typer(leases.app, name="leases")
app.add_typer(pools.app, name="pools")
app.add_typer(entries.app, name="entries")
app.command("usage")(usage.usage)

Output = Annotated[Format, typer.Option("--output", "-o", help="table or json.")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"proxyfleet {__version__}")
        raise typer.Exit


@app.callback()
def root(
    ctx: typer.Context,
    url: Annotated[
        str | None, typer.Option(envvar="PROXYFLEET_URL", help="The API's base URL.")
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(envvar="PROXYFLEET_TOKEN", help="An API token's secret.", show_default=False),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            envvar="PROXYFLEET_CONFIG",
            help="Config file (default: $XDG_CONFIG_HOME/proxyfleet/config.toml).",
        ),
    ] = None,
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = None,
) -> None:
    """URL and token: these options, else PROXYFLEET_URL / PROXYFLEET_TOKEN, else the
    config file `proxyfleet login` writes."""
    ctx.obj = State(url=url, token=token, config_path=config or config_path())


@app.command()
def login(
    ctx: typer.Context,
    check: Annotated[bool, typer.Option(help="Try the token on the API first.")] = True,
) -> None:
    """Save the API URL and token to the config file (mode 0600).

    Asks for what --url, --token and the environment do not give."""
    state = state_of(ctx)
    url = state.url or typer.prompt("API URL")
    token = state.token or typer.prompt("Token", hide_input=True)
    if check:
        with Client(url, token) as client:
            client.list_providers()  # any token may: a 401 is a wrong token
    write_config(state.config_path, Config(url=url, token=token))
    render.note(f"proxyfleet: wrote {state.config_path}")


@app.command()
def status(ctx: typer.Context, output: Output = Format.table) -> None:
    """The fleet at a glance: providers, zones, proxies by phase, active leases."""
    with state_of(ctx).client() as client:
        providers = client.list_providers()
        by_zone: dict[tuple[str, str], collections.Counter[str]] = {
            (p.name, z): collections.Counter() for p in providers for z in p.zones
        }
        zones: dict[tuple[str, str], collections.Counter[str]] | None = by_zone
        try:
            for proxy in client.iter_proxies():
                key = (proxy.provider, proxy.zone)
                by_zone.setdefault(key, collections.Counter())[proxy.phase] += 1
        except Forbidden:
            zones = None  # a client token: providers and leases only
        active = list(client.iter_leases())
    soonest = min((x.expires_at for x in active), default=None)
    if output is Format.json:
        render.emit_json(
            {
                "providers": providers,
                "zones": None
                if zones is None
                else [
                    {"provider": p, "zone": z, "counts": dict(c)}
                    for (p, z), c in sorted(zones.items())
                ],
                "leases": {"active": len(active), "next_expiry": soonest},
            }
        )
        return
    render.table(
        ("PROVIDER", "TYPE", "ZONES", "PROXIES", "MAX"),
        [
            [p.name, p.type, ", ".join(p.zones), fmt.counts(p.counts), str(p.max_proxies or "-")]
            for p in providers
        ],
    )
    if zones is not None:
        render.table(
            ("PROVIDER", "ZONE", "PROXIES"),
            [[p, z, fmt.counts(dict(c))] for (p, z), c in sorted(zones.items())],
        )
    else:
        render.note("(zones: an admin token lists proxies by zone)")
    next_one = f", the next ends {fmt.until(soonest)}" if soonest is not None else ""
    render.line(f"leases: {len(active)} active{next_one}")


@app.command()
def events(
    ctx: typer.Context,
    type_: Annotated[
        list[str] | None,
        typer.Option(
            "--type",
            "-t",
            help="An event type or family: proxy, lease, "
            "proxy.ready, ... (repeatable; default: every one).",
        ),
    ] = None,
    proxy: Annotated[str | None, typer.Option(help="Only this proxy's events.")] = None,
    probes: Annotated[bool, typer.Option(help="Probe results too.")] = False,
    output: Output = Format.table,
) -> None:
    """Tail the live event stream until Ctrl-C.

    `-o json`: one JSON object a line (probes carry "type": "probe", and "type": "gap"
    says events were dropped for a slow reader)."""
    with state_of(ctx).client() as client:
        stream = client.events(
            types=type_ or (),
            proxy_id=proxy,
            probes=probes,
            on_ready=lambda: render.note("proxyfleet: listening for events (Ctrl-C stops)"),
        )
        try:
            for item in stream:
                if isinstance(item, Gap):
                    render.note(f"proxyfleet: {item.dropped} events dropped (a slow reader)")
                if output is Format.json:
                    render.emit_json_line(_json_of(item))
                elif not isinstance(item, Gap):
                    render.line(_line_of(item))
        except KeyboardInterrupt:
            raise typer.Exit(exitcodes.for_signal(signal.SIGINT)) from None
    render.note("proxyfleet: the API ended the event stream")
    raise typer.Exit(exitcodes.UNREACHABLE)


def _json_of(item: Event | Probe | Gap) -> object:
    if isinstance(item, Probe | Gap):
        kind = "probe" if isinstance(item, Probe) else "gap"
        return {"type": kind, **{f: getattr(item, f) for f in item.__struct_fields__}}
    return item


def _line_of(item: Event | Probe) -> str:
    stamp = time.strftime("%H:%M:%S", time.localtime(item.time))
    if isinstance(item, Probe):
        result = f"ok {item.latency_ms:.0f} ms {item.egress_ip}" if item.ok else item.error
        return f"{stamp}  {'probe':<16} {item.proxy_id}  {result}"
    d = item.data
    facts = [
        f"{name}={value}"
        for name, value in (
            ("lease", item.lease_id),
            ("from", d.from_),
            ("zone", d.zone),
            ("from_zone", d.from_zone),
            ("epoch", d.epoch),
            ("holder", d.holder),
            ("target", d.target),
            ("outcome", d.outcome),
            ("client", d.client),
            # who called, when not the owner itself (an admin ending a client's lease)
            ("by", d.by if d.by != d.client else None),
            ("reason", d.reason),
        )
        if value not in (None, "")
    ]
    return f"{stamp}  {item.type:<16} {item.proxy_id}  {' '.join(facts)}".rstrip()


@app.command(context_settings={"allow_interspersed_args": False})
def lease(
    ctx: typer.Context,
    command: Annotated[
        list[str], typer.Argument(metavar="CMD [ARGS]...", help="The command to run.")
    ],
    target: Annotated[
        str | None, typer.Option(help="Destination domain (a proxy banned for it is skipped).")
    ] = None,
    ttl: Annotated[
        float | None,
        typer.Option(help="Seconds per grant and renewal (default: the API's).", min=0.001),
    ] = None,
    zone: Annotated[str | None, typer.Option()] = None,
    provider: Annotated[str | None, typer.Option()] = None,
    label: Annotated[
        list[str] | None, typer.Option("--label", "-l", help="KEY=VALUE (repeatable).")
    ] = None,
    pool: Annotated[str | None, typer.Option(help="A member of this pool.")] = None,
    proxy: Annotated[str | None, typer.Option(help="This proxy and no other.")] = None,
    holder: Annotated[str | None, typer.Option(help="Default: user@host: CMD.")] = None,
    wait: Annotated[
        float, typer.Option(help="Seconds to wait for a free proxy before giving up.", min=0)
    ] = 60.0,
    report_failures: Annotated[
        bool, typer.Option(help="Report `failed` when CMD exits non-zero (not after a signal).")
    ] = True,
    keep_no_proxy: Annotated[
        bool, typer.Option(help="Keep NO_PROXY / no_proxy for CMD (default: dropped).")
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No leased/released lines on stderr.")
    ] = False,
) -> None:
    """Run a command through a leased proxy: proxyfleet lease [OPTIONS] -- CMD [ARGS]...

    CMD gets HTTPS_PROXY, HTTP_PROXY, ALL_PROXY (and lower case), PROXYFLEET_LEASE_ID and
    PROXYFLEET_LEASE_EPOCH, and no NO_PROXY unless --keep-no-proxy. The lease is renewed
    while CMD runs, reported `failed` when it exits non-zero, and released when it ends
    (Ctrl-C too); SIGINT, SIGTERM and SIGHUP are passed on. Exits with CMD's code (128+N
    when signal N ended it)."""
    try:
        labels = fmt.pairs(label, "--label")
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    request = {
        "ttl": ttl,
        "target": target,
        "zone": zone,
        "provider": provider,
        "labels": labels or None,
        "pool": pool,
        "proxy_id": proxy,
        "holder": holder or default_holder(getpass.getuser(), socket.gethostname(), command[0]),
    }
    job = runner.LeaseRun(
        command=command,
        request=request,
        wait=wait,
        report_failures=report_failures,
        keep_no_proxy=keep_no_proxy,
        quiet=quiet,
    )
    with state_of(ctx).client() as client:
        code = runner.run(client, job)
    raise typer.Exit(code)
