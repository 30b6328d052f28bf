"""The fake GCE endpoint (tests/gcp/fake_gce) as a fixture, and the loopback HTTPS target
its booted Squids are tested against (`target`, as in tests/health)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.gcp.fake_gce import FakeGce, Settings


@pytest.fixture
def fake_gce(target: Target) -> Iterator[FakeGce]:
    """A fresh fake per test; teardown stops every Squid it booted. It asks for `target`
    (what its Squids proxy to) and so tests/conftest.py marks its tests `process`."""
    fake = FakeGce(settings=Settings()).start()
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture
def fake_gce_factory(target: Target) -> Iterator[Callable[..., FakeGce]]:
    """Started fakes with other projects, zones or settings (`FakeGce(**kwargs)`); all are
    closed at teardown."""
    made: list[FakeGce] = []

    def make(**kwargs: Any) -> FakeGce:
        fake = FakeGce(**kwargs).start()
        made.append(fake)
        return fake

    try:
        yield make
    finally:
        for fake in made:
            fake.close()


@dataclass(frozen=True)
class Target:
    url: str
    port: int
    ca_file: str


@pytest.fixture(scope="session")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
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
