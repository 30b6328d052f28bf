"""The options every command shares (`--url`, `--token`, `--config`) and the client
they make."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from proxyfleet.cli.config import Config, resolve
from proxyfleet.client import Client


class NoUrl(Exception):
    """No API URL anywhere: a usage error (exit 2)."""


@dataclass
class State:
    url: str | None
    token: str | None
    config_path: Path

    def config(self) -> Config:
        return resolve(self.url, self.token, self.config_path)

    def client(self, *, max_wait: float = 0.0) -> Client:
        """A client that does not wait out 503s unless told (`--wait` where a command has
        it): a person at a terminal wants the answer, not a silent pause."""
        config = self.config()
        if not config.url:
            raise NoUrl("no API URL: pass --url, set PROXYFLEET_URL, or run `proxyfleet login`")
        return Client(config.url, config.token or None, max_wait=max_wait)


def state_of(ctx: typer.Context) -> State:
    obj = ctx.find_root().obj
    assert isinstance(obj, State)
    return obj
