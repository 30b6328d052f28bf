"""The `kubernetes:` section of a provider (proxies as pods) and its checks.

Pure: no I/O and no Kubernetes import. The providers file parses the section strictly and
calls `check_kubernetes_provider`, whose errors name the key and what was expected, so a value the
API server would refuse (a bad quantity, label or namespace) stops the service at start
instead of failing every create later with a 422.

Default image: `ubuntu/squid:6.6-24.04_beta`, Canonical's Squid on Ubuntu 24.04 LTS (noble,
security updates until 2029; its Squid package is patched within 6.x). It ships the `proxy`
user (uid 13) that the pod runs as, and `/usr/lib/squid/basic_ncsa_auth`; Squid started
as that user with the provisioner's squid.conf needs no root, and writes only to the
emptyDir volumes (pid, logs, spool, cache), so the root filesystem stays read-only. The
interim-release tags (6.10-24.10, 6.13-25.04) are out of support; pin a digest in
production with `image`.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Literal

import msgspec

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.domain.squid import check_source_ranges
from proxyfleet.common.providers import Port, ProviderConfig
from proxyfleet.provisioner_k8s.pure.egress_config import (
    DEFAULT_HOST_PORT_RANGE,
    EgressMode,
    K8sEgressGateway,
    check_egress,
)

DEFAULT_IMAGE = "ubuntu/squid:6.6-24.04_beta"
"""Canonical's Squid on Ubuntu 24.04 LTS (see the module docstring for why)."""
RESERVED_LABEL_PREFIX = "proxyfleet.io/"
"""Label (and annotation) keys the provisioner sets itself."""
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
ZONE_LABEL = "topology.kubernetes.io/zone"
"""The well-known node label a zone's pods are pinned with (zone_node_labels)."""

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_QUANTITY = re.compile(
    r"^(?P<num>[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[mkMGTPE]|[eE][-+]?[0-9]+)?$"
)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"m": Decimal("0.001"), "k": Decimal(10**3), "M": Decimal(10**6),
            "G": Decimal(10**9), "T": Decimal(10**12), "P": Decimal(10**15),
            "E": Decimal(10**18)}  # fmt: skip
_STANDARD_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})


class _Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


Quantity = str | int | float
"""A Kubernetes quantity as YAML gives it: "50m", "64Mi", or a bare number (cpu: 2)."""


class K8sResources(_Strict):
    """Container requests and limits (Kubernetes quantities such as 50m, 64Mi)."""

    requests: dict[str, Quantity] = msgspec.field(
        default_factory=lambda: {"cpu": "50m", "memory": "64Mi"}
    )
    """What the scheduler reserves per proxy pod."""
    limits: dict[str, Quantity] = msgspec.field(
        default_factory=lambda: {"cpu": "500m", "memory": "128Mi"}
    )
    """The most a proxy pod may use (Squid with cache_mem 16 MB stays well under 128Mi)."""

    def as_text(self) -> tuple[dict[str, str], dict[str, str]]:
        """(requests, limits) with every quantity as the API's string form."""
        return (
            {k: quantity_text(v) for k, v in self.requests.items()},
            {k: quantity_text(v) for k, v in self.limits.items()},
        )


class Toleration(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, rename="camel"):
    """A Kubernetes toleration, written as in a pod spec (tolerationSeconds)."""

    key: str = ""
    """Taint key ("" with operator Exists: every taint)."""
    operator: Literal["Exists", "Equal"] = "Equal"
    """Equal matches `value`; Exists any value."""
    value: str = ""
    """Taint value (with operator Equal)."""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""
    """Taint effect tolerated ("": every effect)."""
    toleration_seconds: int | None = None
    """With NoExecute: how long the pod stays bound after the taint appears."""


