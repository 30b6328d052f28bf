"""Where a run's CPU went: the whole machine (/proc/stat), this process, and named process
trees (/proc/<pid>/stat of each process and its descendants), as seconds between two
snapshots. A CPU-bound comparison of two paths reads best as CPU per operation by part."""

from __future__ import annotations

import os
import resource
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def machine_seconds() -> float:
    """CPU seconds the machine spent busy since boot (every core; idle and iowait out)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    busy = [int(v) for i, v in enumerate(fields[:8]) if i not in (3, 4)]  # idle, iowait
    return sum(busy) / _TICK


def self_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process itself) or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK


def _processes() -> dict[int, tuple[int, float]]:
    """Every live process: pid -> (parent pid, CPU seconds of its own)."""
    table: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            table[int(entry.name)] = stat
    return table


def tree_seconds(roots: list[int], procs: dict[int, tuple[int, float]]) -> float:
    """CPU seconds of the processes in `roots` and all their live descendants in `procs`
    (what exited is not counted: the trees measured here keep their processes)."""
    wanted = set(roots)
    while more := {pid for pid, (parent, _) in procs.items() if parent in wanted} - wanted:
        wanted |= more
    return sum(procs[pid][1] for pid in wanted if pid in procs)


@dataclass(frozen=True, slots=True)
class Snapshot:
    machine: float
    own: float
    trees: Mapping[str, float]


def snapshot(trees: Mapping[str, list[int]]) -> Snapshot:
    """One reading of the process table for every tree."""
    table = _processes()
    return Snapshot(
        machine_seconds(), self_seconds(), {k: tree_seconds(v, table) for k, v in trees.items()}
    )


def per_operation(before: Snapshot, after: Snapshot, operations: int) -> dict[str, float]:
    """Microseconds of CPU per operation: `machine`, `load generator` (this process), each
    tree, and `other` (the machine's rest: servers not named, the kernel's softirqs)."""
    n = max(1, operations)
    parts = {"load generator": after.own - before.own}
    parts |= {k: after.trees[k] - before.trees[k] for k in after.trees}
    machine = after.machine - before.machine
    out = {"machine": machine} | parts | {"other": machine - sum(parts.values())}
    return {k: v / n * 1e6 for k, v in out.items()}
