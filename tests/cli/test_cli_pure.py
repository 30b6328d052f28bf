"""The CLI's pure parts: config file, formatting, CMD's environment, exit codes."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from proxyfleet.cli import exitcodes, fmt
from proxyfleet.cli.app import _line_of
from proxyfleet.cli.childenv import child_env, default_holder, should_forward
from proxyfleet.cli.config import (
    Config,
    ConfigError,
    config_path,
    config_text,
    parse_config,
    resolve,
    write_config,
)
from proxyfleet.cli.proxies import egress
from proxyfleet.client import (
    BadRequest,
    Conflict,
    Event,
    EventData,
    Forbidden,
    Lease,
    LeasedProxy,
    NotFound,
    Proxy,
    ServerError,
    TransportError,
    Unauthorized,
    Unavailable,
)


def test_config_path_from_env_then_xdg_then_home() -> None:
    assert config_path({"PROXYFLEET_CONFIG": "/x/c.toml"}) == Path("/x/c.toml")
    assert config_path({"XDG_CONFIG_HOME": "/cfg"}) == Path("/cfg/proxyfleet/config.toml")
    assert config_path({}) == Path.home() / ".config" / "proxyfleet" / "config.toml"


def test_config_round_trips_even_odd_characters() -> None:
    config = Config(url="http://h:1", token='a"b\\c\u00e9')
    assert parse_config(config_text(config), "f") == config


def test_bad_config_files_name_the_file_and_key() -> None:
    with pytest.raises(ConfigError, match=r"f\.toml: not TOML"):
        parse_config("url = ", "f.toml")
    with pytest.raises(ConfigError, match="unknown key 'tokn'"):
        parse_config('tokn = "x"', "f.toml")
    with pytest.raises(ConfigError, match="url must be a string"):
        parse_config("url = 3", "f.toml")


def test_write_config_is_private_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "new" / "config.toml"
    write_config(path, Config(url="u", token="t"))
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(path.parent).st_mode & 0o777 == 0o700
    path.chmod(0o644)
    write_config(path, Config(url="u", token="t2"))
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_flags_then_env_then_file_and_the_token_stays_with_its_url(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    assert resolve(None, None, path) == Config()
    write_config(path, Config(url="http://a", token="ta"))
    assert resolve(None, None, path) == Config(url="http://a", token="ta")
    assert resolve("http://a/", None, path) == Config(url="http://a/", token="ta")
    assert resolve("http://b", None, path) == Config(url="http://b", token="")
    assert resolve(None, "tx", path) == Config(url="http://a", token="tx")


def test_durations_and_times_read_short() -> None:
    assert [fmt.duration(s) for s in (0, 42, 185, 7380, 2 * 86400 + 3600)] == [
        "0s",
        "42s",
        "3m05s",
        "2h03m",
        "2d01h",
    ]
    assert fmt.until(142, now=100) == "in 42s"
    assert fmt.until(97, now=100) == "3s ago"
    assert fmt.age(0) == "-"
    assert fmt.age(40, now=100) == "1m00s"


def test_pairs_and_phase_counts() -> None:
    assert fmt.pairs(["a=1", "b=x=y", "c="], "--label") == {"a": "1", "b": "x=y", "c": ""}
    assert fmt.pairs(None, "--label") == {}
    with pytest.raises(ValueError, match="--label takes KEY=VALUE"):
        fmt.pairs(["novalue"], "--label")
    assert fmt.counts({"booting": 1, "ready": 3, "deleted": 9, "zombie": 2}) == (
        "1 booting, 3 ready, 2 zombie"
    )
    assert fmt.counts({}) == "none"


def test_cmd_gets_every_proxy_variable_and_the_lease() -> None:
    lease = Lease(
        lease_id="l1",
        epoch=7,
        expires_at=2,
        granted_at=1,
        proxy=LeasedProxy(id="p1", host="h", port=1, url="http://u:p@h:1"),
    )
    ours = {"PATH": "/bin", "HTTPS_PROXY": "old", "NO_PROXY": "localhost", "no_proxy": "x"}
    env = child_env(ours, lease)
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
        assert env[name] == env[name.lower()] == "http://u:p@h:1"
    assert (env["PROXYFLEET_LEASE_ID"], env["PROXYFLEET_LEASE_EPOCH"]) == ("l1", "7")
    assert env["PATH"] == "/bin"
    assert "NO_PROXY" not in env  # nothing of CMD's goes around the leased proxy
    assert "no_proxy" not in env
    kept = child_env(ours, lease, keep_no_proxy=True)
    assert (kept["NO_PROXY"], kept["no_proxy"]) == ("localhost", "x")


def test_only_signals_sent_to_us_alone_are_passed_on() -> None:
    si_user, si_kernel, si_queue, si_tkill = 0, 0x80, -1, -6
    assert should_forward(si_user)
    assert should_forward(si_queue)
    assert should_forward(si_tkill)
    assert not should_forward(si_kernel)  # a terminal's Ctrl-C: CMD got it already


def test_default_holder_is_bounded() -> None:
    assert default_holder("me", "box", "curl") == "me@box: curl"
    assert len(default_holder("me", "box", "x" * 500)) == 200


def test_exit_codes_by_error() -> None:
    cases = {
        Unauthorized(401, "e", "m"): exitcodes.AUTH,
        Forbidden(403, "e", "m"): exitcodes.AUTH,
        NotFound(404, "e", "m"): exitcodes.NOT_FOUND,
        Conflict(409, "e", "m"): exitcodes.CONFLICT,
        Unavailable(503, "e", "m"): exitcodes.UNAVAILABLE,
        TransportError("down"): exitcodes.UNREACHABLE,
        BadRequest(400, "e", "m"): exitcodes.ERROR,
        ServerError(500, "e", "m"): exitcodes.ERROR,
    }
    assert {type(e).__name__: exitcodes.for_error(e) for e in cases} == {
        type(e).__name__: code for e, code in cases.items()
    }
    codes = [exitcodes.OK, exitcodes.ERROR, exitcodes.USAGE, exitcodes.AUTH]
    codes += [exitcodes.NOT_FOUND, exitcodes.CONFLICT, exitcodes.UNAVAILABLE]
    assert len({*codes, exitcodes.UNREACHABLE}) == 8
    assert exitcodes.message(NotFound(404, "lease_not_found", "no lease l1")) == (
        "no lease l1 (404 lease_not_found)"
    )


def test_wait_statuses_become_shell_codes() -> None:
    assert exitcodes.of_wait_status(3 << 8) == 3
    assert exitcodes.of_wait_status(signal.SIGTERM) == 128 + signal.SIGTERM
    assert exitcodes.for_signal(signal.SIGINT) == 130


def test_an_event_line_names_the_zone_a_proxy_moved_to() -> None:
    moved = EventData(from_="provisioning", gen=2, zone="us-b", from_zone="us-a")
    line = _line_of(Event(type="proxy.booting", id="e1", time=0.0, proxy_id="p1", data=moved))
    assert line.endswith("proxy.booting    p1  from=provisioning zone=us-b from_zone=us-a")
    stayed = EventData(from_="provisioning", gen=2)
    line = _line_of(Event(type="proxy.booting", id="e2", time=0.0, proxy_id="p1", data=stayed))
    assert line.endswith("p1  from=provisioning")


def test_egress_column_says_how_many_share_the_address() -> None:
    def proxy(ip: str, shared: int) -> Proxy:
        return Proxy(
            id="p", provider="local", zone="z", phase="ready", egress_ip=ip, egress_shared=shared
        )

    assert egress(proxy("1.2.3.4", 3)) == "1.2.3.4 (x3)"
    assert egress(proxy("1.2.3.4", 1)) == "1.2.3.4"
    assert egress(proxy("", 0)) == "-"
