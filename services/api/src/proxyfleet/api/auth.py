"""Bearer-token auth with two scopes (brief, section 7).

admin: everything. client: leases and GET /v1/providers. A route states the scope it
needs in its `opt["scope"]`; a route under /v1 that states none needs admin (fail closed).
Tokens are compared in constant time against every configured token.
"""

from __future__ import annotations

import enum
import hmac
from typing import Any

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler

from proxyfleet.api.settings import ApiSettings


class Scope(enum.StrEnum):
    ADMIN = "admin"
    CLIENT = "client"


_GRANTS: dict[Scope, frozenset[Scope]] = {
    Scope.ADMIN: frozenset({Scope.ADMIN, Scope.CLIENT}),
    Scope.CLIENT: frozenset({Scope.CLIENT}),
}


class TokenAuth:
    def __init__(
        self, admin_tokens: tuple[str, ...], client_tokens: tuple[str, ...], *, insecure: bool
    ) -> None:
        self._tokens = [(t.encode(), Scope.ADMIN) for t in admin_tokens] + [
            (t.encode(), Scope.CLIENT) for t in client_tokens
        ]
        self.insecure = insecure

    @classmethod
    def from_settings(cls, settings: ApiSettings) -> TokenAuth:
        return cls(settings.admin_tokens, settings.client_tokens, insecure=settings.insecure_dev)

    def scope_of(self, token: str) -> Scope | None:
        """The scope of a token (admin wins when one is configured as both); None when
        unknown. Every configured token is compared, so timing tells nothing."""
        given = token.encode()
        found: Scope | None = None
        for candidate, scope in self._tokens:
            if hmac.compare_digest(candidate, given) and found is None:
                found = scope
        return found

    async def guard(
        self, connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler
    ) -> None:
        """Litestar guard: 401 without a known token, 403 when its scope is too narrow.
        A coroutine on purpose: Litestar runs a sync guard in a worker thread, a thread hop
        on every request."""
        if self.insecure:
            return
        header = connection.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise NotAuthorizedException("missing bearer token: send Authorization: Bearer <token>")
        scope = self.scope_of(token)
        if scope is None:
            raise NotAuthorizedException("unknown token")
        needed = Scope(handler.opt.get("scope", Scope.ADMIN))
        if needed not in _GRANTS[scope]:
            raise PermissionDeniedException(
                f"this endpoint needs the {needed} scope; the token has the {scope} scope"
            )
