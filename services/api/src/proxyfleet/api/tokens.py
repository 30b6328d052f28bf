"""Moved to `proxyfleet.common.tokens` (the gateway authenticates with the same tokens);
this name stays for the imports in api/leases/ until they switch."""

from proxyfleet.common.tokens import INSECURE_NAME, NamedToken, Principal, Scope, parse_tokens

__all__ = ["INSECURE_NAME", "NamedToken", "Principal", "Scope", "parse_tokens"]
