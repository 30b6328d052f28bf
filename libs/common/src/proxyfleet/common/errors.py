"""The error taxonomy: temporary errors are retried with backoff, permanent ones fail at once."""

from __future__ import annotations


class ProxyfleetError(Exception):
    """Base of every error Proxyfleet raises on purpose."""


class ProviderError(ProxyfleetError):
    """An error from a provider adapter, already translated from its SDK."""


class TemporaryProviderError(ProviderError):
    """Rate limits, 5xx, timeouts, a host down: try again later."""


class PermanentProviderError(ProviderError):
    """Quota, bad image, permission: retrying will not help; the proxy fails."""


class ConfigError(ProxyfleetError):
    """A configuration file or flag is invalid; the message names the file, key and expectation."""


class StoreError(ProxyfleetError):
    """A registry or lease store operation was refused."""


class NotFound(StoreError):
    """The proxy or lease does not exist."""


class Conflict(StoreError):
    """The operation conflicts with the current state (stale generation, epoch, phase)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(StoreError):
    """No proxy can be granted now."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after
