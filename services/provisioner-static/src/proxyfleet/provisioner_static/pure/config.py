"""The static provider's settings (`static:` of a provider entry): proxies Proxyfleet did
not create, from inline URLs, files or URLs of lines, and a vendor's rotating gateway.
Pure: no I/O; `check_static_provider` raises ConfigError naming the key (and, for a list,
the item: `proxies[3]` is the fourth line of the inline list)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from proxyfleet.common.core.errors import ConfigError, InvalidInput
from proxyfleet.common.providers import ParsedEntry, ProviderConfig, Seconds, Zone
from proxyfleet.common.wire.models import Scheme
from proxyfleet.provisioner_static.pure.lines import LineError, entry_id, parse_line
from proxyfleet.provisioner_static.pure.vendor import check_template

Labels = dict[str, str]
INVALID_ENTRY = "invalid_entry"
"""The code of a line `parse_entry` refuses (the API's 400)."""


class InlineProxy(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    url: str
    """A proxy URL: http://user:pass@host:port, https:// (TLS to the proxy), socks5://,
    socks5h:// (names resolved by the proxy)."""
    zone: Zone | None = None
    """None: the provider's first zone."""
    labels: Labels = {}
    name: str = ""
    """Shown in listings (placement `name`)."""


class SourceConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A file or an HTTP(S) URL with one proxy per line, re-read every `refresh` and on
    SIGHUP."""

    file: str = ""
    url: str = ""
    refresh: Seconds = 300.0
    zone: Zone | None = None
    labels: Labels = {}
    scheme: Scheme = Scheme.HTTP
    """The scheme of lines without one (host:port, host:port:user:pass, user:pass@host:port)."""
    name: Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9_-]{0,30}$")] = ""
    """What events, metrics and the proxies' placement call it; "": `sources[<index>]`."""


class VendorConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A vendor's rotating gateway, kept as `sessions` sticky proxies."""

    endpoint: str
    """scheme://host:port of the gateway (no credentials here)."""
    username: str
    """Template with `{session}` and any `{key}` of params: `customer-acme-session-{session}`."""
    password: str = ""
    password_file: str = ""
    """A file holding the password instead (a mounted Secret: the providers file is read
    by every service, this file only by the static provisioner). One of the two."""
    sessions: Annotated[int, msgspec.Meta(ge=0, le=100_000)] = 10
    """Proxies kept, one session each (0: only those pools and the API create)."""
    params: dict[str, str] = {}
    """Values of the template's other slots (country, city, ...)."""
    session_length: Annotated[int, msgspec.Meta(ge=4, le=32)] = 12
    """Hex digits of a session id."""
    zone: Zone | None = None
    labels: Labels = {}


class StaticSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    proxies: list[InlineProxy] = []
    sources: list[SourceConfig] = []
    vendor: VendorConfig | None = None
    empty_guard: Annotated[float, msgspec.Meta(ge=0, le=100)] = 50.0
    """A file or URL load that would remove more than this percentage of its proxies at
    once (two or more), or that suddenly lists nothing, is not applied: the last load is
    kept and the refusal reported. 100: no guard."""


class StaticProviderConfig(ProviderConfig, tag="static"):
    """A provider entry of type static: proxies it did not create."""

    static: StaticSettings = msgspec.field(default_factory=StaticSettings)


def source_key(index: int, source: SourceConfig) -> str:
    """How a source is named (never its path or URL, which may hold a token)."""
    return source.name or f"sources[{index}]"


def check_static_provider(entry: StaticProviderConfig, where: str) -> None:
    """ConfigError naming `where`.static.<key> for what the types alone do not say."""
    where = f"{where}.static"
    s = entry.static
    seen: dict[str, int] = {}
    for i, p in enumerate(s.proxies):
        at = f"{where}.proxies[{i}]"
        try:
            line = parse_line(p.url)
        except LineError as exc:
            raise ConfigError(f"{at}.url: {exc}") from None
        if line is None:
            raise ConfigError(f"{at}.url: expected a proxy URL, got nothing")
        if (first := seen.setdefault(entry_id(entry.name, line), i)) != i:
            raise ConfigError(f"{at}.url: duplicate of proxies[{first}]")
        _check_zone(entry, p.zone, f"{at}.zone")
    names: set[str] = set()
    for i, src in enumerate(s.sources):
        at = f"{where}.sources[{i}]"
        if bool(src.file) == bool(src.url):
            raise ConfigError(f"{at}: expected exactly one of file or url")
        if src.url and not src.url.lower().startswith(("http://", "https://")):
            raise ConfigError(f"{at}.url: expected an http:// or https:// URL")
        if (key := source_key(i, src)) in names:
            raise ConfigError(f"{at}.name: {key!r} names another source too")
        names.add(key)
        _check_zone(entry, src.zone, f"{at}.zone")
    if s.vendor is not None:
        _check_vendor(entry, s.vendor, f"{where}.vendor")


def _check_vendor(entry: StaticProviderConfig, vendor: VendorConfig, at: str) -> None:
    try:
        line = parse_line(vendor.endpoint)
    except LineError as exc:
        raise ConfigError(f"{at}.endpoint: {exc}") from None
    if line is None or "://" not in vendor.endpoint:
        raise ConfigError(f"{at}.endpoint: expected scheme://host:port")
    if line.username or line.password:
        raise ConfigError(f"{at}.endpoint: expected no credentials (username and password keys)")
    try:
        check_template(vendor.username, vendor.params)
    except ValueError as exc:
        raise ConfigError(f"{at}.username: {exc}") from None
    if bool(vendor.password) == bool(vendor.password_file):
        raise ConfigError(f"{at}: expected exactly one of password or password_file")
    _check_zone(entry, vendor.zone, f"{at}.zone")


def _check_zone(entry: StaticProviderConfig, zone: str | None, at: str) -> None:
    if zone is not None and zone not in entry.zones:
        raise ConfigError(f"{at}: {zone!r} is not one of the provider's zones {entry.zones}")


def parse_entry(entry: StaticProviderConfig, text: str) -> ParsedEntry:
    """A line an admin adds at run time (`POST /v1/providers/{name}/proxies`), read as a
    source file's line; InvalidInput naming what is wrong (never the password)."""
    try:
        line = parse_line(text)
    except LineError as exc:
        raise InvalidInput(f"provider {entry.name!r}: {exc}", code=INVALID_ENTRY) from None
    if line is None:
        raise InvalidInput(
            f"provider {entry.name!r}: expected a proxy, got an empty line", code=INVALID_ENTRY
        )
    return ParsedEntry(id=entry_id(entry.name, line), masked=line.masked())
