"""Parsing wrk's output (and the PF_ lines of our Lua `done()`). Pure: text in, numbers out."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_UNITS_US = {"us": 1.0, "ms": 1_000.0, "s": 1_000_000.0, "m": 60_000_000.0, "h": 3.6e9}

_RPS = re.compile(r"^Requests/sec:\s+([\d.]+)\s*$", re.M)
_TOTAL = re.compile(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m|h),", re.M)
_DIST = re.compile(r"^\s+(50|75|90|99)%\s+([\d.]+)(us|ms|s|m|h)\s*$", re.M)
_SOCKET = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", re.M)
_NON2XX = re.compile(r"^\s*Non-2xx or 3xx responses: (\d+)\s*$", re.M)
_PF_LAT = re.compile(r"^PF_LATENCY (\S+) ([\d.]+) (\d+)\s*$", re.M)
_PF_COUNT = re.compile(r"^PF_COUNT (\S+) (-?\d+)\s*$", re.M)


class WrkOutputError(ValueError):
    """wrk's output lacks what every run prints (it failed, or this is not wrk output)."""


@dataclass(frozen=True, slots=True)
class WrkResult:
    requests: int
    """Completed requests (wrk's total)."""
    seconds: float
    """How long the run lasted."""
    rps: float
    """wrk's Requests/sec."""
    latency_ms: dict[float, float]
    """wrk's --latency distribution: percentile (50, 75, 90, 99) -> milliseconds."""
    non_2xx: int = 0
    """Responses with a status of 400 and above ("Non-2xx or 3xx responses")."""
    socket_errors: dict[str, int] = field(default_factory=dict)
    """connect, read, write, timeout."""
    series_us: dict[str, dict[float, float]] = field(default_factory=dict)
    """Latency series printed by our Lua done(): series -> percentile -> microseconds."""
    counts: dict[str, int] = field(default_factory=dict)
    """Counters printed by our Lua done() (cycles, grants, failed, ...)."""

    @property
    def errors(self) -> int:
        """Non-2xx/3xx responses plus socket errors of every kind."""
        return self.non_2xx + sum(self.socket_errors.values())

    def per_second(self, counter: str) -> float:
        """A PF_COUNT counter per second of the run (e.g. cycles/s)."""
        return self.counts.get(counter, 0) / self.seconds if self.seconds > 0 else 0.0

    def percentile_ms(self, p: float, series: str = "all") -> float:
        """A percentile from our Lua series when printed, else wrk's --latency table."""
        values = self.series_us.get(series)
        if values and p in values:
            return values[p] / 1_000.0
        if series == "all" and p in self.latency_ms:
            return self.latency_ms[p]
        raise KeyError(f"no p{p:g} in series {series!r}")


def duration_us(value: str, unit: str) -> float:
    """'1.50', 'ms' -> 1500.0 (wrk prints us, ms, s, m or h)."""
    try:
        return float(value) * _UNITS_US[unit]
    except KeyError:
        raise WrkOutputError(f"unknown time unit {unit!r}") from None


def parse_wrk(text: str) -> WrkResult:
    """Parse the stdout of `wrk --latency -s script.lua URL`."""
    rps = _RPS.search(text)
    total = _TOTAL.search(text)
    if rps is None or total is None:
        head = text.strip().splitlines()[:3]
        raise WrkOutputError(f"not a finished wrk run: {' / '.join(head) or 'no output'}")
    latency = {float(p): duration_us(v, u) / 1_000.0 for p, v, u in _DIST.findall(text)}
    socket = _SOCKET.search(text)
    socket_errors = (
        dict(zip(("connect", "read", "write", "timeout"), map(int, socket.groups()), strict=True))
        if socket
        else {}
    )
    non2xx = _NON2XX.search(text)
    series: dict[str, dict[float, float]] = {}
    for name, p, us in _PF_LAT.findall(text):
        series.setdefault(name, {})[float(p)] = float(us)
    counts = {name: int(v) for name, v in _PF_COUNT.findall(text)}
    return WrkResult(
        requests=int(total.group(1)),
        seconds=duration_us(total.group(2), total.group(3)) / 1e6,
        rps=float(rps.group(1)),
        latency_ms=latency,
        non_2xx=int(non2xx.group(1)) if non2xx else 0,
        socket_errors=socket_errors,
        series_us=series,
        counts=counts,
    )
