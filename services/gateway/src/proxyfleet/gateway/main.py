"""`proxyfleet-gateway`: one proxy endpoint that leases, sticks, rotates and enforces."""

from __future__ import annotations

import uvloop

from proxyfleet.common import host
from proxyfleet.gateway.assembly import assemble
from proxyfleet.gateway.settings import GatewaySettings


async def build(ctx: host.Context[GatewaySettings]) -> host.Parts:
    return assemble(ctx).parts


SERVICE = host.Service(
    name="gateway",
    summary="Serve one proxy endpoint whose connections ride on leases.",
    settings=GatewaySettings,
    build=build,
    raise_open_files=True,  # two sockets a connection: the cap follows the open-file limit
    loop=lambda _: uvloop.run,
)


def main() -> None:
    host.main(SERVICE)
