"""The static provisioner's other sources in process, with real Redis, NATS and a real
HTTP server on loopback: a URL source that answers HTML, lists nothing (the empty guard)
or goes away keeps its last load; the inline list, a vendor's sessions and the entries an
admin adds at run time are registered; a vendor proxy a pool makes gets a session of its
own through the runner. Upstreams are never dialled here (no health): bare addresses."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from proxyfleet.common.domain.lifecycle import pending_proxy
from proxyfleet.common.store import AddedEntry, ProviderEntries, ProxyRegistry
from proxyfleet.common.wire.events import EventType
from proxyfleet.common.wire.models import Phase, Proxy, Scheme
from proxyfleet.provisioner_static.pure.config import parse_entry

from .helpers import wait_for_phase, wait_until
from .static_fixtures import Events, StartStatic, events, line_id, start_static, static_entry

__all__ = ["events", "start_static"]  # fixtures


@dataclass
class Answer:
    status: int = 200
    kind: str = "text/plain"
    body: str = ""


@pytest.fixture
def list_server() -> Iterator[tuple[str, Answer, ThreadingHTTPServer]]:
    """A URL source on loopback answering whatever `Answer` says at the time."""
    answer = Answer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = answer.body.encode()
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/list.txt?token=t0k3n", answer, server
    server.shutdown()
    server.server_close()
    thread.join(5)


async def _async(value: bool) -> bool:
    return value


async def _ours(registry: ProxyRegistry, provider: str) -> list[Proxy]:
    page, _ = await registry.provider_page(provider, limit=1000)
    return page


async def test_a_url_source_keeps_its_last_load_when_it_fails_or_empties(
    list_server: tuple[str, Answer, ThreadingHTTPServer],
    start_static: StartStatic,
    registry: ProxyRegistry,
    events: Events,
    provider_name: str,
) -> None:
    url, answer, server = list_server
    answer.body = "".join(f"127.9.0.{i}:3128:u:pw{i}\n" for i in range(1, 5))
    entry = static_entry(provider_name, f"sources: [{{url: '{url}', refresh: 3600}}]")
    syncer = await start_static(entry)
    ids = [line_id(provider_name, f"127.9.0.{i}:3128:u:x") for i in range(1, 5)]
    for proxy_id in ids:
        await wait_for_phase(registry, proxy_id, Phase.BOOTING)

    async def reload_fails(reason: str) -> None:
        seen = len(events.of_type(EventType.SOURCE_LOAD_FAILED))
        syncer.hup()
        await wait_until(
            lambda: _async(len(events.of_type(EventType.SOURCE_LOAD_FAILED)) > seen),
            what=f"a failed load ({reason})",
        )
        last = events.of_type(EventType.SOURCE_LOAD_FAILED)[-1]
        assert last.data.source == "sources[0]"
        assert last.data.reason is not None
        assert reason in last.data.reason
        assert "t0k3n" not in last.data.reason
        proxies = await _ours(registry, provider_name)
        assert sorted(p.id for p in proxies if p.phase is Phase.BOOTING) == sorted(ids)
        assert not [p for p in proxies if p.withheld]

    answer.kind, answer.body = "text/html; charset=utf-8", "<html>login</html>"
    await reload_fails("answered HTML")
    answer.kind, answer.body = "text/plain", "<!doctype html><p>captcha"
    await reload_fails("answered HTML")
    answer.body = "# nothing today\n"
    await reload_fails("held by the empty guard: it would remove 4 of its 4 proxies")
    answer.body = "127.9.0.1:3128:u:pw1\n"
    await reload_fails("held by the empty guard: it would remove 3 of its 4 proxies")
    answer.status = 503
    await reload_fails("answered HTTP 503")
    server.shutdown()
    server.server_close()
    await reload_fails("unreachable")


INLINE_AND_VENDOR = """
proxies:
  - {url: "socks5://in:inline-pw@127.8.0.1:1080", labels: {tier: a}, name: first}
