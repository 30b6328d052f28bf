"""The local adapter's pure parts: folder layout, marker, command lines, engine and port
choice."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from proxyfleet.provisioner_local import commands
from proxyfleet.provisioner_local.files import Owner, blocked_for
from proxyfleet.provisioner_local.layout import InstallationLayout, check_name
from proxyfleet.provisioner_local.marker import Marker, decode_marker, encode_marker
from proxyfleet.provisioner_local.ports import pick_port


def test_layout_puts_each_proxy_in_its_installations_folder() -> None:
    layout = InstallationLayout(Path("/state"), "inst-1")
    folder = layout.folder("p0123abc")
    assert folder.path == Path("/state/inst-1/p0123abc")
    assert folder.marker == Path("/state/inst-1/p0123abc/managed.json")
    assert folder.squid_service_name == "pfp0123abc"
    assert layout.lock_path("p0123abc") == Path("/state/inst-1/.locks/p0123abc.lock")
    for bad in ["", "..", "a/b", "A", "-a", "a" * 64]:
        with pytest.raises(ValueError, match="proxy id"):
            check_name("proxy id", bad)


def test_marker_round_trip_and_garbage() -> None:
    marker = Marker(
        proxy_id="p1", installation_id="i", created_at=1.5, port=20001, engine="squid", pid=42
    )
    assert decode_marker(encode_marker(marker)) == marker
    assert decode_marker(b"{not json") is None
    assert decode_marker(b'{"proxy_id": "p1"}') is None


def test_command_lines_keep_the_password_off_argv() -> None:
    folder = InstallationLayout(Path("/s"), "i").folder("p1")
    squid = commands.squid_argv("/usr/sbin/squid", folder)
    assert squid == ["/usr/sbin/squid", "-N", "-f", "/s/i/p1/squid.conf", "-n", "pfp1"]
    args = commands.proxypy_args(folder, "127.0.0.1", 20001, "alice", "s3cret")
    launcher = commands.proxypy_argv("/venv/bin/python", folder)
    assert "s3cret" not in " ".join(launcher + args.argv)
    assert args.basic_auth == "alice:s3cret"
    assert commands.engine_signatures(folder) & set(squid)
    assert commands.engine_signatures(folder) & set(launcher)
    conf = commands.squid_conf(folder, "127.0.0.1", 20001, [443, 8443])
    assert "http_port 127.0.0.1:20001" in conf
    assert "acl connect_ports port 443 8443" in conf
    assert "local_destinations" not in conf  # the dev target is on 127.0.0.1


def test_engine_choice() -> None:
    blocked = Path("/root")
    assert commands.resolve_engine("auto", "/usr/sbin/squid", None)[0] == "squid"
    assert commands.resolve_engine("auto", None, None)[0] == "proxy.py"
    assert commands.resolve_engine("auto", "/usr/sbin/squid", blocked)[0] == "proxy.py"
    assert commands.resolve_engine("proxy.py", "/usr/sbin/squid", None)[0] == "proxy.py"
    with pytest.raises(ValueError, match="not installed"):
        commands.resolve_engine("squid", None, None)
    with pytest.raises(ValueError, match="cannot traverse /root"):
        commands.resolve_engine("squid", "/usr/sbin/squid", blocked)


def test_blocked_for_follows_unix_permissions(proxy_state_dir: Path) -> None:
    stranger = Owner(uid=os.getuid() + 12345, gid=os.getgid() + 12345)
    middle = proxy_state_dir / "a"
    inner = middle / "b"
    inner.mkdir(parents=True)
    middle.chmod(0o711)
    assert blocked_for(stranger, inner) is None
    middle.chmod(0o700)
    assert blocked_for(stranger, inner) == middle
    assert blocked_for(stranger, inner / "not-yet" / "made") == middle
    middle.chmod(0o710)
    assert blocked_for(stranger, inner) == middle
    assert blocked_for(Owner(stranger.uid, middle.stat().st_gid), inner) is None


def test_pick_port() -> None:
    free = {20000, 20001, 20002, 20003}

    def is_free(port: int) -> bool:
        return port in free

    assert pick_port((20000, 20003), set(), is_free, preferred=20002) == 20002
    assert pick_port((20000, 20003), {20002}, is_free, preferred=20002, start=20000) == 20000
    assert pick_port((20000, 20003), {20000, 20001}, is_free, start=20000) == 20002
    assert pick_port((20000, 20003), set(), is_free, start=20003) == 20003
    free.discard(20003)
    assert pick_port((20000, 20003), set(), is_free, start=20003) == 20000  # wraps
    assert pick_port((20000, 20003), {20000, 20001, 20002}, is_free) is None
