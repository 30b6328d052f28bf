"""Gateway settings and its command: a bad value stops it with a message naming the flag
(exit 2, nothing started), as every service does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.gateway.settings import GatewaySettings

TOKENS = ("crawler:0123456789abcdef-secret",)


def test_defaults_with_a_token() -> None:
    s = GatewaySettings(client_tokens=TOKENS)
    assert s.blocked() == {401, 403, 429}
    assert s.policy().cooldown == 30.0


@pytest.mark.parametrize(
    ("overrides", "flag"),
    [
        ({"client_tokens": ()}, "--client-token"),
        ({"client_tokens": ("no-colon",)}, "--client-token"),
        ({"blocked_statuses": "403,abc"}, "--blocked-statuses"),
        ({"blocked_statuses": "99"}, "--blocked-statuses"),
        ({"lease_ttl": 0.0}, "--lease-ttl"),
        ({"session_idle": float("nan")}, "--session-idle"),
        ({"keepalive_idle": 0.0}, "--keepalive-idle"),
        ({"cooldown": -1.0}, "--cooldown"),
        ({"session_minutes": 0}, "--session-minutes"),
        ({"port": 70000}, "--port"),
        ({"socks_port": -1}, "--socks-port"),
        ({"socks_port": 65536}, "--socks-port"),
        ({"max_header_bytes": 10}, "--max-header-bytes"),
    ],
)
def test_bad_settings_name_the_flag(overrides: dict[str, object], flag: str) -> None:
    values: dict[str, object] = {"client_tokens": TOKENS, **overrides}
    with pytest.raises(ConfigError, match=flag):
        GatewaySettings(**values)  # type: ignore[arg-type]


def test_the_command_refuses_to_start_without_a_token(tmp_path: Path) -> None:
    gateway = Path(sys.executable).parent / "proxyfleet-gateway"
    proc = subprocess.run(
        [str(gateway), "--providers-config", str(tmp_path / "none.yaml")],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 2
    assert "--client-token" in proc.stderr
