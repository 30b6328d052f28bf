"""The dev stack's HTTPS target (proxyfleet.devstack.target)."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx
from tests.conftest import TargetServer

from proxyfleet.devstack.target import make_tls_material, start_target


async def test_answers_any_get_with_json_naming_the_peer(target: TargetServer) -> None:
    async with httpx.AsyncClient(verify=ssl.create_default_context(cafile=target.ca_file)) as c:
        for host in ("127.0.0.1", "localhost"):
            resp = await c.get(f"https://{host}:{target.port}/some/path?q=1")
            assert resp.status_code == 200
            assert resp.headers["content-type"] == "application/json"
            assert resp.json() == {"ok": True, "ip": "127.0.0.1", "path": "/some/path?q=1"}
        refused = await c.post(f"https://127.0.0.1:{target.port}/", content=b"x")
        assert refused.status_code == 405


def test_tls_material_is_made_once(tmp_path: Path) -> None:
    files = make_tls_material(tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {"ca.pem", "cert.pem", "key.pem"}
    assert files.key.stat().st_mode & 0o077 == 0
    ca_pem = files.ca.read_bytes()
    assert make_tls_material(tmp_path).ca.read_bytes() == ca_pem  # reused
    assert make_tls_material(tmp_path, reuse=False).ca.read_bytes() != ca_pem


async def test_start_target_serves_with_the_material(tmp_path: Path) -> None:
    files = make_tls_material(tmp_path)
    server = await start_target("127.0.0.1", 0, files)
    port = server.sockets[0].getsockname()[1]
    try:
        verify = ssl.create_default_context(cafile=str(files.ca))
        async with httpx.AsyncClient(verify=verify) as c:
            resp = await c.get(f"https://127.0.0.1:{port}/x")
        assert resp.json()["path"] == "/x"
    finally:
        server.close()
        await server.wait_closed()
