"""The gateway benchmark's tunnel set-up rows (issue 24): the gateway against apify's
proxy-chain (target: >= 1.2x its rate) and against CONNECTs straight to the Squids, each
path's totals summed over the rounds it took turns in, with CPU per tunnel by process.
Pure: gateway_bench measures, this module makes the rows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from proxyfleet.bench.figures import Figure
from proxyfleet.bench.proxy_chain import Missing

TARGET_VS_PEER = 1.2
"""Gateway set-up rate over proxy-chain's, in the same run (issue 24)."""
PEER = "proxy-chain"


@dataclass
class PathTotals:
    """One path's tunnel set-up over its turns: tunnels, refusals, seconds, CPU by part."""

    tunnels: int = 0
    refused: int = 0
    seconds: float = 0.0
    cpu_us: dict[str, float] = field(default_factory=dict)
    """Microseconds of CPU spent during the turns, by part (cpu_ledger's parts)."""

    def add(self, tunnels: int, refused: int, seconds: float, cpu_us: Mapping[str, float]) -> None:
        self.tunnels += tunnels
        self.refused += refused
        self.seconds += seconds
        for part, us in cpu_us.items():
            self.cpu_us[part] = self.cpu_us.get(part, 0.0) + us

    @property
    def rate(self) -> float:
        return self.tunnels / self.seconds if self.seconds else 0.0

    def ledger(self) -> str:
        """CPU per tunnel by part, e.g. 'machine 804, gateway 313' (parts near 0 left out)."""
        n = max(1, self.tunnels)
        return ", ".join(
            f"{part} {us / n:.0f}" for part, us in self.cpu_us.items() if round(us / n)
        )


@dataclass(frozen=True, slots=True)
class SetupRuns:
    gateway: PathTotals
    direct: PathTotals
    peer: PathTotals | Missing
    peer_name: str
    """e.g. 'proxy-chain 3.0.1 on Node v20.20.2' (empty when missing)."""
    upstreams: int
    """Upstream URLs the peer picks from (every Squid user)."""
    workers: int
    rounds: int
    seconds: float
    """Per path and round."""
    squids: int
    gateways: int
    load: tuple[float, float]
    """Load average before the first turn and after the last."""


def setup_figures(runs: SetupRuns) -> list[Figure]:
    g, d, peer = runs.gateway, runs.direct, runs.peer
    common = (
        f"{runs.workers} connections in a loop, {runs.rounds} rounds of {runs.seconds:g} s per "
        "path (direct, proxy-chain, gateway, then the reverse); "
        f"{runs.squids} Squids; tunnels to a bare TCP endpoint (tcp_sink)"
    )
    of_direct = f"{g.rate / d.rate:.2f} of direct CONNECTs" if d.rate else "direct not measured"
    gateway_notes = (
        f"{common}; {g.refused} refused; {runs.gateways} gateway processes; {of_direct}; CPU "
        f"per tunnel (us): {g.ledger()}; load average {runs.load[0]:.1f} before the first "
        f"turn, {runs.load[1]:.1f} after the last (the rate is CPU-bound when the machine "
        "is: every process shares its cores)"
    )
    target = f">= {TARGET_VS_PEER:g}x {PEER} (same run)"
    what = "gateway tunnel set-up rate (new lease per CONNECT)"
    if isinstance(peer, Missing):
        gateway = Figure(
            what, round(g.rate, 1), "tunnels/s", target=target,
            notes=f"{gateway_notes}; {PEER} not measured: {peer.reason}",
        )  # fmt: skip
        peer_row = Figure(
            f"{PEER} tunnel set-up rate (random upstream per CONNECT)", 0.0, "tunnels/s",
            missing=peer.reason, notes=f"not measured: {peer.reason}",
        )  # fmt: skip
    else:
        ratio = g.rate / peer.rate if peer.rate else 0.0
        gateway = Figure(
            what, round(g.rate, 1), "tunnels/s", target=target, baseline=round(peer.rate, 1),
            ratio=round(ratio, 3), met=ratio >= TARGET_VS_PEER, notes=gateway_notes,
        )  # fmt: skip
        peer_row = Figure(
            f"{PEER} tunnel set-up rate (random upstream per CONNECT)", round(peer.rate, 1),
            "tunnels/s", target="reported", baseline=round(d.rate, 1),
            ratio=round(peer.rate / d.rate, 3) if d.rate else None,
            notes=f"{runs.peer_name}, its Server with a prepareRequestFunction returning one "
            f"of {runs.upstreams} upstream URLs (every Squid user) at random, nothing else; "
            f"the baseline is direct CONNECTs; {peer.refused} refused; CPU per tunnel (us): "
            f"{peer.ledger()}",
        )  # fmt: skip
    direct = Figure(
        "direct CONNECT tunnel set-up rate (straight to the Squids)", round(d.rate, 1),
        "tunnels/s", target="reported",
        notes=f"{common}; {d.refused} refused; CPU per tunnel (us): {d.ledger()}",
    )  # fmt: skip
    return [gateway, peer_row, direct]
