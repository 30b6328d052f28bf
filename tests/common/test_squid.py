"""The Squid config every provider runs: its policy lines, and real Squid accepting it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from proxyfleet.common.domain.squid import (
    DEFAULT_AUTH_PROGRAM,
    SquidOptions,
    htpasswd_line,
    render_squid_conf,
)


def _options(tmp_path: Path, **overrides: object) -> SquidOptions:
    base: dict[str, object] = {
        "http_port": 3128,
        "htpasswd_path": str(tmp_path / "htpasswd"),
        "bind_address": "127.0.0.1",
        "pid_file": str(tmp_path / "squid.pid"),
        "cache_log": str(tmp_path / "cache.log"),
    }
    base.update(overrides)
    return SquidOptions(**base)  # type: ignore[arg-type]


def _directives(conf: str) -> list[str]:
    return [line for line in conf.splitlines() if line and not line.startswith("#")]


def test_policy_lines_are_present(tmp_path: Path) -> None:
    lines = _directives(render_squid_conf(_options(tmp_path)))
    for expected in [
        "http_port 127.0.0.1:3128",
        "max_filedescriptors 1024",
        "cache_mem 16 MB",
        "cache deny all",
        "forwarded_for delete",
        "via off",
        "request_header_access X-Forwarded-For deny all",
        "request_header_access Via deny all",
        "shutdown_lifetime 1 seconds",
        "acl authenticated proxy_auth REQUIRED",
        "http_access allow authenticated",
        "acl connect_ports port 443",
        "http_access deny CONNECT !connect_ports",
        f"auth_param basic program {DEFAULT_AUTH_PROGRAM} {tmp_path / 'htpasswd'}",
        "access_log none",
    ]:
        assert expected in lines, expected
    assert lines[-1] == "http_access deny all"


def test_unauthenticated_clients_are_refused_before_anything_else(tmp_path: Path) -> None:
    access = [
        line
        for line in _directives(render_squid_conf(_options(tmp_path)))
        if line.startswith("http_access")
    ]
    assert access[0] == "http_access deny !authenticated"
    assert access.index("http_access allow authenticated") == len(access) - 2
    assert not any(line.startswith("http_access allow") for line in access[:-2])


def test_local_and_private_destinations_are_denied_by_default(tmp_path: Path) -> None:
    conf = render_squid_conf(_options(tmp_path))
    assert "169.254.0.0/16" in conf
    assert "127.0.0.0/8" in conf
    assert "10.0.0.0/8" in conf
    assert "http_access deny local_destinations" in conf
    assert "http_access deny private_destinations" in conf


def test_destination_rules_can_be_turned_off(tmp_path: Path) -> None:
    conf = render_squid_conf(
        _options(tmp_path, deny_local_destinations=False, deny_private_destinations=False)
    )
    assert "local_destinations" not in conf
    assert "private_destinations" not in conf


def test_connect_ports_and_access_log(tmp_path: Path) -> None:
    conf = render_squid_conf(
        _options(tmp_path, connect_ports=[8443, 443, 8443], access_log=str(tmp_path / "a.log"))
    )
    assert "acl connect_ports port 443 8443" in conf
    assert f"access_log stdio:{tmp_path / 'a.log'}" in conf
    conf = render_squid_conf(_options(tmp_path, access_log="daemon:/var/log/squid/a.log"))
    assert "access_log daemon:/var/log/squid/a.log" in conf


def test_no_connect_port_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="connect_ports"):
        render_squid_conf(_options(tmp_path, connect_ports=[]))


def test_htpasswd_line_is_bcrypt() -> None:
    line = htpasswd_line("alice", "s3cret-pass")
    user, hashed = line.rstrip("\n").split(":", 1)
    assert user == "alice"
    assert hashed.startswith("$2b$06$")
    assert "s3cret-pass" not in line
    assert line != htpasswd_line("alice", "s3cret-pass")  # salted


@pytest.mark.parametrize(
    ("username", "password"),
    [("", "x"), ("a:b", "x"), ("a\nb", "x"), ("a", ""), ("a", "x\ny"), ("a", "x" * 73)],
)
def test_htpasswd_line_refuses_values_that_break_the_file(username: str, password: str) -> None:
    with pytest.raises(ValueError, match=r"username|password"):
        htpasswd_line(username, password)


def test_basic_ncsa_auth_verifies_the_hash(tmp_path: Path) -> None:
    htpasswd = tmp_path / "htpasswd"
    htpasswd.write_text(htpasswd_line("alice", "s3cret-pass"))
    for given, answer in [("s3cret-pass", "OK"), ("wrong", "ERR")]:
        out = subprocess.run(
            [DEFAULT_AUTH_PROGRAM, str(htpasswd)],
            input=f"alice {given}\n",
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        assert out.stdout.startswith(answer), out.stdout


def test_squid_accepts_the_config(tmp_path: Path) -> None:
    (tmp_path / "htpasswd").write_text(htpasswd_line("alice", "s3cret-pass"))
    for opts in [
        _options(tmp_path),
        _options(tmp_path, deny_local_destinations=False, deny_private_destinations=False),
        _options(tmp_path, connect_ports=[443, 8443], access_log=str(tmp_path / "access.log")),
    ]:
        conf = tmp_path / "squid.conf"
        conf.write_text(render_squid_conf(opts))
        out = subprocess.run(
            ["squid", "-k", "parse", "-f", str(conf)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert out.returncode == 0, out.stderr
        errors = [
            line
            for line in out.stderr.splitlines()
            if "ERROR" in line or "FATAL" in line or "UNRECOGNIZED" in line.upper()
        ]
        assert not errors, errors


def test_loopback_egress_applies_to_loopback_destinations_only(tmp_path: Path) -> None:
    lines = _directives(render_squid_conf(_options(tmp_path, loopback_egress="127.77.0.9")))
    assert "acl loopback_egress_destinations dst 127.0.0.0/8" in lines
    assert "tcp_outgoing_address 127.77.0.9 loopback_egress_destinations" in lines
    assert not any(
        "tcp_outgoing_address" in line
        for line in _directives(render_squid_conf(_options(tmp_path)))
    )
    with pytest.raises(ValueError, match=r"127\.0\.0\.0/8"):
        render_squid_conf(_options(tmp_path, loopback_egress="10.0.0.1"))
