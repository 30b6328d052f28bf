"""HEAD on the API's GET routes: the GET's status and headers without its body (the
event stream too, which would never end as a GET), and HEAD in every Allow beside GET."""

from __future__ import annotations

import asyncio

import pytest
from tests.api.helpers import Api, ready_proxy

from proxyfleet.api.metrics import EVENT_STREAMS


def _open_streams() -> float:
    (metric,) = EVENT_STREAMS.collect()
    return float(metric.samples[0].value)


@pytest.mark.parametrize("path", ["/v1/proxies", "/v1/proxies/p1", "/healthz", "/v1/nothing"])
async def test_head_answers_as_get_without_the_body(api: Api, path: str) -> None:
    await ready_proxy(api, "p1")
    got = await api.admin.get(path)
    head = await api.admin.head(path)
    assert head.status_code == got.status_code
    assert head.content == b""
    assert head.headers["content-length"] == str(len(got.content))
    assert head.headers["content-type"] == got.headers["content-type"]


async def test_head_on_the_event_stream_ends_once_its_head_is_out(api: Api) -> None:
    before = _open_streams()
    async with asyncio.timeout(5):
        head = await api.client.head("/v1/events")
    assert head.status_code == 200
    assert head.headers["content-type"].startswith("text/event-stream")
    assert head.content == b""
    for _ in range(100):  # the stream the GET opened is closed too
        if _open_streams() == before:
            break
        await asyncio.sleep(0.05)
    assert _open_streams() == before


async def test_head_needs_the_same_token_as_get(api: Api) -> None:
    assert (await api.anon.head("/v1/proxies")).status_code == 401


async def test_head_where_there_is_no_get_is_a_405_without_head_in_its_allow(api: Api) -> None:
    r = await api.admin.head("/v1/leases/l1/renew")
    assert r.status_code == 405
    assert r.headers["allow"] == "OPTIONS, POST"


@pytest.mark.parametrize(
    ("path", "allowed"),
    [("/v1/leases/l1/renew", "OPTIONS, POST"), ("/v1/proxies/p1", "DELETE, GET, HEAD, OPTIONS")],
)
async def test_allow_lists_head_beside_get(api: Api, path: str, allowed: str) -> None:
    assert (await api.admin.options(path)).headers["allow"] == allowed
    r = await api.admin.put(path)
    assert r.status_code == 405
    assert r.headers["allow"] == allowed
