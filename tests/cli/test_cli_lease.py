"""`proxyfleet lease -- CMD` as a real process against a real API and a real Squid: the
page through the proxy, CMD's environment and exit code, `failed` on a non-zero exit,
waiting while none is free, and Ctrl-C releasing the lease."""

from __future__ import annotations

import json
import signal
import time

from tests.cli.conftest import Cli, Lines, LiveApi
from tests.conftest import TargetServer
from tests.health.conftest import PASSWORD, USER, ProxyProcess

from proxyfleet.client import Client


def _lease_of(live_api: LiveApi, proxy_id: str, within: float = 10) -> str:
    """The id of the one lease ever granted on that proxy (its event comes just after the
    grant's answer)."""
    deadline = time.monotonic() + within
    while True:
        granted = [e for e in list(live_api.events) if e.type == "lease.granted"]
        found = {e.lease_id for e in granted if e.proxy_id == proxy_id}
        if found or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(found) == 1, found
    return found.pop()


def _state(live_api: LiveApi, lease_id: str) -> str:
    with Client(live_api.url, live_api.admin_token) as client:
        return client.get_lease(lease_id).state


def test_curl_fetches_the_page_through_the_leased_proxy(
    cli: Cli, live_api: LiveApi, client_squid: ProxyProcess, target: TargetServer
) -> None:
    live_api.ready_proxy("sq", port=client_squid.port, username=USER, password=PASSWORD)
    # No --proxy: curl takes HTTPS_PROXY from the environment the lease set.
    done = cli.run(
        "lease", "--ttl", "30", "--", "curl", "-sf", "--cacert", target.ca_file, target.url
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True
    lease_id = _lease_of(live_api, "sq")
    assert f"proxyfleet: leased sq (lease {lease_id}, epoch" in done.stderr
    assert f"proxyfleet: released {lease_id}" in done.stderr
    assert _state(live_api, lease_id) == "released"
    assert not live_api.events_of("lease.reported", lease_id)


def test_without_the_lease_the_same_curl_cannot_pass(
    cli: Cli, live_api: LiveApi, client_squid: ProxyProcess, target: TargetServer
) -> None:
    """The proxy is what made the page reachable: a wrong password gets Squid's 407."""
    live_api.ready_proxy("sq", port=client_squid.port, username=USER, password="wrong")
    done = cli.run("lease", "--", "curl", "-sf", "--cacert", target.ca_file, target.url)
    assert done.returncode != 0
    assert '"ok"' not in done.stdout


def test_cmd_gets_the_proxy_and_lease_in_its_environment(cli: Cli, live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    script = (
        'echo "$HTTPS_PROXY $HTTP_PROXY $ALL_PROXY $https_proxy $http_proxy $all_proxy"; '
        'echo "$PROXYFLEET_LEASE_ID $PROXYFLEET_LEASE_EPOCH"'
    )
    done = cli.run("lease", "--", "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    urls, ids = done.stdout.splitlines()
    assert set(urls.split()) == {"http://user:s3cret-pass@127.0.0.1:3128"}
    assert len(urls.split()) == 6
    lease_id, epoch = ids.split()
    assert lease_id == _lease_of(live_api, "p1")
    with Client(live_api.url, live_api.admin_token) as client:
        state = client.get_lease(lease_id)
    assert (state.state, state.epoch) == ("released", int(epoch))


def test_a_failing_cmd_is_reported_failed_and_its_code_kept(cli: Cli, live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    done = cli.run("lease", "--", "sh", "-c", "exit 3")
    assert done.returncode == 3
    lease_id = _lease_of(live_api, "p1")
    reported = live_api.wait_for_event("lease.reported", lease_id)
    assert reported.data.outcome == "failed"
    assert _state(live_api, lease_id) == "released"


def test_no_report_failures_keeps_quiet(cli: Cli, live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    done = cli.run("lease", "--no-report-failures", "--quiet", "--", "false")
    assert done.returncode == 1
    assert done.stderr == ""
    lease_id = _lease_of(live_api, "p1")
    live_api.wait_for_event("lease.released", lease_id)
    assert not live_api.events_of("lease.reported", lease_id)


def test_a_signal_death_exits_128_plus_n(cli: Cli, live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    done = cli.run("lease", "--", "sh", "-c", "kill -TERM $$")
    assert done.returncode == 128 + signal.SIGTERM
    assert _state(live_api, _lease_of(live_api, "p1")) == "released"


def test_a_missing_command_is_127_and_the_lease_released(cli: Cli, live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    done = cli.run("lease", "--", "no-such-command-anywhere")
    assert done.returncode == 127
    assert "command not found" in done.stderr
    assert _state(live_api, _lease_of(live_api, "p1")) == "released"


def test_ctrl_c_passes_sigint_on_and_releases_the_lease(cli: Cli, live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    proc = cli.start("lease", "--ttl", "60", "--", "sh", "-c", 'echo "started"; exec sleep 30')
    try:
        assert proc.stdout is not None
        Lines(proc.stdout).wait_for("started", within=30)
        lease_id = _lease_of(live_api, "p1")
        assert _state(live_api, lease_id) == "active"
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)  # to the CLI alone, as `kill -INT` would
        assert proc.wait(20) == 128 + signal.SIGINT
        assert time.monotonic() - started < 10  # sleep ended at once, not after 30 s
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert _state(live_api, lease_id) == "released"
    assert not live_api.events_of("lease.reported", lease_id)  # an interruption, no failure


def test_it_waits_for_a_proxy_with_a_progress_line(cli: Cli, live_api: LiveApi) -> None:
    """Nothing ready at first (503 + Retry-After): it waits, says so, then runs CMD."""
    proc = cli.start("lease", "--wait", "60", "--", "echo", "ran")
    try:
        assert proc.stderr is not None
        Lines(proc.stderr).wait_for("waiting for a proxy", within=30)
        live_api.ready_proxy("late")
        assert proc.wait(30) == 0
        assert proc.stdout is not None
        out = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert out == "ran\n"
    assert _state(live_api, _lease_of(live_api, "late")) == "released"


def test_it_gives_up_after_wait_with_the_unavailable_code(cli: Cli) -> None:
    done = cli.run("lease", "--wait", "1", "--", "true")
    assert done.returncode == 6
    assert "waiting for a proxy" in done.stderr


def test_a_short_lease_is_renewed_while_cmd_runs(cli: Cli, live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    done = cli.run("lease", "--ttl", "2", "--", "sleep", "5")
    assert done.returncode == 0, done.stderr
    lease_id = _lease_of(live_api, "p1")
    assert len(live_api.events_of("lease.renewed", lease_id)) >= 2
    assert _state(live_api, lease_id) == "released"


def test_ctrl_c_while_waiting_for_a_proxy_stops_at_once(cli: Cli, live_api: LiveApi) -> None:
    proc = cli.start("lease", "--wait", "60", "--", "echo", "never")
    try:
        assert proc.stderr is not None
        Lines(proc.stderr).wait_for("waiting for a proxy", within=30)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 128 + signal.SIGINT
        assert proc.stdout is not None
        assert proc.stdout.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    live_api.ready_proxy("p1")
    time.sleep(1.5)  # a grant still pending would take the proxy now
    with Client(live_api.url, live_api.admin_token) as client:
        assert list(client.iter_leases()) == []
