"""The API's HTTP server as a component of the service host: uvicorn serving the Litestar
app, with the host owning the signals (uvicorn's own handlers are off)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import uvicorn
from litestar import Litestar

from proxyfleet.api.feed.stream import event_streams_of
from proxyfleet.api.http.head import with_head
from proxyfleet.api.settings import ApiSettings


class _HostedServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # SIGTERM/SIGINT belong to the service host, which sets the stop event


class HttpServer:
    """uvicorn with uvloop's loop (the host runs the API on uvloop) and httptools (C)
    rather than h11: about twice the requests per core here (docs/performance.md)."""

    def __init__(self, app: Litestar, settings: ApiSettings) -> None:
        config = uvicorn.Config(
            with_head(app),
            host=settings.host,
            port=settings.port,
            loop="uvloop",
            http="httptools",
            log_level=settings.common.log_level.lower(),
            access_log=False,
            server_header=False,
            # The peer as connected: /echo believes X-Forwarded-For only from
            # --echo-trusted-proxy (uvicorn would from 127.0.0.1 by default).
            proxy_headers=False,
            lifespan="on",
        )
        self._server = _HostedServer(config)
        self._app = app

    async def run(self, stop: asyncio.Event) -> None:
        """Serve until `stop`; a start that fails (port taken, backends refused) raises."""
        serving = asyncio.create_task(self._serve())
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not serving.done():
            if self._server.started:
                # graceful: end the event streams (they never finish by themselves), finish
                # the other requests, run the lifespan end
                event_streams_of(self._app.state).close()
                self._server.should_exit = True
            else:
                serving.cancel()  # still starting (e.g. waiting for NATS): nothing to finish
        with contextlib.suppress(asyncio.CancelledError):
            await serving

    async def _serve(self) -> None:
        try:
            await self._server.serve()
        except SystemExit as exc:  # uvicorn exits the process when its start-up fails
            raise RuntimeError(f"the HTTP server did not start (exit {exc.code})") from None
