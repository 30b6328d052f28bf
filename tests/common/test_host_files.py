"""The host raises a service's soft open-file limit to the hard one when it asks
(`Service.raise_open_files`), and tells its build step the limit."""

from __future__ import annotations

import resource
from dataclasses import dataclass

from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.host import Context, Parts, Service
from proxyfleet.common.host.files import MOST_FILES, open_file_limit, raise_open_files
from proxyfleet.common.host.runtime import serve
from proxyfleet.common.providers import parse_providers_config

PROVIDERS = parse_providers_config(
    "providers:\n  - {name: p1, type: local, zones: [z], local: {}}\n", "providers.yaml"
)


@dataclass(frozen=True, slots=True)
class NoSettings:
    metrics_port: int = 0
    """No health server."""


def test_the_soft_open_file_limit_is_raised_to_the_hard_one() -> None:
    allowed = raise_open_files()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY:
        assert soft == hard == allowed
    else:  # unlimited: taken as MOST_FILES
        assert allowed > 0


def test_the_limit_read_is_the_soft_one() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert open_file_limit() == (MOST_FILES if soft == resource.RLIM_INFINITY else soft)


async def test_a_service_that_asks_builds_with_the_raised_limit() -> None:
    seen: list[int] = []

    async def build(ctx: Context[NoSettings]) -> Parts:
        seen.append(ctx.open_files)
        return Parts(components={})

    service = Service(
        name="many-sockets",
        summary="A test service.",
        settings=NoSettings,
        build=build,
        needs_nats=False,
        needs_redis=False,
        raise_open_files=True,
    )
    before, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))  # a low soft limit to raise
    try:
        assert await serve(service, CommonSettings(), NoSettings(), PROVIDERS) == 0
        assert seen == [open_file_limit()]
        assert seen[0] == (MOST_FILES if hard == resource.RLIM_INFINITY else hard)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (before, hard))
