"""The GCP provisioner's pure parts: names, labels, request ids, plans, classification."""

from __future__ import annotations

import json
import uuid

import pytest

from proxyfleet.common.runner.failures import Kind
from proxyfleet.common.runner.lost import Running
from proxyfleet.provisioner_gcp.pure import names
from proxyfleet.provisioner_gcp.pure.classify import ApiFailure, ErrorEntry, classify
from proxyfleet.provisioner_gcp.pure.plans import (
    FirewallRule,
    InstancePlan,
    Orphan,
    credentials_of,
    firewall_changes,
    instance_body,
    landed_zone,
    sweepable,
    timestamp,
    zone_order,
)
from proxyfleet.provisioner_gcp.pure.preemption import lost

RULE = FirewallRule(
    name="pf-dev-gcp-proxy",
    network="global/networks/default",
    target_tag="pf-dev-gcp-proxy",
    port=3128,
    source_ranges=("203.0.113.0/24",),
)


def test_request_ids_are_uuids_stable_per_proxy_operation_and_zone() -> None:
    a = names.request_id("p1", "insert", "europe-west1-b")
    assert uuid.UUID(a).version == 5
    assert a == names.request_id("p1", "insert", "europe-west1-b")
    others = {
        names.request_id("p2", "insert", "europe-west1-b"),
        names.request_id("p1", "delete", "europe-west1-b"),
        names.request_id("p1", "insert", "europe-west1-c"),
    }
    assert a not in others
    assert len(others) == 3


def test_instance_names_round_trip_and_resource_ids_parse() -> None:
    assert names.instance_name("p0193abc") == "pf-p0193abc"
    assert names.proxy_id_of("pf-p0193abc") == "p0193abc"
    assert names.proxy_id_of("other") is None
    rid = names.resource_id("europe-west1-b", "pf-p1")
    assert names.parse_resource_id(rid) == ("europe-west1-b", "pf-p1")
    with pytest.raises(ValueError, match="expected <zone>/<instance>"):
        names.parse_resource_id("pf-p1")


def test_firewall_names_fit_gce_limits() -> None:
    assert names.firewall_name("dev", "gcp") == "pf-dev-gcp-proxy"
    long = names.firewall_name("x" * 60, "gcp")
    assert len(long) <= 63
    assert long.startswith("pf-")
    assert long == names.firewall_name("x" * 60, "gcp")


def test_labels_put_ours_over_the_operators() -> None:
    labels = names.labels(
        installation_id="dev",
        provider="gcp",
        proxy_id="p1",
        port=3128,
        created_at=1700000000.5,
        extra={"team": "growth", names.LABEL_PROXY: "forged"},
    )
    assert labels[names.LABEL_PROXY] == "p1"
    assert labels[names.LABEL_PORT] == "3128"
    assert labels[names.LABEL_CREATED] == "1700000000"
    assert labels["team"] == "growth"


def test_installation_ids_must_be_label_values() -> None:
    names.check_label_value("installation id", "prod-eu")
    with pytest.raises(ValueError, match="GCE label value"):
        names.check_label_value("installation id", "Prod EU")


def test_filters_name_the_installation_and_the_proxy() -> None:
    assert names.proxy_filter("dev", "p1") == (
        '(labels.proxyfleet-installation = "dev") AND (labels.proxyfleet-proxy = "p1")'
    )
    assert "labels.proxyfleet-provider" in names.installation_filter("dev", "gcp")


# ---- firewall diff ----------------------------------------------------------------------


def _have(**overrides: object) -> dict[str, object]:
    have: dict[str, object] = {
        "allowed": [{"I_p_protocol": "tcp", "ports": ["3128"]}],
        "source_ranges": ["203.0.113.0/24"],
        "target_tags": ["pf-dev-gcp-proxy"],
        "direction": "INGRESS",
        "disabled": False,
        "network": "https://www.googleapis.com/compute/v1/projects/p/global/networks/default",
    }
    have.update(overrides)
    return have


def test_a_missing_rule_is_created_whole() -> None:
    assert firewall_changes(RULE, None) == RULE.body()


