"""Every libvirt call goes through here: run in a worker thread (libvirt-python blocks),
traced as one debug log line, timed in a metric, and its error translated to the taxonomy.

libvirt must never be called on the event loop thread: the SSH tunnel that carries its
socket is served by that loop, so a blocking call there would wait for itself.
"""

from __future__ import annotations

import asyncio
import functools
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import libvirt

from proxyfleet.common.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.common.logging import get_logger
from proxyfleet.provisioner_kvm.metrics import LIBVIRT_CALL_SECONDS, LIBVIRT_ERRORS

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


class Missing(PermanentProviderError):
    """The domain or volume looked up does not exist (callers usually expect that)."""


class ConnectionBroken(TemporaryProviderError):
    """The libvirt connection (or the SSH tunnel under it) dropped; reconnect and retry."""


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


def translate(host: str, call: str, exc: libvirt.libvirtError) -> Exception:
    """The provider error for a libvirt error (the message names host and call)."""
    code = exc.get_error_code()
    message = f"host {host}: libvirt {call}: {exc.get_error_message() or exc}"
    if code in _MISSING:
        return Missing(message)
    if code in _CONNECTION:
        return ConnectionBroken(message)
    if code in _PERMANENT:
        return PermanentProviderError(message)
    return TemporaryProviderError(message)


class LibvirtCalls:
    """Traced, timed, translated libvirt calls for one host, on its own worker threads."""

    def __init__(self, host: str, *, threads: int = 4, trace_full: bool = False) -> None:
        self.host = host
        self.trace_full = trace_full
        """Also log domain XML, metadata and addresses (never cloud-init user-data)."""
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix=f"libvirt-{host}")

    async def run(self, call: str, fn: Callable[[], T], **ids: Any) -> T:
        """Run `fn` (which makes the libvirt call `call`) in a worker thread."""
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        try:
            result = await loop.run_in_executor(self._executor, functools.partial(_cleared, fn))
        except libvirt.libvirtError as exc:
            elapsed = time.perf_counter() - started
            error = translate(self.host, call, exc)
            code = code_name(exc.get_error_code())
            LIBVIRT_CALL_SECONDS.labels(self.host, call, "error").observe(elapsed)
            LIBVIRT_ERRORS.labels(self.host, call, code).inc()
            log.debug(
                "libvirt.call",
                host=self.host,
                call=call,
                duration_ms=round(elapsed * 1000, 2),
                error=code,
                message=exc.get_error_message(),
                **ids,
            )
            raise error from None
        elapsed = time.perf_counter() - started
        LIBVIRT_CALL_SECONDS.labels(self.host, call, "ok").observe(elapsed)
        log.debug(
            "libvirt.call", host=self.host, call=call, duration_ms=round(elapsed * 1000, 2), **ids
        )
        return result

    def detail(self, what: str, **fields: Any) -> None:
        """A verbose trace line (domain XML, metadata, addresses) when full tracing is on."""
        if self.trace_full:
            log.debug(what, host=self.host, **fields)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


def _cleared(fn: Callable[[], T]) -> T:
    """`fn()` on the libvirt thread; when it fails, the locals of its finished frames (a
    pool or volume looked up before the failing call) are cleared here: carried to the
    event loop in the traceback, they would be freed there, by a garbage collection."""
    try:
        return fn()
    except BaseException as exc:
        traceback.clear_frames(exc.__traceback__)
        raise
