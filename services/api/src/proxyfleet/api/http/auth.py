"""Bearer-token auth with two scopes (brief, section 7).

admin: everything. client: leases and GET /v1/providers. A route states the scope it
needs in its `opt["scope"]`; a route under /v1 that states none needs admin (fail closed).
Tokens are compared in constant time against every configured token. The guard puts the
caller (`tokens.Principal`: the token's name and scope) in the ASGI scope as `user`, read
by the handlers as `request.user`.
"""

from __future__ import annotations

import hmac
from typing import Any

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler

from proxyfleet.common.domain.tokens import INSECURE_NAME, Principal, Scope, parse_tokens

__all__ = ["Principal", "Scope", "TokenAuth"]

_GRANTS: dict[Scope, frozenset[Scope]] = {
    Scope.ADMIN: frozenset({Scope.ADMIN, Scope.CLIENT}),
    Scope.CLIENT: frozenset({Scope.CLIENT}),
}


class TokenAuth:
    def __init__(
        self, admin_tokens: tuple[str, ...], client_tokens: tuple[str, ...], *, insecure: bool
    ) -> None:
        """Tokens as configured (`name:secret`); ConfigError when one is not."""
        self._tokens = [
            (t.secret.encode(), Principal(t.name, t.scope))
            for t in parse_tokens(admin_tokens, client_tokens)
        ]
        self.insecure = insecure
        self._insecure = Principal(INSECURE_NAME, Scope.ADMIN)

    def names(self, scope: Scope) -> list[str]:
        return [p.name for _, p in self._tokens if p.scope is scope]

    def principal_of(self, token: str) -> Principal | None:
        """The caller a bearer secret identifies; None when unknown. Every configured
        token is compared (secrets are unique), so timing tells nothing."""
        given = token.encode()
        found: Principal | None = None
        for candidate, principal in self._tokens:
            if hmac.compare_digest(candidate, given) and found is None:
                found = principal
        return found

    def bearer_principal(self, authorization: str) -> Principal | None:
        """The caller an Authorization header identifies, as the guard would (the
        insecure caller when there is no auth); None when the guard would refuse it."""
        if self.insecure:
            return self._insecure
        token = _bearer_token(authorization)
        return None if token is None else self.principal_of(token)

    def scope_of(self, token: str) -> Scope | None:
        principal = self.principal_of(token)
        return None if principal is None else principal.scope

    async def guard(
        self, connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler
    ) -> None:
        """Litestar guard: 401 without a known token, 403 when its scope is too narrow.
        A coroutine on purpose: Litestar runs a sync guard in a worker thread, a thread hop
        on every request."""
        if self.insecure:
            connection.scope["user"] = self._insecure
            return
        token = _bearer_token(connection.headers.get("authorization", ""))
        if token is None:
            raise NotAuthorizedException("missing bearer token: send Authorization: Bearer <token>")
        principal = self.principal_of(token)
        if principal is None:
            raise NotAuthorizedException("unknown token")
        scope = principal.scope
        needed = Scope(handler.opt.get("scope", Scope.ADMIN))
        if needed not in _GRANTS[scope]:
            raise PermissionDeniedException(
                f"this endpoint needs the {needed} scope; the token has the {scope} scope"
            )
        connection.scope["user"] = principal


def _bearer_token(authorization: str) -> str | None:
    """The token of `Bearer <token>`; None for any other header."""
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None
