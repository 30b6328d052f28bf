"""What each source of a static provider lists, as the plan takes it (`SourceLoad`):
inline URLs, a vendor's sessions, a file's or URL's lines, the entries added at run time.
Pure: the caller reads the sources."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from proxyfleet.provisioner_static.pure.config import (
    SourceConfig,
    StaticProviderConfig,
    source_key,
)
from proxyfleet.provisioner_static.pure.lines import (
    LineError,
    Parsed,
    ProxyLine,
    Rejected,
    entry_id,
    parse_line,
)
from proxyfleet.provisioner_static.pure.plan import Desired, SourceLoad
from proxyfleet.provisioner_static.pure.vendor import expand, session_id, slot_seed

INLINE = "inline"
VENDOR = "vendor"
API = "api"
"""Keys of the sources that are not files or URLs."""


def _zone(entry: StaticProviderConfig, *zones: str | None) -> str:
    """The first zone given, else the provider's first."""
    return next((z for z in zones if z), entry.zones[0])


def _desired(
    entry: StaticProviderConfig,
    source: str,
    line: ProxyLine,
    zone: str,
    labels: Mapping[str, str],
    name: str = "",
) -> Desired:
    return Desired(entry_id(entry.name, line), source, line, zone, dict(labels), name)


def inline_load(entry: StaticProviderConfig) -> SourceLoad:
    """The `proxies:` list (checked at start: every URL parses)."""
    out = []
    for p in entry.static.proxies:
        line = parse_line(p.url)
        if line is not None:
            out.append(_desired(entry, INLINE, line, _zone(entry, p.zone), p.labels, p.name))
    return SourceLoad(INLINE, out)


def vendor_line(entry: StaticProviderConfig, seed: str) -> ProxyLine | None:
    """The vendor gateway with the session of `seed` (None without a vendor)."""
    vendor = entry.static.vendor
    where = parse_line(vendor.endpoint) if vendor is not None else None
    if vendor is None or where is None:
        return None
    session = session_id(entry.name, seed, vendor.session_length)
    username = expand(vendor.username, session, vendor.params)
    return ProxyLine(where.scheme, where.host, where.port, username, vendor.password)


def vendor_load(entry: StaticProviderConfig) -> SourceLoad:
    """The vendor's `sessions` proxies, one session each, the same across restarts."""
    vendor, out = entry.static.vendor, []
    if vendor is not None:
        for slot in range(vendor.sessions):
            line = vendor_line(entry, slot_seed(slot))
            if line is not None:
                zone = _zone(entry, vendor.zone)
                out.append(_desired(entry, VENDOR, line, zone, vendor.labels))
    return SourceLoad(VENDOR, out)


def file_load(
    entry: StaticProviderConfig, index: int, source: SourceConfig, parsed: Parsed
) -> SourceLoad:
    """A file's or URL's good lines (the bad ones are the caller's to report)."""
    key, zone = source_key(index, source), _zone(entry, source.zone)
    out = [_desired(entry, key, line, zone, source.labels) for _, line in parsed.entries]
    return SourceLoad(key, out, guarded=True)


@dataclass(frozen=True, slots=True)
class AddedLine:
    """An entry added at run time, as stored (proxyfleet.common.store.AddedEntry)."""

    id: str
    line: str
    zone: str = ""
    labels: Mapping[str, str] | None = None
    name: str = ""


def api_load(
    entry: StaticProviderConfig, added: Sequence[AddedLine]
) -> tuple[SourceLoad, list[tuple[str, Rejected]]]:
    """The entries added at run time, and those that are no proxy (by id: the API
    checked them, but a stored one may predate a change of the rules)."""
    out, bad = [], []
    for a in sorted(added, key=lambda a: a.id):
        try:
            line = parse_line(a.line)
        except LineError as exc:
            bad.append((a.id, Rejected(0, str(exc), exc.kind)))
            continue
        if line is None:
            bad.append((a.id, Rejected(0, "empty line", "malformed")))
            continue
        if a.zone and a.zone not in entry.zones:
            bad.append((a.id, Rejected(0, f"zone {a.zone!r} is not the provider's", "zone")))
            continue
        out.append(_desired(entry, API, line, _zone(entry, a.zone), a.labels or {}, a.name))
    return SourceLoad(API, out), bad
