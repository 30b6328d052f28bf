"""The gateway in deploy/ (deploy/kubernetes/core/gateway.yaml): the settings each rendered
overlay gives it, read through its own command line and env rules as the pod would; its
ports against the Service, the probes and the metrics scrape; the client tokens it shares
with the API; and the proxies' NetworkPolicy letting it through."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from tests.deploy.kube import (
    OVERLAYS,
    ROOT,
    Doc,
    admits,
    container_env,
    named,
    of_kind,
    pod_spec,
    providers_text,
    render,
    selects,
)

from proxyfleet.api.main import SERVICE as API
from proxyfleet.api.settings import ApiSettings
from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.host import Service
from proxyfleet.common.host.command import all_options, build_settings, command
from proxyfleet.common.messaging.relay import RelaySettings
from proxyfleet.gateway.main import SERVICE as GATEWAY
from proxyfleet.gateway.settings import GatewaySettings

WITH_K8S = ("kubernetes-dev", "kubernetes-production")
"""The overlays with the Kubernetes provider, whose proxy pods the NetworkPolicy guards."""
OPERATOR_SECRETS: list[Doc] = [
    {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "proxyfleet-api-tokens", "namespace": "proxyfleet"},
        "stringData": {
            "PROXYFLEET_API_ADMIN_TOKENS": "ops:admin-secret-0123456789",
            "PROXYFLEET_API_CLIENT_TOKENS": "crawler:client-secret-0123456789,"
            "shop:client-secret-abcdefghij",
        },
    },
    {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "proxyfleet-stores", "namespace": "proxyfleet"},
        "stringData": {
            "PROXYFLEET_NATS_URL": "nats://nats.example.internal:4222",
            "PROXYFLEET_REDIS_URL": "rediss://redis.example.internal:6379/0",
        },
    },
]
"""The Secrets as an operator makes them before applying: real tokens in place of the
committed placeholders (which the services refuse), and production's store URLs."""


def _with_operator_secrets(docs: list[Doc]) -> list[Doc]:
    replaced = {s["metadata"]["name"] for s in OPERATOR_SECRETS}
    kept = [d for d in docs if not (d["kind"] == "Secret" and d["metadata"]["name"] in replaced)]
    return kept + OPERATOR_SECRETS


def _container(docs: list[Doc], name: str) -> dict[str, Any]:
    (container,) = pod_spec(named(docs, "Deployment", name))["containers"]
    found: dict[str, Any] = container
    return found


