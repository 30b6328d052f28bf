"""What `proxyfleet lease -- CMD` hands CMD, and which signals it passes on (no I/O)."""

from __future__ import annotations

import signal
from collections.abc import Mapping

from proxyfleet.client import Lease

PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")
"""Set to the leased proxy's URL, each in upper and lower case (curl reads `http_proxy`
only in lower case; most tools read either)."""
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Signals passed on to CMD; after one of them CMD's failure is not reported `failed`."""
SI_USER_MAX = 0
"""si_code <= 0: sent by a process (kill, sigqueue, tkill); > 0: by the kernel."""


NO_PROXY_VARIABLES = ("NO_PROXY", "no_proxy")
"""Dropped from CMD's environment unless asked to keep them: an inherited list (often
`localhost,127.0.0.1`) would send some of CMD's requests around the leased proxy."""


def child_env(
    base: Mapping[str, str], lease: Lease, *, keep_no_proxy: bool = False
) -> dict[str, str]:
    """`base` (our environment) with the proxy variables and the lease's id and epoch."""
    env = dict(base)
    if not keep_no_proxy:
        for name in NO_PROXY_VARIABLES:
            env.pop(name, None)
    for name in PROXY_VARIABLES:
        env[name] = env[name.lower()] = lease.proxy.url
    env["PROXYFLEET_LEASE_ID"] = lease.lease_id
    env["PROXYFLEET_LEASE_EPOCH"] = str(lease.epoch)
    return env


def should_forward(si_code: int) -> bool:
    """A terminal's Ctrl-C or hangup is sent by the kernel (si_code SI_KERNEL) to the
    whole foreground process group, CMD included: passing it on would deliver it twice.
    One sent with kill(2) to this process (si_code <= 0) reaches CMD only through us."""
    return si_code <= SI_USER_MAX


def default_holder(user: str, host: str, command: str) -> str:
    """Who holds the lease, as `GET /v1/leases` shows it (at most 200 characters)."""
    return f"{user}@{host}: {command}"[:200]
