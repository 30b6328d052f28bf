"""The API reference at /schema (Redoc), with its script served by the API itself from its
package (`static/`): the page renders on a machine without internet (Litestar's default loads Redoc,
fonts and a favicon from CDNs). The machine-readable document stays at
/schema/openapi.json."""

from __future__ import annotations

from pathlib import Path

from litestar import Router
from litestar.openapi.plugins import JsonRenderPlugin, RedocRenderPlugin
from litestar.static_files import create_static_files_router

ASSETS = Path(__file__).parents[1] / "static"
"""Vendored from the npm package redoc 2.5.4 (bundles/redoc.standalone.js, MIT)."""
ASSETS_PATH = "/docs-assets"
REDOC_JS = "redoc.standalone.js"


def render_plugins() -> list[JsonRenderPlugin | RedocRenderPlugin]:
    redoc = RedocRenderPlugin(
        path=["/", "/redoc"],
        js_url=f"{ASSETS_PATH}/{REDOC_JS}",
        google_fonts=False,
        favicon="",
    )
    return [redoc, JsonRenderPlugin()]


def assets_router() -> Router:
    """GET /docs-assets/<file>: the page's script, open like /schema itself."""
    return create_static_files_router(
        path=ASSETS_PATH, directories=[ASSETS], include_in_schema=False, name="docs-assets"
    )
