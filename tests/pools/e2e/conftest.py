"""One fleet for the module's scenarios (tests/pools/e2e/fleet.py): every pool they use is
declared as it starts, so members come up together and age while other scenarios run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.pools.e2e.fleet import PoolFleet
from tests.pools.e2e.pools import ALL


@pytest.fixture(scope="module")
def fleet(nats_url: str) -> Iterator[PoolFleet]:
    f = PoolFleet(nats_url)
    try:
        f.start()
        for name, spec in ALL.items():
            f.apply(name, spec)
        yield f
    finally:
        f.close()
