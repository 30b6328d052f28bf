"""/ui works without internet: the page and everything it loads are served by the API
itself from the package, with no token, under a policy that allows nothing else."""

from __future__ import annotations

import re

from tests.api.helpers import Api

from proxyfleet.api.ui.controller import ASSETS, PAGE

LOADED = re.compile(r"""<(?:script|link|img)\b[^>]*\b(?:src|href)=["']([^"']+)["']""", re.I)
IMPORTS = re.compile(r"""\bfrom\s+["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']""")
URL = re.compile(r"""https?://[^\s"'`)]+""")
SVG_NS = "http://www.w3.org/2000/svg"
"""The one URL in the scripts: a namespace name, never fetched."""


async def test_the_page_loads_only_what_the_api_serves(api: Api) -> None:
    for path in ("/ui", "/ui/"):
        r = await api.anon.get(path)
        assert r.status_code == 200, path
        assert r.headers["content-type"].startswith("text/html")
        assert r.content == PAGE
    loaded = LOADED.findall(PAGE.decode())
    assert len(loaded) >= 3, loaded  # icon, style, script
    for url in loaded:
        assert url.startswith("/ui/assets/"), f"{url} is loaded from elsewhere"
        asset = await api.anon.get(url)
        assert asset.status_code == 200, url
    assert not URL.findall(PAGE.decode())


async def test_the_policy_forbids_every_other_origin_and_inline_script(api: Api) -> None:
    r = await api.anon.get("/ui")
    directives = [d.split(" ", 1) for d in r.headers["content-security-policy"].split("; ")]
    csp = {d[0]: d[1] for d in directives}
    assert csp["default-src"] == "'none'"
    for directive in ("script-src", "style-src", "img-src", "connect-src"):
        assert csp[directive] == "'self'", directive
    assert csp["frame-ancestors"] == "'none'"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "<script>" not in PAGE.decode()  # inline scripts would be refused anyway


async def test_every_module_and_its_imports_are_served_as_javascript(api: Api) -> None:
    scripts = sorted((ASSETS / "js").glob("*.js"))
    assert len(scripts) >= 5
    for script in scripts:
        r = await api.anon.get(f"/ui/assets/js/{script.name}")
        assert r.status_code == 200, script.name
        # module scripts are refused unless served with a JavaScript type
        assert "javascript" in r.headers["content-type"], script.name
        assert r.content == script.read_bytes()
        text = script.read_text()
        for a, b in IMPORTS.findall(text):
            target = a or b
            assert target.startswith("./"), f"{script.name} imports {target}"
            assert (script.parent / target).is_file(), f"{script.name}: {target} is missing"
        assert set(URL.findall(text)) <= {SVG_NS}, script.name
        assert "innerHTML" not in text, script.name
        assert "insertAdjacentHTML" not in text, script.name


async def test_the_ui_needs_no_token_and_is_not_in_the_api_document(api: Api) -> None:
    r = await api.anon.get("/ui/assets/style.css")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/css")
    assert (await api.anon.get("/ui/assets/nothing-here.js")).status_code == 404
    paths = (await api.anon.get("/schema/openapi.json")).json()["paths"]
    assert not [p for p in paths if p.startswith("/ui")]
