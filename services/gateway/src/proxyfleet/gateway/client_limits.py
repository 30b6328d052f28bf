"""Per-client limits as configured: defaults for every client token, overridden per token
(`--client-limit NAME:key=value,...`). Pure: parsed once at start; nonsense is a
ConfigError naming the setting (the host exits 2)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from proxyfleet.common.core.errors import ConfigError

UNITS = {
    "B": 1,
    "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
    "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40,
}  # fmt: skip
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*$")
KEYS = ("connections", "leases", "rate", "burst", "bytes_per_day")
"""What `--client-limit` may set, each as `key=value` (`none`: no limit)."""


@dataclass(frozen=True, slots=True)
class ClientLimit:
    """One client's limits; 0 (or 0.0) is no limit."""

    connections: int = 0
    """Connections open at once, over every replica."""
    leases: int = 0
    """Leases held at once by its connections (a session's counts once)."""
    rate: float = 0.0
    """New connections per second (a token bucket)."""
    burst: int = 0
    """The bucket's size: connections accepted at once after a quiet spell."""
    bytes_per_day: int = 0
    """Bytes relayed both ways in a UTC day, before new connections are refused."""

    @property
    def any(self) -> bool:
        return bool(self.connections or self.leases or self.rate or self.bytes_per_day)

    @property
    def bucket_size(self) -> float:
        """The burst; unset: a second's worth, at least one connection."""
        return float(self.burst) if self.burst else max(1.0, self.rate)


def parse_bytes(flag: str, text: str) -> int:
    """`10GB`, `500MiB`, `1.5 TB` in bytes; a bare number is refused (bytes or bits? a
    day's worth of what?), as is zero."""
    match = _SIZE.match(text)
    unit = match.group(2).upper() if match else ""
    if match is None or unit not in UNITS:
        raise ConfigError(
            f"{flag}: expected a size with a unit (e.g. 10GB, 500MiB; units B, KB, MB, "
            f"GB, TB, KiB, MiB, GiB, TiB), got {text!r}"
        )
    value = int(float(match.group(1)) * UNITS[unit])
    if value <= 0:
        raise ConfigError(f"{flag}: expected a size above zero (or none), got {text!r}")
    return value


def default_limit(
    connections: int, leases: int, rate: float, burst: int, bytes_per_day: str
) -> ClientLimit:
    """The limits of a token without a `--client-limit` of its own (0 or empty: none)."""
    for flag, value in (
        ("--client-max-connections", connections),
        ("--client-max-leases", leases),
        ("--client-connection-burst", burst),
    ):
        if value < 0:
            raise ConfigError(f"{flag}: expected 0 (no limit) or more, got {value}")
    if not (math.isfinite(rate) and rate >= 0):
        raise ConfigError(
            f"--client-connection-rate: expected connections/s >= 0 (0: no limit), got {rate:g}"
        )
    if burst and not rate:
        raise ConfigError("--client-connection-burst: set without --client-connection-rate")
    size = parse_bytes("--client-bytes-per-day", bytes_per_day) if bytes_per_day else 0
    return ClientLimit(connections, leases, rate, burst, size)


def per_client(
    default: ClientLimit, overrides: tuple[str, ...], names: tuple[str, ...]
) -> dict[str, ClientLimit]:
    """Every token name's limits: the default, with what `--client-limit` sets for it."""
    out = dict.fromkeys(names, default)
    for i, value in enumerate(overrides, 1):
        flag = f"--client-limit (value {i})"
        name, sep, spec = value.strip().partition(":")
        if not sep or not spec.strip():
            raise ConfigError(f"{flag}: expected NAME:key=value[,key=value] (keys: {KEYS})")
        if name not in out:
            raise ConfigError(f"{flag}: {name!r} is no --client-token's name")
        out[name] = _override(flag, out[name], spec)
    return out


def _override(flag: str, limit: ClientLimit, spec: str) -> ClientLimit:
    for part in spec.split(","):
        key, eq, raw = (s.strip() for s in part.partition("="))
        if not eq or key not in KEYS:
            raise ConfigError(f"{flag}: {part.strip()!r}: expected key=value, keys {KEYS}")
        where = f"{flag}: {key}"
        if raw == "none":
            limit = replace(limit, **{key: 0})
        elif key == "bytes_per_day":
            limit = replace(limit, bytes_per_day=parse_bytes(where, raw))
        elif key == "rate":
            limit = replace(limit, rate=_positive(where, raw, float))
        else:
            limit = replace(limit, **{key: int(_positive(where, raw, int))})
    if limit.burst and not limit.rate:
        raise ConfigError(f"{flag}: burst without a rate")
    return limit


def _positive(where: str, raw: str, kind: type[int] | type[float]) -> float:
    """A value above zero (zero limits nothing: write `none`)."""
    try:
        value = kind(raw)
    except ValueError:
        value = -1
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"{where}: expected a number above zero (or none), got {raw!r}")
    return value
