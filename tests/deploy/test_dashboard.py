"""The Grafana dashboard (deploy/kubernetes/monitoring/proxyfleet-dashboard.json) queries
only metrics the code defines, with labels they have: read from the Counter, Gauge and
Histogram definitions in libs/ and services/ (their source, not a list kept here)."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.deploy.kube import DEPLOY, ROOT, named, render

DASHBOARD = DEPLOY / "kubernetes" / "monitoring" / "proxyfleet-dashboard.json"
METRIC_KINDS = {"Counter", "Gauge", "Histogram", "Summary"}
SERIES = re.compile(r"\b(proxyfleet_[a-z0-9_]+)(\{[^}]*\})?")
MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
TARGET_LABELS = {"pod", "namespace", "instance", "job", "service", "container"}
"""Labels Prometheus adds to every series it scrapes through the ServiceMonitor."""


@dataclass(frozen=True)
class Metric:
    kind: str
    labels: tuple[str, ...]

    def series(self, name: str) -> dict[str, tuple[str, ...]]:
        """The sample names prometheus_client exposes for it, with their labels."""
        if self.kind in {"Histogram", "Summary"}:
            extra = ("le",) if self.kind == "Histogram" else ("quantile",)
            found = {f"{name}_count": self.labels, f"{name}_sum": self.labels}
            found[f"{name}_bucket" if self.kind == "Histogram" else name] = self.labels + extra
            return found
        return {name: self.labels}


def _definitions() -> dict[str, Metric]:
    """Every metric defined with a literal name in libs/ and services/, by name."""
    metrics: dict[str, Metric] = {}
    sources = [*ROOT.glob("libs/*/src/**/*.py"), *ROOT.glob("services/*/src/**/*.py")]
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            kind = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if kind not in METRIC_KINDS or not node.args:
                continue
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue
            labels: tuple[str, ...] = ()
            given = [*node.args[2:3], *(k.value for k in node.keywords if k.arg == "labelnames")]
            if given:
                labels = tuple(ast.literal_eval(given[0]))
            metrics[first.value] = Metric(kind, labels)
    return metrics


def _defined_metrics() -> dict[str, tuple[str, ...]]:
    """The sample names those metrics expose, with their labels."""
    series: dict[str, tuple[str, ...]] = {}
    for name, metric in _definitions().items():
        series |= metric.series(name)
    return series


def _exprs(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def test_the_code_scan_finds_the_metrics_it_should() -> None:
    """The scan itself: a few known definitions, with their labels, are found."""
    defined = _defined_metrics()
    assert defined["proxyfleet_leases_granted_total"] == ()
    assert defined["proxyfleet_probe_seconds_bucket"] == ("result", "le")
    assert defined["proxyfleet_provider_call_seconds_count"] == ("provider", "op", "result")
    assert defined["proxyfleet_registry_proxies"] == ("provider", "phase")
    assert len({n for n in defined if n.startswith("proxyfleet_")}) >= 40


def test_every_metric_a_panel_queries_is_defined_with_the_labels_it_uses() -> None:
    defined = _defined_metrics()
    dashboard = json.loads(DASHBOARD.read_text())
    queried = set()
    for expr in _exprs(dashboard):
        used = SERIES.findall(expr)
        assert used, expr
        names = set()
        for name, matchers in used:
            assert name in defined, f"{name} (in {expr}) is not defined in libs/ or services/"
            assert set(MATCHER.findall(matchers)) <= set(defined[name]), expr
            names.add(name)
        # Grouping labels exist on at least one of the expression's metrics.
        known = {label for name in names for label in defined[name]} | TARGET_LABELS
        for group in GROUPING.findall(expr):
            assert {g.strip() for g in group.split(",") if g.strip()} <= known, expr
        queried |= names
    # What the dashboard is for: fleet by phase, grants and conflicts, probe latency,
    # provider call errors (the gateway's row: test_the_gateway_row_plots_...).
    assert {
        "proxyfleet_registry_proxies",
        "proxyfleet_leases_granted_total",
        "proxyfleet_lease_conflicts_total",
        "proxyfleet_probe_seconds_bucket",
        "proxyfleet_provider_call_seconds_count",
        "proxyfleet_health_claimed_total",
    } <= queried


def _row(dashboard: dict[str, Any], title: str) -> list[dict[str, Any]]:
    """The panels below the row `title`, up to the next row."""
    panels: list[dict[str, Any]] = dashboard["panels"]
    (start,) = [i for i, p in enumerate(panels) if p["type"] == "row" and p["title"] == title]
    rest = panels[start + 1 :]
    ends = [i for i, p in enumerate(rest) if p["type"] == "row"]
    return rest[: ends[0]] if ends else rest


def test_the_gateway_row_plots_tunnels_bytes_and_waits() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in _row(dashboard, "Gateway") for t in p["targets"]]
    queried = {name for expr in exprs for name, _ in SERIES.findall(expr)}
    assert queried == {
        "proxyfleet_gateway_open_tunnels",
        "proxyfleet_gateway_tunnels_total",
        "proxyfleet_gateway_bytes_total",
        "proxyfleet_gateway_upstream_connect_seconds_bucket",
        "proxyfleet_gateway_sessions_active",
        "proxyfleet_gateway_grant_seconds_bucket",
    }
    quantiles = {
        (name, q)
        for expr in exprs
        for q, name in re.findall(r"histogram_quantile\(([0-9.]+), .*?\b(proxyfleet_\w+)", expr)
    }
    assert quantiles == {
        ("proxyfleet_gateway_upstream_connect_seconds_bucket", "0.5"),
        ("proxyfleet_gateway_upstream_connect_seconds_bucket", "0.99"),
        ("proxyfleet_gateway_grant_seconds_bucket", "0.99"),
    }


def test_every_panel_uses_the_datasource_variable_and_ids_are_unique() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "proxyfleet"
    (variable,) = dashboard["templating"]["list"]
    assert (variable["name"], variable["type"], variable["query"]) == (
        "datasource",
        "datasource",
        "prometheus",
    )
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    for panel in panels:
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            assert panel["targets"]


def test_the_dashboard_ships_as_a_configmap_for_the_grafana_sidecar() -> None:
    configmap = named(render("kubernetes-production"), "ConfigMap", "proxyfleet-dashboard")
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(configmap["data"][DASHBOARD.name]) == json.loads(DASHBOARD.read_text())


def test_the_scan_covers_every_metric_name_in_the_source() -> None:
    """No metric is defined in a way the scan misses (a name built at run time, say)."""
    literal = set()
    for path in [*ROOT.glob("libs/*/src/**/*.py"), *ROOT.glob("services/*/src/**/*.py")]:
        literal |= set(re.findall(r'"(proxyfleet_[a-z0-9_]+)"', Path(path).read_text()))
    assert literal <= set(_definitions())


def test_every_alert_queries_metrics_the_code_defines_and_the_outbox_ones_exist() -> None:
    """The PrometheusRule (monitoring/alerts.yaml) as rendered by the production overlay."""
    defined = _defined_metrics()
    [rule] = [d for d in render("kubernetes-production") if d["kind"] == "PrometheusRule"]
    alerts = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
    for name, alert in alerts.items():
        used = SERIES.findall(alert["expr"])
        assert used, name
        for metric, matchers in used:
            assert metric in defined, f"{metric} (alert {name}) is not defined in the code"
            assert set(MATCHER.findall(matchers)) <= set(defined[metric]), name
        assert alert["labels"]["severity"] in {"warning", "critical"}, name
        assert alert["annotations"]["summary"], name
    assert {
        "ProxyfleetEventsDelayed", "ProxyfleetOutboxBacklog", "ProxyfleetOutboxNearHighWater",
        "ProxyfleetRedisMemoryHigh",
    } == set(alerts)  # fmt: skip
