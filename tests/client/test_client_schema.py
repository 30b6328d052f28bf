"""The client's models against the API's own OpenAPI document: every field a model reads
is one the API declares, and every field the API always sends is one the model has (or
the model's default stands in for it)."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec
import pytest
from tests.client.conftest import LiveApi

from proxyfleet.client import models

MODEL_OF_SCHEMA: dict[str, type[msgspec.Struct]] = {
    "GrantedLease": models.Lease,
    "LeasedProxy": models.LeasedProxy,
    "LeaseOut": models.LeaseState,
    "LeasePage": models.LeasePage,
    "RenewedLease": models.RenewedLease,
    "ReportedLease": models.ReportedLease,
    "ReleasedLease": models.ReleasedLease,
    "ProxyOut": models.Proxy,
    "ProxyPage": models.ProxyPage,
    "ProxyBatch": models.ProxyBatch,
    "ProviderOut": models.Provider,
    "ProviderList": models.ProviderList,
    "ProviderEntryOut": models.ProviderEntry,
    "ProviderEntryList": models.ProviderEntryList,
    "PoolRecord": models.Pool,
    "PoolStatus": models.PoolStatus,
    "PoolList": models.PoolList,
    "Condition": models.PoolCondition,
    "Decision": models.PoolDecision,
    "KeptProxies": models.KeptProxies,
}


@pytest.fixture
def schemas(live_api: LiveApi) -> dict[str, Any]:
    document = httpx.get(f"{live_api.url}/schema/openapi.json", timeout=10).json()
    found: dict[str, Any] = document["components"]["schemas"]
    return found


@pytest.mark.parametrize("schema_name", sorted(MODEL_OF_SCHEMA))
def test_models_match_the_api_schema(schemas: dict[str, Any], schema_name: str) -> None:
    model = MODEL_OF_SCHEMA[schema_name]
    schema = schemas[schema_name]
    declared = set(schema["properties"])
    fields = set(model.__struct_fields__)
    assert fields <= declared, f"{model.__name__} reads fields the API lacks: {fields - declared}"
    assert set(schema.get("required", [])) <= fields, (
        f"{model.__name__} drops fields the API always sends: "
        f"{set(schema.get('required', [])) - fields}"
    )
