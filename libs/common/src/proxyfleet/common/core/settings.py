"""Settings every service shares, and how a settings field describes its command-line option.

Settings are frozen dataclasses with a docstring per field; the service host
(`proxyfleet.common.host`) turns every field into a flag and an environment variable, with
the docstring as help. Nothing reads the environment at import time."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field
from typing import Any, Literal

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.core.redis_url import parse_redis_url

OPTION = "proxyfleet.option"
"""Key of a field's metadata that holds its `OptionMeta`."""


@dataclass(frozen=True, slots=True)
class OptionMeta:
    """What a settings field's option needs beyond its name, type, default and docstring."""

    flag: str = ""
    """Flag name when it is not `--<field-name>` (e.g. `--admin-token` for a list)."""
    env_aliases: tuple[str, ...] = ()
    """Earlier environment names still read (after the derived one)."""
    exposed: bool = True
    """False: no option (the value comes from elsewhere, e.g. the providers config)."""


def option(
    default: Any = MISSING,
    *,
    flag: str = "",
    env_aliases: tuple[str, ...] = (),
    exposed: bool = True,
    default_factory: Any = None,
    repr: bool = True,
) -> Any:
    """A dataclass field whose option has a flag, old env names or no option at all."""
    meta: Mapping[str, Any] = {OPTION: OptionMeta(flag, env_aliases, exposed)}
    if default_factory is not None:
        return field(default_factory=default_factory, metadata=meta, repr=repr)
    return field(default=default, metadata=meta, repr=repr)


LogFormat = Literal["json", "console"]
LogLevel = Literal["debug", "info", "warning", "error"]


@dataclass(frozen=True, slots=True)
class CommonSettings:
    nats_url: str = option("nats://127.0.0.1:4222", env_aliases=("NATS_URL",))
    """NATS server URL; several, comma-separated, for the seeds of a NATS cluster (one
    that does not answer at start is skipped)."""
    stream_replicas: int = 1
    """Copies of each JetStream stream: 1 for one NATS server, 3 for a cluster of three
    (every service declares the streams at start with this count)."""
    redis_url: str = option("redis://127.0.0.1:6379/0", env_aliases=("REDIS_URL",))
    """Redis URL of the system of record: redis:// or rediss:// for one server (or a
    managed Redis that fails over behind one address), or
    redis+sentinel://host:26379,host:26379/<master>[/<db>] to follow the primary Sentinel
    names (docs/high-availability.md)."""
    installation_id: str = "dev"
    """Marks every resource this installation creates; GC never touches other ids."""
    namespace: str = option("pf", env_aliases=("PROXYFLEET_REDIS_NAMESPACE",))
    """Prefix of every Redis key."""
    outbox_high_water: int = 1_000_000
    """Outbox entries (events and intents not yet on NATS) above which new grants and
    creates are refused (503 `events_backlog`) while releases, renewals and reports go on;
    0: no mark. About 190 bytes of Redis an event: the default holds about 190 MB."""
    redis_wait_replicas: int = 0
    """Redis replicas that must hold a lease or proxy change before the API or the gateway
    acknowledges it (WAIT after each pipelined batch): with 1 and one replica, a failover
    loses no acknowledged grant. 0: answer once the primary has it (replication is then
    asynchronous; docs/reliability.md says what that risks)."""
    redis_wait_timeout: float = 0.2
    """Seconds to wait for those replicas; past it the change is not acknowledged (503)."""
    providers_config: str = "providers.yaml"
    """Path of the providers config file (YAML)."""
    log_level: LogLevel = "info"
    """Least severe level logged."""
    log_format: LogFormat = "json"
    """json (production) or console (readable, for the dev stack)."""

    def __post_init__(self) -> None:
        parse_redis_url(self.redis_url)  # a bad URL fails the start (exit 2), not a connect
        if self.outbox_high_water < 0:
            raise ConfigError("--outbox-high-water: expected 0 (no mark) or a number of entries")
        if self.redis_wait_replicas < 0:
            raise ConfigError("--redis-wait-replicas: expected 0 (no wait) or more")
        if not 0 < self.redis_wait_timeout <= 60:
            raise ConfigError("--redis-wait-timeout: expected seconds > 0, at most 60")
        if not 1 <= self.stream_replicas <= 5:  # JetStream's own bounds
            raise ConfigError(f"--stream-replicas: {self.stream_replicas} (expected 1 to 5)")
