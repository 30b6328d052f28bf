"""Every Kubernetes API call goes through here: run in a bounded pool of worker threads
(the official client blocks), with a request timeout, counted, timed, and its failure
classified (pure/classify.py) and raised as the taxonomy: `KubeTemporaryError` or
`KubePermanentError`, carrying the classification (not found, already exists and gone
are permanent errors of their own kind, which callers test with `is_not_found` & co.).

Responses are read as JSON dicts (`_preload_content=False`): the pure modules work on
the API's own field names, and a list of hundreds of pods is not turned into models.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException, OpenApiException

from proxyfleet.common.errors import ConfigError, PermanentProviderError, TemporaryProviderError
from proxyfleet.common.logging import get_logger
from proxyfleet.provisioner_k8s.metrics import API_CALL_SECONDS, API_CALLS, API_ERRORS
from proxyfleet.provisioner_k8s.pure.classify import (
    ApiFailure,
    Classified,
    Kind,
    classify,
    retry_after_header,
    status_body,
)
from proxyfleet.provisioner_k8s.pure.config import K8sSettings

log = get_logger("proxyfleet.k8s")
Json = dict[str, Any]
CONNECT_TIMEOUT = 10.0
"""Seconds to open a connection to the API server (within the request timeout)."""


class KubeTemporaryError(TemporaryProviderError):
    def __init__(self, c: Classified) -> None:
        super().__init__(c.message, retry_after=c.retry_after)
        self.classified = c


class KubePermanentError(PermanentProviderError):
    def __init__(self, c: Classified) -> None:
        super().__init__(c.message)
        self.classified = c


def _kind_is(exc: BaseException, kind: Kind) -> bool:
    return isinstance(exc, KubePermanentError) and exc.classified.kind is kind


def is_not_found(exc: BaseException) -> bool:
    return _kind_is(exc, Kind.NOT_FOUND)


def is_exists(exc: BaseException) -> bool:
    return _kind_is(exc, Kind.EXISTS)


def is_gone(exc: BaseException) -> bool:
    return _kind_is(exc, Kind.GONE)


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
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="k8s-api")
        self._timeout = (min(CONNECT_TIMEOUT, request_timeout), request_timeout)
        self._closed = False

    async def call(
        self,
        verb: str,
        resource: str,
        fn: Callable[..., Any],
        *args: Any,
        what: str = "",
        executor: Executor | None = None,
        http_timeout: tuple[float, float] | None = None,
        **kwargs: Any,
    ) -> Json:
        """`fn(*args, **kwargs)` in a worker thread, its JSON body returned as a dict;
        failures raised as the taxonomy, their message naming `what` (else verb and
        resource)."""
        API_CALLS.labels(verb, resource).inc()
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        request_timeout = http_timeout or self._timeout

        def run() -> Json:
            resp = fn(*args, _preload_content=False, _request_timeout=request_timeout, **kwargs)
            try:
                data = resp.data
            finally:
                resp.release_conn()
            doc = json.loads(data) if data else {}
            return doc if isinstance(doc, dict) else {}

        try:
            result = await loop.run_in_executor(executor or self._executor, run)
        except Exception as exc:
            API_CALL_SECONDS.labels(verb, resource, "error").observe(time.perf_counter() - started)
            raise self.translate(verb, resource, exc, what) from None
        API_CALL_SECONDS.labels(verb, resource, "ok").observe(time.perf_counter() - started)
        return result

    def translate(self, verb: str, resource: str, exc: BaseException, what: str = "") -> Exception:
        """The taxonomy error for a failure of the client (ApiException, urllib3, JSON)."""
        if isinstance(exc, KubeTemporaryError | KubePermanentError):
            return exc
        what = what or f"{verb} {resource}"
        if isinstance(exc, ApiException):
            reason, message, retry = status_body(exc.body)
            headers = exc.headers or {}
            failure = ApiFailure(
                status=int(exc.status) if exc.status else None,
                reason=reason or str(exc.reason or ""),
                message=message,
                retry_after=retry_after_header(headers.get("Retry-After")) or retry,
            )
            return self.error_for(verb, resource, classify(failure, what))
        if isinstance(exc, urllib3.exceptions.HTTPError | OSError | TimeoutError):
            # No answer (refused, reset, timed out): a create may or may not have landed;
            # the retry meets it as AlreadyExists and adopts it.
            failure = ApiFailure(status=None, reason=type(exc).__name__)
            return self.error_for(verb, resource, classify(failure, what))
        if isinstance(exc, OpenApiException | ValueError):
            return self.error_for(
                verb, resource, Classified(Kind.PERMANENT, "client", f"{what}: {exc}")
            )
        return exc if isinstance(exc, Exception) else RuntimeError(str(exc))

    def error_for(self, verb: str, resource: str, c: Classified) -> Exception:
        """The taxonomy error of a classified failure (counted unless a miss or a 409)."""
        if c.kind not in (Kind.NOT_FOUND, Kind.EXISTS):
            API_ERRORS.labels(verb, resource, c.code).inc()
            log.debug("k8s.api_error", verb=verb, resource=resource, code=c.code, kind=c.kind.value)
        if c.kind is Kind.TEMPORARY:
            return KubeTemporaryError(c)
        return KubePermanentError(c)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)
        self.api.close()  # type: ignore[no-untyped-call]
