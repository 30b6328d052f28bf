"""Request and response bodies of /v1/providers/{name}/proxies. A password comes in and
never goes out: answers show the URL masked."""

from __future__ import annotations

from typing import Annotated

import msgspec

from proxyfleet.api.http.fields import Labels, ZoneName

EntryLine = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=2048,
        description="A proxy URL (http, https, socks5 or socks5h, credentials as "
        "user:password@) or another line its provider's source files take "
        "(host:port, host:port:user:pass, user:pass@host:port).",
    ),
]
EntryName = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^[A-Za-z0-9._-]{0,63}$", description="A name for people (free, optional)."
    ),
]


class AddProviderEntry(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    url: EntryLine | None = None
    """The proxy (give `url` or `line`, not both)."""
    line: EntryLine | None = None
    """The same as `url`, for the line formats that are not URLs."""
    zone: ZoneName | None = None
    """One of the provider's zones; default: the provider's default zone."""
    labels: Labels = {}
    """Labels its proxy carries (leases can select on them)."""
    name: EntryName = ""


class ProviderEntryOut(msgspec.Struct, kw_only=True):
    """An entry as the API shows it: its URL with the password masked."""

    id: str
    """The id of its proxy (derived from scheme, host, port and user: the same line gives
    the same id)."""
    url: str
    """Its URL, the password as ***."""
    zone: str
    """The zone asked for; "" : the provider's default zone."""
    labels: dict[str, str]
    name: str


class ProviderEntryList(msgspec.Struct, kw_only=True):
    items: list[ProviderEntryOut]
    """By id."""
