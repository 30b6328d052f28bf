"""The providers config file: parsed strictly, with errors that name file, key and expectation.

Pure: `parse_providers_config(text, path)` does no I/O; `load_providers_config(path)` reads.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from proxyfleet.common.errors import ConfigError

Name = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9-]{0,30}$")]
Zone = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")]
Port = Annotated[int, msgspec.Meta(ge=1, le=65535)]
Seconds = Annotated[float, msgspec.Meta(gt=0)]


class _Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class LocalSettings(_Strict):
    """A proxy is a real proxy process on this machine."""

    state_dir: str = ".dev/local-proxies"
    """Where each proxy's config, credentials and pid live (one folder per proxy)."""
    bind_host: str = "127.0.0.1"
    """Address the proxy processes listen on."""
    port_range: tuple[Port, Port] = (20000, 29999)
    """Ports handed to proxy processes."""
    engine: Literal["auto", "squid", "proxy.py"] = "auto"
    """auto: Squid when installed, else proxy.py."""
    connect_ports: list[Port] = msgspec.field(default_factory=lambda: [443])
    """Destination ports CONNECT may reach (add the dev HTTPS target's port)."""


class ProviderConfig(_Strict):
    name: Name
    """Instance name; intents for it go to proxyfleet.intents.<name>.*"""
    type: Literal["local", "kvm", "gcp", "kubernetes"]
    zones: list[Zone]
    """Zones this instance serves; a proxy's zone must be one of them."""
    boot_timeout: Seconds = 120.0
    """A proxy not ready this long after provisioning fails."""
    local: LocalSettings | None = None


class ProvidersConfig(_Strict):
    providers: list[ProviderConfig]

    def get(self, name: str) -> ProviderConfig:
        for p in self.providers:
            if p.name == name:
                return p
        raise KeyError(name)


_TYPE_SECTION = {"local": "local"}
_LOC = re.compile(r" - at `\$(?P<loc>[^`]*)`$")


def parse_providers_config(text: str | bytes, path: str) -> ProvidersConfig:
    try:
        cfg = msgspec.yaml.decode(text, type=ProvidersConfig)
    except msgspec.ValidationError as exc:
        raise ConfigError(_explain(path, str(exc))) from None
    except msgspec.DecodeError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    _check_semantics(cfg, path)
    return cfg


def load_providers_config(path: str) -> ProvidersConfig:
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the providers config: {exc.strerror}") from None
    return parse_providers_config(text, path)


def _explain(path: str, message: str) -> str:
    """msgspec says `Expected int, got str - at `$.providers[0].zones``: name the key."""
    m = _LOC.search(message)
    if not m:
        return f"{path}: {message}"
    key = m.group("loc").lstrip(".") or "(top level)"
    what = message[: m.start()]
    return f"{path}: key {key}: {what}"


def _check_semantics(cfg: ProvidersConfig, path: str) -> None:
    seen: set[str] = set()
    if not cfg.providers:
        raise ConfigError(f"{path}: key providers: expected at least one provider")
    for i, p in enumerate(cfg.providers):
        where = f"{path}: key providers[{i}]"
        if p.name in seen:
            raise ConfigError(f"{where}.name: duplicate provider name {p.name!r}")
        seen.add(p.name)
        if not p.zones:
            raise ConfigError(f"{where}.zones: expected at least one zone")
        section = _TYPE_SECTION.get(p.type)
        if section is None:
            raise ConfigError(
                f"{where}.type: provider type {p.type!r} is not available in this release"
            )
        if getattr(p, section) is None:
            raise ConfigError(f"{where}.{section}: required for type {p.type!r}")
        if p.local is not None and p.local.port_range[0] > p.local.port_range[1]:
            raise ConfigError(f"{where}.local.port_range: expected [low, high] with low <= high")
