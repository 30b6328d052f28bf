"""A proxy's squid.conf rewritten to run on this test machine. Pure: no I/O.

A real VM or pod runs Squid as written, on every interface at the config's `http_port`.
Here each proxy gets a loopback address of its own, so every proxy keeps its port; the
paths the config names (pid file, logs, its htpasswd file...) move into the proxy's folder.
The "deny the proxy's own host" rule goes by default: on a VM or pod it guards that host,
here the whole test machine (and its loopback test target) would be denied.
"""

from __future__ import annotations

from proxyfleet.common.domain.squid import loopback_egress_lines


class SquidConfError(ValueError):
    """The config cannot be run (reported as the proxy's boot error)."""


def rewrite_squid_conf(
    conf: str,
    moved: dict[str, str],
    directory: str,
    bind: str,
    *,
    allow_local_destinations: bool = True,
    egress: str = "",
) -> tuple[str, int]:
    """(`conf` listening on `bind`, with its files in `directory`, the port it listens on).

    `egress`: the loopback address its connections to loopback destinations (the test
    target) leave from, as a VM's external IP or its network's NAT address would; "": the
    kernel's choice.

    `moved`: path (or folder) in the proxy's world → path on this machine; the longest
    match wins, so a mount inside another mount goes where it should.
    """
    out: list[str] = []
    port: int | None = None
    by_length = sorted(moved.items(), key=lambda kv: len(kv[0]), reverse=True)
    for line in conf.splitlines():
        words = line.split()
        key = words[0] if words else ""
        if key == "http_port" and len(words) > 1:
            if port is not None:
                continue  # one listener per proxy is all the fakes map
            port = http_port_number(words[1])
            out.append(" ".join(["http_port", f"{bind}:{port}", *words[2:]]))
        elif allow_local_destinations and words == ["http_access", "deny", "local_destinations"]:
            continue
        else:
            out.append(_rewrite_line(line, key, words, by_length, directory))
    if port is None:
        raise SquidConfError("squid.conf: no http_port")
    out.extend(loopback_egress_lines(egress))
    out.append(f"coredump_dir {directory}")
    return "\n".join(out) + "\n", port


def http_port_number(value: str) -> int:
    """The port of an `http_port` value (`3128`, `0.0.0.0:3128`, `[::]:3128`)."""
    try:
        return int(value.rsplit(":", 1)[-1])
    except ValueError:
        raise SquidConfError(f"squid.conf: http_port {value!r} names no port") from None


def first_http_port(conf: str) -> int:
    """The port of the config's first `http_port` line."""
    for line in conf.splitlines():
        words = line.split()
        if len(words) > 1 and words[0] == "http_port":
            return http_port_number(words[1])
    raise SquidConfError("squid.conf: no http_port")


def _rewrite_line(
    line: str, key: str, words: list[str], moved: list[tuple[str, str]], directory: str
) -> str:
    if key == "pid_filename":
        return f"pid_filename {directory}/squid.pid"
    if key == "cache_log":
        return f"cache_log {directory}/cache.log"
    if key == "access_log" and words[1:2] != ["none"]:
        return f"access_log stdio:{directory}/access.log"
    if key == "coredump_dir":
        return ""
    for old, new in moved:
        line = line.replace(old, new)
    return line
