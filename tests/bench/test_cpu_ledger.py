"""The benchmark's CPU split: a process tree sums its descendants, and per-operation
figures put what no named part took under `other`."""

from __future__ import annotations

import os

import pytest

from proxyfleet.bench.cpu_ledger import Snapshot, per_operation, snapshot, tree_seconds


def test_a_tree_is_its_roots_and_every_descendant() -> None:
    procs = {1: (0, 5.0), 10: (1, 1.0), 11: (10, 0.5), 12: (11, 0.25), 20: (1, 2.0)}
    assert tree_seconds([10], procs) == pytest.approx(1.75)
    assert tree_seconds([10, 20], procs) == pytest.approx(3.75)
    assert tree_seconds([99], procs) == 0.0  # gone


def test_per_operation_splits_the_machine_and_keeps_the_rest_as_other() -> None:
    before = Snapshot(machine=10.0, own=1.0, trees={"gateway": 2.0})
    after = Snapshot(machine=12.0, own=1.5, trees={"gateway": 3.0})
    got = per_operation(before, after, 1_000)
    assert got == pytest.approx(
        {"machine": 2000.0, "load generator": 500.0, "gateway": 1000.0, "other": 500.0}
    )


def test_a_snapshot_reads_this_machine() -> None:
    taken = snapshot({"me": [os.getpid()]})
    assert taken.machine > 0
    # This process's tree holds at least its own CPU (/proc counts in 10 ms ticks; the
    # servers a test session started are in the tree too).
    assert taken.trees["me"] >= taken.own - 0.05
