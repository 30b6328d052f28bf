"""`proxyfleet pools ...`, quarantine and grants by pool, run as a real process against a
real API: tables, `-o json`, YAML files, exit codes."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.api.helpers import ADMIN, PROVIDER
from tests.cli.conftest import Cli, LiveApi

from proxyfleet.common.core.clock import SystemClock
from proxyfleet.common.domain.pool_spec import Condition, Decision, PoolStatus
from proxyfleet.common.store import PoolStore, connect_redis

POOLS_YAML = f"""
# two pools, one a document
name: eu
provider: {PROVIDER}
size: 2
labels: {{team: qa}}
---
name: us
provider: {PROVIDER}
autoscale: {{min: 1, max: 4}}
"""


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "pools.yaml"
    path.write_text(text)
    return str(path)


def test_apply_says_created_changed_or_unchanged(cli: Cli, tmp_path: Path) -> None:
    admin = cli.env(token=ADMIN)
    file = _write(tmp_path, POOLS_YAML)
    first = cli.run("pools", "apply", "-f", file, env=admin)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == ["pool/eu created", "pool/us created"]
    again = cli.run("pools", "apply", "-f", file, env=admin)
    assert again.stdout.splitlines() == ["pool/eu unchanged", "pool/us unchanged"]
    changed = POOLS_YAML.replace("size: 2", "size: 3")
    done = cli.run("pools", "apply", "-f", "-", "-o", "json", input=changed, env=admin)
    assert done.returncode == 0, done.stderr
    results = [(r["name"], r["result"], r["pool"]["desired"]) for r in json.loads(done.stdout)]
    assert results == [("eu", "changed", 3), ("us", "unchanged", 1)]


def test_apply_goes_on_past_a_refused_pool_and_exits_with_its_code(
    cli: Cli, tmp_path: Path
) -> None:
    admin = cli.env(token=ADMIN)
    text = f"name: bad\nprovider: nope\nsize: 1\n---\nname: good\nprovider: {PROVIDER}\nsize: 1\n"
    done = cli.run("pools", "apply", "-f", _write(tmp_path, text), env=admin)
    assert done.returncode == 1, done.stderr  # a 400
    assert "pool bad: pool bad: provider: unknown provider 'nope'" in done.stderr
    assert "(400 invalid_pool)" in done.stderr
    assert done.stdout.splitlines() == ["pool/good created"]


def test_a_bad_file_is_a_usage_error_naming_it(cli: Cli, tmp_path: Path) -> None:
    admin = cli.env(token=ADMIN)
    for text, named in (
        ("provider: x\nsize: 1\n", "document 1: expected `name:"),
        ("name: a\nname: b\n", "line 2: not valid YAML: key 'name' given twice"),
        ("# nothing\n", "no pool in it"),
    ):
        done = cli.run("pools", "apply", "-f", _write(tmp_path, text), env=admin)
        assert done.returncode == 2, (text, done.stderr)
        assert named in done.stderr, (text, done.stderr)
    missing = cli.run("pools", "apply", "-f", str(tmp_path / "nope.yaml"), env=admin)
    assert missing.returncode == 2
    assert "nope.yaml" in missing.stderr


def test_ls_get_scale_and_rm(cli: Cli, live_api: LiveApi, tmp_path: Path, redis_url: str) -> None:
    admin = cli.env(token=ADMIN)
    assert cli.run("pools", "apply", "-f", _write(tmp_path, POOLS_YAML), env=admin).returncode == 0
    live_api.run(_write_status(redis_url, "eu"))
    table = cli.run("pools", "ls", env=admin)
    assert table.returncode == 0, table.stderr
    eu = _row_of(table.stdout, "eu")
    assert eu == ["eu", "api", "2", "2", "1", "1", "0", "1", "1h00m"]
    us = _row_of(table.stdout, "us")
    assert us == ["us", "api", "1", *["-"] * 6]  # no status yet
    listed = json.loads(cli.run("pools", "ls", "-o", "json", env=admin).stdout)
    assert [p["name"] for p in listed] == ["eu", "us"]

    shown = cli.run("pools", "get", "eu", env=admin)
    assert shown.returncode == 0, shown.stderr
    for expected in (
        "2 ready (1 leased, 1 free)",
        "scale_up 1 -> 2",
        "3 grants refused",
        "team: qa",
        "CapacityExceeded",
        "max_proxies reached",
    ):
        assert expected in shown.stdout, (expected, shown.stdout)
    as_json = json.loads(cli.run("pools", "get", "eu", "-o", "json", env=admin).stdout)
    assert as_json["status"]["conditions"][0]["type"] == "CapacityExceeded"

    scaled = cli.run("pools", "scale", "eu", "5", "-o", "json", env=admin)
    assert scaled.returncode == 0, scaled.stderr
    assert json.loads(scaled.stdout)[0]["desired"] == 5
    out_of_bounds = cli.run("pools", "scale", "us", "9", env=admin)
    assert out_of_bounds.returncode == 1
    assert "autoscale" in out_of_bounds.stderr

    kept = cli.run("pools", "rm", "us", "--keep-proxies", env=admin)
    assert kept.stdout.strip() == "pool/us removed; its proxies are kept, in no pool"
    deleting = cli.run("pools", "rm", "eu", env=admin)
    assert deleting.stdout.strip() == "pool/eu deleting: its members drain, then go"
    again = cli.run("pools", "scale", "eu", "1", env=admin)
    assert again.returncode == 5  # a 409: being deleted
    assert "pool_deleting" in again.stderr
    assert cli.run("pools", "get", "us", env=admin).returncode == 4
    assert cli.run("pools", "ls").returncode == 3  # a client token


def test_quarantine_release_and_leases_by_pool(cli: Cli, live_api: LiveApi, tmp_path: Path) -> None:
    admin = cli.env(token=ADMIN)
    assert cli.run("pools", "apply", "-f", _write(tmp_path, POOLS_YAML), env=admin).returncode == 0
    live_api.ready_proxy("m1", pool="eu")
    live_api.ready_proxy("lone")
    with_reason = ("proxies", "quarantine", "m1", "--reason", "blocked by shop")
    assert cli.run(*with_reason, env=admin).returncode == 0
    table = cli.run("proxies", "ls", env=admin).stdout
    m1 = " ".join(_row_of(table, "m1"))
    assert "eu" in m1
    assert "ready QUARANTINED" in m1
    assert "blocked by shop" in m1
    members = json.loads(cli.run("proxies", "ls", "--pool", "eu", "-o", "json", env=admin).stdout)
    assert [(p["id"], p["withheld"]) for p in members] == [("m1", "quarantined")]
    assert "quarantined" in cli.run("proxies", "get", "m1", env=admin).stdout

    refused = cli.run("leases", "grant", "--pool", "eu")
    assert refused.returncode == 6, refused.stderr  # a 503: its only member is set aside
    released = cli.run("proxies", "release", "m1", "-o", "json", env=admin)
    assert json.loads(released.stdout)[0]["withheld"] == ""
    assert cli.run("proxies", "release", "m1", env=admin).returncode == 5
    # a good probe now, as health records one (CLI runs on a busy machine take seconds)
    live_api.run(live_api.registry.update("m1", last_ok_at=time.time()))
    granted = cli.run("leases", "grant", "--pool", "eu")
    assert granted.returncode == 0, granted.stderr
    assert json.loads(granted.stdout)["proxy"]["id"] == "m1"
    ran = cli.run("lease", "--pool", "nope", "--wait", "0", "-q", "--", "true")
    assert ran.returncode == 4, ran.stderr  # no such pool
    assert "pool nope not found" in ran.stderr


def _row_of(table: str, first: str) -> list[str]:
    """The cells (split on blanks) of the table row that starts with `first`."""
    return next(cells for line in table.splitlines() if (cells := line.split())[:1] == [first])


async def _write_status(redis_url: str, name: str) -> None:
    """A status as the pool controller writes it (no controller runs here)."""
    redis = connect_redis(redis_url)
    now = time.time()
    status = PoolStatus(
        desired=2, ready=2, leased=1, free=1, quarantined=1, oldest_age=3600.0,
        by_provider={PROVIDER: 3}, observed_gen=1, updated_at=now,
        last_decision=Decision(
            time=now - 60, action="scale_up", from_size=1, to_size=2, reason="3 grants refused"
        ),
        conditions=[
            Condition(type="CapacityExceeded", status=True, reason="max_proxies reached",
                      message="4 of 4", since=now - 30),
        ],
    )  # fmt: skip
    try:
        await PoolStore(redis, SystemClock()).write_status(name, status, ttl=60)
    finally:
        await redis.aclose()
