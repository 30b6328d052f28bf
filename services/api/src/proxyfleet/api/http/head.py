"""HEAD wherever GET (RFC 9110 9.1: a general-purpose server must support both).

Litestar 2 routes HEAD only to handlers declared for it, and those must not return a
body, so the API answered HEAD on its GET routes with 405. This ASGI layer, outside
Litestar, hands the app a HEAD as the GET it stands for and sends only the head of that
answer: the same status and headers (Content-Length included, as RFC 9110 9.3.2 allows)
and no body; a stream (the event feed) ends once its head is out, because the server
then tells the app the client is gone. Every `Allow` that lists GET lists HEAD too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Message = MutableMapping[str, Any]
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]
"""Plain ASGI shapes: this layer sits outside Litestar and reads only a few keys."""

_END: Message = {"type": "http.response.body", "body": b"", "more_body": False}


def with_head(app: Callable[..., Awaitable[None]]) -> AsgiApp:
    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
        elif scope["method"] == "HEAD":
            await app({**scope, "method": "GET"}, receive, _head_only(send))
        else:
            await app(scope, receive, _allowing_head(send))

    return serve


def _head_only(send: Send) -> Send:
    sent = False

    async def send_head(message: Message) -> None:
        nonlocal sent
        if sent or message["type"] != "http.response.start":
            return  # the body (and anything after it) is not for a HEAD
        sent = True
        await send(_head_allowed(message))
        await send(_END)

    return send_head


def _allowing_head(send: Send) -> Send:
    async def send_allowing_head(message: Message) -> None:
        await send(_head_allowed(message) if message["type"] == "http.response.start" else message)

    return send_allowing_head


def _head_allowed(start: Message) -> Message:
    """`start` with HEAD in its Allow when GET is there, the methods sorted (Litestar's
    405s list them in route order, its OPTIONS sorted)."""
    headers: list[tuple[bytes, bytes]] = list(start.get("headers") or ())
    for i, (name, value) in enumerate(headers):
        if name.lower() != b"allow":
            continue
        methods = {m.strip() for m in value.split(b",")}
        if b"GET" in methods:
            methods.add(b"HEAD")
        headers[i] = (name, b", ".join(sorted(methods)))
        return {**start, "headers": headers}
    return start
