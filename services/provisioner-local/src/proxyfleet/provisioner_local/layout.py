"""Where a local proxy's files live: one folder per proxy under
<state_dir>/<installation_id>/<proxy_id>/. Pure: paths only, no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_SAFE_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")

MARKER_NAME = "managed.json"
LOCKS_DIR = ".locks"
PORTS_LOCK = ".ports.lock"


def check_name(kind: str, value: str) -> str:
    """A proxy or installation id that is safe as one path component; ValueError if not."""
    if not _SAFE_NAME.match(value):
        raise ValueError(f"{kind} {value!r}: expected lowercase letters, digits and '-'")
    return value


@dataclass(frozen=True, slots=True)
class ProxyFolder:
    """The files of one proxy."""

    path: Path
    proxy_id: str

    @property
    def marker(self) -> Path:
        """managed.json: who owns this proxy (the GC's identity) and where it listens."""
        return self.path / MARKER_NAME

    @property
    def credentials(self) -> Path:
        """proxy.json (0600): credentials, labels and placement, to register the proxy
        again from its folder after a store reset."""
        return self.path / "proxy.json"

    @property
    def log(self) -> Path:
        """stdout and stderr of the proxy process."""
        return self.path / "proxy.log"

    @property
    def squid_conf(self) -> Path:
        return self.path / "squid.conf"

    @property
    def htpasswd(self) -> Path:
        return self.path / "htpasswd"

    @property
    def squid_pid(self) -> Path:
        return self.path / "squid.pid"

    @property
    def cache_log(self) -> Path:
        return self.path / "cache.log"

    @property
    def proxypy_args(self) -> Path:
        """The proxy.py launcher's arguments, credentials included (0600)."""
        return self.path / "proxypy.json"

    @property
    def proxypy_data(self) -> Path:
        return self.path / "proxypy-data"

    @property
    def squid_service_name(self) -> str:
        """Squid's -n: alphanumeric only, unique per running Squid."""
        return "pf" + "".join(c for c in self.proxy_id if c.isalnum())


@dataclass(frozen=True, slots=True)
class InstallationLayout:
    """The folders of one installation's local proxies."""

    state_dir: Path
    installation_id: str

    @property
    def root(self) -> Path:
        return self.state_dir / self.installation_id

    def folder(self, proxy_id: str) -> ProxyFolder:
        return ProxyFolder(self.root / check_name("proxy id", proxy_id), proxy_id)

    def lock_path(self, proxy_id: str) -> Path:
        """Serialises create/delete of one proxy across threads and processes."""
        return self.root / LOCKS_DIR / f"{check_name('proxy id', proxy_id)}.lock"

    @property
    def ports_lock(self) -> Path:
        """Serialises port allocation on this machine (every installation shares ports)."""
        return self.state_dir / PORTS_LOCK

    def all_markers_glob(self) -> str:
        """Markers of every installation under state_dir (ports are machine-wide)."""
        return f"*/*/{MARKER_NAME}"
