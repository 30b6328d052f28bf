"""Every Kubernetes API call goes through here: run by the runner's blocking-call executor
(the official client blocks) with a request timeout, its failure classified (the table
`CLASSIFIER`, pure/classify.py) and raised as the taxonomy, carrying the classification
(not found, already exists and gone are permanent errors of their own kind, which callers
test with `failure_kind`).

Responses are read as JSON dicts (`_preload_content=False`): the pure modules work on
the API's own field names, and a list of hundreds of pods is not turned into models.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException, OpenApiException

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.runner.blocking import BlockingCalls, CallReport
from proxyfleet.common.runner.failures import Classified, Classifier, Kind, row
from proxyfleet.provisioner_k8s.metrics import API
from proxyfleet.provisioner_k8s.pure.classify import (
    ApiFailure,
    classify,
    retry_after_header,
    status_body,
)
from proxyfleet.provisioner_k8s.pure.config import K8sSettings

log = get_logger("proxyfleet.k8s")
Json = dict[str, Any]
CONNECT_TIMEOUT = 10.0
"""Seconds to open a connection to the API server (within the request timeout)."""


def _api_error(exc: ApiException, what: str) -> Classified:
    reason, message, retry = status_body(exc.body)
    headers = exc.headers or {}
    failure = ApiFailure(
        status=int(exc.status) if exc.status else None,
        reason=reason or str(exc.reason or ""),
        message=message,
        retry_after=retry_after_header(headers.get("Retry-After")) or retry,
    )
    return classify(failure, what)


def _no_response(exc: BaseException, what: str) -> Classified:
    # No answer (refused, reset, timed out): a create may or may not have landed; the
    # retry meets it as AlreadyExists and adopts it.
    return classify(ApiFailure(status=None, reason=type(exc).__name__), what)


CLASSIFIER = Classifier(
    (
        row(ApiException, _api_error),
        row((urllib3.exceptions.HTTPError, OSError, TimeoutError), _no_response),
        row(
            (OpenApiException, ValueError),
            lambda exc, what: Classified(Kind.PERMANENT, "client", f"{what}: {exc}"),
        ),
    )
)


def _log_error(report: CallReport) -> None:
    if report.failure is not None and report.counted:
        verb, resource = report.op
        kind = report.failure.kind.value
        log.debug("k8s.api_error", verb=verb, resource=resource, code=report.failure.code,
                  kind=kind)  # fmt: skip


def load_configuration(s: K8sSettings) -> client.Configuration:
    """A Configuration of its own (never the client's global default): in-cluster when
    `kubeconfig` is "", else the kubeconfig file and context."""
    cfg = client.Configuration()
    try:
        if s.kubeconfig:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=s.kubeconfig,
                context=s.context or None,
                client_configuration=cfg,
                persist_config=False,
            )
        else:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    except (config.ConfigException, OSError, ValueError, KeyError, TypeError) as exc:
        where = f"kubeconfig {s.kubeconfig}" if s.kubeconfig else "in-cluster config"
        raise ConfigError(f"kubernetes: cannot load the {where}: {exc}") from None
    return cfg


class Kube:
    """The API client of one provider and the threads its calls run in."""

    def __init__(self, cfg: client.Configuration, threads: int, request_timeout: float) -> None:
        cfg.connection_pool_maxsize = threads + 2  # the watch holds one connection
        # Our own retries (the runner's backoff) decide; urllib3's would hide outages.
        cfg.retries = False
        self.api = client.ApiClient(cfg)
        self.core = client.CoreV1Api(self.api)
        self.calls = BlockingCalls(
            API, CLASSIFIER, threads=threads, thread_name="k8s-api",
            sdk_timeout=request_timeout, quiet={Kind.NOT_FOUND, Kind.EXISTS}, report=_log_error,
        )  # fmt: skip
        self._closed = False

    async def call(
        self,
        verb: str,
        resource: str,
        fn: Callable[..., Any],
        *args: Any,
        what: str = "",
        **kwargs: Any,
    ) -> Json:
        """`fn(*args, **kwargs)` in a worker thread, its JSON body returned as a dict;
        failures raised as the taxonomy, their message naming `what` (else verb and
        resource)."""

        def run(timeout: float | None) -> Json:
            request_timeout = None if timeout is None else (min(CONNECT_TIMEOUT, timeout), timeout)
            resp = fn(*args, _preload_content=False, _request_timeout=request_timeout, **kwargs)
            try:
                data = resp.data
            finally:
                resp.release_conn()
            doc = json.loads(data) if data else {}
            return doc if isinstance(doc, dict) else {}

        return await self.calls.run((verb, resource), run, what=what)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.calls.close()
        self.api.close()  # type: ignore[no-untyped-call]
