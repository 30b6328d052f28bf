"""What `make run` tells a new user: the banner, the copy-and-paste commands in it, and
the env file those commands source (`.dev/stack.env`, the URLs and dev tokens chosen).

The first commands use the `proxyfleet` CLI (`proxyfleet lease -- curl ...`); the curl
ones after them do the same by hand. Those fail loudly: the grant is retried while the
API answers 503 (no proxy ready yet, right after `make run`), and the page is fetched
only through the leased proxy — never directly when no lease came back (`curl --proxy
""` would go direct).
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from proxyfleet.devstack.stack import ADMIN_NAME, CLIENT_NAME, Stack

ENV_FILE = "stack.env"
"""In the stack's base folder (`.dev/` for `make run`)."""


def env_text(stack: Stack) -> str:
    """The env file: shell `export` lines, quoted."""
    values = {
        "PF": stack.api_url,
        "ADMIN": stack.admin_token,
        "CLIENT": stack.client_token,
        "NATS_URL": stack.nats_url,
        "REDIS_URL": stack.redis_url,
        "TARGET": stack.target_url,
        "CA": str(Path(stack.ca_file).resolve()),
        # What the `proxyfleet` command reads: the API and the client token.
        "PROXYFLEET_URL": stack.api_url,
        "PROXYFLEET_TOKEN": stack.client_token,
    }
    lines = [
        "# Written by `make run` (proxyfleet-dev run): what it chose. Dev tokens: keep private."
    ]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def write_env_file(stack: Stack, base_dir: Path) -> Path:
    """Write the env file (mode 0600: it holds the dev tokens) and return its path."""
    path = base_dir.resolve() / ENV_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(env_text(stack))
    path.chmod(0o600)
    return path


def cli_command() -> str:
    """How to call the `proxyfleet` command this dev stack was installed with: its path
    (relative to here when it is below, else absolute), never the bare name. `uv run`
    puts the venv on the launcher's PATH, not on the PATH of the shell the user pastes
    into, where the bare name is "command not found"."""
    script = Path(sys.executable).parent / "proxyfleet"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def cli_copy_paste(env_file: Path, cli: str) -> str:
    """The first thing to try: three proxies, then curl run through a leased one by
    `proxyfleet lease` (which waits for a ready proxy and releases it afterwards)."""
    pf = shlex.quote(cli)
    return f"""source {shlex.quote(str(env_file))}   # also PROXYFLEET_URL, PROXYFLEET_TOKEN
{pf} --token "$ADMIN" proxies create --provider local -n 3
{pf} lease -- curl -sf --cacert "$CA" "$TARGET"   # waits for a ready proxy"""


def copy_paste(env_file: Path) -> str:
    """Commands a user pastes into bash: three proxies, a lease as soon as one is ready, a
    page through it, the release. Any step that fails stops what depends on it."""
    return f"""source {shlex.quote(str(env_file))}   # PF, ADMIN, CLIENT, TARGET, CA
# three proxies (ready in a few seconds, after health's real CONNECT probes)
curl -sf -X POST "$PF/v1/proxies" -H "Authorization: Bearer $ADMIN" \\
     -H 'content-type: application/json' -d '{{"provider": "local", "count": 3}}'; echo
# lease one (503 until one is ready: retried for up to a minute)
for _ in $(seq 60); do
  GRANT=$(curl -sf -X POST "$PF/v1/leases" -H "Authorization: Bearer $CLIENT" \\
    -H 'content-type: application/json' -d '{{"ttl": 120, "holder": "me"}}') && break
  sleep 1
done; echo "$GRANT"
read -r LEASE EPOCH PROXY < <(echo "$GRANT" | python3 -c \\
  'import json,sys; g=json.load(sys.stdin); print(g["lease_id"], g["epoch"], g["proxy"]["url"])')
# a page through the leased proxy, then give the lease back
curl -sf --proxy "${{PROXY:?no lease was granted}}" --cacert "$CA" "$TARGET"; echo
curl -sf -X POST "$PF/v1/leases/$LEASE/release" -H "Authorization: Bearer $CLIENT" \\
     -H 'content-type: application/json' -d "{{\\"epoch\\": $EPOCH}}"; echo"""


def _indent(text: str) -> str:
    return "\n".join(f"   {line}" for line in text.splitlines())


def banner(
    stack: Stack, base_dir: Path, engine: str, env_file: Path, cli: str | None = None
) -> str:
    cli = cli or cli_command()
    first = _indent(cli_copy_paste(env_file, cli))
    indented = _indent(copy_paste(env_file))
    return f"""
================================================================================
 Proxyfleet is running (local provider, {engine} proxies)
   API        {stack.api_url}        OpenAPI: {stack.api_url}/schema
   dashboard  {stack.api_url}/ui     (sign in with the admin token from {env_file.name})
   gateway    {stack.gateway_url}{_socks_line(stack)}
   NATS       {stack.nats_url}    events: {cli} events (or proxyfleet.events.>)
   Redis      {stack.redis_url}
   target     {stack.target_url}   (local HTTPS test site, CA {stack.ca_file})
   logs       {base_dir}/logs/
   tokens     admin {ADMIN_NAME}, client {CLIENT_NAME}
   all that   {env_file} (URLs and tokens as shell exports)
   cooldown   {stack.opts.cooldown:g} s after a release (dev stack; the API's default is 30 s)

 Try it (bash): a page through a leased proxy
{first}
   # then: {cli} status; {cli} events (live); {cli} --help

 Or with curl alone (the same, step by step):
{indented}

{gateway_hint(stack, env_file)}

 Ctrl-C stops everything.
================================================================================
"""


def _socks_line(stack: Stack) -> str:
    return f"   SOCKS5 {stack.gateway_socks_url}" if stack.gateway_socks_url else ""


def gateway_hint(stack: Stack, env_file: Path) -> str:
    """The gateway's lines: one proxy URL (the password is the client token), a lease per
    connection; `-session-<id>` in the username keeps one proxy (docs/gateway.md); the
    same over SOCKS5 when the stack runs that listener."""
    host_port = stack.gateway_url.removeprefix("http://")
    hint = f""" Through the gateway (a proxy of its own per connection; -session-<id> sticks):
   source {shlex.quote(str(env_file))}
   curl -sf -x "http://me:$CLIENT@{host_port}" --cacert "$CA" "$TARGET"; echo"""
    if stack.gateway_socks_url:
        socks = stack.gateway_socks_url.removeprefix("socks5h://")
        hint += f"""
   curl -sf --socks5-hostname {socks} --proxy-user "me:$CLIENT" --cacert "$CA" "$TARGET"; echo"""
    return hint
