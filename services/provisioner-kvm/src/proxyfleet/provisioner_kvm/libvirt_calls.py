"""Every libvirt call goes through here: run by the runner's blocking-call executor
(libvirt-python blocks), traced as one debug log line, timed in a metric, and its error
classified on its libvirt code (the table `CLASSIFIER`) and raised as the taxonomy.

libvirt must never be called on the event loop thread: the SSH tunnel that carries its
socket is served by that loop, so a blocking call there would wait for itself.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import libvirt

from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.runner.blocking import BlockingCalls, CallReport
from proxyfleet.common.runner.failures import Classified, Classifier, Kind, row
from proxyfleet.provisioner_kvm.metrics import LIBVIRT

T = TypeVar("T")
log = get_logger("proxyfleet.kvm.libvirt")

_PERMANENT = frozenset(
    getattr(libvirt, name)
    for name in (
        "VIR_ERR_XML_ERROR",
        "VIR_ERR_XML_DETAIL",
        "VIR_ERR_INVALID_ARG",
        "VIR_ERR_CONFIG_UNSUPPORTED",
        "VIR_ERR_NO_SUPPORT",
        "VIR_ERR_NO_STORAGE_POOL",
        "VIR_ERR_NO_NETWORK",
        "VIR_ERR_AUTH_FAILED",
        "VIR_ERR_ACCESS_DENIED",
        "VIR_ERR_OPERATION_DENIED",
    )
)
"""Errors retrying cannot fix: bad XML, a missing pool or network, no permission."""
_MISSING = frozenset(
    (libvirt.VIR_ERR_NO_DOMAIN, libvirt.VIR_ERR_NO_STORAGE_VOL, libvirt.VIR_ERR_NO_NETWORK_PORT)
)
_CONNECTION = frozenset(
    (libvirt.VIR_ERR_SYSTEM_ERROR, libvirt.VIR_ERR_RPC, libvirt.VIR_ERR_NO_CONNECT)
)
"""Errors that mean the connection itself is gone: the host session reconnects."""


def silence_libvirt_stderr() -> None:
    """libvirt prints every error to stderr by default; ours are raised, traced and counted."""
    libvirt.registerErrorHandler(lambda _ctx, _err: None, None)


_CODE_NAMES = {
    getattr(libvirt, name): name.removeprefix("VIR_ERR_").lower()
    for name in sorted(dir(libvirt), reverse=True)  # aliases share a code: keep one name
    if name.startswith("VIR_ERR_") and isinstance(getattr(libvirt, name), int)
}


def code_name(code: int) -> str:
    """`no_domain` for VIR_ERR_NO_DOMAIN: the `code` label of the errors metric."""
    return _CODE_NAMES.get(code, str(code))


def classify(exc: libvirt.libvirtError, what: str) -> Classified:
    """What a libvirt error means (the message names host and call: `what`)."""
    code = exc.get_error_code()
    message = f"{what}: {exc.get_error_message() or exc}"
    if code in _MISSING:
        kind = Kind.NOT_FOUND
    elif code in _CONNECTION:
        kind = Kind.DISCONNECTED
    elif code in _PERMANENT:
        kind = Kind.PERMANENT
    else:
        kind = Kind.TEMPORARY
    return Classified(kind, code_name(code), message)


CLASSIFIER = Classifier((row(libvirt.libvirtError, classify),))


def _trace(report: CallReport) -> None:
    """One debug line per call (its error when it failed), with the ids the caller gave."""
    host, call = report.op
    failed: dict[str, Any] = {}
    if report.failure is not None:
        sdk = report.error
        message = sdk.get_error_message() if isinstance(sdk, libvirt.libvirtError) else None
        failed = {"error": report.failure.code, "message": message}
    duration_ms = round((report.seconds or 0.0) * 1000, 2)
    log.debug("libvirt.call", host=host, call=call, duration_ms=duration_ms, **failed,
              **report.context)  # fmt: skip


class LibvirtCalls:
    """Traced, timed, classified libvirt calls for one host, on its own worker threads."""

    def __init__(self, host: str, *, threads: int = 4, trace_full: bool = False) -> None:
        self.host = host
        self.trace_full = trace_full
        """Also log domain XML, metadata and addresses (never cloud-init user-data)."""
        # libvirt calls take no timeout: the SSH keepalive ends one whose host went away.
        self._calls = BlockingCalls(
            LIBVIRT, CLASSIFIER, threads=threads, thread_name=f"libvirt-{host}",
            sdk_timeout=None, report=_trace,
        )  # fmt: skip

    async def run(self, call: str, fn: Callable[[], T], **ids: Any) -> T:
        """Run `fn` (which makes the libvirt call `call`) in a worker thread."""
        return await self._calls.run(
            (self.host, call), lambda _timeout: _cleared(fn),
            what=f"host {self.host}: libvirt {call}", **ids,
        )  # fmt: skip

    def detail(self, what: str, **fields: Any) -> None:
        """A verbose trace line (domain XML, metadata, addresses) when full tracing is on."""
        if self.trace_full:
            log.debug(what, host=self.host, **fields)

    def close(self) -> None:
        self._calls.close()


def _cleared(fn: Callable[[], T]) -> T:
    """`fn()` on the libvirt thread; when it fails, the locals of its finished frames (a
    pool or volume looked up before the failing call) are cleared here: carried to the
    event loop in the traceback, they would be freed there, by a garbage collection."""
    try:
        return fn()
    except BaseException as exc:
        traceback.clear_frames(exc.__traceback__)
        raise
