"""`proxyfleet usage` against a real API: a client's bytes and connections per UTC day, as
a gateway replica's sync left them in Redis."""

from __future__ import annotations

import json
import time

from tests.api.helpers import CLIENT_NAME
from tests.cli.conftest import Cli, LiveApi

from proxyfleet.cli.usage import size
from proxyfleet.common.store.client_usage import ClientCounts, ClientUsageStore


def test_usage_shows_the_days_and_the_total(cli: Cli, live_api: LiveApi) -> None:
    store = ClientUsageStore(live_api.registry._redis)  # the API's own client
    today = time.strftime("%Y-%m-%d", time.gmtime())
    counts = [ClientCounts(CLIENT_NAME, 0, 0, 1536, 3 * 2**20, 4)]
    live_api.run(store.sync("replica-cli", 2.0, today, counts))
    table = cli.run("usage", "--days", "2")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert any(today in line and "1.5 KiB" in line and "3.0 MiB" in line for line in lines)
    assert any(line.lstrip("│ ").startswith("total") and " 4 " in line for line in lines), lines
    assert f"client: {CLIENT_NAME}" in table.stdout
    done = cli.run("usage", "-o", "json", "--days", "1")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert (got["client"], got["bytes_up"], got["bytes_down"], got["connections"]) == (
        CLIENT_NAME, 1536, 3 * 2**20, 4,
    )  # fmt: skip
    assert [d["day"] for d in got["days"]] == [today]
    other = cli.run("usage", "--client", "someone-else")
    assert other.returncode != 0  # a client token reads its own usage only


def test_sizes_read_as_a_table_reads_them() -> None:
    assert [size(n) for n in (0, 1023, 1536, 5 * 2**30)] == ["0 B", "1023 B", "1.5 KiB", "5.0 GiB"]
