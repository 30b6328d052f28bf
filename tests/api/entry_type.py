"""A provider type that takes proxies at run time, registered by the tests (as
tests/common/test_provider_plugins.py registers a fake `aws`), so the API's entry routes
are tested whatever types are installed. Its parser reads URLs only."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from urllib.parse import unquote, urlsplit

import msgspec

from proxyfleet.common.core.errors import InvalidInput
from proxyfleet.common.providers import (
    ParsedEntry,
    ProviderConfig,
    ProvidersConfig,
    ProviderType,
    parse_providers_config,
    register,
    unregister,
)
from proxyfleet.common.wire.models import Scheme, proxy_url

LISTED = "listed"
"""The type's name, and the name of its provider instance in the tests."""
LEAKY_HOST = "leaky.invalid"
"""A host whose lines the parser refuses naming the whole line: a parser that breaks its
promise, for the API's safety net."""
CRASH_HOST = "crash.invalid"
"""A host whose lines make the parser fail (a bug) with the line in the error."""


class ListedSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    default_scheme: str = "http"


class ListedProviderConfig(ProviderConfig, tag=LISTED):
    listed: ListedSettings


def parse_listed(config: ListedProviderConfig, line: str) -> ParsedEntry:
    parts = urlsplit(line.strip())
    if parts.scheme not in set(Scheme):
        raise InvalidInput(f"unknown scheme {parts.scheme!r}: expected http, https, socks5")
    if parts.hostname == LEAKY_HOST:
        raise InvalidInput(f"cannot read {line}")
    if parts.hostname == CRASH_HOST:
        raise ValueError(f"cannot read {line}")
    try:
        port = parts.port
    except ValueError:
        raise InvalidInput("port out of range (1-65535)") from None
    if not parts.hostname or port is None:
        raise InvalidInput("expected scheme://[user:password@]host:port")
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    key = f"{parts.scheme}|{parts.hostname}|{port}|{user}"
    entry_id = "s" + hashlib.sha256(key.encode()).hexdigest()[:16]
    masked = proxy_url(parts.scheme, parts.hostname, port, user, "***" if password else "")
    return ParsedEntry(id=entry_id, masked=masked.replace("%2A%2A%2A", "***"))


LISTED_TYPE = ProviderType(name=LISTED, config=ListedProviderConfig, parse_entry=parse_listed)

PROVIDERS_YAML = f"""
providers:
  - name: {LISTED}
    type: {LISTED}
    zones: [l1, l2]
    {LISTED}: {{}}
  - name: plain
    type: local
    zones: [p1]
    local: {{}}
"""


@contextlib.contextmanager
def listed_providers() -> Iterator[ProvidersConfig]:
    """The type registered meanwhile, and a providers config with an instance of it
    (`listed`) and one of a type that takes no entries (`plain`)."""
    register(LISTED_TYPE)
    try:
        yield parse_providers_config(PROVIDERS_YAML, "providers.yaml")
    finally:
        unregister(LISTED)
