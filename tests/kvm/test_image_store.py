"""Base images fetched by the provisioner: over HTTP from a real local server (streamed to
the cache, sha256 checked, cached for later proxies) and from file:// URLs."""

from __future__ import annotations

import hashlib
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.provisioner_kvm.image_store import ImageStore
from proxyfleet.provisioner_kvm.pure.placement import ImageRef

DATA = os.urandom(3 * (1 << 20) + 123)  # a few chunks and a partial one
SHA = hashlib.sha256(DATA).hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        if self.path == "/broken":
            self.send_error(503)
            return
        if self.path != "/image.qcow2":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(DATA)))
        self.end_headers()
        self.wfile.write(DATA)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def image(url: str, sha256: str = "") -> ImageRef:
    return ImageRef(key="t", url=url, sha256=sha256, firmware="uefi", format="qcow2")


def downloaded() -> float:
    return REGISTRY.get_sample_value("proxyfleet_kvm_image_download_bytes_total") or 0.0


async def test_download_is_streamed_checked_and_cached(server: str, tmp_path: Path) -> None:
    store = ImageStore(tmp_path / "cache")
    ref = image(f"{server}/image.qcow2", SHA)
    before, _Handler.hits[:] = downloaded(), []
    path = await store.fetch(ref)
    assert path.read_bytes() == DATA
    assert downloaded() - before == len(DATA)
    assert not list((tmp_path / "cache").glob("*.part"))
    # A second proxy, and a new provisioner process with the same cache dir: no download.
    assert await store.fetch(ref) == path
    assert await ImageStore(tmp_path / "cache").fetch(ref) == path
    assert _Handler.hits == ["/image.qcow2"]


async def test_sha256_mismatch_is_permanent_and_drops_the_file(server: str, tmp_path: Path) -> None:
    store = ImageStore(tmp_path / "cache")
    with pytest.raises(PermanentProviderError, match=f"sha256 mismatch.*got {SHA}"):
        await store.fetch(image(f"{server}/image.qcow2", "0" * 64))
    assert list((tmp_path / "cache").iterdir()) == []


async def test_http_errors_map_to_the_taxonomy(server: str, tmp_path: Path) -> None:
    store = ImageStore(tmp_path / "cache", timeout=5)
    with pytest.raises(PermanentProviderError, match="HTTP 404"):
        await store.fetch(image(f"{server}/missing.qcow2"))
    with pytest.raises(TemporaryProviderError, match="HTTP 503"):
        await store.fetch(image(f"{server}/broken"))
    with pytest.raises(TemporaryProviderError, match=r"GET http://127\.0\.0\.1:9/"):
        await store.fetch(image("http://127.0.0.1:9/nothing-listens"))


async def test_file_urls_are_used_in_place(tmp_path: Path) -> None:
    src = tmp_path / "local.qcow2"
    src.write_bytes(DATA)
    store = ImageStore(tmp_path / "cache")
    assert await store.fetch(image(f"file://{src}", SHA)) == src
    with pytest.raises(PermanentProviderError, match="no file at"):
        await store.fetch(image(f"file://{tmp_path}/nope.qcow2"))
    with pytest.raises(PermanentProviderError, match="sha256 mismatch"):
        await ImageStore(tmp_path / "c2").fetch(image(f"file://{src}", "1" * 64))
    assert src.exists()  # never delete the operator's own file
