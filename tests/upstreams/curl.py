"""curl through an upstream, for the fixtures' own tests: a real client, not ours."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

from tests.conftest import TargetServer

CURL_TIMEOUT = 20.0


@dataclass(frozen=True, slots=True)
class CurlResult:
    code: int
    """curl's exit status (0: the page came)."""
    body: str
    connect_status: int
    """The proxy's answer to CONNECT (0 when there was none)."""
    stderr: str

    def seen_ip(self) -> str:
        """The address the `target` echo saw (the upstream's exit)."""
        assert self.code == 0, f"curl exited with {self.code}: {self.stderr}"
        return str(json.loads(self.body)["ip"])


def curl(*args: str) -> CurlResult:
    """`curl args... `; the body on stdout, then the CONNECT status on a line of its own."""
    proc = subprocess.run(
        ["curl", "-sS", "--max-time", "10", "-w", "\n%{http_connect}", *args],
        capture_output=True,
        text=True,
        timeout=CURL_TIMEOUT,
        check=False,
    )
    body, _, status = proc.stdout.rpartition("\n")
    return CurlResult(proc.returncode, body, int(status or 0), proc.stderr)


def fetch_target(target: TargetServer, *proxy_args: str) -> CurlResult:
    """The `target`'s probe page through the proxy named in `proxy_args`."""
    return curl("--cacert", target.ca_file, *proxy_args, target.url)
