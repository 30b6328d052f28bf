"""/schema renders without internet: the page loads only what the API itself serves (the
Redoc script vendored in the package), and the machine-readable document is still there."""

from __future__ import annotations

import re

from tests.api.helpers import Api

from proxyfleet.api.http.docs_ui import ASSETS, REDOC_JS

LOADED = re.compile(r"""<(?:script|link|img)\b[^>]*\b(?:src|href)=["']([^"']+)["']""", re.I)


async def test_the_reference_page_loads_only_what_the_api_serves(api: Api) -> None:
    r = await api.anon.get("/schema")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    page = r.text
    loaded = LOADED.findall(page)
    assert loaded, page[:500]
    for url in loaded:
        assert url.startswith("/"), f"{url} is loaded from elsewhere"
        assert not url.startswith("//"), url
        asset = await api.anon.get(url)
        assert asset.status_code == 200, url
    assert "Redoc.init(" in page
    assert "fonts.googleapis.com" not in page
    assert "cdn." not in page


async def test_the_script_is_the_vendored_bundle(api: Api) -> None:
    r = await api.anon.get(f"/docs-assets/{REDOC_JS}")
    assert r.status_code == 200
    assert "javascript" in r.headers["content-type"]
    assert r.content == (ASSETS / REDOC_JS).read_bytes()
    assert b"Redoc" in r.content[:400]


async def test_the_json_document_is_still_served_and_the_assets_are_not_in_it(api: Api) -> None:
    r = await api.anon.get("/schema/openapi.json")
    assert r.status_code == 200
    assert not [p for p in r.json()["paths"] if p.startswith("/docs-assets")]