class K8sSettings(_Strict):
    """A proxy is a pod running Squid in one namespace, reached on its pod IP (clients in
    the cluster) or through a Service of its own (clients outside)."""

    namespace: str
    """Namespace the proxy pods (and their Secrets, ConfigMaps, Services) live in."""
    image: str = DEFAULT_IMAGE
    """Squid image; it must run /usr/sbin/squid as uid 13 with a read-only root."""
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"
    """The container's imagePullPolicy."""
    proxy_port: Port = 3128
    """Port Squid listens on in each pod (and the Service's port)."""
    expose: Literal["pod_ip", "node_port", "load_balancer"] = "pod_ip"
    """How clients reach a proxy: pod_ip (in-cluster clients), node_port (a NodePort
    Service per proxy: a node's address and the node port) or load_balancer (a
    LoadBalancer Service per proxy: its ingress address)."""
    kubeconfig: str = ""
    """"" uses the in-cluster service account; else the path of a kubeconfig file."""
    context: str = ""
    """Context of the kubeconfig file ("" = its current context)."""
    resources: K8sResources = msgspec.field(default_factory=K8sResources)
    """Container requests and limits."""
    node_selector: dict[str, str] = msgspec.field(default_factory=dict)
    """Node labels every proxy pod requires."""
    tolerations: list[Toleration] = msgspec.field(default_factory=list)
    """Taints proxy pods tolerate (to run on dedicated nodes)."""
    zone_node_labels: dict[str, str] = msgspec.field(default_factory=dict)
    """Provider zone -> value of topology.kubernetes.io/zone its pods are pinned to; a
    zone not listed runs on any node."""
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    """Extra labels on every object (proxyfleet.io/ keys and managed-by are reserved)."""
    source_ranges: list[str] = msgspec.field(default_factory=list)
    """Client networks (CIDR) Squid accepts; empty: any (a NetworkPolicy can narrow it)."""
    connect_ports: list[Port] = msgspec.field(default_factory=lambda: [443])
    """Destination ports CONNECT may reach."""
    deny_private_destinations: bool = True
    """Squid refuses private destinations (the cluster network and the VPC behind it)."""
    egress_mode: EgressMode = "pod"
    """How the pods leave the cluster, so what exit address each has (egress_config):
    pod (the node's SNAT address, shared), host_network (one pod per node, its node's
    address) or egress_gateway (the operator's gateway, selected by egress_gateway)."""
    host_port_range: tuple[Port, Port] = DEFAULT_HOST_PORT_RANGE
    """host_network: [first, last] ports Squid's port per pod is chosen from."""
    egress_gateway: K8sEgressGateway = msgspec.field(default_factory=K8sEgressGateway)
    """egress_gateway: the labels and annotations put on every proxy pod."""


class K8sProviderConfig(ProviderConfig, tag="kubernetes"):
    """A provider entry of type kubernetes."""

    kubernetes: K8sSettings


def check_kubernetes_provider(entry: K8sProviderConfig, where: str) -> None:
    """ConfigError naming `where`.kubernetes.<key> for what the types alone do not say."""
    k8s, zones, where = entry.kubernetes, entry.zones, f"{where}.kubernetes"
    if not _DNS_LABEL.fullmatch(k8s.namespace):
        raise ConfigError(
            f"{where}.namespace: expected a DNS-1123 label (at most 63 lowercase letters,"
            f" digits and '-', starting and ending alphanumeric), got {k8s.namespace!r}"
        )
    if not k8s.image.strip() or any(c.isspace() for c in k8s.image):
        raise ConfigError(f"{where}.image: expected an image reference, got {k8s.image!r}")
    _check_resources(k8s.resources, f"{where}.resources")
    for key, value in k8s.node_selector.items():
        _check_label(key, value, f"{where}.node_selector")
    for i, t in enumerate(k8s.tolerations):
        if t.operator == "Exists" and t.value:
            raise ConfigError(f"{where}.tolerations[{i}].value: expected none with Exists")
        if t.key:
            _check_label_key(t.key, f"{where}.tolerations[{i}].key")
        elif t.operator != "Exists":
            raise ConfigError(f"{where}.tolerations[{i}].key: required with operator Equal")
        if t.toleration_seconds is not None and t.effect != "NoExecute":
            raise ConfigError(
                f"{where}.tolerations[{i}].tolerationSeconds: only with effect NoExecute"
            )
    if extra := [z for z in k8s.zone_node_labels if z not in zones]:
        raise ConfigError(
            f"{where}.zone_node_labels: {', '.join(extra)} not among the provider's zones"
        )
    for zone, value in k8s.zone_node_labels.items():
        if not value or not _LABEL_VALUE.fullmatch(value):
            raise ConfigError(
                f"{where}.zone_node_labels.{zone}: expected a label value (the node's"
                f" {ZONE_LABEL}), got {value!r}"
            )
    for key, value in k8s.labels.items():
        _check_not_reserved(key, f"{where}.labels.{key}")
        _check_label(key, value, f"{where}.labels")
    gateway = f"{where}.egress_gateway"
    for key, value in k8s.egress_gateway.labels.items():
        _check_not_reserved(key, f"{gateway}.labels.{key}")
        _check_label(key, value, f"{gateway}.labels")
    for key in k8s.egress_gateway.annotations:
        _check_not_reserved(key, f"{gateway}.annotations.{key}")
        _check_label_key(key, f"{gateway}.annotations.{key}")
    check_egress(k8s.egress_mode, k8s.expose, k8s.host_port_range, k8s.egress_gateway, where)
    try:
        check_source_ranges(k8s.source_ranges)
    except ValueError as exc:
        raise ConfigError(f"{where}.source_ranges: {exc}") from None
    if not k8s.connect_ports:
        raise ConfigError(f"{where}.connect_ports: expected at least one port")


