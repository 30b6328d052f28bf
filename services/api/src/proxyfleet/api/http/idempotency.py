"""The Idempotency-Key of POST /v1/proxies and POST /v1/leases: its checks and the body's
fingerprint. Pure.

A key is remembered (with the fingerprint of the body it came with and what it made) by
the create or grant script itself, so a retried create or grant makes nothing new even
when the first one's answer was lost; keys are scoped by the caller's token name."""

from __future__ import annotations

import hashlib
import re

import msgspec

from proxyfleet.common.core.errors import InvalidInput

MAX_KEY_CHARS = 255
_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")
_canonical = msgspec.json.Encoder(order="sorted")


def valid_key(key: str) -> bool:
    """1-255 visible ASCII characters (a UUID fits)."""
    return _KEY.fullmatch(key) is not None


def check_key(key: str) -> str:
    """The key, or InvalidInput when it is not valid_key."""
    if not valid_key(key):
        raise InvalidInput(
            f"Idempotency-Key: expected 1-{MAX_KEY_CHARS} visible ASCII characters (e.g. a UUID)",
            code="invalid_idempotency_key",
        )
    return key


def scoped_key(caller: str, key: str) -> str:
    """Two admins may pick the same key without seeing each other's creates."""
    return f"{caller}:{key}"


def fingerprint(body: object) -> str:
    """The same body (a Struct or a dict), written in any key order, has the same
    fingerprint."""
    return hashlib.sha256(_canonical.encode(body)).hexdigest()
