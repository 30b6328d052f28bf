"""OPTIONS answers list every method of their path.

Litestar 2 builds a path's default OPTIONS handler with the first route object of that
path and keeps it when later handlers of the same path replace the route, so its `Allow`
lists only the first handler's methods (litestar#4169, fixed in Litestar 3): OPTIONS
/v1/proxies said "OPTIONS, POST" without GET. The handler reads the route's methods when
it answers, so pointing it at the final route fixes it at no cost per request.
"""

from __future__ import annotations

from litestar import Litestar
from litestar.routes import HTTPRoute


def point_options_at_final_routes(app: Litestar) -> None:
    for route in app.routes:
        if not isinstance(route, HTTPRoute) or "OPTIONS" not in route.route_handler_map:
            continue
        fn = getattr(route.route_handler_map["OPTIONS"][0], "fn", None)
        if getattr(fn, "__name__", "") != "options_handler":
            continue  # an OPTIONS handler of our own
        for cell in getattr(fn, "__closure__", None) or ():
            if isinstance(cell.cell_contents, HTTPRoute):
                cell.cell_contents = route