vendor:
  endpoint: socks5h://127.8.0.9:7000
  username: customer-acme-country-{country}-session-{session}
  password: vendor-Pw-9
  sessions: 2
  params: {country: de}
"""


async def test_inline_vendor_and_added_entries_are_registered(
    start_static: StartStatic,
    registry: ProxyRegistry,
    redis_client: aioredis.Redis,
    provider_name: str,
) -> None:
    entry = static_entry(provider_name, INLINE_AND_VENDOR)
    entries = ProviderEntries(redis_client)
    added = parse_entry(entry, "https://api:added-pw@127.8.0.2:8443")
    await entries.add(
        provider_name, added.id, AddedEntry(line="https://api:added-pw@127.8.0.2:8443")
    )
    await start_static(entry)

    async def four() -> bool:
        return sum(p.phase is Phase.BOOTING for p in await _ours(registry, provider_name)) == 4

    await wait_until(four, what="inline, two vendor sessions and the added entry booting")
    by_source: dict[str, list[Proxy]] = {}
    for p in await _ours(registry, provider_name):
        by_source.setdefault(p.placement["source"], []).append(p)
    [inline] = by_source["inline"]
    assert (inline.scheme, inline.username, inline.password, inline.port) == (
        Scheme.SOCKS5,
        "in",
        "inline-pw",
        1080,
    )
    assert (inline.labels, inline.placement["name"], inline.external) == (
        {"tier": "a"},
        "first",
        True,
    )
    sessions = by_source["vendor"]
    assert len({p.username for p in sessions}) == 2
    for p in sessions:
        assert p.username.startswith("customer-acme-country-de-session-")
        assert (p.scheme, p.host, p.port, p.password) == (
            Scheme.SOCKS5H,
            "127.8.0.9",
            7000,
            "vendor-Pw-9",
        )
    [api] = by_source["api"]
    assert (api.id, api.scheme, api.port) == (added.id, Scheme.HTTPS, 8443)

    # A pool's member (or POST /v1/proxies) gets a new session, hence a new exit IP.
    member = pending_proxy(provider_name, "z1", time.time(), pool="")
    assert await registry.create(member)
    made = await wait_for_phase(registry, member.id, Phase.BOOTING)
    assert made.username.startswith("customer-acme-country-de-session-")
    assert made.username not in {p.username for p in sessions}
    assert (made.password, made.scheme, made.host, made.external) == (
        "vendor-Pw-9",
        Scheme.SOCKS5H,
        "127.8.0.9",
        False,
    )

    assert await entries.remove(provider_name, added.id)
    await wait_for_phase(registry, added.id, Phase.DELETED)  # unleased: forgotten at once
    assert (await registry.get(member.id)).phase is Phase.BOOTING  # type: ignore[union-attr]


async def test_a_file_missing_at_start_is_a_failed_load_until_it_appears(
    start_static: StartStatic,
    registry: ProxyRegistry,
    events: Events,
    provider_name: str,
    tmp_path: Path,
) -> None:
    path = tmp_path / "later.txt"
    big = tmp_path / "big.txt"
    big.write_text("127.7.0.1:1\n" * 400_000)  # past --source-max-bytes (4 MB)
    sources = f"[{{file: '{path}', refresh: 3600}}, {{file: '{big}', name: big}}]"
    syncer = await start_static(static_entry(provider_name, f"sources: {sources}"))

    def failed() -> dict[str, str]:
        return {
            e.data.source or "": e.data.reason or ""
            for e in events.of_type(EventType.SOURCE_LOAD_FAILED)
        }

    await wait_until(lambda: _async(len(failed()) == 2), what="both loads failed")
    assert failed()["sources[0]"].startswith("cannot read the file")
    assert failed()["big"] == "larger than 4000000 bytes"
    assert await _ours(registry, provider_name) == []
    path.write_text("127.7.0.2:3128\n")
    syncer.hup()
    await wait_for_phase(registry, line_id(provider_name, "127.7.0.2:3128"), Phase.BOOTING)
