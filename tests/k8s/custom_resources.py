"""What the custom-resource tests of the fake API server share: the ProxyPool CRD's names,
a resource body, and the client calls they read untyped (plain JSON)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from proxyfleet.pool_operator import crd

NS = "team-a"
GROUP, VERSION, PLURAL = crd.GROUP, crd.VERSION, crd.PLURAL
Api = Any
"""The client's CustomObjectsApi, read untyped (its answers are plain JSON)."""


def extensions(api_client: client.ApiClient) -> Api:
    """The client's ApiextensionsV1Api, untyped: it takes the CRD as plain JSON."""
    return client.ApiextensionsV1Api(api_client)


def pool(name: str = "eu", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": crd.API_VERSION,
        "kind": crd.KIND,
        "metadata": {"name": name},
        "spec": {"provider": "local", "size": 2, **spec},
    }


def create(api: Api, body: dict[str, Any]) -> dict[str, Any]:
    made: dict[str, Any] = api.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, body)
    return made


def status_of(exc: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.value.body or "{}")
    return body


def get_json(api_client: client.ApiClient, path: str) -> Any:
    resp = httpx.get(api_client.configuration.host + path, timeout=10)
    resp.raise_for_status()
    return resp.json()
