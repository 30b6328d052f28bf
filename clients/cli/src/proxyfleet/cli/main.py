"""The console script: runs the typer app and turns the client's errors into one line on
stderr and an exit code (exitcodes)."""

from __future__ import annotations

import sys

from proxyfleet.cli import exitcodes
from proxyfleet.cli.app import app
from proxyfleet.cli.config import ConfigError
from proxyfleet.cli.state import NoUrl
from proxyfleet.client import ProxyfleetError


def main() -> None:
    try:
        app(prog_name="proxyfleet")
    except ProxyfleetError as e:
        sys.stderr.write(f"proxyfleet: {exitcodes.message(e)}\n")
        sys.exit(exitcodes.for_error(e))
    except (ConfigError, NoUrl, ValueError) as e:
        sys.stderr.write(f"proxyfleet: {e}\n")
        sys.exit(exitcodes.USAGE)
    except KeyboardInterrupt:
        sys.exit(exitcodes.for_signal(2))
