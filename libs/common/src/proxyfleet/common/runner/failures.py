"""What a remote provider's failed call means, and the taxonomy error that carries it. Pure.

Each provider fills a `Classifier` with its SDK's exception types and a function per
type that reads one (status codes, error reasons, libvirt codes) into `Classified`; the
blocking-call executor (`blocking.py`) raises the result as `ClassifiedTemporaryError`
or `ClassifiedPermanentError`, so the runner retries or fails on the kind alone and
callers branch on `failure_kind` (or catch `ResourceMissing`), never on an SDK's exception classes.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar, cast

from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError


class Kind(enum.Enum):
    TEMPORARY = "temporary"
    """Rate limits, 5xx, timeouts, no answer: try again later."""
    CAPACITY = "capacity"
    """No room for this resource in its zone now: another zone may have some."""
    DISCONNECTED = "disconnected"
    """The connection itself is gone: reconnect, then try again."""
    PERMANENT = "permanent"
    """Invalid request, missing image, missing permission: retrying will not help."""
    QUOTA = "quota"
    """A quota is used up: permanent for this proxy."""
    NOT_FOUND = "not_found"
    """The resource is not there (success for a delete, a miss for a get)."""
    EXISTS = "exists"
    """Already there (a create that lost a race, or an earlier attempt's): read it back."""
    GONE = "gone"
    """A watch's resource version is too old: list again."""


TEMPORARY_KINDS = frozenset({Kind.TEMPORARY, Kind.CAPACITY, Kind.DISCONNECTED})
"""The kinds raised as temporary errors (the runner redelivers the intent later)."""


@dataclass(frozen=True, slots=True)
class Classified:
    kind: Kind
    code: str
    """Short name of what decided, the `code` label of the errors metric."""
    message: str
    retry_after: float | None = None
    """Seconds the provider asked us to wait (temporary kinds), when it said."""


class ClassifiedTemporaryError(TemporaryProviderError):
    def __init__(self, classified: Classified) -> None:
        super().__init__(classified.message, retry_after=classified.retry_after)
        self.classified = classified


class ClassifiedPermanentError(PermanentProviderError):
    def __init__(self, classified: Classified) -> None:
        super().__init__(classified.message)
        self.classified = classified


class ResourceMissing(ClassifiedPermanentError):
    """The resource is not there (kind NOT_FOUND): callers usually expect that."""


ClassifiedError = ClassifiedTemporaryError | ClassifiedPermanentError


def provider_error(classified: Classified) -> ClassifiedError:
    """The taxonomy error of a classified failure."""
    if classified.kind in TEMPORARY_KINDS:
        return ClassifiedTemporaryError(classified)
    if classified.kind is Kind.NOT_FOUND:
        return ResourceMissing(classified)
    return ClassifiedPermanentError(classified)


def failure_kind(exc: BaseException) -> Kind | None:
    """The kind of a classified provider error; None for any other exception."""
    if isinstance(exc, ClassifiedTemporaryError | ClassifiedPermanentError):
        return exc.classified.kind
    return None


E = TypeVar("E", bound=BaseException)
Reader = Callable[[BaseException, str], Classified]
"""Reads one SDK exception into its classification; the `str` names the call."""
Row = tuple[type[BaseException] | tuple[type[BaseException], ...], Reader]


def row(types: type[E] | tuple[type[E], ...], read: Callable[[E, str], Classified]) -> Row:
    """A row of a `Classifier`: `read` is only given exceptions of `types`."""
    return types, cast(Reader, read)


@dataclass(frozen=True, slots=True)
class Classifier:
    """A provider's table: SDK exception types, each with the function that reads it.
    The first row whose types match decides (put subclasses before their bases)."""

    rows: tuple[Row, ...]

    def __call__(self, exc: BaseException, what: str) -> Classified | None:
        """The classification of `exc` from the call named `what`; None when it is not
        one of the SDK's (a bug of ours: raised as it is)."""
        for types, read in self.rows:
            if isinstance(exc, types):
                return read(exc, what)
        return None
