"""The probe protocol helpers and the settings checks: pure, no I/O."""

from __future__ import annotations

import base64

import pytest

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.domain import socks5
from proxyfleet.health import probe
from proxyfleet.health.probe import FailureKind, ProbeFailure, Target
from proxyfleet.health.settings import HealthSettings

HTTPS = Target(host="127.0.0.1", port=8443, path="/probe", tls=True)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://www.example.com/", Target("www.example.com", 443, "/", True)),
        ("https://www.example.com", Target("www.example.com", 443, "/", True)),
        ("http://h:8080/a/b?x=1", Target("h", 8080, "/a/b?x=1", False)),
        ("https://[::1]:9443/ip", Target("::1", 9443, "/ip", True)),
    ],
)
def test_parse_target(url: str, expected: Target) -> None:
    assert probe.parse_target(url) == expected


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://h/", "expected an http:// or https:// URL"),
        ("https:///path", "no host"),
        ("https://h:99999/", "bad port"),
        ("www.example.com", "expected an http:// or https:// URL"),
    ],
)
def test_parse_target_rejects(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        probe.parse_target(url)


def test_authority_brackets_ipv6() -> None:
    assert Target("::1", 443, "/", True).authority == "[::1]:443"
    assert HTTPS.authority == "127.0.0.1:8443"


def test_connect_request_carries_basic_credentials() -> None:
    raw = probe.connect_request(HTTPS, "alice", "pa:ss wörd")
    lines = raw.split(b"\r\n")
    assert lines[0] == b"CONNECT 127.0.0.1:8443 HTTP/1.1"
    assert b"Host: 127.0.0.1:8443" in lines
    auth = next(line for line in lines if line.startswith(b"Proxy-Authorization: "))
    scheme, token = auth.split(b": ", 1)[1].split(b" ")
    assert scheme == b"Basic"
    assert base64.b64decode(token).decode() == "alice:pa:ss wörd"
    assert raw.endswith(b"\r\n\r\n")


def test_get_request() -> None:
    raw = probe.get_request(HTTPS)
    assert raw.startswith(b"GET /probe HTTP/1.1\r\nHost: 127.0.0.1:8443\r\n")
    assert b"Connection: close\r\n" in raw
    assert raw.endswith(b"\r\n\r\n")
    default_port = probe.get_request(Target("www.example.com", 443, "/", True))
    assert b"Host: www.example.com\r\n" in default_port


def test_parse_response_head() -> None:
    head = probe.parse_response_head(
        b"HTTP/1.1 200 Connection established\r\nProxy-Agent: x\r\nContent-Length: 12\r\n\r\n"
    )
    assert head.status == 200
    assert head.reason == "Connection established"
    assert head.headers == {"proxy-agent": "x", "content-length": "12"}
    assert head.content_length == 12
    bare = probe.parse_response_head(b"HTTP/1.0 204\r\n\r\n")
    assert (bare.status, bare.reason, bare.content_length) == (204, "", None)


@pytest.mark.parametrize("data", [b"SSH-2.0-OpenSSH\r\n\r\n", b"HTTP/1.1 2xx OK\r\n\r\n", b"\r\n"])
def test_parse_response_head_rejects_non_http(data: bytes) -> None:
    with pytest.raises(ProbeFailure, match="proxy sent no HTTP status line") as info:
        probe.parse_response_head(data)
    assert info.value.kind is FailureKind.PROXY
    with pytest.raises(ProbeFailure) as info:
        probe.parse_response_head(data, "target")
    assert info.value.kind is FailureKind.TARGET


def _head(status: int, reason: str = "", **headers: str) -> probe.ResponseHead:
    return probe.ResponseHead(status, reason, {k.replace("_", "-"): v for k, v in headers.items()})


def test_check_connect() -> None:
    probe.check_connect(_head(200, "Connection established"))
    with pytest.raises(ProbeFailure, match=r"^proxy rejected credentials \(407\)$") as info:
        probe.check_connect(_head(407, "Proxy Authentication Required"))
    assert info.value.kind is FailureKind.AUTH
    with pytest.raises(ProbeFailure, match=r"^proxy refused CONNECT: 403 Forbidden$") as info:
        probe.check_connect(_head(403, "Forbidden"))
    assert info.value.kind is FailureKind.PROXY


@pytest.mark.parametrize(
    ("error", "kind", "message"),
    [
        (
            socks5.Socks5Error("the server refused the username/password", auth=True),
            FailureKind.AUTH,
            "proxy rejected credentials (SOCKS5: the server refused the username/password)",
        ),
        (
            socks5.Socks5Error("CONNECT refused", socks5.Reply.HOST_UNREACHABLE),
            FailureKind.PROXY,
            "proxy refused CONNECT: host unreachable (SOCKS5 reply 4)",
        ),
        (
            socks5.Socks5Error("not a SOCKS5 server (bad answer to the greeting)"),
            FailureKind.PROXY,
            "SOCKS5 proxy: not a SOCKS5 server (bad answer to the greeting)",
        ),
    ],
)
def test_socks5_failures_read_like_http_ones(
    error: socks5.Socks5Error, kind: FailureKind, message: str
) -> None:
    failure = probe.socks5_failure(error)
    assert (failure.kind, str(failure)) == (kind, message)


def test_check_target() -> None:
    probe.check_target(_head(204))
    with pytest.raises(ProbeFailure, match=r"^target answered 503 Busy$") as info:
        probe.check_target(_head(503, "Busy"))
    assert info.value.kind is FailureKind.TARGET


def test_egress_ip() -> None:
    assert probe.egress_ip(b'{"ok": true, "ip": "203.0.113.7"}') == "203.0.113.7"
    assert probe.egress_ip(b'{"origin": "x"}') == ""
    assert probe.egress_ip(b'{"ip": 7}') == ""
    assert probe.egress_ip(b"<html>") == ""
    assert probe.egress_ip(b'{"ip": "1.2.') == ""


def test_wants_body_only_for_json() -> None:
    assert probe.wants_body(_head(200, content_type="application/json; charset=utf-8"))
    assert not probe.wants_body(_head(200, content_type="text/html"))
    assert not probe.wants_body(_head(200))


def test_dechunk() -> None:
    assert probe.dechunk(b'5\r\n{"ip"\r\n8;ext=1\r\n: "1.2"}\r\n0\r\n\r\n') == b'{"ip": "1.2"}'
    assert probe.dechunk(b"5\r\nabc") == b""  # truncated chunk: nothing complete
    assert probe.dechunk(b"zz\r\n") == b""
    assert probe.is_chunked(_head(200, transfer_encoding="Chunked"))


def test_settings_defaults_are_valid() -> None:
    s = HealthSettings()
    assert s.target == "https://www.example.com/"
    assert (s.interval, s.concurrency, s.unhealthy_after, s.ready_after) == (5.0, 256, 3, 2)
    assert s.timeout < s.interval
    assert s.hysteresis.unhealthy_after == 3
    assert (s.unhealthy_timeout, s.unhealthy_max_share) == (300.0, 0.5)
    assert s.hysteresis.unhealthy_timeout == 300.0
    assert HealthSettings(unhealthy_timeout=0).hysteresis.unhealthy_timeout == 0
    assert s.failed_wait == (30.0, 900.0)
    assert s.proxy_ca_bundle == ""


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"timeout": 5.0, "interval": 5.0}, "--timeout: expected 0 < s < --interval, got 5"),
        ({"concurrency": 0}, "--concurrency: expected an integer >= 1, got 0"),
        ({"target": "gopher://x/"}, "--target: target 'gopher://x/': expected an http"),
        ({"metrics_port": 70000}, "--metrics-port"),
        ({"ready_after": 0}, "--ready-after"),
        ({"unhealthy_timeout": -1.0}, "--unhealthy-timeout: expected seconds >= 0, got -1"),
        ({"unhealthy_max_share": 0.0}, "--unhealthy-max-share: expected 0 < share <= 1"),
        ({"unhealthy_max_share": 1.5}, "--unhealthy-max-share"),
        ({"failed_reprobe_min": 3.0}, "--failed-reprobe-min: expected seconds > --timeout, got 3"),
        ({"failed_reprobe_max": 10.0}, "--failed-reprobe-max: expected seconds >= --failed-"),
    ],
)
def test_settings_reject_bad_values(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        HealthSettings(**overrides)  # type: ignore[arg-type]
    assert str(info.value).startswith(message)
