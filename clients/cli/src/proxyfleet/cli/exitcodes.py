"""What the command's exit code means (documented in the README), and which error gives
which (no I/O here)."""

from __future__ import annotations

import os

from proxyfleet.client import (
    ApiError,
    Conflict,
    Forbidden,
    NotFound,
    ProxyfleetError,
    RateLimited,
    TransportError,
    Unauthorized,
    Unavailable,
)

OK = 0
"""Success. `proxyfleet lease -- CMD` exits with CMD's code instead (128+N when signal N
ended it), or with one of these when the lease could not be had."""
ERROR = 1
"""Anything not below: a request the API refused as invalid (400), a server error."""
USAGE = 2
"""Bad arguments (typer's own code), no API URL configured, an unreadable config file."""
AUTH = 3
"""401 or 403: no token, an unknown one, or one whose scope does not allow the call."""
NOT_FOUND = 4
"""404: no such proxy, lease or pool (or a lease of another client's token)."""
CONFLICT = 5
"""409: a stale epoch, an ended lease, a proxy leased or cooling down, a pool another
source declares or one being deleted."""
UNAVAILABLE = 6
"""503 (or 429) still, after waiting as long as allowed: no proxy free, a backend down."""
UNREACHABLE = 7
"""The API could not be reached, or stopped answering (an event stream cut)."""
CANNOT_EXECUTE = 126
"""`proxyfleet lease -- CMD`: CMD is not executable (as a shell says it)."""
COMMAND_NOT_FOUND = 127
"""`proxyfleet lease -- CMD`: no CMD on PATH (as a shell says it)."""


def for_error(error: ProxyfleetError) -> int:
    """The exit code for an error the client raised."""
    if isinstance(error, Unauthorized | Forbidden):
        return AUTH
    if isinstance(error, NotFound):
        return NOT_FOUND
    if isinstance(error, Conflict):
        return CONFLICT
    if isinstance(error, Unavailable | RateLimited):
        return UNAVAILABLE
    if isinstance(error, TransportError):
        return UNREACHABLE
    return ERROR


def for_signal(signum: int) -> int:
    """A shell's code for a command a signal ended: 128 + N (130 for SIGINT)."""
    return 128 + signum


def of_wait_status(status: int) -> int:
    """The exit code a shell gives a child's wait status (128+N for a signal death)."""
    code = os.waitstatus_to_exitcode(status)
    return for_signal(-code) if code < 0 else code


def message(error: ProxyfleetError) -> str:
    """One line for stderr: the API's own message and code."""
    if isinstance(error, ApiError):
        return f"{error.message} ({error.status} {error.error})"
    return str(error)
