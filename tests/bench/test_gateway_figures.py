"""The gateway benchmark's set-up rows (issue 24): the gateway against proxy-chain (>= 1.2x)
and direct CONNECTs, CPU per tunnel by process; proxy-chain's row marked missing, with the
reason, when it could not be installed. Pure: made-up totals."""

from __future__ import annotations

from proxyfleet.bench.doc import render
from proxyfleet.bench.gateway_figures import PathTotals, SetupRuns, setup_figures
from proxyfleet.bench.proxy_chain import Missing
from proxyfleet.bench.report import markdown_table, text_table
from proxyfleet.bench.suite import Outcome, not_measured


def totals(tunnels: int, seconds: float, cpu_us_per_tunnel: dict[str, float]) -> PathTotals:
    """Two turns of half the tunnels and half the seconds each."""
    out = PathTotals()
    for _ in range(2):
        spent = {part: us * tunnels / 2 for part, us in cpu_us_per_tunnel.items()}
        out.add(tunnels // 2, 1, seconds / 2, spent)
    return out


def runs(peer: PathTotals | Missing) -> SetupRuns:
    return SetupRuns(
        gateway=totals(
            36_000, 10.0, {"machine": 800, "gateway": 460, "redis": 170, "nats": 45, "squids": 150}
        ),
        direct=totals(80_000, 10.0, {"machine": 200, "squids": 86, "proxy-chain": 0.2}),
        peer=peer,
        peer_name="proxy-chain 3.0.1 on Node v20.20.2",
        upstreams=16,
        workers=32,
        rounds=2,
        seconds=5.0,
        squids=4,
        gateways=1,
        load=(2.5, 3.0),
    )


def test_totals_add_turns_and_give_cpu_per_tunnel() -> None:
    t = totals(1_000, 4.0, {"machine": 500, "gateway": 300.4, "nats": 0.3})
    assert (t.tunnels, t.refused, t.seconds, t.rate) == (1_000, 2, 4.0, 250.0)
    assert t.ledger() == "machine 500, gateway 300"  # NATS's 0.3 us is left out


def test_the_gateway_is_judged_against_proxy_chain_in_the_same_run() -> None:
    gateway, peer, direct = setup_figures(
        runs(totals(30_000, 10.0, {"machine": 700, "proxy-chain": 400}))
    )
    assert (gateway.value, gateway.baseline, gateway.ratio) == (3600.0, 3000.0, 1.2)
    assert gateway.met is True
    assert gateway.target == ">= 1.2x proxy-chain (same run)"
    assert "gateway 460, redis 170, nats 45, squids 150" in gateway.notes
    assert "0.45 of direct CONNECTs" in gateway.notes
    assert "proxy-chain 3.0.1 on Node v20.20.2" in peer.notes
    assert "one of 16 upstream URLs" in peer.notes
    assert "proxy-chain 400" in peer.notes
    assert (peer.value, peer.baseline, peer.ratio, peer.met) == (3000.0, 8000.0, 0.375, None)
    assert not peer.missing
    assert (direct.value, direct.met) == (8000.0, None)
    assert "squids 86" in direct.notes
    assert "proxy-chain" not in direct.notes.split("CPU per tunnel")[1]  # 0.2 us: idle


def test_a_slower_gateway_misses_the_target() -> None:
    gateway, _, _ = setup_figures(runs(totals(40_000, 10.0, {})))
    assert gateway.ratio == 0.9
    assert gateway.met is False


def test_without_proxy_chain_its_row_is_missing_with_the_reason_and_nothing_is_judged() -> None:
    reason = "npm install proxy-chain@3 failed: ECONNREFUSED: request to ... failed"
    figs = setup_figures(runs(Missing(reason)))
    gateway, peer, direct = figs
    assert (gateway.baseline, gateway.ratio, gateway.met) == (None, None, None)
    assert f"proxy-chain not measured: {reason}" in gateway.notes
    assert peer.missing == reason
    assert peer.notes == f"not measured: {reason}"
    assert direct.value == 8000.0
    table = text_table(figs)
    peer_line = next(ln for ln in table.splitlines() if ln.startswith("proxy-chain"))
    assert peer_line.split()[-5:] == ["missing", "-", "-", "-", "-"]
    assert "| proxy-chain tunnel set-up rate (random upstream per CONNECT) | missing |" in (
        markdown_table(figs)
    )
    doc = render(figs, {}, plot_file=None, failures=[], command="proxyfleet-bench run")
    assert f"not measured: {reason}" in doc
    assert not_measured(Outcome(figures=figs, failures=["pools: RuntimeError: boom"])) == [
        "not measured: pools: RuntimeError: boom",
        f"not measured: proxy-chain tunnel set-up rate (random upstream per CONNECT): {reason}",
    ]
