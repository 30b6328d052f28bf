"""Every Compute API call goes through here: run by the runner's blocking-call executor
(the REST clients block), its failure classified on Google's error codes (the table
`CLASSIFIER`, pure/classify.py) and raised as the taxonomy, carrying the classification.

Operations are waited on with Zone/GlobalOperationsClient built with the same client
options as the other clients: `ExtendedOperation.result()` would poll Google's default
endpoint whatever the client was built with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import google.auth
import google.auth.exceptions
import requests
from google.api_core import exceptions as gexc
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials, Credentials
from google.cloud import compute_v1
from google.oauth2 import service_account

from proxyfleet.common.core.clock import Clock
from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.runner.blocking import BlockingCalls, CallReport
from proxyfleet.common.runner.failures import (
    Classified,
    ClassifiedPermanentError,
    ClassifiedTemporaryError,
    Classifier,
    Kind,
    row,
)
from proxyfleet.provisioner_gcp.metrics import API, OPERATIONS_IN_FLIGHT
from proxyfleet.provisioner_gcp.pure.classify import ApiFailure, ErrorEntry, classify
from proxyfleet.provisioner_gcp.pure.config import GcpSettings

T = TypeVar("T")
log = get_logger("proxyfleet.gcp")
SCOPES = ("https://www.googleapis.com/auth/compute",)
CALL_TIMEOUT = 60.0
"""Seconds one HTTP call may take."""
WAIT_TIMEOUT = 150.0
"""Seconds an operations.wait call may take: Google answers it when the operation is DONE
or after about two minutes, so a shorter timeout would cut healthy waits."""
ALREADY_EXISTS = frozenset({"alreadyExists", "RESOURCE_ALREADY_EXISTS"})
"""The call's reason, and the code of an operation that lost a race to the same name."""


def is_already_exists(exc: BaseException) -> bool:
    return isinstance(exc, ClassifiedPermanentError) and exc.classified.code in ALREADY_EXISTS


def _call_error(exc: gexc.GoogleAPICallError, what: str) -> Classified:
    return classify(
        ApiFailure(
            status=int(exc.code) if isinstance(exc.code, int) else None,
            message=exc.message or str(exc),
            entries=[
                ErrorEntry(code=str(e.get("reason", "")), message=str(e.get("message", "")))
                for e in (exc.errors or [])
                if isinstance(e, dict)
            ],
            retry_after=_retry_after(exc.response),
        )
    )


def _no_response(exc: BaseException, what: str) -> Classified:
    # No answer (connection dropped, timed out): the call may or may not have landed; the
    # retry carries the same requestId, so it is safe either way.
    return Classified(Kind.TEMPORARY, "no_response", f"{what}: no answer ({type(exc).__name__})")


CLASSIFIER = Classifier(
    (
        row(gexc.GoogleAPICallError, _call_error),
        row((requests.exceptions.RequestException, gexc.RetryError, TimeoutError), _no_response),
        row(
            google.auth.exceptions.TransportError,
            lambda exc, _: Classified(Kind.TEMPORARY, "auth_transport", str(exc)),
        ),
        row(
            google.auth.exceptions.GoogleAuthError,
            lambda exc, _: Classified(Kind.PERMANENT, "auth", str(exc)),
        ),
    )
)


def _log_error(report: CallReport) -> None:
    if report.failure is not None and report.counted:
        kind = report.failure.kind.value
        log.debug("gcp.api_error", method=report.op[0], code=report.failure.code, kind=kind,
                  **report.context)  # fmt: skip


def credentials_for(settings: GcpSettings) -> Credentials:
    """Anonymous (the test fake), a key file, or Application Default Credentials."""
    if settings.anonymous:
        return AnonymousCredentials()  # type: ignore[no-untyped-call]
    try:
        if settings.credentials_file:
            key: Credentials = service_account.Credentials.from_service_account_file(  # type: ignore[no-untyped-call]
                settings.credentials_file, scopes=SCOPES
            )
            return key
        creds, _ = google.auth.default(scopes=SCOPES)
    except (OSError, ValueError, google.auth.exceptions.GoogleAuthError) as exc:
        raise ConfigError(f"gcp credentials: {exc}") from None
    return creds


