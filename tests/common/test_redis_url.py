"""The Redis URL grammar (core/redis_url.py): plain URLs pass through as they are, Sentinel
URLs are parsed, and a bad one is a ConfigError naming the problem without its password."""

from __future__ import annotations

import pytest

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.core.redis_url import DirectRedis, SentinelRedis, parse_redis_url
from proxyfleet.common.core.settings import CommonSettings


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379/0",
        "redis://:secret@redis.example:6380/2",
        "rediss://user:secret@managed.example:6380/0?ssl_ca_certs=/etc/ca.pem",
        "unix:///run/redis.sock?db=1",
    ],
)
def test_plain_urls_are_left_to_redis_py(url: str) -> None:
    assert parse_redis_url(url) == DirectRedis(url)


def test_a_sentinel_url_names_the_sentinels_master_db_and_credentials() -> None:
    url = (
        "redis+sentinel://app:p%40ss@s1.example:26380,s2.example,[::1]:26381/pf-primary/3"
        "?sentinel_password=s%2Bp&sentinel_username=watcher"
    )
    assert parse_redis_url(url) == SentinelRedis(
        sentinels=(("s1.example", 26380), ("s2.example", 26379), ("::1", 26381)),
        master="pf-primary",
        db=3,
        username="app",
        password="p@ss",
        sentinel_username="watcher",
        sentinel_password="s+p",
    )


def test_defaults_database_zero_and_no_credentials() -> None:
    target = parse_redis_url("redis+sentinel://127.0.0.9/mymaster")
    assert target == SentinelRedis(sentinels=(("127.0.0.9", 26379),), master="mymaster")
    assert isinstance(target, SentinelRedis)
    assert target.describe() == "master 'mymaster' via Sentinel 127.0.0.9:26379"


def test_a_password_alone_is_the_redis_password() -> None:
    target = parse_redis_url("redis+sentinel://:only-pw@h:1/m")
    assert isinstance(target, SentinelRedis)
    assert (target.username, target.password) == (None, "only-pw")


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("127.0.0.1:6379", "not a URL"),
        ("http://127.0.0.1:6379", "unknown scheme 'http'"),
        ("rediss+sentinel://h:26379/m", "TLS to Sentinel"),
        ("redis+sentinel://h1:26379,h2:26379", "names the master"),
        ("redis+sentinel://h1:26379/", "names the master"),
        ("redis+sentinel://h1:26379/m/x", "only a database number"),
        ("redis+sentinel://h1:26379/m/0/extra", "only a database number"),
        ("redis+sentinel://h1:26379,,h2/m", "bad Sentinel address ''"),
        ("redis+sentinel://h1:port/m", "bad Sentinel address 'h1:port'"),
        ("redis+sentinel://h1:70000/m", "port 70000 out of range"),
        ("redis+sentinel://[::1/m", "not a valid Sentinel URL"),
        ("redis+sentinel://h1/m?sentinel_pasword=x", "unknown Sentinel URL parameter"),
        ("redis+sentinel://h1/m?sentinel_password=a&sentinel_password=b", "given twice"),
        ("redis+sentinel://h1/m#frag", "no #fragment"),
    ],
)
def test_a_bad_url_says_what_is_wrong(url: str, says: str) -> None:
    with pytest.raises(ConfigError, match="--redis-url: ") as caught:
        parse_redis_url(url)
    assert says in str(caught.value)


def test_no_error_repeats_a_password() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_redis_url("redis+sentinel://:hunter2@h1:bad/m?sentinel_password=hunter3")
    assert "hunter" not in str(caught.value)


def test_settings_refuse_a_bad_url_at_once() -> None:
    with pytest.raises(ConfigError, match="names the master"):
        CommonSettings(redis_url="redis+sentinel://h1:26379")
    assert CommonSettings(redis_url="redis+sentinel://h1:26379/m").redis_url.endswith("/m")
