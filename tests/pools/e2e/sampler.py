"""A pool sampled from Redis every 100 ms on a thread of its own, while a scenario runs."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import redis
from tests.pools.e2e.fleet import PoolFleet

EVERY = 0.1


@dataclass(frozen=True)
class Sample:
    t: float
    ready: int
    """Members ready and in rotation (not draining, not quarantined), leased or not."""
    free: int
    """Of those, the ones not leased and not cooling down: grantable now."""
    live: int
    """Members in rotation or draining, whatever their phase, not on their way out."""


@dataclass
class Sampler:
    fleet: PoolFleet
    pool: str
    samples: list[Sample] = field(default_factory=list)
    errors: int = 0
    """Samples Redis did not answer (none expected: Redis is up in these scenarios)."""
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.time()
            try:
                members = self.fleet.members(self.pool)
            except redis.RedisError:
                self.errors += 1
            else:
                self.samples.append(
                    Sample(
                        t=t0,
                        ready=sum(1 for m in members if m.in_rotation),
                        free=sum(1 for m in members if m.free(t0)),
                        live=sum(1 for m in members if m.live and m.withheld != "quarantined"),
                    )
                )
            self._stop.wait(max(0.0, EVERY - (time.time() - t0)))

    def lowest(self, what: str) -> int:
        values: list[int] = [getattr(s, what) for s in self.samples]
        return min(values)

    def highest(self, what: str) -> int:
        values: list[int] = [getattr(s, what) for s in self.samples]
        return max(values)
