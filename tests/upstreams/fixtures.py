"""The upstream fixtures, a pytest plugin that tests/conftest.py registers (`pytest_plugins`)
so any test under tests/ can ask for them by name."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.upstreams.socks5 import Socks5Upstream, running_socks5
from tests.upstreams.tls_proxy import TlsUpstream, running_tls_upstream
from tests.upstreams.vendor_gateway import VendorGateway, running_vendor_gateway


@pytest.fixture(scope="session")
def socks5_upstream() -> Iterator[Socks5Upstream]:
    """microsocks with username/password auth on 127.0.0.1, leaving from 127.0.0.5."""
    with running_socks5() as upstream:
        yield upstream


@pytest.fixture(scope="session")
def tls_upstream() -> Iterator[TlsUpstream]:
    """Squid's https_port with basic auth on 127.0.0.1, leaving from 127.0.0.6; its CA in
    `ca_file`."""
    with running_tls_upstream() as upstream:
        yield upstream


@pytest.fixture
def vendor_gateway() -> Iterator[VendorGateway]:
    """A vendor's rotating gateway of this test's own (sessions counted from none, exits
    from 127.0.0.10)."""
    with running_vendor_gateway() as gateway:
        yield gateway
