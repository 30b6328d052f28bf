"""What a GC round did, per provider and in all: plain data, and the round's result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from proxyfleet.gc.plan import Deletion, Refusal

SkipCause = Literal["no_answer", "error_answer", "bad_answer", "error"]
RoundResult = Literal["ok", "partial", "failed", "held"]


@dataclass(slots=True)
class ProviderRound:
    """What one round did for one provider. `skipped` names the cause when it was skipped."""

    provider: str
    listed: int = 0
    deletions: list[Deletion] = field(default_factory=list)
    skipped: SkipCause | None = None
    refused: Refusal | None = None
    """Set when the round would have deleted `refused_count` resources but refused."""
    refused_count: int = 0
    held_by: str = ""
    """Another replica's token: it holds the provider's round lock, this one did not run
    the round."""
    lost: bool = False
    """The lock was lost mid-round: the deletions after that were not sent."""


@dataclass(frozen=True, slots=True)
class RoundReport:
    providers: list[ProviderRound]
    dry_run: bool

    @property
    def ran(self) -> list[ProviderRound]:
        """The providers whose round this replica ran (held by no other)."""
        return [p for p in self.providers if not p.held_by]

    @property
    def result(self) -> RoundResult:
        """Over the rounds this replica ran; "held" when another replica ran every one."""
        ran = self.ran
        if self.providers and not ran:
            return "held"
        skipped = sum(1 for p in ran if p.skipped or p.refused or p.lost)
        if not skipped:
            return "ok"
        return "failed" if skipped == len(ran) else "partial"

    @property
    def deletions(self) -> list[Deletion]:
        return [d for p in self.providers for d in p.deletions]
