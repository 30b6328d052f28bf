"""What every benchmark module gets: scratch space and its own NATS and Redis."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class BenchEnv:
    base_dir: Path
    """Scratch folder of this run (traversable by Squid's `proxy` user: 0711)."""
    nats_url: str
    """A NATS (JetStream) server started for this run."""
    redis_url: str
    """A Redis server started for this run: benchmarks may FLUSHDB it."""
    quick: bool = False
    """Smaller sizes and shorter runs (a smoke run that checks the benchmark works)."""
    nats_pid: int = 0
    """The NATS server's process (0: not known), for CPU accounting."""
    redis_pid: int = 0
    """The Redis server's process (0: not known), for CPU accounting."""
