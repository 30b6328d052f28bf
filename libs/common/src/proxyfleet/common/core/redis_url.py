"""The Redis URL grammar: a plain URL redis-py reads itself, or a Sentinel URL naming the
Sentinels and the master they watch. Pure: parsing only, no I/O.

    redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/<master>[/<db>]
        [?sentinel_username=...&sentinel_password=...]

The credentials before `@` are the Redis servers'; the Sentinels' are the query's (none
when absent). A host without a port is Sentinel's default port, 26379; IPv6 addresses go
in brackets. Errors are ConfigError naming what is wrong, never repeating a password."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

from proxyfleet.common.core.errors import ConfigError

SENTINEL_SCHEME = "redis+sentinel"
SENTINEL_PORT = 26379
DIRECT_SCHEMES = frozenset({"redis", "rediss", "unix"})
"""What redis-py's from_url reads: one server (or a managed endpoint that fails over
behind one address)."""
SENTINEL_QUERY = frozenset({"sentinel_username", "sentinel_password"})

_HOST_PORT = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^:\[\]]+))(?::(?P<port>\d+))?")


@dataclass(frozen=True, slots=True)
class DirectRedis:
    """One address: redis-py's from_url connects to it as it is."""

    url: str


@dataclass(frozen=True, slots=True)
class SentinelRedis:
    """The primary of `master`, as the Sentinels at `sentinels` name it."""

    sentinels: tuple[tuple[str, int], ...]
    master: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    sentinel_username: str | None = None
    sentinel_password: str | None = None

    def describe(self) -> str:
        """The master and its Sentinels, for messages (no credentials)."""
        return f"master {self.master!r} via Sentinel {sentinel_list(self.sentinels)}"


RedisTarget = DirectRedis | SentinelRedis


def sentinel_list(sentinels: tuple[tuple[str, int], ...]) -> str:
    return ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in sentinels)


def parse_redis_url(url: str) -> RedisTarget:
    """What `url` names; ConfigError when it is no Redis URL or a Sentinel URL is malformed."""
    scheme, sep, _ = url.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise ConfigError(
            "--redis-url: not a URL (expected redis://, rediss:// or redis+sentinel://)"
        )
    if scheme in DIRECT_SCHEMES:
        return DirectRedis(url)
    if scheme == "rediss+sentinel":
        raise ConfigError(
            "--redis-url: TLS to Sentinel (rediss+sentinel://) is not supported; use "
            "redis+sentinel:// on a private network, or a managed Redis's rediss:// endpoint"
        )
    if scheme != SENTINEL_SCHEME:
        raise ConfigError(
            f"--redis-url: unknown scheme {scheme!r} "
            "(expected redis://, rediss://, unix:// or redis+sentinel://)"
        )
    return _parse_sentinel(url)


def _parse_sentinel(url: str) -> SentinelRedis:
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # unbalanced IPv6 brackets
        raise ConfigError(f"--redis-url: not a valid Sentinel URL ({exc})") from None
    if parts.fragment:
        raise ConfigError("--redis-url: a Sentinel URL has no #fragment")
    userinfo, at, hosts = parts.netloc.rpartition("@")
    username = password = None
    if at:
        user, colon, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
        if not colon:  # `user@` alone: redis-py's convention reads it as the password
            username, password = None, unquote(user) or None
    sentinels = tuple(_address(one) for one in hosts.split(","))
    path = [unquote(p) for p in parts.path.split("/")[1:]]
    if not path or not path[0]:
        raise ConfigError(
            "--redis-url: a Sentinel URL names the master after the hosts "
            "(redis+sentinel://host:26379/<master>[/<db>])"
        )
    if len(path) > 2 or (len(path) == 2 and not path[1].isdigit()):
        raise ConfigError(
            f"--redis-url: after the master {path[0]!r} only a database number may follow "
            "(redis+sentinel://host:26379/<master>[/<db>])"
        )
    query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=False)
    unknown = sorted(set(query) - SENTINEL_QUERY)
    if unknown:
        raise ConfigError(
            f"--redis-url: unknown Sentinel URL parameter(s) {', '.join(unknown)} "
            f"(known: {', '.join(sorted(SENTINEL_QUERY))})"
        )
    repeated = sorted(k for k, v in query.items() if len(v) > 1)
    if repeated:
        raise ConfigError(f"--redis-url: parameter(s) given twice: {', '.join(repeated)}")
    return SentinelRedis(
        sentinels=sentinels,
        master=path[0],
        db=int(path[1]) if len(path) == 2 else 0,
        username=username,
        password=password,
        sentinel_username=query.get("sentinel_username", [""])[0] or None,
        sentinel_password=query.get("sentinel_password", [""])[0] or None,
    )


def _address(text: str) -> tuple[str, int]:
    match = _HOST_PORT.fullmatch(text.strip())
    if not text.strip() or match is None:
        raise ConfigError(
            f"--redis-url: bad Sentinel address {text!r} (expected host[:port], "
            "comma-separated; IPv6 in brackets)"
        )
    port = int(match["port"]) if match["port"] else SENTINEL_PORT
    if not 0 < port < 65536:
        raise ConfigError(f"--redis-url: Sentinel port {port} out of range (1-65535)")
    return match["v6"] or match["host"], port
