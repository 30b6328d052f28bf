"""`proxyfleet-dev run`: the whole system on this machine, until Ctrl-C."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from pathlib import Path
from typing import Annotated

import typer

from proxyfleet.devstack.banner import banner, write_env_file
from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.providers import squid_installed
from proxyfleet.devstack.stack import Stack

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
            tied=True,
        )
    )
    stop = threading.Event()
    # SIGHUP: the terminal was closed; stop as cleanly as for Ctrl-C.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())
    try:
        stack.start()  # Ctrl-C here raises KeyboardInterrupt: whatever started is stopped
        # Explicit: SIGINT may arrive ignored (a background job) and must still stop us.
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        env_file = write_env_file(stack, base_dir)
        engine_name = "squid" if squid_installed() else "proxy.py"
        typer.echo(banner(stack, base_dir, engine_name, env_file))
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


def main() -> None:
    app()
