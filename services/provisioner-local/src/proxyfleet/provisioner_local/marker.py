"""managed.json: the marker that makes a folder a managed proxy. Pure (de)serialisation."""

from __future__ import annotations

from typing import Literal

import msgspec

Engine = Literal["squid", "proxy.py"]


class Marker(msgspec.Struct, kw_only=True, frozen=True):
    proxy_id: str
    installation_id: str
    created_at: float
    """When the proxy was first created (kept across restarts; GC's minimum age)."""
    port: int
    engine: Engine
    pid: int = 0
    """The engine process (session leader); 0 while the port is reserved but not started."""
    zone: str = ""


class Credentials(msgspec.Struct, kw_only=True, frozen=True):
    """proxy.json: what re-adoption needs besides the marker (kept private, 0600)."""

    username: str
    password: str
    labels: dict[str, str] = {}
    placement: dict[str, str] = {}


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Marker)


def encode_marker(marker: Marker) -> bytes:
    return _encoder.encode(marker) + b"\n"


def decode_marker(data: bytes) -> Marker | None:
    """The marker, or None when the bytes are not one (a torn or foreign file)."""
    try:
        return _decoder.decode(data)
    except msgspec.DecodeError:
        return None


_credentials = msgspec.json.Decoder(Credentials)


def decode_credentials(data: bytes) -> Credentials | None:
    try:
        return _credentials.decode(data)
    except msgspec.DecodeError:
        return None
