"""Volumes in a host's storage pool: the cached base image, each VM's overlay and seed ISO.

All libvirt work runs through the host session (threads, tracing, error translation)."""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import BinaryIO

import libvirt

from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.runner.failures import ResourceMissing
from proxyfleet.provisioner_kvm.coordination import Fence, UploadLocks
from proxyfleet.provisioner_kvm.host import HostSession
from proxyfleet.provisioner_kvm.metrics import IMAGE_CACHE, UPLOAD_BYTES
from proxyfleet.provisioner_kvm.pure.volume_xml import (
    base_volume_xml,
    overlay_volume_xml,
    seed_volume_xml,
)

log = get_logger("proxyfleet.kvm.volumes")
CHUNK = 1 << 20
COMPLETE_SUFFIX = ".complete"
"""A 1-byte marker volume created once an upload finished: a base volume without it is the
leftover of an interrupted upload and is uploaded again."""


class Pool:
    """One storage pool on one host."""

    def __init__(self, session: HostSession) -> None:
        self._s = session
        self.name = session.host.storage_pool

    def _pool(self, conn: libvirt.virConnect) -> libvirt.virStoragePool:
        return conn.storagePoolLookupByName(self.name)

    def _vol(self, conn: libvirt.virConnect, volume: str) -> libvirt.virStorageVol:
        return self._pool(conn).storageVolLookupByName(volume)

    async def path_of(self, volume: str) -> str | None:
        """The file path of `volume`, or None when it does not exist."""
        try:
            return await self._s.run(
                "storageVolLookupByName",
                lambda c: str(self._vol(c, volume).path()),
                pool=self.name,
                volume=volume,
            )
        except ResourceMissing:
            return None

    async def capacity_of(self, volume: str) -> int:
        """Virtual size in bytes (for qcow2: the guest-visible size, not the file size)."""
        return await self._s.run(
            "storageVolGetInfo",
            lambda c: int(self._vol(c, volume).info()[1]),
            pool=self.name,
            volume=volume,
        )

    async def ensure_base(
        self,
        volume: str,
        fmt: str,
        fetch: Callable[[], Awaitable[Path]],
        uploads: UploadLocks,
    ) -> str:
        """The path of the cached base image `volume`; on a miss, `fetch()` gives the local
        file and it is uploaded first. One upload of it at a time: the session's volume lock
        within this process, `uploads` across replicas (the one that waited for another's
        upload finds the base cached)."""
        host = self._s.host.name
        async with self._s.volume_lock(volume):
            if (path := await self._cached(volume)) is not None:
                IMAGE_CACHE.labels(host, "hit").inc()
                return path
            IMAGE_CACHE.labels(host, "miss").inc()
            async with uploads.hold(host, volume) as fence:
                if (path := await self._cached(volume)) is not None:
                    log.info("kvm.image_uploaded_by_another", host=host, volume=volume)
                    return path
                return await self._upload_base(volume, fmt, fetch, fence)

    async def _cached(self, volume: str) -> str | None:
        """The base volume's path when its upload finished (its marker exists)."""
        path = await self.path_of(volume)
        if path is not None and await self.path_of(volume + COMPLETE_SUFFIX) is not None:
            return path
        return None

    async def _upload_base(
        self, volume: str, fmt: str, fetch: Callable[[], Awaitable[Path]], fence: Fence
    ) -> str:
        host = self._s.host.name
        if await self.path_of(volume) is not None:
            log.warning("kvm.image_upload_restarted", volume=volume)
            await self.delete(volume)
        local = await fetch()
        size = local.stat().st_size
        log.info("kvm.image_upload_started", host=host, volume=volume, bytes=size)
        with local.open("rb") as src:
            path = await self.upload(volume, base_volume_xml(volume, size, fmt), src, size)
        await fence()  # never mark an upload another replica may be redoing
        marker = volume + COMPLETE_SUFFIX
        await self.upload(marker, seed_volume_xml(marker, 1), io.BytesIO(b"1"), 1)
        log.info("kvm.image_uploaded", host=host, volume=volume, bytes=size)
        return path

    async def upload(self, volume: str, xml: str, src: BinaryIO, size: int) -> str:
        """Create `volume` from `xml` and stream `size` bytes of `src` into it (libvirt's
        volume upload); on failure the half-written volume is deleted. Returns its path."""
        host = self._s.host.name

        def upload(conn: libvirt.virConnect) -> str:
            vol = self._pool(conn).createXML(xml, 0)
            stream = conn.newStream(0)
            try:
                vol.upload(stream, 0, size, 0)

                def send(_st: libvirt.virStream, nbytes: int, _opaque: object) -> bytes:
                    data = src.read(min(nbytes, CHUNK))
                    UPLOAD_BYTES.labels(host).inc(len(data))
                    return data

                stream.sendAll(send, None)
                stream.finish()
            except BaseException:
                try:
                    stream.abort()
                finally:
                    vol.delete(0)
                raise
            return str(vol.path())

        return await self._s.run(
            "storageVolUpload", upload, pool=self.name, volume=volume, bytes=size
        )

    async def download(self, volume: str) -> bytes:
        """The whole content of `volume` (for checks and diagnostics, not for big images)."""

        def download(conn: libvirt.virConnect) -> bytes:
            vol = self._vol(conn, volume)
            stream = conn.newStream(0)
            chunks: list[bytes] = []

            def keep(_st: libvirt.virStream, data: bytes, _opaque: object) -> int:
                chunks.append(data)
                return len(data)

            vol.download(stream, 0, 0, 0)
            stream.recvAll(keep, None)
            stream.finish()
            return b"".join(chunks)

        return await self._s.run("storageVolDownload", download, pool=self.name, volume=volume)

    async def ensure_overlay(
        self, volume: str, capacity: int, backing_path: str, backing_format: str
    ) -> str:
        """The VM's copy-on-write disk over the base image (created when missing)."""
        if (path := await self.path_of(volume)) is not None:
            return path
        xml = overlay_volume_xml(volume, capacity, backing_path, backing_format)
        return await self._s.run(
            "storageVolCreateXML",
            lambda c: str(self._pool(c).createXML(xml, 0).path()),
            pool=self.name,
            volume=volume,
        )

    async def replace_small(self, volume: str, xml: str, data: bytes) -> str:
        """Upload `data` as `volume`, replacing an older copy (seed ISOs)."""
        await self.delete(volume)
        return await self.upload(volume, xml, io.BytesIO(data), len(data))

    async def delete(self, volume: str) -> bool:
        """Delete `volume`; False when it was not there."""
        try:
            await self._s.run(
                "storageVolDelete",
                lambda c: self._vol(c, volume).delete(0),
                pool=self.name,
                volume=volume,
            )
        except ResourceMissing:
            return False
        return True
