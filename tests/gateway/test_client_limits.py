"""Per-client limits as configured (nonsense refused naming the setting) and the replica's
counts against them (`quota`), without a gateway: a manual clock, a sync's answer given."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.store.client_usage import ClientTotals
from proxyfleet.gateway.client_limits import ClientLimit, parse_bytes
from proxyfleet.gateway.quota import DAY, Quota, utc_day
from proxyfleet.gateway.refusals import Refused
from proxyfleet.gateway.settings import GatewaySettings

TOKENS = ("crawler:0123456789abcdef-secret", "other:0123456789abcdef-other1")


def test_sizes_need_a_unit() -> None:
    assert parse_bytes("--x", "10GB") == 10 * 10**9
    assert parse_bytes("--x", "500MiB") == 500 * 2**20
    assert parse_bytes("--x", "1.5 kb") == 1500
    for bad in ("10", "10G", "GB", "-1GB", "0GB", "ten GB", ""):
        with pytest.raises(ConfigError, match="--x"):
            parse_bytes("--x", bad)


def test_defaults_apply_to_every_token_and_overrides_to_one() -> None:
    s = GatewaySettings(
        client_tokens=TOKENS,
        client_max_connections=10,
        client_connection_rate=5.0,
        client_bytes_per_day="1GiB",
        client_limit=("crawler:connections=3,leases=2,rate=none,bytes_per_day=10MB",),
    )
    limits = s.client_limits()
    assert limits["other"] == ClientLimit(10, 0, 5.0, 0, 2**30)
    assert limits["crawler"] == ClientLimit(3, 2, 0.0, 0, 10**7)
    assert GatewaySettings(client_tokens=TOKENS).client_limits()["crawler"].any is False


@pytest.mark.parametrize(
    ("overrides", "flag"),
    [
        ({"client_max_connections": -1}, "--client-max-connections"),
        ({"client_max_leases": -2}, "--client-max-leases"),
        ({"client_connection_rate": -1.0}, "--client-connection-rate"),
        ({"client_connection_rate": float("inf")}, "--client-connection-rate"),
        ({"client_connection_burst": 5}, "--client-connection-burst"),  # without a rate
        ({"client_bytes_per_day": "10"}, "--client-bytes-per-day"),
        ({"client_bytes_per_day": "0MB"}, "--client-bytes-per-day"),
        ({"client_limit": ("crawler",)}, "--client-limit"),
        ({"client_limit": ("nobody:connections=1",)}, "--client-limit"),
        ({"client_limit": ("crawler:connections=0",)}, "--client-limit"),
        ({"client_limit": ("crawler:rate=-3",)}, "--client-limit"),
        ({"client_limit": ("crawler:speed=3",)}, "--client-limit"),
        ({"client_limit": ("crawler:bytes_per_day=100",)}, "--client-limit"),
        ({"client_limit": ("crawler:burst=4",)}, "--client-limit"),
        ({"limits_sync_interval": 0.0}, "--limits-sync-interval"),
    ],
)
def test_nonsense_names_the_setting(overrides: dict[str, object], flag: str) -> None:
    with pytest.raises(ConfigError, match=flag):
        GatewaySettings(client_tokens=TOKENS, **overrides)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--client-bytes-per-day", "10"], "--client-bytes-per-day"),
        (["--client-max-connections", "-1"], "--client-max-connections"),
        (["--client-limit", "crawler:leases=0"], "--client-limit"),
    ],
)
def test_the_command_exits_2_naming_the_setting(tmp_path: Path, argv: list[str], flag: str) -> None:
    gateway = Path(sys.executable).parent / "proxyfleet-gateway"
    proc = subprocess.run(
        [str(gateway), "--providers-config", str(tmp_path / "none.yaml"),
         "--client-token", TOKENS[0], *argv],
        capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"}, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert flag in proc.stderr
    assert "0123456789abcdef" not in proc.stderr  # never the secret


def _quota(clock: ManualClock, held: dict[str, int] | None = None, **limit: object) -> Quota:
    held = held if held is not None else {}
    limits = {"crawler": ClientLimit(**limit), "other": ClientLimit()}  # type: ignore[arg-type]
    return Quota(limits, clock, lambda client: held.get(client, 0))


def test_connections_over_the_limit_with_the_other_replicas() -> None:
    quota = _quota(ManualClock(), connections=3)
    quota.admit("crawler")
    quota.apply("2023-11-14", 2, {"crawler": ClientTotals(1, 0, 0)})
    quota.admit("crawler")
    with pytest.raises(Refused) as refused:
        quota.admit("crawler")
    assert (refused.value.status, refused.value.limit) == (429, "connections")
    assert ("Retry-After", "1") in refused.value.headers
    assert "error=connection_limit_reached" in dict(refused.value.headers)["Proxy-Status"]
    for _ in range(20):
        quota.admit("other")  # another client is unaffected
    quota.left("crawler")
    quota.admit("crawler")


def test_leases_count_what_this_replica_holds_and_the_others() -> None:
    quota = _quota(ManualClock(), {"crawler": 1}, leases=2)
    quota.check_lease("crawler")
    quota.apply("2023-11-14", 2, {"crawler": ClientTotals(0, 1, 0)})
    with pytest.raises(Refused, match="2 leases"):
        quota.check_lease("crawler")


def test_the_rate_is_a_bucket_split_over_the_replicas() -> None:
    clock = ManualClock()
    quota = _quota(clock, rate=2.0, burst=2)
    quota.admit("crawler")
    quota.admit("crawler")
    with pytest.raises(Refused) as refused:
        quota.admit("crawler")
    assert refused.value.limit == "rate"
    assert ("Retry-After", "1") in refused.value.headers  # half a second, rounded up
    clock.advance(0.5)
    quota.admit("crawler")
    quota.apply("2023-11-14", 2, {})  # two replicas: each refills 1/s
    clock.advance(0.5)
    with pytest.raises(Refused):
        quota.admit("crawler")
    clock.advance(0.5)
    quota.admit("crawler")


def test_bytes_per_day_refuse_until_midnight_utc() -> None:
    clock = ManualClock(19_000 * DAY + 3600.0)  # 01:00 UTC
    quota = _quota(clock, bytes_per_day=1000)
    quota.admit("crawler")
    quota.relayed("crawler", 600, 300)
    quota.admit("crawler")
    quota.reports()  # a sync: the other replicas relayed 50 meanwhile
    quota.apply(utc_day(clock.now()), 2, {"crawler": ClientTotals(0, 0, 950)})
    quota.relayed("crawler", 50, 0)
    with pytest.raises(Refused) as refused:
        quota.admit("crawler")
    assert refused.value.limit == "bytes_per_day"
    assert ("Retry-After", str(23 * 3600)) in refused.value.headers
    quota.reports()
    clock.advance(23 * 3600)  # the next day
    quota.admit("crawler")


def test_a_failed_sync_keeps_its_deltas_for_the_next() -> None:
    quota = _quota(ManualClock(), connections=5)
    quota.admit("crawler")
    quota.relayed("crawler", 10, 20)
    sent = quota.reports()
    assert [(c.client, c.connections, c.up, c.down, c.opened) for c in sent] == [
        ("crawler", 1, 10, 20, 1)
    ]
    quota.restore(sent)
    again = quota.reports()
    assert (again[0].up, again[0].down, again[0].opened) == (10, 20, 1)
    assert quota.reports()[0].up == 0  # "other" has no limit and did nothing: not sent
    assert [c.client for c in quota.reports()] == ["crawler"]