def quantity_text(value: Quantity) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def parse_quantity(value: Quantity) -> Decimal:
    """A Kubernetes quantity (`50m`, `64Mi`, `1.5`, `1e3`) as a number; ValueError else."""
    text = quantity_text(value)
    m = _QUANTITY.fullmatch(text)
    if not m:
        raise ValueError(f"not a Kubernetes quantity: {text!r}")
    try:
        number = Decimal(m.group("num"))
    except InvalidOperation:
        raise ValueError(f"not a Kubernetes quantity: {text!r}") from None
    suffix = m.group("suffix") or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    if suffix:
        return number * Decimal(10) ** int(suffix[1:])
    return number


def _check_resources(res: K8sResources, where: str) -> None:
    for part, values in (("requests", res.requests), ("limits", res.limits)):
        for name, value in values.items():
            key = f"{where}.{part}.{name}"
            if name not in _STANDARD_RESOURCES and not _is_extended_resource(name):
                raise ConfigError(
                    f"{key}: expected cpu, memory, ephemeral-storage or an extended"
                    " resource (domain/name)"
                )
            try:
                parse_quantity(value)
            except ValueError:
                raise ConfigError(
                    f"{key}: expected a Kubernetes quantity such as 50m, 1, 64Mi or 1G,"
                    f" got {value!r}"
                ) from None
    for name, request in res.requests.items():
        limit = res.limits.get(name)
        if limit is not None and parse_quantity(request) > parse_quantity(limit):
            raise ConfigError(
                f"{where}.requests.{name}: {quantity_text(request)} is more than the limit"
                f" {quantity_text(limit)};"
                " expected at most the limit"
            )


def _is_extended_resource(name: str) -> bool:
    prefix, _, rest = name.partition("/")
    return (
        bool(rest) and bool(_DNS_SUBDOMAIN.fullmatch(prefix)) and bool(_LABEL_NAME.fullmatch(rest))
    )


def _check_label(key: str, value: str, where: str) -> None:
    _check_label_key(key, f"{where}.{key}")
    if not _LABEL_VALUE.fullmatch(value):
        raise ConfigError(
            f"{where}.{key}: expected a label value (at most 63 letters, digits, '-', '_'"
            f" and '.', starting and ending alphanumeric), got {value!r}"
        )


def is_label_key(key: str) -> bool:
    """A Kubernetes label key: an optional DNS-subdomain prefix and '/', then a name."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return False
    return bool(_LABEL_NAME.fullmatch(name))


def is_label_value(value: str) -> bool:
    return bool(_LABEL_VALUE.fullmatch(value))


def _check_not_reserved(key: str, where: str) -> None:
    if key.startswith(RESERVED_LABEL_PREFIX) or key == MANAGED_BY_LABEL:
        raise ConfigError(
            f"{where}: reserved (the provisioner sets {RESERVED_LABEL_PREFIX}* and"
            f" {MANAGED_BY_LABEL} itself)"
        )


def _check_label_key(key: str, where: str) -> None:
    if not is_label_key(key):
        raise ConfigError(
            f"{where}: expected a label key ([prefix/]name, the name at most 63 letters,"
            f" digits, '-', '_' and '.'), got {key!r}"
        )
