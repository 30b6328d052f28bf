"""Where an entry's password could leak: parser messages, log lines, events, proxy
listings; a proxy's scheme in its listing and in a lease's URL; the routes in OpenAPI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.api.entry_type import CRASH_HOST, LEAKY_HOST, LISTED, listed_providers
from tests.api.helpers import CLIENT, Api, ApiFactory, Recorder

from proxyfleet.api.providers.entry_secrets import GENERIC, line_passwords, safe_message
from proxyfleet.common.observability.logging import configure_logging, get_logger, redact_value
from proxyfleet.common.providers import ProvidersConfig
from proxyfleet.common.wire.models import Phase, Proxy, Scheme

PASSWORD = "Secret-0f-the-entry"
ENTRIES = f"/v1/providers/{LISTED}/proxies"


@pytest.fixture
def listed() -> Iterator[ProvidersConfig]:
    with listed_providers() as config:
        yield config


@pytest.mark.parametrize(
    ("line", "passwords"),
    [
        ("http://u:pw@h:1", {"pw"}),
        ("socks5h://u:p%40ss@h:1", {"p%40ss", "p@ss"}),
        ("u:p@ss@h:1", {"p@ss"}),
        ("h:1:u:pw", {"pw"}),
        ("h:1:u:p:w", {"p:w"}),
        ("http://u@h:1", set()),
        ("h:1", set()),
    ],
)
def test_the_passwords_a_line_may_hold(line: str, passwords: set[str]) -> None:
    assert line_passwords(line) == passwords


def test_a_message_holding_the_password_is_replaced_whole() -> None:
    assert safe_message("port out of range", "h:99999:u:pw1") == "port out of range"
    assert safe_message("bad line h:99999:u:pw1", "h:99999:u:pw1") == GENERIC
    assert safe_message("bad user u", "http://u:p%2Fw@h:1") == "bad user u"
    assert safe_message("near p/w@h", "http://u:p%2Fw@h:1") == GENERIC


def test_log_redaction_covers_lines_and_odd_urls(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("test", "debug", "json")
    get_logger("t").info(
        "entry", line=f"127.0.0.1:3128:bob:{PASSWORD}", url=f"http://bob:{PASSWORD}@h:1"
    )
    get_logger("t").info("rejected", line=3)  # a line number stays readable
    entry, rejected = (json.loads(x) for x in capsys.readouterr().out.strip().splitlines()[-2:])
    assert (entry["line"], entry["url"], rejected["line"]) == ("***", "http://***:***@h:1", 3)
    for raw in (
        f"http://b:{PASSWORD}@x@h:1",
        f"http://b:a/{PASSWORD}@h:1",
        f"redis://:{PASSWORD}@h",
    ):
        assert PASSWORD not in redact_value(raw), raw


async def test_no_log_line_or_event_of_a_run_holds_an_entry_password(
    start_api: ApiFactory,
    listed: ProvidersConfig,
    events: Recorder,
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("api", "debug", "json")
    api = await start_api(providers=listed)
    url = f"socks5://carol:{PASSWORD}@127.1.2.3:1080"
    added = await api.admin.post(ENTRIES, json={"url": url})
    assert added.status_code == 201
    bodies: list[dict[str, Any]] = [
        {"url": url},
        {"url": url, "name": "other"},
        {"line": f"127.1.2.3:99999:carol:{PASSWORD}"},
        {"url": f"http://carol:{PASSWORD}@{LEAKY_HOST}:80"},
        {"url": f"ftp://carol:{PASSWORD}@h:21", "colour": "red"},
    ]
    bodies.append({"url": f"http://carol:{PASSWORD}@{CRASH_HOST}:80"})  # the type's bug
    answers = [await api.admin.post(ENTRIES, json=body) for body in bodies]
    assert [a.status_code for a in answers] == [200, 409, 400, 400, 400, 500]
    broken = ('{"url": "' + url + '"').encode()  # not JSON: the body is never echoed
    answers.append(await api.admin.post(ENTRIES, content=broken))
    assert answers[-1].status_code == 400
    answers.append(await api.admin.get(ENTRIES))
    answers.append(await api.admin.delete(f"{ENTRIES}/{added.json()['id']}"))
    assert answers[-1].status_code == 204
    await api.admin.get("/v1/proxies")

    out = capsys.readouterr().out
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    by_event = {line["event"]: line for line in lines}
    assert by_event["api.provider_entry_added"]["entry_id"] == added.json()["id"]
    assert by_event["api.provider_entry_removed"]["by"] == "tests-admin"
    assert "parse_entry raised ValueError" in by_event["api.unhandled_error"]["exception"]
    assert PASSWORD not in out
    assert all(PASSWORD not in a.text for a in answers)
    assert PASSWORD not in repr(events.messages)


async def _ready_socks5(api: Api, pid: str) -> None:
    now = api.clock.now()
    proxy = Proxy(
        id=pid,
        provider=LISTED,
        zone="l1",
        phase=Phase.PENDING,
        gen=0,
        username="dave",
        password=PASSWORD,
        created_at=now,
        updated_at=now,
        scheme=Scheme.SOCKS5H,
        external=True,
    )
    assert await api.registry.create(proxy)
    await api.registry.transition(pid, Phase.PROVISIONING)
    await api.registry.transition(pid, Phase.BOOTING, host="127.0.0.1", port=1080)
    await api.registry.transition(pid, Phase.READY, last_ok_at=now)


async def test_proxies_show_scheme_and_external_and_a_lease_url_carries_the_scheme(
    start_api: ApiFactory, listed: ProvidersConfig
) -> None:
    api = await start_api(providers=listed)
    await _ready_socks5(api, "ps1")
    one = await api.admin.get("/v1/proxies/ps1")
    assert (one.json()["scheme"], one.json()["external"]) == ("socks5h", True)
    page = await api.admin.get("/v1/proxies", params={"provider": LISTED})
    assert [(p["id"], p["scheme"], p["external"]) for p in page.json()["items"]] == [
        ("ps1", "socks5h", True)
    ]
    assert PASSWORD not in one.text + page.text
    assert "dave" not in one.text + page.text

    granted = await api.client.post("/v1/leases", json={"provider": LISTED})
    assert granted.status_code == 201, granted.text
    assert granted.json()["proxy"]["url"] == f"socks5h://dave:{PASSWORD}@127.0.0.1:1080"
    lease = await api.client.get(f"/v1/leases/{granted.json()['lease_id']}")
    assert PASSWORD not in lease.text
    assert CLIENT not in lease.text


async def test_the_routes_are_in_the_openapi_document(
    start_api: ApiFactory, listed: ProvidersConfig
) -> None:
    api = await start_api(providers=listed)
    doc = (await api.anon.get("/schema/openapi.json")).json()
    entries = doc["paths"]["/v1/providers/{name}/proxies"]
    assert set(entries["post"]["responses"]) == {
        "200", "201", "400", "401", "403", "404", "409", "413", "503"
    }  # fmt: skip
    assert set(entries["get"]["responses"]) == {"200", "400", "401", "403", "404", "409", "503"}
    one = doc["paths"]["/v1/providers/{name}/proxies/{entry_id}"]["delete"]
    assert set(one["responses"]) == {"204", "400", "401", "403", "404", "409", "503"}
    assert "never the password" in entries["post"]["description"]
    schemas = doc["components"]["schemas"]
    assert schemas["AddProviderEntry"]["additionalProperties"] is False
    assert set(schemas["ProviderEntryOut"]["properties"]) == {"id", "url", "zone", "labels", "name"}
    assert {"scheme", "external"} <= set(schemas["ProxyOut"]["required"])
