"""When the local supervisor restarts a dead proxy: at once, then after a doubling pause,
at most N times within the window. Pure."""

from __future__ import annotations

import pytest

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.provisioner_local.restarts import RestartBook, RestartPolicy, Verdict
from proxyfleet.provisioner_local.settings import LocalProvisionerSettings

POLICY = RestartPolicy(max_restarts=3, window=100.0, backoff=1.0, backoff_max=1.5)


def test_the_first_restart_is_at_once_then_the_pauses_grow_up_to_the_cap() -> None:
    book = RestartBook(POLICY)
    assert book.verdict("p", 0.0) is Verdict.RESTART
    assert book.record("p", 0.0) == 1
    assert book.verdict("p", 0.9) is Verdict.WAIT
    assert book.verdict("p", 1.0) is Verdict.RESTART
    book.record("p", 1.0)
    assert book.pause(2) == 1.5  # 2 s, capped
    assert book.verdict("p", 2.4) is Verdict.WAIT
    assert book.verdict("p", 2.5) is Verdict.RESTART
    assert book.verdict("other", 2.5) is Verdict.RESTART  # per proxy


def test_past_the_bound_it_gives_up_until_restarts_leave_the_window() -> None:
    book = RestartBook(POLICY)
    for t in (0.0, 10.0, 20.0):
        assert book.verdict("p", t) is Verdict.RESTART
        book.record("p", t)
    assert book.verdict("p", 30.0) is Verdict.GIVE_UP
    assert book.verdict("p", 99.9) is Verdict.GIVE_UP
    assert book.verdict("p", 100.1) is Verdict.RESTART  # the one at 0 no longer counts


def test_prune_forgets_proxies_without_recent_restarts() -> None:
    book = RestartBook(POLICY)
    book.record("old", 0.0)
    book.record("new", 50.0)
    book.prune(120.0)
    assert set(book.attempts) == {"new"}


def test_zero_restarts_leaves_every_dead_proxy_to_health() -> None:
    assert RestartBook(RestartPolicy(max_restarts=0)).verdict("p", 0.0) is Verdict.GIVE_UP


def test_settings_refuse_a_cap_below_the_first_pause() -> None:
    with pytest.raises(ConfigError, match="--restart-backoff-max"):
        LocalProvisionerSettings(provider="local", restart_backoff=5, restart_backoff_max=1)
    policy = LocalProvisionerSettings(provider="local", restart_max=2).restart_policy
    assert policy.max_restarts == 2