def test_a_rule_with_the_same_content_needs_nothing() -> None:
    assert firewall_changes(RULE, _have()) is None


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"allowed": [{"I_p_protocol": "tcp", "ports": ["3129"]}]}, "allowed"),
        ({"allowed": [{"I_p_protocol": "all"}]}, "allowed"),
        ({"source_ranges": ["0.0.0.0/0"]}, "source_ranges"),
        ({"target_tags": []}, "target_tags"),
        ({"disabled": True}, "disabled"),
        ({"source_tags": ["anything"]}, "source_tags"),
    ],
)
def test_a_rule_whose_content_differs_is_patched(override: dict[str, object], field: str) -> None:
    patch = firewall_changes(RULE, _have(**override))
    assert patch is not None
    assert field in patch
    assert "recreate" not in patch


def test_a_rule_on_another_network_is_recreated() -> None:
    patch = firewall_changes(RULE, _have(network="global/networks/other"))
    assert patch is not None
    assert patch["recreate"] is True


# ---- instance body ------------------------------------------------------------------------


def _plan(**overrides: object) -> InstancePlan:
    values: dict[str, object] = {
        "name": "pf-p1",
        "gce_zone": "europe-west1-b",
        "machine_type": "e2-micro",
        "source_image": "projects/ubuntu-os-cloud/global/images/ubuntu-x",
        "disk_size_gb": 10,
        "disk_type": "pd-balanced",
        "network": "global/networks/default",
        "subnetwork": "",
        "spot": True,
        "labels": {"proxyfleet-proxy": "p1"},
        "tags": ["pf-dev-gcp-proxy"],
        "service_account": "",
        "user_data": "#cloud-config\n",
        "credentials": ("user", "pw"),
    }
    values.update(overrides)
    return InstancePlan(**values)  # type: ignore[arg-type]


def test_the_instance_is_spot_with_delete_on_termination_and_an_external_ip() -> None:
    body = instance_body(_plan())
    assert body["scheduling"]["provisioning_model"] == "SPOT"
    assert body["scheduling"]["instance_termination_action"] == "DELETE"
    assert body["disks"][0]["auto_delete"] is True
    assert body["network_interfaces"][0]["access_configs"][0]["type_"] == "ONE_TO_ONE_NAT"
    assert body["machine_type"] == "zones/europe-west1-b/machineTypes/e2-micro"
    assert "service_accounts" not in body
    items = {i["key"]: i["value"] for i in body["metadata"]["items"]}
    assert items["user-data"] == "#cloud-config\n"
    assert json.loads(items[names.CREDENTIALS_KEY]) == {"username": "user", "password": "pw"}


def test_a_standard_instance_restarts_and_a_service_account_is_attached() -> None:
    body = instance_body(_plan(spot=False, service_account="sa@p.iam.gserviceaccount.com"))
    assert body["scheduling"]["provisioning_model"] == "STANDARD"
    assert body["service_accounts"][0]["email"] == "sa@p.iam.gserviceaccount.com"


def test_without_an_external_ip_the_nic_has_no_access_config() -> None:
    nic = instance_body(_plan(external_ip=False))["network_interfaces"][0]
    assert "access_configs" not in nic
    assert nic["network"] == _plan().network


def test_credentials_are_read_back_from_metadata() -> None:
    items = [(i["key"], i["value"]) for i in instance_body(_plan())["metadata"]["items"]]
    assert credentials_of(items) == ("user", "pw")
    assert credentials_of([(names.CREDENTIALS_KEY, "not json")]) is None
    assert credentials_of([]) is None


def test_zone_order_puts_the_proxys_zone_first_and_pinned_stays() -> None:
    zones = {"a": "europe-west1-b", "b": "europe-west1-c", "c": "europe-west1-d"}
    assert zone_order("b", zones, pinned=False) == [
        ("b", "europe-west1-c"),
        ("a", "europe-west1-b"),
        ("c", "europe-west1-d"),
    ]
    assert zone_order("b", zones, pinned=True) == [("b", "europe-west1-c")]


