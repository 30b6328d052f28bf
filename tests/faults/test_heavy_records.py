"""The heavy load's records (what heavy_cycle.lua writes) merged and sampled, and its
table, on hand-made lines."""

from __future__ import annotations

from tests.faults.audit import Finding, Lease
from tests.faults.heavy import check_retry_after, parse_records, sample_leases
from tests.faults.report import HeavyRow, render_heavy

LINES = [
    "R\tgrant\t100.000000\t0.002000\t201\t\t0",
    "G\tl1\tp1\t7\t100.002000\t110.0",
    "R\trelease\t100.003000\t0.010000\t503\tstore_unavailable\t1",
    "R\trelease\t100.500000\t0.001000\t200\t\t0",
    "X\tl1\t100.500000\t200",
    "R\tgrant\t100.600000\t0.001000\t503\tunavailable\t0",
    "R\tgrant\t100.700000\t0.300000\t0\t\t0",
    "R\tgrant\t101.000000\t0.002000\t201\t\t0",
    "G\tl2\tp2\t9\t101.002000\t111.0",
    "G\tl3\tp3\t4\t101.100000\t111.1",
    "S\tl3\t101.200000",  # held.tsv: its release was in flight when wrk stopped
    "S\tl1\t100.500000",  # already settled: the X line wins
    "half a line cut by the end of the run",
]


def test_records_merge_requests_leases_and_releases() -> None:
    r = parse_records(LINES)
    assert [(x.op, x.status, x.code) for x in r.requests] == [
        ("grant", 201, ""),
        ("release", 503, "store_unavailable"),
        ("release", 200, ""),
        ("grant", 503, "unavailable"),
        ("grant", 0, ""),
        ("grant", 201, ""),
    ]
    assert r.leases == [
        Lease("l1", "p1", 7, 100.002, 110.0, 100.5, 200),
        Lease("l2", "p2", 9, 101.002, 111.0, None, None),  # still held when wrk stopped
        Lease("l3", "p3", 4, 101.1, 111.1, 101.2, None),
    ]
    assert check_retry_after(r.bare_503) == [Finding("no_retry_after", "grant 503 x1")]


def test_sample_takes_every_odd_release_then_spreads_over_time() -> None:
    plain = [Lease(f"l{i}", "p", i, float(i), i + 10.0, i + 0.5, 200) for i in range(100)]
    odd = [Lease("x", "p", 0, 5.0, 15.0, None, None), Lease("y", "p", 0, 6.0, 16.0, 7.0, 409)]
    picked = sample_leases([*plain, *odd], 12)
    assert len(picked) == 12
    assert picked[:2] == odd
    assert [x.granted_at for x in picked[2:]] == [float(i) for i in range(0, 100, 10)]
    assert sample_leases(plain[:3], 12) == plain[:3]
    assert sample_leases([*odd, *plain], 1) == odd[:1]


def test_heavy_table() -> None:
    row = HeavyRow(
        "nats down (heavy)", 3099.4, 0.0, ["outbox empty 0.1s after the load stopped"],
        leases=52986, events=106378, run_rps=2930.2, outbox_peak=86035,
        memory_peak=42 * 2**20, states_read=2000, seconds=51.2,
        run_statuses={"503 store_unavailable": 3},
    )  # fmt: skip
    assert render_heavy([row]).splitlines()[-1] == (
        "| nats down (heavy) | 2,930/s; 3,099/s, 0.0% | 3x 503 store_unavailable | "
        "86,035 entries, 42.0 MiB | 52,986 leases (2,000 states read back), 106,378 events | "
        "outbox empty 0.1s after the load stopped | nothing | pass | 51s |"
    )
