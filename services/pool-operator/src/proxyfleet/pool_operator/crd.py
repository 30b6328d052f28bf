"""The ProxyPool CustomResourceDefinition, generated from the code: its spec is PoolSpec (the
same field names as the API's PUT body and the providers config's `pools:` section), its
status ProxyPoolStatus. Pure but for `main`, which writes it:

    make crd     # python -m proxyfleet.pool_operator.crd: deploy/kubernetes/core/proxypool-crd.yaml
    python -m proxyfleet.pool_operator.crd --check    # exit 1 when the file is stale

The `scale` subresource maps replicas to spec.size and ready members to status.ready, so
`kubectl scale proxypool/eu --replicas 20` and a HorizontalPodAutoscaler change the size.
"""

from __future__ import annotations

import argparse
import sys
import typing
from pathlib import Path
from typing import Any

import yaml

from proxyfleet.common.domain.pool_spec import PoolName, PoolSpec
from proxyfleet.pool_operator.openapi import structural
from proxyfleet.pool_operator.status import ProxyPoolStatus

GROUP = "proxyfleet.io"
VERSION = "v1alpha1"
KIND = "ProxyPool"
PLURAL = "proxypools"
SINGULAR = "proxypool"
SHORT_NAMES = ["ppool"]
NAME = f"{PLURAL}.{GROUP}"
API_VERSION = f"{GROUP}/{VERSION}"
DOCUMENT = Path("deploy/kubernetes/core/proxypool-crd.yaml")
COMMAND = "make crd"
SPEC_REPLICAS = ".spec.size"
STATUS_REPLICAS = ".status.ready"
LABEL_SELECTOR = ".status.selector"

_HEADER = f"""\
# The ProxyPool custom resource: a Proxyfleet pool declared in Kubernetes, reconciled by
# proxyfleet-pool-operator (pool-operator.yaml; docs/pools-kubernetes.md).
# Generated from the code by `{COMMAND}`; do not edit by hand
# (tests/pool_operator/test_crd.py fails when this file is stale).
"""


def _name_schema() -> dict[str, Any]:
    """metadata.name: a pool's name (the one constraint a CRD may put on metadata)."""
    (meta,) = typing.get_args(PoolName)[1:]
    return {
        "type": "string",
        "description": f"The pool's name: {meta.description}.",
        "pattern": meta.pattern,
        "maxLength": 63,
    }


def schema() -> dict[str, Any]:
    """The openAPIV3Schema of the one version."""
    spec = structural(PoolSpec)
    spec["description"] = (
        "The pool as declared: the same fields as the API's PUT /v1/pools/{name} body and "
        "the providers config's pools: section. " + spec.get("description", "")
    ).strip()
    status = structural(ProxyPoolStatus, defaults=False)
    return {
        "type": "object",
        "description": "A pool of interchangeable proxies that Proxyfleet keeps at its size.",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object", "properties": {"name": _name_schema()}},
            "spec": spec,
            "status": status,
        },
    }


def crd() -> dict[str, Any]:
    columns = [
        {"name": "Desired", "type": "integer", "jsonPath": ".status.desired",
         "description": "The size the controller keeps now"},
        {"name": "Ready", "type": "integer", "jsonPath": STATUS_REPLICAS,
         "description": "Ready members in rotation"},
        {"name": "Leased", "type": "integer", "jsonPath": ".status.leased",
         "description": "Members under a lease"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]  # fmt: skip
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": NAME,
            "labels": {
                "app.kubernetes.io/name": "proxyfleet",
                "app.kubernetes.io/component": "pool-operator",
            },
        },
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": SINGULAR,
                "shortNames": SHORT_NAMES,
                "categories": ["proxyfleet"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema()},
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": SPEC_REPLICAS,
                            "statusReplicasPath": STATUS_REPLICAS,
                            "labelSelectorPath": LABEL_SELECTOR,
                        },
                    },
                    "additionalPrinterColumns": columns,
                }
            ],
        },
    }


def render() -> str:
    return _HEADER + yaml.safe_dump(crd(), sort_keys=False, allow_unicode=True, width=100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m proxyfleet.pool_operator.crd", description="Write the ProxyPool CRD."
    )
    parser.add_argument("target", nargs="?", type=Path, default=DOCUMENT, help="output file")
    parser.add_argument("--check", action="store_true", help="exit 1 when the file differs")
    args = parser.parse_args(argv)
    target: Path = args.target
    if args.check:
        current = target.read_text() if target.exists() else ""
        if current != render():
            print(f"{target} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    target.write_text(render())
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
