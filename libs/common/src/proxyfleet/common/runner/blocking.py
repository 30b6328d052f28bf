"""Blocking SDK calls (Compute REST clients, the Kubernetes client, libvirt-python) run on
a bounded pool of worker threads, never on the event loop: each one timed and counted
per operation and result, and its failure classified (`failures.py`) and raised as the
taxonomy.

A worker thread cannot be stopped from outside, so each call is handed its timeout for
the SDK to apply. The SDK's own retries must be off (each provider configures its
client so): the runner's backoff decides when to try again, and an SDK retrying inside
a call would hide an outage and hold a thread.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from prometheus_client import Counter, Histogram

from proxyfleet.common.metrics import LATENCY_BUCKETS
from proxyfleet.common.runner.failures import (
    Classified,
    ClassifiedPermanentError,
    ClassifiedTemporaryError,
    Classifier,
    Kind,
    provider_error,
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CallMetrics:
    """A provider's call metrics; each is labelled first by the operation's labels."""

    seconds: Histogram
    """Latency by operation and result (ok or error)."""
    errors: Counter
    """Failed calls by operation and classification code."""
    calls: Counter | None = None
    """Calls made, by operation (None: not counted)."""

    @classmethod
    def define(
        cls,
        prefix: str,
        labels: Sequence[str],
        *,
        seconds_help: str,
        errors_help: str,
        calls_help: str = "",
    ) -> CallMetrics:
        """`<prefix>_call_seconds`, `<prefix>_calls_total` (when `calls_help` is given)
        and `<prefix>_errors_total`, registered in that order."""
        seconds = Histogram(
            f"{prefix}_call_seconds", seconds_help, [*labels, "result"], buckets=LATENCY_BUCKETS
        )
        calls = Counter(f"{prefix}_calls_total", calls_help, list(labels)) if calls_help else None
        errors = Counter(f"{prefix}_errors_total", errors_help, [*labels, "code"])
        return cls(seconds, errors, calls)


@dataclass(frozen=True, slots=True)
class CallReport:
    """One finished call, or a failure found after its call (an operation's error)."""

    op: tuple[str, ...]
    seconds: float | None
    """How long the call took (None: not a call)."""
    failure: Classified | None = None
    counted: bool = False
    """The failure was counted in the errors metric (not one of the quiet kinds)."""
    error: BaseException | None = None
    """The SDK's exception, as raised."""
    context: Mapping[str, Any] = field(default_factory=dict)
    """What the caller gave to name the call in logs (a zone, a domain, ...)."""


class BlockingCalls:
    """The worker threads of one provider (or one KVM host) and the calls made on them."""

    def __init__(
        self,
        metrics: CallMetrics,
        classify: Classifier,
        *,
        threads: int,
        thread_name: str,
        sdk_timeout: float | None,
        quiet: Collection[Kind] = (),
        report: Callable[[CallReport], None] | None = None,
    ) -> None:
        """`sdk_timeout`: what each call is handed unless it names its own (None: the
        SDK has no per-call timeout). `quiet`: kinds callers expect (a miss, a create
        race), left out of the errors metric. `report`: told of every call and
        failure, for the provider's log lines."""
        self.metrics = metrics
        self.classify = classify
        self.sdk_timeout = sdk_timeout
        self._quiet = frozenset(quiet)
        self._report = report
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix=thread_name)

    async def run(
        self,
        op: Sequence[str],
        fn: Callable[[float | None], T],
        *,
        what: str = "",
        sdk_timeout: float | None = None,
        **context: Any,
    ) -> T:
        """`fn(timeout)` in a worker thread; failures raised as the taxonomy, their
        message naming `what` (else the operation's labels). `context` goes to the
        report (a zone, the ids of a libvirt trace)."""
        labels = tuple(op)
        self.count_call(labels)
        given = self.sdk_timeout if sdk_timeout is None else sdk_timeout
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(self._pool, functools.partial(fn, given))
        except Exception as exc:
            seconds = time.perf_counter() - started
            self.metrics.seconds.labels(*labels, "error").observe(seconds)
            raise self.translate(labels, exc, what, seconds, **context) from None
        seconds = time.perf_counter() - started
        self.metrics.seconds.labels(*labels, "ok").observe(seconds)
        if self._report is not None:
            self._report(CallReport(labels, seconds, context=context))
        return result

    def count_call(self, op: Sequence[str]) -> None:
        """Count a call, also one made outside `run` (a watch read on a thread of its own)."""
        if self.metrics.calls is not None:
            self.metrics.calls.labels(*op).inc()

    def translate(
        self,
        op: Sequence[str],
        exc: Exception,
        what: str = "",
        seconds: float | None = None,
        **context: Any,
    ) -> Exception:
        """The taxonomy error for an SDK failure of the call `op` (counted and reported);
        an error already translated, or one that is not the SDK's, as it is."""
        if isinstance(exc, ClassifiedTemporaryError | ClassifiedPermanentError):
            return exc
        classified = self.classify(exc, what or " ".join(op))
        if classified is None:
            return exc
        return self.failed(op, classified, seconds, exc, **context)

    def failed(
        self,
        op: Sequence[str],
        classified: Classified,
        seconds: float | None = None,
        error: BaseException | None = None,
        **context: Any,
    ) -> Exception:
        """The taxonomy error of a classified failure, counted unless its kind is quiet."""
        counted = classified.kind not in self._quiet
        if counted:
            self.metrics.errors.labels(*op, classified.code).inc()
        if self._report is not None:
            self._report(CallReport(tuple(op), seconds, classified, counted, error, context))
        return provider_error(classified)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
