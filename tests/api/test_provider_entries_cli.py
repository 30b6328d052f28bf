"""`proxyfleet entries add|ls|rm` run as a real process against the API (served in this
loop, so the command runs as an asyncio subprocess): passwords never printed."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.api.entry_type import LISTED, listed_providers
from tests.api.helpers import ADMIN, CLIENT, Api, ApiFactory

from proxyfleet.cli.entries import lines_of
from proxyfleet.common.providers import ProvidersConfig

PROXYFLEET = Path(sys.executable).parent / "proxyfleet"
PASSWORD = "Cli-secret-pw"


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


@pytest.fixture
def listed() -> Iterator[ProvidersConfig]:
    with listed_providers() as config:
        yield config


@pytest.fixture
async def api(start_api: ApiFactory, listed: ProvidersConfig) -> Api:
    return await start_api(providers=listed)


async def _run(api: Api, tmp_path: Path, *args: str, stdin: str = "", token: str = ADMIN) -> Ran:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() or k == "PATH"}
    env.update(
        PROXYFLEET_URL=api.url,
        PROXYFLEET_TOKEN=token,
        PROXYFLEET_CONFIG=str(tmp_path / "config.toml"),
        COLUMNS="200",
    )
    proc = await asyncio.create_subprocess_exec(
        str(PROXYFLEET),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), 60)
    assert proc.returncode is not None
    return Ran(proc.returncode, out.decode(), err.decode())


def test_lines_of_reads_stdin_for_a_dash() -> None:
    stdin = "# mine\nhttp://a:1\n\n  socks5://u:p@b:2  \n"
    assert lines_of(["http://c:3", "-"], stdin) == ["http://c:3", "http://a:1", "socks5://u:p@b:2"]


async def test_add_list_and_remove_entries(api: Api, tmp_path: Path) -> None:
    stdin = f"# my list\nsocks5://bob:{PASSWORD}@127.0.0.5:1080\nftp://bob:{PASSWORD}@h:21\n"
    added = await _run(
        api, tmp_path, "entries", "add", LISTED, "http://127.0.0.6:3128", "-",
        "--zone", "l2", "-l", "tier=a", "-o", "json", stdin=stdin,
    )  # fmt: skip
    assert added.code != 0
    assert "entry 3: " in added.err
    rows = json.loads(added.out)
    assert [(r["url"], r["zone"], r["labels"]) for r in rows] == [
        ("http://127.0.0.6:3128", "l2", {"tier": "a"}),
        ("socks5://bob:***@127.0.0.5:1080", "l2", {"tier": "a"}),
    ]

    listed = await _run(api, tmp_path, "entries", "ls", LISTED)
    assert listed.code == 0, listed.err
    assert "socks5://bob:***@127.0.0.5:1080" in listed.out
    assert rows[0]["id"] in listed.out

    gone = await _run(api, tmp_path, "entries", "rm", LISTED, rows[1]["id"], "s0000")
    assert gone.code != 0
    assert f"entry/{rows[1]['id']} removed" in gone.out
    assert "s0000" in gone.err
    left = json.loads((await _run(api, tmp_path, "entries", "ls", LISTED, "-o", "json")).out)
    assert [r["id"] for r in left] == [rows[0]["id"]]

    refused = await _run(api, tmp_path, "entries", "ls", LISTED, token=CLIENT)
    assert refused.code != 0
    for ran in (added, listed, gone, refused):
        assert PASSWORD not in ran.out + ran.err
