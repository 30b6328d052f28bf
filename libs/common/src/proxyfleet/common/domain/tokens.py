"""Named API tokens (`name:secret`) and the caller they identify. Pure: no Litestar here, so
the domain services can take a `Principal`.

The name identifies a caller in logs, lease records and events; the secret is what a
client sends as its bearer token and never leaves this module's objects (repr hides it).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from proxyfleet.common.core.errors import ConfigError

MIN_SECRET_CHARS = 16
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
INSECURE_NAME = "insecure-dev"
"""The caller's name when the API runs with --insecure-dev (every caller is admin)."""


class Scope(enum.StrEnum):
    ADMIN = "admin"
    CLIENT = "client"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the token's name and scope."""

    name: str
    scope: Scope

    @property
    def is_admin(self) -> bool:
        return self.scope is Scope.ADMIN

    @property
    def lease_owner(self) -> str:
        """The owner a lease operation is restricted to: the caller's name, or "" for an
        admin, who may act on any client's lease (an operator ending a stuck lease)."""
        return "" if self.is_admin else self.name


@dataclass(frozen=True, slots=True)
class NamedToken:
    name: str
    scope: Scope
    secret: str = field(repr=False)


def parse_tokens(admin: tuple[str, ...], client: tuple[str, ...]) -> tuple[NamedToken, ...]:
    """Every configured token; ConfigError naming the flag (never the secret) when a value
    is not `name:secret`, a secret is shorter than 16 characters, or a name or a secret is
    used twice."""
    out: list[NamedToken] = []
    for flag, scope, values in (
        ("--admin-token", Scope.ADMIN, admin),
        ("--client-token", Scope.CLIENT, client),
    ):
        for i, value in enumerate(values, 1):
            out.append(_parse_one(flag, i, scope, value))
    names: dict[str, NamedToken] = {}
    secrets: dict[str, NamedToken] = {}
    for t in out:
        if t.name in names:
            raise ConfigError(f"{_flag(t)}: the token name {t.name!r} is used twice")
        if t.secret in secrets:
            raise ConfigError(
                f"{_flag(t)}: tokens {secrets[t.secret].name!r} and {t.name!r} have the same "
                "secret; give each its own"
            )
        names[t.name] = secrets[t.secret] = t
    return tuple(out)


def _flag(t: NamedToken) -> str:
    return "--admin-token" if t.scope is Scope.ADMIN else "--client-token"


def _parse_one(flag: str, index: int, scope: Scope, value: str) -> NamedToken:
    where = f"{flag} (value {index})"
    name, sep, secret = value.strip().partition(":")
    if not sep:
        raise ConfigError(
            f"{where}: expected name:secret (e.g. crawler:<secret of {MIN_SECRET_CHARS}+ "
            "characters>); the value has no ':'"
        )
    if not NAME.fullmatch(name):
        raise ConfigError(
            f"{where}: the token name must be 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    if len(secret) < MIN_SECRET_CHARS or secret != secret.strip():
        raise ConfigError(
            f"{where}: the secret of token {name!r} must be at least {MIN_SECRET_CHARS} "
            f"characters without surrounding spaces (got {len(secret)})"
        )
    return NamedToken(name, scope, secret)
