"""The sample ProxyPools (deploy/kubernetes/samples): one per provider type, each valid
against the CRD's schema (the fake API server's check: nothing pruned, nothing refused)
and against pool_checks with the providers config of the overlay that has that type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.deploy.kube import DEPLOY, providers_text, render
from tests.k8s.fake_kube import structural

from proxyfleet.common.providers import parse_providers_config
from proxyfleet.pool_operator import crd
from proxyfleet.pool_operator.spec import read_spec

SAMPLES = DEPLOY / "kubernetes" / "samples"
OVERLAY_OF_TYPE = {
    "local": "kubernetes",
    "kvm": "kubernetes-kvm",
    "gcp": "kubernetes-gcp",
    "kubernetes": "kubernetes-dev",
}
"""The overlay whose providers config has a provider of each type."""


def _sample(path: Path) -> dict[str, Any]:
    (doc,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
    found: dict[str, Any] = doc
    return found


def test_there_is_one_sample_per_provider_type() -> None:
    assert sorted(p.name for p in SAMPLES.glob("*.yaml")) == sorted(
        f"proxypool-{kind}.yaml" for kind in OVERLAY_OF_TYPE
    )


@pytest.mark.parametrize("kind", sorted(OVERLAY_OF_TYPE))
def test_a_sample_passes_the_crd_schema_and_the_pool_checks(kind: str) -> None:
    doc = _sample(SAMPLES / f"proxypool-{kind}.yaml")
    assert (doc["apiVersion"], doc["kind"]) == (crd.API_VERSION, crd.KIND)
    assert "namespace" not in doc["metadata"]  # applied to the operator's namespace
    schema = crd.schema()
    pruned, dropped = structural.prune(schema, doc)
    assert dropped == []
    assert structural.validate(schema, pruned) == []
    config = parse_providers_config(providers_text(render(OVERLAY_OF_TYPE[kind])), "providers")
    spec = read_spec(doc["metadata"]["name"], doc["spec"], config)
    types = {config.get(p.name).type for p in spec.weighted()}
    assert types == {kind}


def test_the_schema_check_can_fail() -> None:
    doc = _sample(SAMPLES / "proxypool-local.yaml")
    doc["spec"]["size"] = "three"
    doc["spec"]["sise"] = 3
    pruned, dropped = structural.prune(crd.schema(), doc)
    assert dropped == ["spec.sise"]
    assert [c.field for c in structural.validate(crd.schema(), pruned)] == ["spec.size"]
