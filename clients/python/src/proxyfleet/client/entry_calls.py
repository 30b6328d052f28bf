"""The calls of /v1/providers/{name}/proxies: proxies added to a provider at run time (an
admin token). Pure, like `calls`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proxyfleet.client.calls import Call
from proxyfleet.client.models import ProviderEntry, ProviderEntryList


def add_provider_entry(
    provider: str,
    url: str,
    *,
    zone: str | None = None,
    labels: Mapping[str, str] | None = None,
    name: str | None = None,
) -> Call[ProviderEntry]:
    """`url`: a proxy URL or another line the provider's sources take (sent as `line`
    when it is not a URL). The same entry again changes nothing."""
    given: dict[str, Any] = {
        "url" if "://" in url else "line": url,
        "zone": zone,
        "labels": dict(labels) if labels else None,
        "name": name,
    }
    body = {k: v for k, v in given.items() if v is not None}
    return Call("POST", f"/v1/providers/{provider}/proxies", ProviderEntry, body=body)


def list_provider_entries(provider: str) -> Call[ProviderEntryList]:
    return Call("GET", f"/v1/providers/{provider}/proxies", ProviderEntryList)


def remove_provider_entry(provider: str, entry_id: str) -> Call[None]:
    return Call("DELETE", f"/v1/providers/{provider}/proxies/{entry_id}", type(None))
