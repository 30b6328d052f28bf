"""Reading a static provider's sources: a file, an HTTP(S) URL, and the entries an admin
added at run time (ProviderEntries in the store).

A read that fails (unreachable, unreadable, not 200, an HTML answer, too big) raises
SourceUnavailable with a reason that names neither the path's secrets nor the URL (a URL
may carry a token): the caller keeps the last good load.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import httpx

from proxyfleet.common.store import AddedEntry, ProviderEntries
from proxyfleet.provisioner_static.pure.config import SourceConfig

HTML_TYPES = ("text/html", "application/xhtml")


class SourceUnavailable(Exception):
    """A source could not be read now; the message says why (no URL, no credentials)."""


@dataclass(frozen=True, slots=True)
class SourceReader:
    http: httpx.AsyncClient
    max_bytes: int

    async def read(self, source: SourceConfig) -> str:
        """The source's text; SourceUnavailable."""
        if source.file:
            return await asyncio.to_thread(self._read_file, Path(source.file))
        return await self._fetch(source.url)

    def _read_file(self, path: Path) -> str:
        try:
            with path.open("rb") as f:
                data = f.read(self.max_bytes + 1)
        except OSError as exc:
            raise SourceUnavailable(f"cannot read the file: {exc.strerror}") from None
        return self._text(data)

    async def _fetch(self, url: str) -> str:
        try:
            async with self.http.stream("GET", url) as answer:
                if answer.status_code != 200:
                    raise SourceUnavailable(f"answered HTTP {answer.status_code}")
                kind = answer.headers.get("content-type", "").lower()
                if kind.startswith(HTML_TYPES):
                    raise SourceUnavailable(f"answered HTML ({kind.split(';')[0]}), not a list")
                data = bytearray()
                async for chunk in answer.aiter_bytes():
                    data += chunk
                    if len(data) > self.max_bytes:
                        break
        except httpx.HTTPError as exc:
            # The exception's text may repeat the URL: its class says enough.
            raise SourceUnavailable(f"unreachable: {type(exc).__name__}") from None
        text = self._text(bytes(data))
        if text.lstrip()[:1] == "<":
            raise SourceUnavailable("answered HTML (a page starting with <), not a list")
        return text

    def _text(self, data: bytes) -> str:
        if len(data) > self.max_bytes:
            raise SourceUnavailable(f"larger than {self.max_bytes} bytes")
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise SourceUnavailable("not UTF-8 text") from None


@dataclass(slots=True)
class AddedEntries:
    """The runtime-added entries, read again only when their version changed."""

    store: ProviderEntries
    provider: str
    version: int = -1
    entries: dict[str, AddedEntry] | None = None

    async def changed(self) -> bool:
        """Read them when their version moved since the last read; whether it did."""
        version = await self.store.version(self.provider)
        if version == self.version and self.entries is not None:
            return False
        self.entries = await self.store.entries(self.provider)
        self.version = version
        return True
