"""A new user's first minute, automated: the commands the `make run` banner says to paste
run in bash against the whole system, lease a proxy as soon as one is ready, print the
target's page through it, and release the lease (checked through the API)."""

from __future__ import annotations

import json
import re
import stat
import subprocess

from tests.e2e.journey import Api

from proxyfleet.devstack.banner import banner, copy_paste, gateway_hint, write_env_file
from proxyfleet.devstack.stack import Stack


def test_the_banners_commands_lease_fetch_and_release(stack: Stack) -> None:
    env_file = write_env_file(stack, stack.opts.base_dir)
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600  # it holds the dev tokens
    text = banner(stack, stack.opts.base_dir, "squid", env_file)
    assert str(env_file) in text
    assert f"cooldown   {stack.opts.cooldown:g} s" in text
    assert f"dashboard  {stack.api_url}/ui" in text
    assert f"gateway    {stack.gateway_url}" in text

    # `set -e` as a careful user would have it: any failing step fails the run.
    script = "set -euo pipefail\n" + copy_paste(env_file)
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    grant = json.loads(next(line for line in out.splitlines() if line.startswith('{"lease_id"')))
    page = json.loads(next(line for line in out.splitlines() if line.startswith('{"ok"')))
    assert page["ok"] is True  # the target answered, through the proxy
    assert grant["proxy"]["url"].startswith("http://")

    lease = Api(stack.api_url, stack.admin_token).http.get(f"/v1/leases/{grant['lease_id']}")
    assert lease.status_code == 200, lease.text
    assert lease.json()["state"] == "released"

    # The gateway's lines, HTTP then SOCKS5: a page each through a proxy the gateway leased.
    hint = gateway_hint(stack, env_file).splitlines()[1:]  # the commands under the heading
    assert stack.gateway_socks_url in text
    done = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + "\n".join(hint)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    pages = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"ok"')]
    assert [p["ok"] for p in pages] == [True, True]


def test_without_a_lease_the_page_is_not_fetched_directly(stack: Stack) -> None:
    """A grant that cannot succeed (a client token the API does not know) ends the commands
    with an error instead of fetching the page without a proxy."""
    env_file = write_env_file(stack, stack.opts.base_dir)
    script = copy_paste(env_file).replace("seq 60", "seq 2")  # do not wait a minute
    script = re.sub(r"^(source .*)$", r"\1\nexport CLIENT=not-a-token", script, flags=re.M)
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode != 0
    assert "no lease was granted" in done.stderr
    assert '{"ok"' not in done.stdout


def test_the_first_thing_to_try_is_proxyfleet_lease(stack: Stack) -> None:
    """The CLI's lines come before the curl ones, and the env file gives the CLI its API
    and token (tests/e2e/test_first_minutes.py runs them after a real `make run`)."""
    env_file = write_env_file(stack, stack.opts.base_dir)
    text = banner(stack, stack.opts.base_dir, "squid", env_file, cli="proxyfleet")
    lease_line = 'proxyfleet lease -- curl -sf --cacert "$CA" "$TARGET"'
    assert text.index(lease_line) < text.index('curl -sf -X POST "$PF/v1/proxies"')
    assert "proxyfleet events" in text
    exports = env_file.read_text()
    assert f"export PROXYFLEET_URL={stack.api_url}\n" in exports
    assert f"export PROXYFLEET_TOKEN={stack.client_token}\n" in exports
