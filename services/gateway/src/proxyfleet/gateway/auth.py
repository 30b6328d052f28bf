"""Which client a proxy password (an API client token's secret) identifies."""

from __future__ import annotations

import hmac

from proxyfleet.common.domain.tokens import parse_tokens


class TokenBook:
    def __init__(self, client_tokens: tuple[str, ...]) -> None:
        """Tokens as configured (`name:secret`); ConfigError when one is not."""
        self._tokens = [(t.secret.encode(), t.name) for t in parse_tokens((), client_tokens)]

    def owner_of(self, secret: str) -> str | None:
        """The token name of a secret; None when unknown. Every token is compared (secrets
        are unique), so timing tells nothing about which one came close."""
        given = secret.encode()
        found: str | None = None
        for candidate, name in self._tokens:
            if hmac.compare_digest(candidate, given) and found is None:
                found = name
        return found
