"""Base images on the provisioner's disk: downloaded once (progress in the log), checked
against their sha256 when one is configured, then uploaded into each host's pool."""

from __future__ import annotations

import asyncio
import hashlib
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import httpx

from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.provisioner_kvm.metrics import DOWNLOAD_BYTES
from proxyfleet.provisioner_kvm.pure.names import base_volume_name
from proxyfleet.provisioner_kvm.pure.placement import ImageRef

log = get_logger("proxyfleet.kvm.images")

CHUNK = 1 << 20
PROGRESS_EVERY = 5.0
"""Seconds between two progress lines of a download."""


class ImageStore:
    """Local copies of base images, keyed like their volumes in the pools."""

    def __init__(self, cache_dir: Path, *, timeout: float = 60.0) -> None:
        self._dir = cache_dir
        self._timeout = timeout
        self._locks: dict[str, asyncio.Lock] = {}
        self._verified: set[Path] = set()

    async def fetch(self, image: ImageRef) -> Path:
        """A local file with the image's bytes (downloaded when not cached yet)."""
        name = base_volume_name(image)
        async with self._locks.setdefault(name, asyncio.Lock()):
            if image.url.startswith("file://"):
                path = Path(unquote(urlsplit(image.url).path))
                if not await asyncio.to_thread(path.is_file):
                    raise PermanentProviderError(f"image {image.key}: no file at {path}")
            else:
                path = self._dir / name
                if not await asyncio.to_thread(path.is_file):
                    await self._download(image, path)
            if path not in self._verified:
                await asyncio.to_thread(_verify, image, path)
                self._verified.add(path)
            return path

    async def _download(self, image: ImageRef, path: Path) -> None:
        self._dir.mkdir(parents=True, exist_ok=True)
        part = path.with_suffix(path.suffix + ".part")
        started = last = time.monotonic()
        done = 0
        log.info("kvm.image_download_started", image=image.key, url=image.url)
        try:
            async with (
                httpx.AsyncClient(timeout=self._timeout, follow_redirects=True) as http,
                http.stream("GET", image.url) as response,
            ):
                _check_status(image, response.status_code)
                total = int(response.headers.get("content-length") or 0)
                with part.open("wb") as out:
                    async for chunk in response.aiter_bytes(CHUNK):
                        out.write(chunk)
                        done += len(chunk)
                        DOWNLOAD_BYTES.inc(len(chunk))
                        if time.monotonic() - last >= PROGRESS_EVERY:
                            last = time.monotonic()
                            _progress(image, done, total, last - started)
        except httpx.HTTPError as exc:
            part.unlink(missing_ok=True)
            raise TemporaryProviderError(f"image {image.key}: GET {image.url}: {exc}") from None
        except BaseException:
            part.unlink(missing_ok=True)
            raise
        part.rename(path)
        log.info(
            "kvm.image_downloaded",
            image=image.key,
            bytes=done,
            seconds=round(time.monotonic() - started, 1),
        )


def _check_status(image: ImageRef, status: int) -> None:
    if status < 400:
        return
    error = f"image {image.key}: GET {image.url}: HTTP {status}"
    if status in (401, 403, 404, 410):
        raise PermanentProviderError(error)
    raise TemporaryProviderError(error)


def _progress(image: ImageRef, done: int, total: int, elapsed: float) -> None:
    percent = round(100 * done / total, 1) if total else None
    rate = round(done / elapsed / 1e6, 1) if elapsed else None
    log.info(
        "kvm.image_download_progress",
        image=image.key,
        bytes=done,
        total=total,
        percent=percent,
        mb_per_s=rate,
    )


def _verify(image: ImageRef, path: Path) -> None:
    if not image.sha256:
        return
    digest = hashlib.sha256()
    with path.open("rb") as src:
        while chunk := src.read(CHUNK):
            digest.update(chunk)
    got = digest.hexdigest()
    if got != image.sha256:
        if not image.url.startswith("file://"):
            path.unlink(missing_ok=True)
        raise PermanentProviderError(
            f"image {image.key}: sha256 mismatch for {image.url}: "
            f"expected {image.sha256}, got {got}"
        )
