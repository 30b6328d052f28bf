"""`proxyfleet events` tailing a real API's live stream: JSON lines for scripts, a line per
event for people, Ctrl-C ends it with 130."""

from __future__ import annotations

import json
import signal
import subprocess

from tests.api.helpers import ADMIN_NAME, CLIENT_NAME
from tests.cli.conftest import Cli, Lines, LiveApi

from proxyfleet.client import Client


def test_events_as_json_lines_until_ctrl_c(cli: Cli, live_api: LiveApi) -> None:
    live_api.ready_proxy("p1")
    proc = cli.start("events", "--type", "lease", "-o", "json")
    try:
        assert proc.stdout is not None
        assert proc.stderr is not None
        Lines(proc.stderr).wait_for("listening for events", within=30)
        with Client(live_api.url, live_api.client_token) as client:
            lease = client.grant_lease(ttl=60, target="example.com")
            client.release_lease(lease.lease_id, lease.epoch)
        out = Lines(proc.stdout)
        granted = json.loads(out.wait_for("lease.granted"))
        released = json.loads(out.wait_for("lease.released"))
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 128 + signal.SIGINT
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (granted["lease_id"], granted["proxy_id"]) == (lease.lease_id, "p1")
    assert granted["data"]["target"] == "example.com"
    assert released["lease_id"] == lease.lease_id
    assert [x for x in out.seen if "proxy." in x] == []  # --type lease: no proxy events


def test_events_as_lines_for_people(cli: Cli, live_api: LiveApi) -> None:
    proc = cli.start("events", "--proxy", "p2", token=live_api.admin_token)
    try:
        assert proc.stdout is not None
        assert proc.stderr is not None
        Lines(proc.stderr).wait_for("listening for events", within=30)
        live_api.ready_proxy("p1")
        live_api.ready_proxy("p2")
        out = Lines(proc.stdout)
        line = out.wait_for("proxy.ready")
        with Client(live_api.url, live_api.client_token) as client:
            lease = client.grant_lease(ttl=60, proxy_id="p2")
        with Client(live_api.url, live_api.admin_token) as admin:
            admin.release_lease(lease.lease_id, lease.epoch)  # an operator ends it
        granted = out.wait_for("lease.granted")
        released = out.wait_for("lease.released")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert "p2" in line
    assert "from=booting" in line
    assert not [x for x in out.seen if " p1 " in x]  # --proxy p2: nothing of p1
    assert f"client={CLIENT_NAME}" in granted
    assert "by=" not in granted  # the owner acted: said once
    assert f"client={CLIENT_NAME} by={ADMIN_NAME}" in released
