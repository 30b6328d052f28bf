"""Proxy <-> Redis hash. Pure functions."""

from __future__ import annotations

from typing import Any

import msgspec

from proxyfleet.common.wire.models import Lease, Proxy

_json = msgspec.json.Encoder()
_labels = msgspec.json.Decoder(dict[str, str])


def encode_value(value: Any) -> str:
    if isinstance(value, dict):
        return _json.encode(value).decode()
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value)


_UNSET_KEPT_OUT = {"placement": {}, "pool": "", "withheld": "", "withheld_reason": "",
                   "withheld_at": 0.0, "egress_ip": "", "egress_net": "", "egress_pending": "",
                   "egress_pending_n": 0, "egress_shared": 0, "scheme": "http",
                   "external": False}  # fmt: skip
"""Fields most proxies leave at these values, not stored then (memory per proxy): a
missing field reads as its default."""


def proxy_to_hash(proxy: Proxy) -> dict[str, str]:
    """Every field, but those at a default most proxies keep (_UNSET_KEPT_OUT)."""
    fields = msgspec.structs.asdict(proxy)
    for name, unset in _UNSET_KEPT_OUT.items():
        if fields[name] == unset:
            del fields[name]
    return {k: encode_value(v) for k, v in fields.items()}


def proxy_from_hash(data: dict[str, str]) -> Proxy:
    raw: dict[str, Any] = {k: v for k, v in data.items() if k in _PROXY_FIELDS}
    raw["labels"] = _labels.decode(raw["labels"]) if raw.get("labels") else {}
    raw["placement"] = _labels.decode(raw["placement"]) if raw.get("placement") else {}
    return msgspec.convert(raw, Proxy, strict=False)


def lease_from_hash(data: dict[str, str]) -> Lease:
    raw = {k: v for k, v in data.items() if k in _LEASE_FIELDS}
    return msgspec.convert(raw, Lease, strict=False)


def pairs_to_dict(flat: list[str]) -> dict[str, str]:
    return dict(zip(flat[::2], flat[1::2], strict=True))


_PROXY_FIELDS = frozenset(f.name for f in msgspec.structs.fields(Proxy))
_LEASE_FIELDS = frozenset(f.name for f in msgspec.structs.fields(Lease))
