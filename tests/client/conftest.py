"""The client's tests run against the live API of tests/live_api.py (shared with the CLI's
tests)."""

from tests.live_api import COOLDOWN, PROXY_PASSWORD, LiveApi, client_squid, live_api

__all__ = ["COOLDOWN", "PROXY_PASSWORD", "LiveApi", "client_squid", "live_api"]
