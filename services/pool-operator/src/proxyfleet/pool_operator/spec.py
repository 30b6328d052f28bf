"""A ProxyPool resource's name and spec read as a pool: the same PoolSpec, the same checks
against the providers config as the API and the config file apply (pool_checks), and the
same field names in the answer. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from proxyfleet.common.domain.pool_spec import PoolName, PoolSpec, SpecProblem
from proxyfleet.common.domain.strict_yaml import located
from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.common.providers.pool_checks import pool_problem


def owner_ref(namespace: str, name: str) -> str:
    """How a pool names the resource that declares it."""
    return f"{namespace}/{name}"


def read_spec(name: str, raw: Mapping[str, Any] | None, config: ProvidersConfig) -> PoolSpec:
    """The pool `raw` declares under the name `name`, or SpecProblem naming the field as
    the resource spells it (`spec.autoscale.max`, `metadata.name`)."""
    try:
        msgspec.convert(name, PoolName)
    except msgspec.ValidationError:
        raise SpecProblem(
            "metadata.name", f"{name!r} cannot name a pool: expected 1-63 lowercase letters, "
            "digits and '-', starting with a letter and not ending with '-'",
        ) from None  # fmt: skip
    try:
        spec = msgspec.convert(dict(raw or {}), PoolSpec)
    except msgspec.ValidationError as exc:
        where, what = located(str(exc))
        raise SpecProblem(f"spec.{where}" if where else "spec", what) from None
    if (problem := pool_problem(spec, config)) is not None:
        raise SpecProblem(f"spec.{problem.field}", problem.message)
    return spec
