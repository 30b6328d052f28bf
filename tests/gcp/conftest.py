"""The fake GCE endpoint (tests/gcp/fake_gce) as a fixture, and the loopback HTTPS target
its booted Squids are tested against."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.gcp.fake_gce import FakeGce, Settings

PROCESS_FIXTURES = {"fake_gce", "gce_target"}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The fake boots Squids: a test using it is `process`, not `pure` (tests/conftest.py
    marks by fixture names it knows; this runs after it)."""
    for item in items:
        if not PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())):
            continue
        if any(m.name == "pure" for m in item.own_markers):
            item.own_markers[:] = [m for m in item.own_markers if m.name != "pure"]
            item.add_marker("process")


@pytest.fixture
def fake_gce() -> Iterator[FakeGce]:
    """A fresh fake per test; teardown stops every Squid it booted."""
    fake = FakeGce(settings=Settings()).start()
    try:
        yield fake
    finally:
        fake.close()


@dataclass(frozen=True)
class Target:
    url: str
    port: int
    ca_file: str


@pytest.fixture(scope="session")
def gce_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """The dev stack's HTTPS target on 127.0.0.1 (its real CLI, as tests/health runs it)."""
    directory: Path = tmp_path_factory.mktemp("gce-target")
    proc = subprocess.Popen(
        [sys.executable, "-m", "proxyfleet.devstack.target", "--port", "0", "--dir", directory],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.fullmatch(r"listening on https://127\.0\.0\.1:(\d+)\n", line)
    assert m, f"unexpected first line from the target: {line!r}"
    port = int(m.group(1))
    yield Target(f"https://127.0.0.1:{port}/probe", port, str(directory / "ca.pem"))
    proc.terminate()
    proc.wait(5)
