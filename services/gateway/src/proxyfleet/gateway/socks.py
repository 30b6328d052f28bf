"""A tunnel through a SOCKS5 upstream (RFC 1928, username/password per RFC 1929) on a
connected `Side`: the I/O around the pure codec in proxyfleet.common.domain.socks5.

One message at a time, each answer awaited: servers such as microsocks read a message
per recv() and drop what follows, so the greeting, credentials and CONNECT cannot go in
one write."""

from __future__ import annotations

import asyncio
import ipaddress
import socket

from proxyfleet.common.domain import socks5
from proxyfleet.common.store.lease_terms import GrantedProxy
from proxyfleet.gateway.splice import Side


async def socks_connect(side: Side, proxy: GrantedProxy, host: str, port: int) -> None:
    """Greeting, username/password when the proxy has credentials, then CONNECT to
    host:port (a name goes to the proxy as it is). Raises socks5.Socks5Error (refused:
    `auth` or its `reply`), ValueError (credentials too long), IncompleteReadError."""
    with_auth = bool(proxy.username or proxy.password)
    side.write(socks5.greeting(with_auth))
    choice = await side.read_exactly(socks5.METHOD_CHOICE_LEN)
    if socks5.check_method_choice(choice, with_auth) == socks5.USER_PASS:
        side.write(socks5.auth_request(proxy.username, proxy.password))
        socks5.check_auth_status(await side.read_exactly(socks5.AUTH_STATUS_LEN))
    side.write(socks5.connect_request(host, port))
    prefix = await side.read_exactly(socks5.REPLY_PREFIX_LEN)
    rest = await side.read_exactly(socks5.reply_length(prefix) - socks5.REPLY_PREFIX_LEN)
    socks5.check_reply(prefix + rest)


async def resolve(host: str, port: int) -> str:
    """An address of `host` for a `socks5` proxy (the client resolves; `socks5h` sends the
    name): an IP literal as it is, else the system resolver's first answer. Raises
    OSError (socket.gaierror) when the name does not resolve."""
    bare = host.strip("[]")
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        pass
    infos = await asyncio.get_running_loop().getaddrinfo(bare, port, type=socket.SOCK_STREAM)
    if not infos:
        raise socket.gaierror(f"no address for {bare}")
    return str(infos[0][4][0])
