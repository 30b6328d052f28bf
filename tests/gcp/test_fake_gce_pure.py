"""The fake's pure parts, directly: list filters, the boot plan from cloud-init, faults,
Google's error and operation-error wording."""

from __future__ import annotations

import base64

import pytest
from tests.gcp.fake_gce.cloud_config import CloudConfigError, plan_boot
from tests.gcp.fake_gce.errors import GceError, rate_limit_exceeded
from tests.gcp.fake_gce.faults import FaultPlan
from tests.gcp.fake_gce.filters import parse_filter
from tests.gcp.fake_gce.op_errors import operation_error

from proxyfleet.provisioner_kvm.pure.cloud_init import CloudInitSpec, render_user_data

VM = {
    "name": "pf-web-1",
    "status": "RUNNING",
    "labels": {"env": "prod", "proxyfleet-installation": "i1"},
    "scheduling": {"preemptible": False},
    "id": "42",
}


@pytest.mark.parametrize(
    ("expression", "matches"),
    [
        ("", True),
        ('labels.env = "prod"', True),
        ("labels.env = prod", True),
        ('labels.env = "dev"', False),
        ('labels.env != "dev"', True),
        ('labels.proxyfleet-installation = "i1"', True),
        ('(labels.env = "prod") AND (labels.proxyfleet-installation = "i1")', True),
        ('(labels.env = "prod") AND (labels.proxyfleet-installation = "i2")', False),
        ('(labels.env = "prod") (labels.proxyfleet-installation = "i2")', False),
        ('labels.env = "dev" OR name = "pf-web-1"', True),
        ('NOT labels.env = "prod"', False),
        ("labels.env:*", True),
        ("labels.missing:*", False),
        ('name : "web"', True),
        ("name eq 'pf-web-.*'", True),
        ("name ne 'pf-web-.*'", False),
        ("scheduling.preemptible = false", True),
        ("status = RUNNING", True),
        ("id > 41", True),
        ('labels.missing = "x"', False),
        ('labels.env="prod"', True),
    ],
)
def test_filter_expressions(expression: str, matches: bool) -> None:
    assert parse_filter(expression)(VM) is matches


@pytest.mark.parametrize(
    "bad", ["labels.env =", "(labels.env = x", "= x", "labels.env ~ x", 'a = "x']
)
def test_a_filter_google_would_refuse_is_a_400(bad: str) -> None:
    with pytest.raises(GceError) as caught:
        parse_filter(bad)
    assert caught.value.code == 400
    assert caught.value.body()["error"]["errors"][0]["reason"] == "invalid"


def _user_data() -> str:
    spec = CloudInitSpec(
        proxy_id="p1",
        hostname="pf-p1",
        username="u",
        password="pw",
        proxy_port=3128,
        connect_ports=[443, 8443],
    )
    return render_user_data(spec)


def test_the_boot_plan_moves_every_path_into_the_folder_and_listens_on_the_address() -> None:
    plan = plan_boot(_user_data(), "/tmp/i1", "127.9.0.1")
    assert plan.port == 3128
    conf = plan.squid_conf
    assert "http_port 127.9.0.1:3128" in conf
    assert "pid_filename /tmp/i1/squid.pid" in conf
    assert "cache_log /tmp/i1/cache.log" in conf
    assert "/tmp/i1/proxyfleet.htpasswd" in conf
    assert "/etc/squid" not in conf
    assert "/var/log" not in conf
    assert "http_access deny local_destinations" not in conf  # the test target is loopback
    assert "acl connect_ports port 443 8443" in conf
    assert set(plan.files) == {"proxyfleet.htpasswd"}
    assert plan.files["proxyfleet.htpasswd"].content.startswith("u:$2b$")
    assert plan.files["proxyfleet.htpasswd"].permissions == 0o640
    strict = plan_boot(_user_data(), "/tmp/i1", "127.9.0.1", allow_local_destinations=False)
    assert "http_access deny local_destinations" in strict.squid_conf


def test_base64_content_and_bad_user_data() -> None:
    squid = base64.b64encode(b"http_port 3128\n").decode()
    doc = (
        "#cloud-config\nwrite_files:\n- path: /etc/squid/squid.conf\n"
        f"  encoding: b64\n  content: {squid}\n"
    )
    assert plan_boot(doc, "/d", "127.1.1.1").squid_conf.startswith("http_port 127.1.1.1:3128\n")
    with pytest.raises(CloudConfigError, match=r"#cloud-config"):
        plan_boot("#!/bin/sh\necho hi\n", "/d", "127.1.1.1")
    with pytest.raises(CloudConfigError, match=r"no squid\.conf"):
        plan_boot("#cloud-config\nwrite_files: []\n", "/d", "127.1.1.1")
    with pytest.raises(CloudConfigError, match="no http_port"):
        plan_boot(
            "#cloud-config\nwrite_files:\n- {path: /etc/squid/squid.conf, content: x}\n",
            "/d",
            "127.1.1.1",
        )


def test_faults_are_taken_per_method_zone_and_count() -> None:
    plan = FaultPlan()
    plan.add("instances.insert", "QUOTA_EXCEEDED", 2, "z1", {})
    plan.add("instances.insert", "UNAVAILABLE", None, None, {})
    assert plan.take("instances.get", "z1") is None
    taken = [plan.take("instances.insert", z) for z in ("z2", "z1", "z1", "z1")]
    assert [f.kind if f else None for f in taken] == [
        "UNAVAILABLE",
        "QUOTA_EXCEEDED",
        "QUOTA_EXCEEDED",
        "UNAVAILABLE",
    ]
    plan.clear()
    assert plan.take("instances.insert", "z1") is None
    with pytest.raises(ValueError, match="times"):
        plan.add("instances.insert", "UNAVAILABLE", 0, None, {})


def test_google_wording() -> None:
    body = rate_limit_exceeded("compute.instances.insert").body()["error"]
    assert body["code"] == 403
    assert body["errors"][0]["reason"] == "rateLimitExceeded"
    assert body["details"][0]["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    plan = FaultPlan()
    quota = plan.add("instances.insert", "QUOTA_EXCEEDED", 1, None, {"quota": "CPUS"})
    code, [error] = operation_error(quota, "proj", "zones/europe-west1-b")
    assert code == 403
    assert error["message"] == "Quota 'CPUS' exceeded.  Limit: 24.0 in region europe-west1."
    everywhere = plan.add(
        "instances.insert", "QUOTA_EXCEEDED", 1, None, {"quota": "CPUS_ALL_REGIONS"}
    )
    assert operation_error(everywhere, "proj", "zones/z-a")[1][0]["message"].endswith(
        "Limit: 24.0 globally."
    )
    zone = plan.add("instances.insert", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", 1, None, {})
    code, [error] = operation_error(zone, "proj", "zones/europe-west1-b")
    assert code == 503
    assert "'projects/proj/zones/europe-west1-b'" in error["message"]
    assert "(resource type:compute)" in error["message"]
