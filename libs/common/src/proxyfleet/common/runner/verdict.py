"""What a handled intent tells JetStream, and how a delivery is numbered. Pure."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Reply(enum.StrEnum):
    ACK = "ack"
    """Done (or nothing to do): JetStream forgets the intent."""
    NAK = "nak"
    """Deliver again after `delay` seconds."""
    TERM = "term"
    """Never deliver again (undecodable, or out of deliveries after an unexpected error)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    reply: Reply
    result: str
    """The `result` label of the message metric: ok, ignored, retry, failed, ..."""
    delay: float = 0.0

    @classmethod
    def ack(cls, result: str = "ok") -> Verdict:
        return cls(Reply.ACK, result)

    @classmethod
    def nak(cls, delay: float, result: str = "retry") -> Verdict:
        return cls(Reply.NAK, result, delay)


@dataclass(frozen=True, slots=True)
class Delivery:
    """Which delivery of an intent this is."""

    number: int
    """1 for the first delivery, 2 for the first redelivery, ..."""
    max_deliver: int

    @property
    def last(self) -> bool:
        """No further delivery will come: a retry is impossible."""
        return self.number >= self.max_deliver
