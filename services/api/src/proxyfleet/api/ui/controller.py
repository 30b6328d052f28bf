"""GET /ui (the page) and /ui/assets/<file> (its scripts, style and icon), no token.

The page's Content-Security-Policy lets it load and call nothing but this origin, run no
inline script and be framed by no one: data shown through textContent cannot become
markup, and if some ever did, it could not run or send anything anywhere.
"""

from __future__ import annotations

from pathlib import Path

from litestar import Response, Router, get
from litestar.datastructures import CacheControlHeader
from litestar.enums import MediaType
from litestar.static_files import create_static_files_router

ASSETS = Path(__file__).parent / "assets"
"""style.css, favicon.svg and js/*.js (ES modules, no build step)."""
PAGE = (Path(__file__).parent / "index.html").read_bytes()
"""The page, outside ASSETS so that it is served only with its headers."""
UI_PATH = "/ui"
ASSETS_PATH = "/ui/assets"

CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
# Revalidated on every load (ETag): a new release's scripts are never mixed with old ones.
ASSETS_CACHE = CacheControlHeader(no_cache=True)


@get([UI_PATH, f"{UI_PATH}/"], include_in_schema=False, name="ui")
async def ui_page() -> Response[bytes]:
    """The dashboard's page (public: it holds no data)."""
    return Response(PAGE, media_type=MediaType.HTML, headers=PAGE_HEADERS)


def ui_router() -> Router:
    assets = create_static_files_router(
        path=ASSETS_PATH,
        directories=[ASSETS],
        include_in_schema=False,
        name="ui-assets",
        cache_control=ASSETS_CACHE,
    )
    return Router(path="/", route_handlers=[ui_page, assets], include_in_schema=False)
