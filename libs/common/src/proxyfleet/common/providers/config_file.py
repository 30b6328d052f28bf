"""The providers config file: parsed strictly, with errors that name file, key and expectation.

`providers:` entries convert to the union of the installed types' structs (tagged by
`type`), so no type is named here. Pure: `parse_providers_config(text, path)` does no I/O;
`load_providers_config(path)` reads.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar, Union, overload

import msgspec
import yaml

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.domain import strict_yaml
from proxyfleet.common.domain.pool_spec import PoolName, PoolSpec, parse_pools
from proxyfleet.common.providers.config import ProviderConfig, type_name
from proxyfleet.common.providers.provider_type import ProviderType
from proxyfleet.common.providers.registry import ENTRY_POINT_GROUP, provider_types

C = TypeVar("C", bound=ProviderConfig)
_MISSING = re.compile(r"Object missing required field `(?P<field>[^`]+)`")
_ENTRY = re.compile(r"providers\[(?P<i>\d+)\]")
_KEY = re.compile(r"key (?P<key>providers\[\d+\][^:\s]*)")


class ProvidersConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    providers: list[ProviderConfig]
    pools: dict[PoolName, PoolSpec] = {}
    """Pools kept from this file, by name (docs/pools.md): applied by the pool controller
    at every start, owned by the file (the API refuses to change them); checked against
    the providers by `pool_checks.check_config_pools`."""

    @overload
    def get(self, name: str) -> ProviderConfig: ...
    @overload
    def get(self, name: str, config: type[C]) -> C: ...
    def get(self, name: str, config: type[ProviderConfig] = ProviderConfig) -> ProviderConfig:
        """The instance `name` (KeyError), which must be a `config` (TypeError)."""
        for p in self.providers:
            if p.name == name:
                if not isinstance(p, config):
                    raise TypeError(f"provider {name!r} is of type {p.type!r}")
                return p
        raise KeyError(name)

    def of_type(self, name: str, config: type[C], path: str) -> C:
        """The instance `name`, which must be a `config` (ConfigError naming `path`)."""
        try:
            return self.get(name, config)
        except KeyError:
            names = ", ".join(p.name for p in self.providers)
            raise ConfigError(f"{path}: no provider named {name!r} (found: {names})") from None
        except TypeError as exc:
            raise ConfigError(f"{path}: {exc}, not {type_name(config)!r}") from None


def parse_providers_config(text: str | bytes, path: str) -> ProvidersConfig:
    try:
        data = strict_yaml.load(text)
    except strict_yaml.DuplicateKey as exc:
        raise ConfigError(f"{path}: {exc}; expected each key once") from None
    except (yaml.YAMLError, ValueError, LookupError, AttributeError) as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    pools = data.pop("pools", None) if isinstance(data, dict) else None
    types = provider_types()
    _check_types(data, path, types)
    try:
        document = msgspec.convert(data, _document(tuple(t.config for t in types.values())))
    except msgspec.ValidationError as exc:
        raise ConfigError(_explain(path, str(exc), data)) from None
    cfg = ProvidersConfig(providers=list(document.providers), pools=parse_pools(pools, path))
    try:
        _check_semantics(cfg, path, types)
    except ConfigError as exc:
        raise ConfigError(_with_line(str(exc), path, text)) from None
    return cfg


def load_providers_config(path: str) -> ProvidersConfig:
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the providers config: {exc.strerror}") from None
    return parse_providers_config(text, path)


def load_provider(path: str, name: str, config: type[C]) -> C:
    """The instance `name` of the config file at `path`, which must be a `config`."""
    return load_providers_config(path).of_type(name, config, path)


@functools.lru_cache(maxsize=8)
def _document(configs: tuple[type[ProviderConfig], ...]) -> Any:
    """The file's struct for these types: `providers` a list of their tagged union."""
    if not configs:
        raise ConfigError(f"no provider type is installed (entry points {ENTRY_POINT_GROUP})")
    entry = Union[configs]  # type: ignore[valid-type]  # noqa: UP007 (built at runtime)
    fields = [("providers", list[entry])]
    return msgspec.defstruct("ProvidersFile", fields, forbid_unknown_fields=True, kw_only=True)


def _check_types(data: object, path: str, types: Mapping[str, ProviderType[Any]]) -> None:
    """An entry's type must be installed: said before conversion, which would only call
    it an invalid value (an entry without `type` is msgspec's to name)."""
    for i, entry in enumerate(_entries(data)):
        name = entry.get("type") if isinstance(entry, dict) else None
        if isinstance(name, str) and name not in types:
            raise ConfigError(
                f"{path}: key providers[{i}].type: provider type {name!r} is not available"
                " in this release"
            )


def _entries(data: object) -> list[Any]:
    entries = data.get("providers") if isinstance(data, dict) else None
    return entries if isinstance(entries, list) else []


def _explain(path: str, message: str, data: object) -> str:
    """msgspec says `Expected int, got str - at `$.providers[0].zones``: name the key; a
    missing section is named as required for the entry's type."""
    where, what = strict_yaml.located(message)
    if what == message:
        return f"{path}: {message}"
    missing, entry = _MISSING.fullmatch(what), _ENTRY.fullmatch(where)
    if missing and entry:
        section, found = missing["field"], _entries(data)[int(entry["i"])]
        if isinstance(found, dict) and found.get("type") == section:
            return f"{path}: key {where}.{section}: required for type {section!r}"
    return f"{path}: key {where or '(top level)'}: {what}"


def _with_line(message: str, path: str, text: str | bytes) -> str:
    """A check's message with the line of the key it names (a list item: which line of
    the list), so an entry's own list (a static provider's proxies) points at the line."""
    found = _KEY.match(message, len(path) + 2) if message.startswith(f"{path}: ") else None
    line = strict_yaml.line_of(text, found["key"]) if found else None
    return f"{message} (line {line})" if line else message


def _check_semantics(
    cfg: ProvidersConfig, path: str, types: Mapping[str, ProviderType[Any]]
) -> None:
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
        if dup := next((z for i, z in enumerate(p.zones) if z in p.zones[:i]), None):
            raise ConfigError(f"{where}.zones: zone {dup!r} listed twice; expected each once")
        types[p.type].check(p, where)