class Compute:
    """The Compute clients of one provider, sharing credentials and client options."""

    def __init__(self, settings: GcpSettings, clock: Clock, threads: int) -> None:
        creds = credentials_for(settings)
        options = ClientOptions(api_endpoint=settings.api_endpoint or None)
        kw: dict[str, Any] = {"credentials": creds, "client_options": options, "transport": "rest"}
        self.project = settings.project
        self.instances = compute_v1.InstancesClient(**kw)
        self.zone_operations = compute_v1.ZoneOperationsClient(**kw)
        self.global_operations = compute_v1.GlobalOperationsClient(**kw)
        self.region_operations = compute_v1.RegionOperationsClient(**kw)
        self.firewalls = compute_v1.FirewallsClient(**kw)
        self.images = compute_v1.ImagesClient(**kw)
        self.disks = compute_v1.DisksClient(**kw)
        self.addresses = compute_v1.AddressesClient(**kw)
        self._clients: list[Any] = [
            self.instances, self.zone_operations, self.global_operations,
            self.region_operations, self.firewalls,
            self.images, self.disks, self.addresses,
        ]  # fmt: skip
        self._clock = clock
        self._calls = BlockingCalls(
            API, CLASSIFIER, threads=threads, thread_name="gcp-api", sdk_timeout=CALL_TIMEOUT,
            quiet={Kind.NOT_FOUND}, report=_log_error,
        )  # fmt: skip
        self._operation_timeout = settings.operation_timeout

    async def call(
        self,
        method: str,
        fn: Callable[..., T],
        zone: str = "",
        http_timeout: float = CALL_TIMEOUT,
        **request: Any,
    ) -> T:
        """`fn(**request)` in a worker thread; failures raised as the taxonomy. The client's
        default retry of reads (503 and 504, for up to 600 s) is off: it would hold a
        thread through an outage that the runner's backoff is there to wait out."""
        return await self._calls.run(
            (method,), lambda timeout: fn(timeout=timeout, retry=None, **request),
            sdk_timeout=http_timeout, zone=zone,
        )  # fmt: skip

    async def mutate(
        self,
        method: str,
        fn: Callable[..., compute_v1.Operation],
        zone: str = "",
        region: str = "",
        **request: Any,
    ) -> compute_v1.Operation:
        """A mutating call and the wait for its operation (zonal, regional or global) to be
        DONE without error."""
        OPERATIONS_IN_FLIGHT.inc()
        try:
            op = await self.call(method, fn, zone, **request)
            return await self.wait(method, op, zone, region)
        finally:
            OPERATIONS_IN_FLIGHT.dec()

    async def wait(
        self, method: str, op: compute_v1.Operation, zone: str, region: str = ""
    ) -> compute_v1.Operation:
        """Wait (operations.wait, repeated) until `op` is DONE; its error raised classified.
        Past operation_timeout a temporary error: the next delivery asks again (the same
        requestId finds the same operation)."""
        deadline = self._clock.now() + self._operation_timeout
        while op.status != compute_v1.Operation.Status.DONE:
            if self._clock.now() >= deadline:
                raise ClassifiedTemporaryError(
                    Classified(Kind.TEMPORARY, "operation_timeout",
                               f"operation {op.name} ({method}) not done after "
                               f"{self._operation_timeout:g} s"),
                )  # fmt: skip
            p = self.project
            if zone:
                req = compute_v1.WaitZoneOperationRequest(project=p, zone=zone, operation=op.name)
                op = await self.call(
                    "zoneOperations.wait", self.zone_operations.wait, zone, WAIT_TIMEOUT,
                    request=req,
                )  # fmt: skip
            elif region:
                rreq = compute_v1.WaitRegionOperationRequest(
                    project=p, region=region, operation=op.name
                )
                op = await self.call(
                    "regionOperations.wait", self.region_operations.wait, "", WAIT_TIMEOUT,
                    request=rreq,
                )  # fmt: skip
            else:
                greq = compute_v1.WaitGlobalOperationRequest(project=p, operation=op.name)
                op = await self.call(
                    "globalOperations.wait", self.global_operations.wait, "", WAIT_TIMEOUT,
                    request=greq,
                )  # fmt: skip
        if op.error and op.error.errors:
            failure = ApiFailure(
                status=op.http_error_status_code or None,
                message=op.http_error_message or "",
                entries=[_entry(e) for e in op.error.errors],
            )
            raise self._calls.failed((method,), classify(failure), zone=zone)
        return op

    def close(self) -> None:
        for client in self._clients:
            client.transport.close()
        self._calls.close()


def _entry(e: compute_v1.Errors) -> ErrorEntry:
    metric = limit = ""
    for detail in e.error_details:
        if detail.quota_info:
            metric = detail.quota_info.metric_name or metric
            limit = detail.quota_info.limit_name or limit
    return ErrorEntry(code=e.code, message=e.message, quota_metric=metric, quota_limit=limit)


def _retry_after(response: object) -> float | None:
    headers = getattr(response, "headers", None)
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
