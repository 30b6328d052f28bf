"""Structured logging (structlog). Secrets never reach the output: known secret keys are
masked and credentials inside URLs are cut out, whatever the caller passes."""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

SECRET_KEYS = frozenset(
    {
        "password",
        "token",
        "secret",
        "authorization",
        "user_data",
        "cloud_init",
        "ssh_key",
        "private_key",
        "htpasswd",
        "credentials",
        "proxy_url",
    }
)
SECRET_TEXT_KEYS = frozenset({"line"})
"""Masked when text: a proxy line as an admin or a source gives it (`host:port:user:pass`
is no URL); a `line` that is a number (where a bad one is in its file) is shown."""
# Up to the last `@` of the word: a pasted password may hold a raw `@` or `/`, and a
# username alone (a vendor's holds the account) or an empty one (redis://:pw@) is cut too.
_URL_CREDS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^\s]*@", re.IGNORECASE)
_BEARER = re.compile(r"(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+", re.IGNORECASE)
# A URL's query parameter that holds a secret (a Sentinel URL's sentinel_password=).
_QUERY_SECRET = re.compile(r"([?&][a-z_]*(?:password|token|secret)=)[^&\s]*", re.IGNORECASE)


def redact_value(value: str) -> str:
    value = _QUERY_SECRET.sub(r"\1***", _URL_CREDS.sub(r"\g<scheme>***:***@", value))
    return _BEARER.sub(r"\1 ***", value)


def redact(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key, value in list(event_dict.items()):
        lowered = key.lower()
        if lowered in SECRET_KEYS or (lowered in SECRET_TEXT_KEYS and isinstance(value, str)):
            event_dict[key] = "***"
        elif isinstance(value, str):
            event_dict[key] = redact_value(value)
    return event_dict


class _CurrentStdout:
    """Whatever sys.stdout is at each write. Cached loggers must not keep the stream that was
    current when logging was configured: a test harness may close it afterwards.

    A pipe whose reader is gone (a dev launcher SIGKILLed) makes every write fail with
    EPIPE; a log line must not stop a service from stopping, so the output is dropped from
    then on (SH7 in docs/decisions/service-host.md)."""

    def write(self, text: str) -> int:
        try:
            return sys.stdout.write(text)
        except BrokenPipeError:
            _stdout_to_devnull()
            return len(text)

    def flush(self) -> None:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _stdout_to_devnull()


def _stdout_to_devnull() -> None:
    """What Python's docs advise on EPIPE: the descriptor points at /dev/null, so what is
    still buffered, later lines and the flush at exit go nowhere instead of raising."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # not a real file (a test's capture): nothing to redirect
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def configure_logging(service: str, level: str = "info", fmt: str = "json") -> None:
    lvl = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    renderer: Any = (
        structlog.dev.ConsoleRenderer(colors=False)
        if fmt == "console"
        else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            # A processor, not a contextvar: threads (run_in_executor) see it too.
            _add_service(service),
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redact,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStdout()),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=max(lvl, logging.WARNING), stream=sys.stdout)


def _add_service(service: str) -> Any:
    def add(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        event_dict.setdefault("service", service)
        return event_dict

    return add


def get_logger(name: str) -> Any:
    return structlog.get_logger(name)
