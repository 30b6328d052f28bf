"""The runner's blocking-call executor and classification table, on a made-up SDK: calls
run off the event loop with their timeout, are timed and counted, and their failures
come out as the taxonomy (quiet kinds left out of the errors metric)."""

from __future__ import annotations

import threading

import pytest
from prometheus_client import REGISTRY, Counter, Histogram

from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.common.runner.blocking import BlockingCalls, CallMetrics, CallReport
from proxyfleet.common.runner.failures import (
    Classified,
    ClassifiedTemporaryError,
    Classifier,
    Kind,
    ResourceMissing,
    failure_kind,
    row,
)

PREFIX = "proxyfleet_test_sdk"
METRICS = CallMetrics(
    seconds=Histogram(f"{PREFIX}_call_seconds", "Test SDK call latency.", ["verb", "result"]),
    calls=Counter(f"{PREFIX}_calls_total", "Test SDK calls made.", ["verb"]),
    errors=Counter(f"{PREFIX}_errors_total", "Test SDK calls that failed.", ["verb", "code"]),
)


class SdkError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"status {status}")
        self.status = status


class SdkMissing(SdkError):
    def __init__(self) -> None:
        super().__init__(404)


def _status(exc: SdkError, what: str) -> Classified:
    kind = Kind.TEMPORARY if exc.status >= 500 else Kind.PERMANENT
    return Classified(kind, f"http_{exc.status}", f"{what}: {exc}", 2.0)


CLASSIFIER = Classifier(
    (
        row(SdkMissing, lambda exc, what: Classified(Kind.NOT_FOUND, "not_found", what)),
        row(SdkError, _status),
    )
)


def _calls(reports: list[CallReport]) -> BlockingCalls:
    return BlockingCalls(
        METRICS, CLASSIFIER, threads=2, thread_name="test-sdk", sdk_timeout=7.0,
        quiet={Kind.NOT_FOUND}, report=reports.append,
    )  # fmt: skip


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(f"{PREFIX}_{name}", labels) or 0.0


async def test_a_call_runs_on_a_worker_thread_with_its_timeout_and_is_counted() -> None:
    reports: list[CallReport] = []
    calls = _calls(reports)
    made = _value("calls_total", verb="get")
    timed = _value("call_seconds_count", verb="get", result="ok")
    seen: list[tuple[float | None, str]] = []

    def sdk(timeout: float | None) -> str:
        seen.append((timeout, threading.current_thread().name))
        return "done"

    assert await calls.run(["get"], sdk, zone="z1") == "done"
    assert await calls.run(["get"], sdk, sdk_timeout=30.0) == "done"
    calls.close()
    assert [t for t, _ in seen] == [7.0, 30.0]
    assert all(name.startswith("test-sdk") for _, name in seen)
    assert _value("calls_total", verb="get") == made + 2
    assert _value("call_seconds_count", verb="get", result="ok") == timed + 2
    assert [(r.op, r.failure, dict(r.context)) for r in reports] == [
        (("get",), None, {"zone": "z1"}),
        (("get",), None, {}),
    ]


async def test_a_failure_is_classified_counted_and_raised_as_the_taxonomy() -> None:
    reports: list[CallReport] = []
    calls = _calls(reports)
    errors = _value("errors_total", verb="put", code="http_503")

    def unavailable(_timeout: float | None) -> None:
        raise SdkError(503)

    with pytest.raises(TemporaryProviderError) as raised:
        await calls.run(["put"], unavailable, what="put thing t1")
    assert isinstance(raised.value, ClassifiedTemporaryError)
    assert str(raised.value) == "put thing t1: status 503"
    assert raised.value.retry_after == 2.0
    assert _value("errors_total", verb="put", code="http_503") == errors + 1
    assert _value("call_seconds_count", verb="put", result="error") >= 1
    (report,) = reports
    assert report.counted
    assert isinstance(report.error, SdkError)
    assert report.seconds is not None

    def forbidden(_timeout: float | None) -> None:
        raise SdkError(403)

    with pytest.raises(PermanentProviderError) as refused:
        await calls.run(["put"], forbidden)
    assert failure_kind(refused.value) is Kind.PERMANENT
    assert str(refused.value) == "put: status 403"
    calls.close()


async def test_a_quiet_kind_is_raised_but_not_counted_as_an_error() -> None:
    reports: list[CallReport] = []
    calls = _calls(reports)
    errors = _value("errors_total", verb="get", code="not_found")

    def missing(_timeout: float | None) -> None:
        raise SdkMissing

    with pytest.raises(PermanentProviderError) as raised:
        await calls.run(["get"], missing)
    calls.close()
    assert isinstance(raised.value, ResourceMissing)
    assert _value("errors_total", verb="get", code="not_found") == errors
    assert [r.counted for r in reports] == [False]


async def test_an_exception_that_is_not_the_sdks_is_raised_as_it_is() -> None:
    reports: list[CallReport] = []
    calls = _calls(reports)

    def broken(_timeout: float | None) -> None:
        raise KeyError("ours")

    with pytest.raises(KeyError):
        await calls.run(["get"], broken)
    calls.close()
    assert reports == []


def test_a_failure_found_after_its_call_is_counted_and_reported() -> None:
    reports: list[CallReport] = []
    calls = _calls(reports)
    c = Classified(Kind.CAPACITY, "ZONE_RESOURCE_POOL_EXHAUSTED", "no room", 60.0)
    errors = _value("errors_total", verb="wait", code=c.code)
    error = calls.failed(["wait"], c, zone="z1")
    calls.close()
    assert isinstance(error, TemporaryProviderError)
    assert failure_kind(error) is Kind.CAPACITY
    assert _value("errors_total", verb="wait", code=c.code) == errors + 1
    assert [(r.seconds, dict(r.context)) for r in reports] == [(None, {"zone": "z1"})]
    # An error already translated (raised again through a second call) is not recounted.
    assert calls.translate(["wait"], error) is error
    assert _value("errors_total", verb="wait", code=c.code) == errors + 1


def test_the_first_matching_row_of_a_classifier_decides() -> None:
    assert CLASSIFIER(SdkMissing(), "get t1") == Classified(Kind.NOT_FOUND, "not_found", "get t1")
    status = CLASSIFIER(SdkError(500), "get t1")
    assert status is not None
    assert status.kind is Kind.TEMPORARY
    assert CLASSIFIER(ValueError("x"), "get t1") is None
