"""A pool spec checked against the providers config: its providers exist, its zones are
served, its size fits their `max_proxies`, its placement is one they take. Shared by the
API (a 400 naming the field), the providers config's `pools:` section (exit 2 naming file
and key) and the Kubernetes operator (a condition on the resource). Pure: no I/O."""

from __future__ import annotations

from proxyfleet.common.core.errors import ConfigError, InvalidInput
from proxyfleet.common.domain.pool_spec import PoolSpec, SpecProblem, spec_problem
from proxyfleet.common.providers.config import ProviderConfig
from proxyfleet.common.providers.config_file import ProvidersConfig
from proxyfleet.common.providers.registry import validator_for


def pool_problem(spec: PoolSpec, config: ProvidersConfig) -> SpecProblem | None:
    """The first reason `spec` cannot be a pool under `config` (none: None)."""
    if (problem := spec_problem(spec)) is not None:
        return problem
    providers: list[ProviderConfig] = []
    for i, p in enumerate(spec.weighted()):
        field = "provider" if spec.provider is not None else f"providers[{i}].name"
        try:
            providers.append(config.get(p.name))
        except KeyError:
            known = ", ".join(c.name for c in config.providers)
            return SpecProblem(field, f"unknown provider {p.name!r} (known: {known})")
    served = {z for p in providers for z in p.zones}
    for i, zone in enumerate(spec.zones):
        if zone not in served:
            return SpecProblem(
                f"zones[{i}]", f"zone {zone!r} is served by none of the pool's providers "
                f"(they serve: {', '.join(sorted(served))})",
            )  # fmt: skip
    limits = [p.max_proxies for p in providers]
    if all(limit is not None for limit in limits):
        room = sum(limit for limit in limits if limit is not None)
        need = spec.most_members()
        if need > room:
            field = "autoscale.max" if spec.autoscale is not None else "size"
            return SpecProblem(
                field, f"{need} members need more than the providers' max_proxies ({room})"
            )
    for provider in providers:
        try:
            validator_for(provider.type).validate(provider, spec.placement)
        except InvalidInput as exc:
            return SpecProblem("placement", str(exc))
    return None


def check_pool(name: str, spec: PoolSpec, config: ProvidersConfig) -> None:
    """InvalidInput (code invalid_pool) naming the field, for the API."""
    if (problem := pool_problem(spec, config)) is not None:
        raise InvalidInput(f"pool {name}: {problem}", code="invalid_pool")


def check_config_pools(config: ProvidersConfig, path: str) -> None:
    """ConfigError naming the file and key of the first bad pool of `config.pools` (a name
    given twice is refused as a duplicate key when the file is read)."""
    for name, spec in config.pools.items():
        if (problem := pool_problem(spec, config)) is not None:
            raise ConfigError(f"{path}: key pools.{name}.{problem.field}: {problem.message}")
