"""The resources responder (a FastStream core subscriber in the provisioner's queue group)
on a real NATS: GC's request gets the provider's list, once, from one replica."""

from __future__ import annotations

import msgspec
import nats.errors
import pytest
from nats.aio.client import Client as NatsClient

from proxyfleet.common.core.errors import TemporaryProviderError
from proxyfleet.common.runner import ResourcesResponder
from proxyfleet.common.wire import subjects
from proxyfleet.common.wire.models import ManagedResource, Provisioned, ProxySpec, ResourceList


class ListingProvider:
    """Lists one resource (or raises `error`) and counts the calls."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.list_calls = 0

    async def create(self, spec: ProxySpec) -> Provisioned:
        raise AssertionError("not used")

    async def delete(self, proxy_id: str, resource_id: str) -> None:
        raise AssertionError("not used")

    async def list_managed(self) -> list[ManagedResource]:
        self.list_calls += 1
        if self.error:
            raise self.error
        return [
            ManagedResource(
                resource_id="res-1",
                proxy_id="p-1",
                installation_id="inst",
                created_at=1.0,
                zone="z1",
                username="u",
                password="s3cret",
            )
        ]

    async def close(self) -> None:
        return None


async def ask(nc: NatsClient, provider_name: str) -> ResourceList:
    reply = await nc.request(subjects.resources_request(provider_name), b"", timeout=5)
    return msgspec.json.decode(reply.data, type=ResourceList)


async def test_a_request_is_answered_with_the_providers_resources(
    provider_name: str, nc: NatsClient
) -> None:
    responder = ResourcesResponder(nc, ListingProvider(), provider_name)
    await responder.start()
    try:
        answer = await ask(nc, provider_name)
    finally:
        await responder.stop()
    assert answer.provider == provider_name
    assert [r.resource_id for r in answer.resources] == ["res-1"]
    assert answer.error == ""
    # GC gets no credentials; the username and zone stay (not secret)
    assert [(r.username, r.password, r.zone) for r in answer.resources] == [("u", "", "z1")]


async def test_replicas_in_the_queue_group_answer_each_request_once(
    provider_name: str, nc: NatsClient
) -> None:
    providers = [ListingProvider(), ListingProvider()]
    responders = [ResourcesResponder(nc, p, provider_name) for p in providers]
    for responder in responders:
        await responder.start()
    try:
        for _ in range(6):
            await ask(nc, provider_name)
        await nc.flush()
    finally:
        for responder in responders:
            await responder.stop()
    assert sum(p.list_calls for p in providers) == 6


async def test_a_listing_error_is_an_answer_too(provider_name: str, nc: NatsClient) -> None:
    responder = ResourcesResponder(
        nc, ListingProvider(TemporaryProviderError("quota api down")), provider_name
    )
    await responder.start()
    try:
        answer = await ask(nc, provider_name)
    finally:
        await responder.stop()
    assert (answer.resources, answer.error) == ([], "quota api down")


async def test_a_stopped_responder_leaves_the_connection_open(
    provider_name: str, nc: NatsClient
) -> None:
    responder = ResourcesResponder(nc, ListingProvider(), provider_name)
    await responder.start()
    await responder.stop()
    assert nc.is_connected
    with pytest.raises(nats.errors.NoRespondersError):
        await nc.request(subjects.resources_request(provider_name), b"", timeout=2)