def _settings(service: Service[Any], docs: list[Doc], name: str) -> tuple[CommonSettings, Any]:
    """What the console script of Deployment `name` builds from the pod's args and env:
    its own option parsing, with nothing of this process's environment."""
    container = _container(docs, name)
    assert container["command"] == [f"proxyfleet-{service.name}"]
    specs = all_options(service)
    built: list[tuple[CommonSettings, Any]] = []
    cmd = command(service)
    cmd.callback = lambda **values: built.append(build_settings(service, specs, values))
    env: dict[str, str | None] = {e: None for spec in specs for e in spec.envvars}
    env |= container_env(docs, container)
    result = CliRunner().invoke(cmd, container["args"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return built[-1]


def _ports(container: dict[str, Any]) -> dict[str, int]:
    return {p["name"]: p["containerPort"] for p in container["ports"]}


@pytest.fixture(params=OVERLAYS)
def docs(request: pytest.FixtureRequest) -> list[Doc]:
    overlay: str = request.param
    return _with_operator_secrets(render(overlay))


def test_the_gateway_runs_its_console_script_listening_on_every_interface(
    docs: list[Doc],
) -> None:
    pyproject = tomllib.loads((ROOT / "services/gateway/pyproject.toml").read_text())
    assert "proxyfleet-gateway" in pyproject["project"]["scripts"]
    _, gateway = _settings(GATEWAY, docs, "gateway")
    assert isinstance(gateway, GatewaySettings)
    # Both default to 127.0.0.1: neither the Service nor the kubelet's probes would reach it.
    assert (gateway.host, gateway.metrics_host) == ("0.0.0.0", "0.0.0.0")


def test_the_ports_it_listens_on_are_those_of_the_service_probes_and_scrape(
    docs: list[Doc],
) -> None:
    _, gateway = _settings(GATEWAY, docs, "gateway")
    container = _container(docs, "gateway")
    assert _ports(container) == {
        "proxy": gateway.port,
        "socks": gateway.socks_port,
        "metrics": gateway.metrics_port,
    }
    # Clients in the cluster use http://gateway.proxyfleet:8899 or socks5h://...:1080.
    service = named(docs, "Service", "gateway")
    assert service["metadata"]["namespace"] == "proxyfleet"
    assert service["spec"]["ports"] == [
        {"name": "proxy", "port": 8899, "targetPort": "proxy"},
        {"name": "socks", "port": 1080, "targetPort": "socks"},
    ]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "metrics"}
    metrics = named(docs, "Service", "proxyfleet-metrics")
    targets = [p["targetPort"] for p in metrics["spec"]["ports"]]
    assert [t for t in targets if t in _ports(container)] == ["metrics"]  # never `proxy`


def test_the_socks5_listener_is_on_beside_the_http_one(docs: list[Doc]) -> None:
    """--socks-port defaults to 0 (none): the pod turns it on, on the same --host."""
    _, gateway = _settings(GATEWAY, docs, "gateway")
    assert gateway.socks_port == 1080
    assert len({gateway.port, gateway.socks_port, gateway.metrics_port}) == 3
    # The probes stay on the metrics server: neither listener answers HTTP GETs for them.
    container = _container(docs, "gateway")
    probed = {container[p]["httpGet"]["port"] for p in ("livenessProbe", "readinessProbe")}
    assert probed == {"metrics"}


def test_no_network_policy_keeps_clients_from_either_gateway_port(docs: list[Doc]) -> None:
    """An unlabelled client pod reaches 8899 and 1080: a policy that selects the gateway's
    pods must admit both (today none does; the proxies' policy admits the gateway)."""
    gateway = named(docs, "Deployment", "gateway")
    labels = gateway["spec"]["template"]["metadata"]["labels"]
    client: Doc = {
        "metadata": {"namespace": "proxyfleet"},
        "spec": {"template": {"metadata": {"labels": {"app": "some-client"}}}},
    }
    for policy in of_kind(docs, "NetworkPolicy"):
        if policy["metadata"]["namespace"] != "proxyfleet":
            continue
        if not selects(policy["spec"]["podSelector"].get("matchLabels", {}), labels):
            continue
        for port in (8899, 1080):
            assert admits(policy, docs, client, port), (policy["metadata"]["name"], port)


def test_the_gateway_takes_the_apis_client_tokens_and_no_admin_token(docs: list[Doc]) -> None:
    _, gateway = _settings(GATEWAY, docs, "gateway")
    _, api = _settings(API, docs, "api")
    assert isinstance(api, ApiSettings)
    # A token the API takes as a bearer token is a proxy password at the gateway.
    assert gateway.client_tokens == api.client_tokens
    assert len(gateway.client_tokens) == 2
    admin_secrets = {t.split(":", 1)[1] for t in api.admin_tokens}
    gateway_env = container_env(docs, _container(docs, "gateway")).values()
    assert not [value for value in gateway_env if any(s in value for s in admin_secrets)]


def test_gateway_and_api_grant_under_the_same_lease_policy(docs: list[Doc]) -> None:
    """Leases granted through either follow one cooldown, TTL cap, ban and probe age."""
    _, gateway = _settings(GATEWAY, docs, "gateway")
    _, api = _settings(API, docs, "api")
    policy = gateway.policy()
    assert (policy.cooldown, policy.max_ttl, policy.ban_seconds, policy.max_probe_age) == (
        api.cooldown,
        api.max_lease_ttl,
        api.ban_seconds,
        api.max_probe_age,
    )


def test_the_pod_has_time_to_drain_before_it_is_killed(docs: list[Doc]) -> None:
    """Kubernetes kills a pod terminationGracePeriodSeconds after SIGTERM: the drain, the
    relay's last publishes (RelaySettings.drain) and the close must fit in it."""
    _, gateway = _settings(GATEWAY, docs, "gateway")
    grace = pod_spec(named(docs, "Deployment", "gateway")).get("terminationGracePeriodSeconds", 30)
    assert gateway.drain_seconds + RelaySettings().drain + 5 <= grace


def test_the_gateway_reads_the_providers_config_of_the_install(docs: list[Doc]) -> None:
    """Usernames select zones and providers of the mounted config, as the API's grants do."""
    gateway_common, _ = _settings(GATEWAY, docs, "gateway")
    api_common, _ = _settings(API, docs, "api")
    assert gateway_common == api_common
    spec = pod_spec(named(docs, "Deployment", "gateway"))
    folder, file = gateway_common.providers_config.rsplit("/", 1)
    (mount,) = [m for m in _container(docs, "gateway")["volumeMounts"] if m["mountPath"] == folder]
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    configmap = named(docs, "ConfigMap", volume["configMap"]["name"])
    assert file in configmap["data"]


def test_the_committed_placeholder_tokens_are_refused_by_the_gateway_too() -> None:
    """Applied without replacing the token Secret, the gateway fails to start (as the API
    does) rather than accept the well-known placeholder as a password."""
    docs = render("kubernetes")
    with pytest.raises(ConfigError, match="--client-token"):
        _settings(GATEWAY, docs, "gateway")


@pytest.mark.parametrize("overlay", WITH_K8S)
def test_the_proxies_network_policy_lets_the_gateway_reach_the_squid_port(overlay: str) -> None:
    docs = render(overlay)
    (policy,) = of_kind(docs, "NetworkPolicy")
    providers = yaml.safe_load(providers_text(docs))["providers"]
    (provider,) = [p for p in providers if p["type"] == "kubernetes"]
    squid_port = provider["kubernetes"]["proxy_port"]
    gateway = named(docs, "Deployment", "gateway")
    assert admits(policy, docs, gateway, squid_port)
    assert not admits(policy, docs, gateway, squid_port + 1)
    # The gateway's client namespace needs no label; the other control-plane pods stay out.
    assert not admits(policy, docs, named(docs, "Deployment", "api"), squid_port)
