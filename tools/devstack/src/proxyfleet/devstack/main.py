"""`proxyfleet-dev run`: the whole system on this machine, until Ctrl-C."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
from pathlib import Path
from typing import Annotated

import typer

from proxyfleet.devstack.stack import ADMIN_NAME, CLIENT_NAME, Stack, StackOptions

app = typer.Typer(add_completion=False, help="Proxyfleet's local dev stack.")


@app.callback()
def _root() -> None:
    """Proxyfleet's local dev stack."""


@app.command()
def run(
    base_dir: Annotated[Path, typer.Option(help="Runtime folder (data, logs, proxies).")] = Path(
        ".dev"
    ),
    api_port: Annotated[int, typer.Option(envvar="PROXYFLEET_API_PORT")] = 8080,
    engine: Annotated[
        str, typer.Option(help="Local proxy engine: auto, squid, proxy.py.")
    ] = "auto",
    log_level: Annotated[str, typer.Option(envvar="PROXYFLEET_LOG_LEVEL")] = "info",
) -> None:
    """Start NATS and Redis (unless NATS_URL / REDIS_URL are set), the local HTTPS target and
    every service, then print how to lease a proxy. Ctrl-C stops everything."""
    stack = Stack(
        StackOptions(
            base_dir=base_dir,
            api_port=api_port,
            nats_url=os.environ.get("NATS_URL", ""),
            redis_url=os.environ.get("REDIS_URL", ""),
            engine=engine,
            log_level=log_level,
        )
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stack.start()  # Ctrl-C here raises KeyboardInterrupt: whatever started is stopped
        # Explicit: SIGINT may arrive ignored (a background job) and must still stop us.
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        typer.echo(banner(stack, base_dir))
        stop.wait()
    except KeyboardInterrupt:
        pass
    except (RuntimeError, TimeoutError) as exc:
        typer.echo(f"proxyfleet-dev: {exc}", err=True)
        raise typer.Exit(1) from None
    finally:
        _say("stopping every service ...")
        stack.stop()
        _say("stopped.")


def _say(text: str) -> None:
    """Print, unless our output is gone (a closed pipe must not skip the cleanup)."""
    with contextlib.suppress(OSError):
        typer.echo(text)


def banner(stack: Stack, base_dir: Path) -> str:
    engine = "squid" if shutil.which("squid") else "proxy.py"
    ca = base_dir / "tls" / "ca.pem"
    return f"""
================================================================================
 Proxyfleet is running (local provider, {engine} proxies)
   API        {stack.api_url}        OpenAPI: {stack.api_url}/schema
   NATS       {stack.nats_url}    events: proxyfleet.events.>
   Redis      {stack.redis_url}
   target     {stack.target_url}   (local HTTPS test site, CA {ca})
   logs       {base_dir}/logs/
   tokens     admin {ADMIN_NAME}, client {CLIENT_NAME} (secrets: ADMIN, CLIENT below)

 Copy and paste:
   export PF={stack.api_url} ADMIN={stack.admin_token} CLIENT={stack.client_token}
   # three proxies (ready in a few seconds, after real CONNECT probes)
   curl -s -X POST $PF/v1/proxies -H "Authorization: Bearer $ADMIN" \\
        -H 'content-type: application/json' -d '{{"provider": "local", "count": 3}}'
   curl -s "$PF/v1/proxies?phase=ready" -H "Authorization: Bearer $ADMIN"
   # lease one and fetch a page through it
   LEASE=$(curl -s -X POST $PF/v1/leases -H "Authorization: Bearer $CLIENT" \\
        -H 'content-type: application/json' -d '{{"ttl": 120, "holder": "me"}}'); echo $LEASE
   PROXY=$(echo "$LEASE" | python3 -c 'import json,sys; print(json.load(sys.stdin)["proxy"]["url"])'
        )
   curl -s --proxy "$PROXY" --cacert {ca} {stack.target_url}

 Ctrl-C stops everything.
================================================================================
"""


def main() -> None:
    app()
