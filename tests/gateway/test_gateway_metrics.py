"""The gateway's metrics move with real traffic: tunnels by outcome, bytes each way, the
upstream connect latency, open tunnels and active sessions back to zero once closed."""

from __future__ import annotations

from prometheus_client import REGISTRY
from tests.conftest import TargetServer
from tests.gateway.conftest import StartGateway, connect_head, curl, eventually, raw_request


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_metrics_follow_the_traffic(
    start_gateway: StartGateway, fleet: dict[str, int], target: TargetServer
) -> None:
    gw = await start_gateway(cooldown=0.0)
    before = {
        "ok": _value("proxyfleet_gateway_tunnels_total", outcome="ok"),
        "bad": _value("proxyfleet_gateway_tunnels_total", outcome="bad_request"),
        "down": _value("proxyfleet_gateway_bytes_total", direction="down"),
        "up": _value("proxyfleet_gateway_bytes_total", direction="up"),
        "connects": _value("proxyfleet_gateway_upstream_connect_seconds_count", result="ok"),
        "grants": _value("proxyfleet_gateway_grant_seconds_count", result="ok"),
    }
    got = await curl(gw.url(), target.url, ca_file=target.ca_file)
    assert got.code == 0, got.stderr
    bad = await raw_request(gw.port, connect_head("127.0.0.1:1", username="c-zone-"))
    bad.close()
    session = await raw_request(gw.port, connect_head(f"127.0.0.1:{target.port}", "c-session-m"))
    assert session.status == 200
    await eventually(lambda: _value("proxyfleet_gateway_sessions_active") == 1)
    assert _value("proxyfleet_gateway_open_tunnels") == 1
    session.close()
    await eventually(lambda: _value("proxyfleet_gateway_open_tunnels") == 0)
    assert _value("proxyfleet_gateway_sessions_active") == 0
    assert _value("proxyfleet_gateway_tunnels_total", outcome="ok") == before["ok"] + 2
    assert _value("proxyfleet_gateway_tunnels_total", outcome="bad_request") == before["bad"] + 1
    # a TLS handshake and a page went each way
    assert _value("proxyfleet_gateway_bytes_total", direction="down") > before["down"] + 1000
    assert _value("proxyfleet_gateway_bytes_total", direction="up") > before["up"] + 100
    assert (
        _value("proxyfleet_gateway_upstream_connect_seconds_count", result="ok")
        == before["connects"] + 2
    )
    assert _value("proxyfleet_gateway_grant_seconds_count", result="ok") == before["grants"] + 2
