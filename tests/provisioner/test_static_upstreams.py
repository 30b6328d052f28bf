"""The static provider over real upstreams (tests/upstreams): a SOCKS5 server (microsocks,
with authentication), Squid's https_port, and a vendor's rotating gateway stand-in. What
it registers is exactly what reaches each of them: curl, given the registry's proxy URL
(scheme and credentials), gets the `target` page out of the upstream's own exit; each
vendor proxy is a session of its own, and a proxy a pool makes is a new one (a new exit).
Health is not part of it: the proxies are followed to booting, then dialled by curl."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest
from tests.conftest import TargetServer
from tests.upstreams.curl import fetch_target
from tests.upstreams.socks5 import Socks5Upstream
from tests.upstreams.tls_proxy import TlsUpstream
from tests.upstreams.vendor_gateway import VendorGateway

from proxyfleet.common.domain.lifecycle import pending_proxy
from proxyfleet.common.observability.logging import configure_logging
from proxyfleet.common.store import ProxyRegistry
from proxyfleet.common.wire.models import Phase, Proxy, Scheme

from .helpers import wait_for_phase, wait_until
from .static_fixtures import StartStatic, events, line_id, start_static, static_entry

__all__ = ["events", "start_static"]  # fixtures


async def seen_ip(target: TargetServer, proxy: Proxy, ca_file: str = "") -> str:
    """The exit the target saw through the proxy's URL as the registry has it."""
    args = ["--proxy", proxy.url()]
    if ca_file:
        args += ["--proxy-cacert", ca_file]
    return (await asyncio.to_thread(fetch_target, target, *args)).seen_ip()


async def test_socks5_and_tls_upstreams_from_a_file_are_reached_as_registered(
    socks5_upstream: Socks5Upstream,
    tls_upstream: TlsUpstream,
    target: TargetServer,
    start_static: StartStatic,
    registry: ProxyRegistry,
    provider_name: str,
    tmp_path: Path,
) -> None:
    socks, tls = socks5_upstream, tls_upstream
    lines = [
        socks.url("socks5"),
        socks.url("socks5h"),
        tls.url("https"),
        f"{socks.host}:{socks.port}:{socks.username}x:{socks.password}",  # the source's scheme
    ]
    path = tmp_path / "upstreams.txt"
    path.write_text("\n".join(lines) + "\n")
    source = f"{{file: '{path}', scheme: socks5h}}"
    await start_static(static_entry(provider_name, f"sources: [{source}]"))
    ids = [line_id(provider_name, x, Scheme.SOCKS5H) for x in lines]
    proxies = [await wait_for_phase(registry, i, Phase.BOOTING) for i in ids]
    assert [p.scheme for p in proxies] == [
        Scheme.SOCKS5,
        Scheme.SOCKS5H,
        Scheme.HTTPS,
        Scheme.SOCKS5H,
    ]
    assert await seen_ip(target, proxies[0]) == socks.exit_address
    assert await seen_ip(target, proxies[1]) == socks.exit_address
    assert await seen_ip(target, proxies[2], tls.ca_file) == tls.exit_address
    # The last line's username is not the server's: registered as given, refused there.
    refused = await asyncio.to_thread(fetch_target, target, "--proxy", proxies[3].url())
    assert refused.code != 0


async def test_each_vendor_proxy_is_a_session_of_its_own_and_a_new_one_a_new_exit(
    vendor_gateway: VendorGateway,
    target: TargetServer,
    start_static: StartStatic,
    registry: ProxyRegistry,
    provider_name: str,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    configure_logging("test", "debug", "json")
    caplog.set_level(logging.DEBUG)
    gw = vendor_gateway
    vendor = f"""
vendor:
  endpoint: http://{gw.host}:{gw.port}
  username: customer-{gw.customer}-session-{{session}}-country-{{country}}
  password: "{gw.password}"
  sessions: 3
  params: {{country: de}}
"""
    await start_static(static_entry(provider_name, vendor))

    async def ours() -> list[Proxy]:
        page, _ = await registry.provider_page(provider_name, phase=Phase.BOOTING)
        return page

    async def three() -> bool:
        return len(await ours()) == 3

    await wait_until(three, what="three vendor sessions booting")
    sessions = await ours()
    exits = [await seen_ip(target, p) for p in sessions]
    assert len(set(exits)) == 3
    assert sorted(s.exit_address for s in gw.sessions().values()) == sorted(exits)
    assert {s.country for s in gw.sessions().values()} == {"de"}
    assert exits == [await seen_ip(target, p) for p in sessions]  # sticky

    # A pool's new member (a recycled one's replacement) gets a new session: a new exit.
    member = pending_proxy(provider_name, "z1", time.time())
    assert await registry.create(member)
    made = await wait_for_phase(registry, member.id, Phase.BOOTING)
    assert await seen_ip(target, made) not in exits
    assert len(gw.sessions()) == 4
    logged = capsys.readouterr().out + "\n".join(r.getMessage() for r in caplog.records)
    assert "static.proxies_added" in logged
    assert gw.password not in logged
    assert not [p.username for p in [*sessions, made] if p.username in logged]
