"""The transition script's arguments and answers (store/lua/transition.lua): a proxy's move
to another phase, or a field update, generation-checked; and the fields it may write."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from proxyfleet.common.domain.lifecycle import ALLOWED
from proxyfleet.common.store.codec import encode_value
from proxyfleet.common.store.fastid import fast_id
from proxyfleet.common.store.replies import raise_proxy_refusal
from proxyfleet.common.wire.models import Phase, Proxy

SOURCES: dict[Phase, str] = {
    dst: ",".join(sorted(src for src, dsts in ALLOWED.items() if dst in dsts)) for dst in Phase
}
"""Each phase's allowed sources as the script takes them (a comma list)."""

WRITABLE = frozenset(f.name for f in msgspec.structs.fields(Proxy)) - {
    "id", "phase", "gen", "updated_at", "egress_shared",
}  # fmt: skip
"""The Proxy fields a transition or an update may set: not its identity, nor what the
script itself writes (phase, generation, when it entered its phase), nor `egress_shared`
(read from the address index, never stored)."""


@dataclass(frozen=True, slots=True)
class TransitionResult:
    gen: int
    previous: Phase
    ended_lease_id: str = ""


def field_args(fields: Mapping[str, Any]) -> list[str]:
    """`fields` as the scripts take them (field, value, ...). TypeError for a field a Proxy
    lacks: it would be written, then dropped on every read."""
    unknown = fields.keys() - WRITABLE
    if unknown:
        raise TypeError(f"not a writable Proxy field: {', '.join(sorted(unknown))}")
    flat: list[str] = []
    for k, v in fields.items():
        flat += [k, encode_value(v)]
    return flat


@dataclass(frozen=True, slots=True)
class Move:
    """One call of the transition script: a move to `to`, or (None) a field update."""

    proxy_id: str
    to: Phase | None
    expected_gen: int | None
    fields: Mapping[str, Any]
    unleased_only: bool = False
    delete_reason: str = ""

    def args(self, now: float, deleted_ttl: int) -> list[Any]:
        to = self.to.value if self.to else ""
        return [
            self.proxy_id,
            -1 if self.expected_gen is None else self.expected_gen,
            SOURCES[self.to] if self.to else "",
            to,
            repr(now),
            deleted_ttl,
            "1" if self.unleased_only else "0",
            fast_id("e") if to else "",  # the event id (format of ids.new_event_id)
            self.delete_reason,
            *field_args(self.fields),
        ]

    def decode(self, res: list[Any]) -> TransitionResult:
        """The script's reply, or the NotFound/Conflict it stands for."""
        to = self.to.value if self.to else ""
        raise_proxy_refusal(self.proxy_id, res, f"cannot move to {to}")
        return TransitionResult(gen=int(res[1]), previous=Phase(res[2]), ended_lease_id=res[3])
