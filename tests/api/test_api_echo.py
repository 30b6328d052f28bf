"""GET /echo: the caller's address for health's probes (no token, never cached), and
X-Forwarded-For believed only from the trusted proxies."""

from __future__ import annotations

import ipaddress

import pytest
from tests.api.helpers import Api, ApiFactory, api_settings

from proxyfleet.api.http.forwarded import caller_address, parse_trusted
from proxyfleet.common.core.errors import ConfigError


async def test_echo_answers_the_callers_address_without_a_token(api: Api) -> None:
    r = await api.anon.get("/echo", headers={"X-Forwarded-For": "203.0.113.9"})
    assert r.status_code == 200
    assert r.json() == {"ip": "127.0.0.1"}  # no trusted proxy: the header is not believed
    assert r.headers["content-type"].startswith("application/json")
    assert r.headers["cache-control"] == "no-store"


async def test_echo_believes_forwarded_for_from_a_trusted_proxy(start_api: ApiFactory) -> None:
    api = await start_api(echo_trusted_proxy=("127.0.0.0/8", "10.0.0.0/8"))
    chain = "198.51.100.1, 203.0.113.9, 10.1.2.3"  # forged, the client, a trusted hop
    r = await api.anon.get("/echo", headers={"X-Forwarded-For": chain})
    assert r.json() == {"ip": "203.0.113.9"}
    assert (await api.anon.get("/echo")).json() == {"ip": "127.0.0.1"}


async def test_openapi_documents_echo(api: Api) -> None:
    doc = (await api.anon.get("/schema/openapi.json")).json()
    echo = doc["paths"]["/echo"]["get"]
    assert "security" not in echo or echo["security"] == []
    schema = echo["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema["$ref"].endswith("/Echo")
    assert "ip" in doc["components"]["schemas"]["Echo"]["properties"]


TRUSTED = parse_trusted(["10.0.0.0/8", "2001:db8::/32"])


@pytest.mark.parametrize(
    ("peer", "forwarded", "expected"),
    [
        ("192.0.2.1", "203.0.113.9", "192.0.2.1"),  # untrusted peer: header ignored
        ("10.0.0.1", "203.0.113.9", "203.0.113.9"),
        ("10.0.0.1", "1.1.1.1, 203.0.113.9, 10.0.0.2", "203.0.113.9"),
        ("10.0.0.1", "", "10.0.0.1"),  # a trusted peer that forwarded nothing
        ("10.0.0.1", "10.0.0.3", "10.0.0.3"),  # an internal caller
        ("10.0.0.1", "203.0.113.9, junk", ""),
        ("::ffff:10.0.0.1", "::ffff:203.0.113.9", "203.0.113.9"),
        ("2001:db8::1", "2001:DB8:1::5", "2001:db8:1::5"),
        ("", "203.0.113.9", ""),
    ],
)
def test_caller_address(peer: str, forwarded: str, expected: str) -> None:
    assert caller_address(peer, forwarded, TRUSTED) == expected


def test_bad_trusted_cidr_is_refused(redis_url: str, nats_url: str) -> None:
    with pytest.raises(ConfigError, match="--echo-trusted-proxy"):
        api_settings(redis_url, nats_url, echo_trusted_proxy=("10.0.0.0/33",)).check()
    assert parse_trusted([" 10.0.0.0/8 "]) == (ipaddress.ip_network("10.0.0.0/8"),)
