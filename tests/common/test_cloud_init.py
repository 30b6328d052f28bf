from __future__ import annotations

from typing import Any

import bcrypt
import pytest
import yaml

from proxyfleet.common.domain.cloud_init import (
    CloudInitSpec,
    render_meta_data,
    render_user_data,
)
from proxyfleet.common.domain.squid import SquidOptions, render_squid_conf

PASSWORD = "s3cret-Pa55word-that-is-long"


def _spec(**overrides: Any) -> CloudInitSpec:
    values: dict[str, Any] = {
        "proxy_id": "p1",
        "hostname": "pf-p1",
        "username": "pf-user",
        "password": PASSWORD,
        "proxy_port": 3128,
        "connect_ports": [443, 8443],
    }
    values.update(overrides)
    return CloudInitSpec(**values)


def _user_data(spec: CloudInitSpec) -> dict[str, Any]:
    text = render_user_data(spec)
    assert text.startswith("#cloud-config\n")
    doc = yaml.safe_load(text)
    assert isinstance(doc, dict)
    return doc


def _file(doc: dict[str, Any], path: str) -> dict[str, Any]:
    matches = [f for f in doc["write_files"] if f["path"] == path]
    assert len(matches) == 1
    entry = matches[0]
    assert isinstance(entry, dict)
    return entry


def test_user_data_installs_packages_without_updating() -> None:
    doc = _user_data(_spec())
    assert doc["packages"] == ["squid", "qemu-guest-agent"]
    assert doc["package_update"] is False
    assert doc["hostname"] == "pf-p1"
    assert doc["ssh_pwauth"] is False
    assert "ssh_authorized_keys" not in doc


def test_user_data_writes_the_squid_conf() -> None:
    conf = _file(_user_data(_spec()), "/etc/squid/squid.conf")
    expected = render_squid_conf(
        SquidOptions(
            http_port=3128,
            htpasswd_path="/etc/squid/proxyfleet.htpasswd",
            bind_address="0.0.0.0",
            connect_ports=[443, 8443],
            pid_file="/run/squid.pid",
            cache_log="/var/log/squid/cache.log",
        )
    )
    assert conf["content"] == expected
    assert "http_port 0.0.0.0:3128" in conf["content"]
    assert "http_access deny private_destinations" in conf["content"]


def test_user_data_writes_a_htpasswd_that_verifies() -> None:
    entry = _file(_user_data(_spec()), "/etc/squid/proxyfleet.htpasswd")
    assert entry["owner"] == "root:proxy"
    assert entry["permissions"] == "0640"
    line = entry["content"]
    assert line.endswith("\n")
    user, hashed = line.rstrip("\n").split(":", 1)
    assert user == "pf-user"
    assert bcrypt.checkpw(PASSWORD.encode(), hashed.encode())
    assert not bcrypt.checkpw(b"wrong", hashed.encode())
    # Only the hash travels in the user-data, never the password itself.
    assert PASSWORD not in render_user_data(_spec())


def test_user_data_runcmd() -> None:
    doc = _user_data(_spec())
    assert doc["runcmd"] == [
        ["systemctl", "restart", "squid"],
        ["systemctl", "start", "--no-block", "qemu-guest-agent"],
    ]


def test_user_data_authorized_keys() -> None:
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB4b ops@example"
    assert _user_data(_spec(ssh_authorized_keys=[key]))["ssh_authorized_keys"] == [key]


def test_password_not_in_repr() -> None:
    assert PASSWORD not in repr(_spec())


@pytest.mark.parametrize("hostname", ["", "PF-P1", "pf_p1", "-pf", "a" * 64, "pf.p1"])
def test_bad_hostname_is_refused(hostname: str) -> None:
    with pytest.raises(ValueError, match="hostname"):
        render_user_data(_spec(hostname=hostname))
    with pytest.raises(ValueError, match="hostname"):
        render_meta_data("p1", hostname)


def test_meta_data() -> None:
    assert yaml.safe_load(render_meta_data("p1", "pf-p1")) == {
        "instance-id": "p1",
        "local-hostname": "pf-p1",
    }


def test_a_cloud_image_variant_refreshes_packages_and_starts_no_agent() -> None:
    doc = _user_data(_spec(guest_agent=None, package_update=True))
    assert doc["packages"] == ["squid"]
    assert doc["package_update"] is True
    assert doc["runcmd"] == [["systemctl", "restart", "squid"]]


def test_source_ranges_reach_the_squid_conf() -> None:
    conf = _file(_user_data(_spec(source_ranges=["203.0.113.0/24"])), "/etc/squid/squid.conf")
    assert "acl allowed_clients src 203.0.113.0/24" in conf["content"]
    assert "http_access deny !allowed_clients" in conf["content"]
