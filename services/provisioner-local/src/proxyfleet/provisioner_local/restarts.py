"""When to restart a local proxy process that died: at most `max_restarts` within `window`
seconds, each attempt after a growing pause. Pure: the supervisor feeds it times."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    max_restarts: int = 5
    """Restarts of one proxy within `window`; past it the proxy is left to health."""
    window: float = 600.0
    """Seconds over which restarts are counted (older ones no longer count)."""
    backoff: float = 1.0
    """Pause before the second restart; doubled for each further one (the first is at once)."""
    backoff_max: float = 60.0
    """Longest pause between two restarts."""


class Verdict(enum.Enum):
    RESTART = "restart"
    WAIT = "wait"
    """Backing off: a restart is due later."""
    GIVE_UP = "give_up"
    """The bound is reached: until restarts leave the window, health decides."""


@dataclass(slots=True)
class RestartBook:
    """Restart attempts per proxy (the times they were made), within the window."""

    policy: RestartPolicy
    attempts: dict[str, list[float]] = field(default_factory=dict)

    def verdict(self, proxy_id: str, now: float) -> Verdict:
        recent = self._recent(proxy_id, now)
        if len(recent) >= self.policy.max_restarts:
            return Verdict.GIVE_UP
        if recent and now < recent[-1] + self.pause(len(recent)):
            return Verdict.WAIT
        return Verdict.RESTART

    def pause(self, made: int) -> float:
        """Seconds to wait after the `made`-th restart before the next one."""
        return min(self.policy.backoff * 2.0 ** (made - 1), self.policy.backoff_max)

    def record(self, proxy_id: str, now: float) -> int:
        """Count an attempt (successful or not); returns the attempts in the window."""
        recent = self._recent(proxy_id, now)
        recent.append(now)
        return len(recent)

    def prune(self, now: float) -> None:
        """Forget proxies with no restart left in the window (bounds the book's size)."""
        for proxy_id in list(self.attempts):
            if not self._recent(proxy_id, now):
                del self.attempts[proxy_id]

    def _recent(self, proxy_id: str, now: float) -> list[float]:
        since = now - self.policy.window
        recent = [t for t in self.attempts.get(proxy_id, ()) if t > since]
        self.attempts[proxy_id] = recent
        return recent
