"""The fake GCE endpoint (tests/gcp/fake_gce) as a fixture; its booted Squids are tested
against tests/conftest.py's loopback HTTPS `target`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.conftest import TargetServer
from tests.gcp.fake_gce import FakeGce, Settings

Target = TargetServer
"""What the fake's Squids proxy to: tests/conftest.py's session `target`."""


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
