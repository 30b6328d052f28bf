"""The ProxyPool CRD is generated from PoolSpec and ProxyPoolStatus: the checked-in file is
what the code makes, its schema is structural, and the converter refuses what it cannot
translate rather than letting it through unchecked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from proxyfleet.common.domain.pool_spec import PoolSpec
from proxyfleet.pool_operator import crd
from proxyfleet.pool_operator.openapi import Unsupported, structural

ROOT = Path(__file__).resolve().parents[2]


def _walk(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every schema node with its path."""
    found = [(path, node)]
    for name, sub in node.get("properties", {}).items():
        found += _walk(sub, f"{path}.{name}")
    if isinstance(node.get("additionalProperties"), dict):
        found += _walk(node["additionalProperties"], f"{path}.*")
    if "items" in node:
        found += _walk(node["items"], f"{path}[]")
    return found


def test_the_checked_in_crd_is_current() -> None:
    checked_in = (ROOT / crd.DOCUMENT).read_text()
    assert checked_in == crd.render(), f"{crd.DOCUMENT} is stale: run `{crd.COMMAND}`"
    assert crd.main(["--check", str(ROOT / crd.DOCUMENT)]) == 0


def test_check_fails_on_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "crd.yaml"
    stale.write_text(crd.render().replace("maximum: 10000", "maximum: 20000"))
    assert crd.main(["--check", str(stale)]) == 1
    assert crd.main([str(stale)]) == 0
    assert crd.main(["--check", str(stale)]) == 0


def test_the_spec_has_the_pool_spec_fields_by_their_own_names() -> None:
    doc = yaml.safe_load(crd.render())
    (version,) = doc["spec"]["versions"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert list(spec["properties"]) == list(PoolSpec.__struct_fields__)
    assert spec["properties"]["size"] == {
        "description": "How many ready members the pool keeps (with autoscale: where it starts).",
        "type": "integer", "minimum": 0, "maximum": 10000, "nullable": True,
    }  # fmt: skip
    drain = spec["properties"]["drain_timeout"]
    assert (drain["minimum"], drain["exclusiveMinimum"]) == (0, True)
    assert drain["description"].endswith("Default: 600.0.")
    autoscale = spec["properties"]["autoscale"]
    assert autoscale["required"] == ["min", "max"]
    assert autoscale["nullable"] is True
    assert spec["properties"]["labels"]["additionalProperties"] == {"type": "string"}


def test_the_schema_is_structural() -> None:
    """Every node has a type; no additionalProperties beside properties; nothing but the
    keys a CRD's schema takes."""
    allowed = {
        "type", "description", "properties", "required", "items", "additionalProperties",
        "nullable", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "minLength", "maxLength", "minItems", "maxItems", "enum", "format",
    }  # fmt: skip
    root = crd.schema()
    for path, node in _walk(root):
        assert "type" in node, path
        assert set(node) <= allowed, (path, set(node) - allowed)
        assert not ("properties" in node and "additionalProperties" in node), path
    status = root["properties"]["status"]["properties"]
    condition_status = status["conditions"]["items"]["properties"]["status"]
    assert condition_status == {"type": "string", "enum": ["False", "True", "Unknown"]}
    assert status["observedGeneration"]["type"] == "integer"


def test_scale_maps_replicas_to_the_size_and_ready_members() -> None:
    (version,) = crd.crd()["spec"]["versions"]
    assert version["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.size",
            "statusReplicasPath": ".status.ready",
            "labelSelectorPath": ".status.selector",
        },
    }
    columns = [(c["name"], c["jsonPath"]) for c in version["additionalPrinterColumns"]]
    assert columns == [
        ("Desired", ".status.desired"), ("Ready", ".status.ready"),
        ("Leased", ".status.leased"), ("Age", ".metadata.creationTimestamp"),
    ]  # fmt: skip


class _Either(msgspec.Struct):
    value: int | str


class _Tagged(msgspec.Struct):
    when: float = msgspec.field(default=0.0)
    stamp: bytes = b""


def test_the_converter_refuses_what_it_cannot_translate() -> None:
    with pytest.raises(Unsupported, match="anyOf other than X-or-null"):
        structural(_Either)
    with pytest.raises(Unsupported, match="contentEncoding"):
        structural(_Tagged)