def test_landed_zone_names_the_provider_zone_only_when_it_moved() -> None:
    zones = {"a": "europe-west1-b", "b": "europe-west1-c", "a2": "europe-west1-b"}
    assert landed_zone("a", "europe-west1-b", zones) == ""  # where it was asked for
    assert landed_zone("a", "europe-west1-c", zones) == "b"  # a failover
    assert landed_zone("a2", "europe-west1-b", zones) == ""  # its own, shared with a
    assert landed_zone("b", "europe-west1-b", zones) == "a"  # the first zone mapped to it
    assert landed_zone("a", "us-east1-b", zones) == ""  # mapped no more: it stays


def test_sweepable_keeps_young_orphans() -> None:
    old = Orphan("disk", "d1", "europe-west1-b", 1000.0)
    young = Orphan("disk", "d2", "europe-west1-b", 4000.0)
    assert sweepable([old, young], now=4100.0, min_age=3000.0) == [old]


def test_timestamps_parse_with_offsets() -> None:
    assert timestamp("1970-01-01T00:00:10.000-00:00") == 10.0
    assert timestamp("2026-12-01T06:00:00.000-08:00") == timestamp("2026-12-01T14:00:00Z")
    assert timestamp("") == 0.0


def test_preempted_or_vanished_vms_are_lost() -> None:
    running = [Running("p1", 3, "z/pf-p1"), Running("p2", 4, "z/pf-p2"), Running("p3", 2, "z/x")]
    found = lost(running, {"p1": "RUNNING", "p2": "TERMINATED"})
    assert [(f.proxy.proxy_id, "preempted" in f.reason, f.cause) for f in found] == [
        ("p2", True, "stopped"),
        ("p3", True, "gone"),
    ]


# ---- classification -----------------------------------------------------------------------


def _op(code: str, message: str = "m", **kw: str) -> ApiFailure:
    return ApiFailure(status=None, message="", entries=[ErrorEntry(code, message, **kw)])


@pytest.mark.parametrize(
    ("failure", "kind", "retry_after"),
    [
        (
            ApiFailure(429, "slow down", [ErrorEntry("rateLimitExceeded")], retry_after=7),
            Kind.TEMPORARY,
            7,
        ),
        (ApiFailure(403, "slow down", [ErrorEntry("rateLimitExceeded")]), Kind.TEMPORARY, 10.0),
        (ApiFailure(429, "RESOURCE_EXHAUSTED"), Kind.TEMPORARY, 10.0),
        (ApiFailure(503, "unavailable"), Kind.TEMPORARY, None),
        (ApiFailure(None, "no answer"), Kind.TEMPORARY, None),
        (_op("CONCURRENT_OPERATIONS_QUOTA_EXCEEDED"), Kind.TEMPORARY, 15.0),
        (_op("ZONE_RESOURCE_POOL_EXHAUSTED"), Kind.CAPACITY, 60.0),
        (_op("ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"), Kind.CAPACITY, 60.0),
        (_op("QUOTA_EXCEEDED"), Kind.QUOTA, None),
        (ApiFailure(404, "gone", [ErrorEntry("notFound", "image missing")]), Kind.NOT_FOUND, None),
        (ApiFailure(400, "bad", [ErrorEntry("invalid", "Invalid value")]), Kind.PERMANENT, None),
        (
            ApiFailure(403, "no", [ErrorEntry("forbidden", "Required 'compute.instances.create'")]),
            Kind.PERMANENT,
            None,
        ),
    ],
)
def test_classification_follows_the_error_codes(
    failure: ApiFailure, kind: Kind, retry_after: float | None
) -> None:
    c = classify(failure)
    assert c.kind is kind
    assert c.retry_after == retry_after


def test_a_quota_error_names_the_quota() -> None:
    c = classify(
        _op("QUOTA_EXCEEDED", "Quota exceeded.", quota_metric="compute.googleapis.com/cpus")
    )
    assert c.message == "quota compute.googleapis.com/cpus exceeded: Quota exceeded."
    old = classify(_op("QUOTA_EXCEEDED", "Quota 'CPUS' exceeded.  Limit: 8.0 in region x."))
    assert old.message.startswith("quota CPUS exceeded: ")


def test_a_permanent_error_keeps_googles_message() -> None:
    c = classify(
        ApiFailure(
            403, "call failed", [ErrorEntry("forbidden", "Required 'compute.instances.create'")]
        )
    )
    assert c.message == "Required 'compute.instances.create'"
    assert c.code == "forbidden"
