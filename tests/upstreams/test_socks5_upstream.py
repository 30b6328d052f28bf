"""The `socks5_upstream` fixture: real tunnels through microsocks with its credentials,
none without them."""

from __future__ import annotations

import dataclasses

import pytest
from tests.conftest import TargetServer
from tests.upstreams import socks5
from tests.upstreams.curl import fetch_target
from tests.upstreams.socks5 import Socks5Upstream, running_socks5


@pytest.mark.parametrize("scheme", ["socks5", "socks5h"])
def test_a_tunnel_through_it_leaves_from_its_exit_address(
    socks5_upstream: Socks5Upstream, target: TargetServer, scheme: str
) -> None:
    result = fetch_target(target, "--proxy", socks5_upstream.url(scheme))
    assert result.seen_ip() == socks5_upstream.exit_address


def test_curl_socks5_hostname_with_its_credentials(
    socks5_upstream: Socks5Upstream, target: TargetServer
) -> None:
    up = socks5_upstream
    result = fetch_target(
        target,
        "--socks5-hostname",
        f"{up.host}:{up.port}",
        "--proxy-user",
        f"{up.username}:{up.password}",
    )
    assert result.seen_ip() == up.exit_address


def test_a_wrong_password_is_refused(socks5_upstream: Socks5Upstream, target: TargetServer) -> None:
    wrong = dataclasses.replace(socks5_upstream, password="not-the-password")
    result = fetch_target(target, "--proxy", wrong.url("socks5h"))
    assert result.code != 0
    assert result.body == ""


def test_no_credentials_is_refused(socks5_upstream: Socks5Upstream, target: TargetServer) -> None:
    up = socks5_upstream
    result = fetch_target(target, "--proxy", f"socks5h://{up.host}:{up.port}")
    assert result.code != 0
    assert result.body == ""


def test_its_urls_percent_encode_the_credentials(socks5_upstream: Socks5Upstream) -> None:
    up = socks5_upstream
    assert up.url() == f"socks5://sock-user:socks%3Apw%401@127.0.0.1:{up.port}"
    assert up.url("socks5h").startswith("socks5h://sock-user:socks%3Apw%401@")
    with pytest.raises(ValueError, match="socks5"):
        up.url("http")


def test_a_missing_microsocks_fails_with_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socks5, "MICROSOCKS", "/nonexistent/microsocks")
    with pytest.raises(pytest.fail.Exception, match="make system-packages"), running_socks5():
        pass
