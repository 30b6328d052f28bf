"""The error taxonomy: temporary errors are retried with backoff, permanent ones fail at once.

Every error Proxyfleet raises on purpose is a `ProxyfleetError`. Errors from libraries
(redis, nats, provider SDKs) are translated where they originate (the store, the messaging
module, each provider adapter) into one of these, so callers branch on meaning, never on a
library's exception classes or module names.

- `TemporaryError`: try again later, after `retry_after` seconds when the source knows.
  Store and messaging outages, provider rate limits and 5xx.
- `PermanentProviderError`: retrying will not help.
- `DomainError`: a request the domain refuses (bad input, not found, conflict, nothing
  available). The API's error module alone maps these to HTTP.
- `ConfigError`: a configuration file or flag is invalid (services exit 2).
"""

from __future__ import annotations


class ProxyfleetError(Exception):
    """Base of every error Proxyfleet raises on purpose."""


class TemporaryError(ProxyfleetError):
    """Something this service depends on failed for now: retry, after `retry_after`
    seconds when the source gives a hint (None: use your own backoff)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class StoreUnavailable(TemporaryError):
    """Redis cannot be reached, is loading its dataset or timed out."""


class MessagingUnavailable(TemporaryError):
    """NATS / JetStream cannot take or give a message now (disconnected, no ack in time,
    buffer full while reconnecting)."""


class ProviderError(ProxyfleetError):
    """An error from a provider adapter, already translated from its SDK."""


class TemporaryProviderError(ProviderError, TemporaryError):
    """Rate limits, 5xx, timeouts, a host down: try again later (after `retry_after`
    seconds when the provider said so, e.g. a Retry-After header)."""

    def __init__(self, message: str = "", retry_after: float | None = None) -> None:
        TemporaryError.__init__(self, message, retry_after)


class PermanentProviderError(ProviderError):
    """Quota, bad image, permission: retrying will not help; the proxy fails."""


class ConfigError(ProxyfleetError):
    """A configuration file or flag is invalid; the message names the file, key and expectation."""


class DomainError(ProxyfleetError):
    """A request the domain refuses; `code` is a short stable name (invalid_placement, ...)."""

    code = "bad_request"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class InvalidInput(DomainError):
    """The request names something wrong (unknown provider or zone, a bad placement, a bad
    filter): a 400 at the API."""

    code = "invalid_input"


class StoreError(DomainError):
    """A registry or lease store operation was refused."""


class NotFound(StoreError):
    """The proxy or lease does not exist."""

    code = "not_found"


class Conflict(StoreError):
    """The operation conflicts with the current state (stale generation, epoch, phase)."""

    code = "conflict"

    def __init__(
        self, message: str, retry_after: float | None = None, code: str | None = None
    ) -> None:
        super().__init__(message, code)
        self.retry_after = retry_after


class Unavailable(StoreError):
    """No proxy can be granted now."""

    code = "unavailable"

    def __init__(self, message: str, retry_after: float, code: str | None = None) -> None:
        super().__init__(message, code)
        self.retry_after = retry_after
