"""Fixtures for the KVM provider: a real libvirtd for the session, an in-process SSH server that
forwards unix sockets (as sshd with AllowStreamLocalForwarding does), and a KvmHost for both.

libvirt-python calls block: through an `SshTunnel` they need the event loop (the SSH server
and the tunnel's local listener both run on the session loop), so run them in
`asyncio.to_thread(...)`, never directly in an async test.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import glob
import grp
import os
import pwd
import random
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh
import libvirt
import pytest

from proxyfleet.provisioner_kvm.pure.config import KvmHost

PREFIX = "pftest-"
"""Every libvirt object the fixtures make is named with this (plus a per-session id)."""
_BASE_PREFIX = "pfvirt-"
"""The session's private dir under /tmp: sockets, config, logs, pid files, the pool."""
_LOCK = Path("/tmp/pftest-libvirtd.lock")
_LIBVIRTD = "/usr/sbin/libvirtd"
_VIRTLOGD = "/usr/sbin/virtlogd"
_VIRTLOGD_SOCK = "/run/libvirt/virtlogd-sock"
_IP_FORWARD = Path("/proc/sys/net/ipv4/ip_forward")
_PROGRAMS = {  # program -> Debian package
    _LIBVIRTD: "libvirt-daemon",
    _VIRTLOGD: "libvirt-daemon",
    "qemu-system-x86_64": "qemu-system-x86",
    "qemu-img": "qemu-utils",
    "/usr/sbin/dnsmasq": "dnsmasq-base",
    "ip": "iproute2",  # the session's network namespace
}


@dataclass(frozen=True)
class LibvirtDaemon:
    """A privileged libvirtd (qemu:///system) on a private socket, with a pool and a network.

    Networking: a NAT network with DHCP (bridge + dnsmasq + iptables MASQUERADE) when libvirt
    can apply its firewall rules, i.e. when `iptables` is installed (Debian's
    libvirt-daemon-system depends on it; `make system-packages` installs it). Without iptables
    libvirt refuses NAT *and* isolated networks ("cannot execute binary /usr/sbin/iptables"),
    so the fixture falls back to `<forward mode='open'/>`: the same bridge and DHCP, no
    firewall rules at all; guests reach the host on the bridge address, not the internet.
    `network_mode` says which one this session got.

    The daemon the fixture starts runs in a network namespace of its own (`netns`, made with
    `ip netns add` and entered with `ip netns exec`): the bridge, dnsmasq, the firewall rules,
    IPv4 forwarding and every guest live there, so nothing a test does reaches a private
    address of this machine's own namespace. The unix sockets still reach libvirtd from here;
    `tests/kvm/netns.py` runs code in the namespace and forwards loopback ports into it.

    Name everything you create with `name_prefix`; teardown also removes any domain, network
    or pool that appeared during the session on a daemon the fixture started.
    """

    socket_path: str
    uri: str
    pool_name: str
    pool_path: Path
    network_name: str
    name_prefix: str = PREFIX
    network_mode: str = "nat"
    bridge_address: str = ""
    bridge: str = ""
    """The network's bridge device (inside `netns`)."""
    netns: str = ""
    """Name of the network namespace libvirtd runs in ("" for a daemon given by
    TEST_LIBVIRT_SOCKET, which runs wherever it was started)."""

    @property
    def netns_path(self) -> str:
        return f"/run/netns/{self.netns}" if self.netns else ""


@dataclass(frozen=True)
class SshServer:
    """An asyncssh server on loopback that lets `user` in with `key_file` only."""

    address: str
    user: str
    key_file: Path
    host_key: str
    wrong_host_key: str
    _connections: set[asyncssh.SSHServerConnection] = field(
        default_factory=set, repr=False, compare=False
    )

    def drop_connections(self) -> int:
        """Abort every client connection from the server side; returns how many."""
        conns = list(self._connections)
        for conn in conns:
            conn.abort()
        return len(conns)


# --- libvirtd -----------------------------------------------------------------------------


def _die_with_parent() -> None:
    """prctl(PR_SET_PDEATHSIG, SIGTERM): a crashed pytest does not leave a daemon behind."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)


def _quiet(*_: object) -> None:
    """libvirt prints every error to stderr by default; the tests look at exceptions."""


def _missing_prerequisites() -> str | None:
    if os.geteuid() != 0:
        return (
            "the KVM tests start a privileged libvirtd (qemu:///system) and need root; "
            "run them as root, or set TEST_LIBVIRT_SOCKET to a running libvirtd's socket"
        )
    missing = {p: pkg for p, pkg in _PROGRAMS.items() if shutil.which(p) is None}
    if not glob.glob("/usr/lib/*/libvirt/connection-driver/libvirt_driver_qemu.so"):
        missing["libvirt_driver_qemu.so"] = "libvirt-daemon-driver-qemu"
    if missing:
        return (
            f"the KVM tests need {', '.join(missing)} (Debian: "
            f"{' '.join(sorted(set(missing.values())))}); `make system-packages` installs them"
        )
    return None


def _lock_session(stack: contextlib.ExitStack, wait: float = 100.0) -> None:
    """One test libvirtd per machine: a privileged daemon owns /run/libvirt and its drivers'
    state. A second pytest session waits for the first (the lock dies with its process)."""
    fd = os.open(_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    stack.callback(os.close, fd)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
                pytest.fail(f"another test session (pid {holder}) holds {_LOCK} for {wait:g} s")
            time.sleep(0.5)
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)


def _stop_pid(pid: int, exe: str, timeout: float = 20.0) -> None:
    """SIGTERM (then SIGKILL) a crashed session's daemon `pid`, only if it still runs `exe`."""

    def running() -> bool:
        try:
            return os.readlink(f"/proc/{pid}/exe") == exe  # fails for a zombie too
        except OSError:
            return False

    if not running():
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while running() and time.monotonic() < deadline:
        time.sleep(0.1)
    if running():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _clean_stale_dirs() -> None:
    """Undo what a crashed session changed: stop its daemons (by the pids they wrote in its
    dir), replay its undo journal, remove its dir."""
    for d in glob.glob(f"/tmp/{_BASE_PREFIX}*"):
        for pidfile, exe in (("libvirtd.pid", _LIBVIRTD), ("virtlogd.pid", _VIRTLOGD)):
            with contextlib.suppress(OSError, ValueError):
                _stop_pid(int(Path(d, pidfile).read_text().strip()), exe)
        with contextlib.suppress(OSError):
            for line in reversed(Path(d, "undo").read_text().splitlines()):
                _undo(*line.split(" ", 2))
        shutil.rmtree(d, ignore_errors=True)
    for name in _netns_names():
        if name.startswith(PREFIX):
            subprocess.run(["ip", "netns", "delete", name], check=False)


def _netns_names() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


def _make_netns(stack: contextlib.ExitStack, name: str) -> None:
    """A network namespace with only its loopback up; deleted at teardown (the kernel frees
    it once libvirtd, dnsmasq and QEMU, its last processes, are gone)."""
    subprocess.run(["ip", "netns", "add", name], check=True)
    stack.callback(subprocess.run, ["ip", "netns", "delete", name], check=False)
    subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)


def _undoable(stack: contextlib.ExitStack, base: Path, kind: str, path: str, value: str) -> None:
    """Undo a change to the system at teardown, or in the next session if this one crashes."""
    with (base / "undo").open("a") as journal:
        journal.write(f"{kind} {path} {value}\n")
    stack.callback(_undo, kind, path, value)


def _undo(kind: str, path: str, value: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        if kind == "mode":
            os.chmod(path, int(value, 8))
        elif kind == "gid":
            os.chown(path, -1, int(value))
        elif kind == "write":
            Path(path).write_text(f"{value}\n")


def _ensure_qemu_user() -> None:
    """What Debian's libvirt-daemon-system postinst creates (the QEMU driver refuses to load
    without its user): system group kvm, user libvirt-qemu in groups kvm and libvirt-qemu."""
    for group in ("kvm", "libvirt-qemu"):
        if not _exists(grp.getgrnam, group):
            subprocess.run(["groupadd", "--system", group], check=True)
    if not _exists(pwd.getpwnam, "libvirt-qemu"):
        subprocess.run(
            ["useradd", "--system", "--gid", "kvm", "--groups", "libvirt-qemu",
             "--home-dir", "/var/lib/libvirt", "--no-create-home",
             "--shell", "/usr/sbin/nologin", "--comment", "Libvirt Qemu", "libvirt-qemu"],
            check=True,
        )  # fmt: skip


def _exists(lookup: Callable[[str], object], name: str) -> bool:
    try:
        lookup(name)
    except KeyError:
        return False
    return True


def _grant_kvm_group(stack: contextlib.ExitStack, base: Path) -> None:
    """/dev/kvm as udev sets it on Debian (group kvm, 0660), restored at teardown.

    Without udev it is root-only here. libvirtd probes QEMU's capabilities as root (KVM: yes)
    but checks /dev/kvm as libvirt-qemu (KVM: no), finds its cache stale on every call and
    re-probes QEMU about nine times per define: ~36 s per defineXML instead of ~40 ms."""
    kvm = Path("/dev/kvm")
    if not kvm.exists():
        return
    st = kvm.stat()
    gid = grp.getgrnam("kvm").gr_gid
    if st.st_mode & 0o006 == 0o006 or (st.st_gid == gid and st.st_mode & 0o060 == 0o060):
        return
    _undoable(stack, base, "gid", str(kvm), str(st.st_gid))
    _undoable(stack, base, "mode", str(kvm), oct(stat.S_IMODE(st.st_mode)))
    os.chown(kvm, -1, gid)
    os.chmod(kvm, 0o660)


def _connectable(path: str) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(path)
        except OSError:
            return False
        return True


def _spawn(stack: contextlib.ExitStack, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    """Start a daemon in the foreground (so its pid is ours) and stop it at teardown."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - only prctl runs before exec
        )
    stack.callback(_stop_child, proc)
    return proc


def _stop_child(proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _start_virtlogd(stack: contextlib.ExitStack, base: Path) -> None:
    """libvirtd hands QEMU's console and log output to virtlogd; reuse one that runs."""
    if _connectable(_VIRTLOGD_SOCK):
        return
    proc = _spawn(stack, [_VIRTLOGD, "-p", str(base / "virtlogd.pid")], base / "virtlogd.out")
    deadline = time.monotonic() + 10
    while not _connectable(_VIRTLOGD_SOCK):
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"virtlogd did not start: {(base / 'virtlogd.out').read_text()[-2000:]}")
        time.sleep(0.05)


def _start_libvirtd(stack: contextlib.ExitStack, base: Path, sock_dir: Path, netns: str) -> str:
    """libvirtd in `netns`: `ip netns exec` also mounts that namespace's /sys, which libvirt
    reads and writes to set up the bridge, then execs libvirtd (same pid)."""
    conf = base / "libvirtd.conf"
    conf.write_text(
        f'unix_sock_dir = "{sock_dir}"\n'
        'unix_sock_group = "root"\nunix_sock_ro_perms = "0700"\nunix_sock_rw_perms = "0700"\n'
        'unix_sock_admin_perms = "0700"\nauth_unix_ro = "none"\nauth_unix_rw = "none"\n'
        "listen_tcp = 0\nlisten_tls = 0\n"
        f'log_outputs = "3:file:{base}/libvirtd.log"\n'
    )
    argv = [
        "ip",
        "netns",
        "exec",
        netns,
        _LIBVIRTD,
        "-f",
        str(conf),
        "-p",
        str(base / "libvirtd.pid"),
    ]
    proc = _spawn(stack, argv, base / "libvirtd.out")
    uri = f"qemu:///system?socket={sock_dir}/libvirt-sock"
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = (base / "libvirtd.out").read_text()[-1500:]
            log = (
                (base / "libvirtd.log").read_text()[-1500:]
                if (base / "libvirtd.log").exists()
                else ""
            )
            hint = ""
            if Path("/run/libvirt/libvirt-sock").exists():
                hint = (
                    " (a system libvirtd runs: set TEST_LIBVIRT_SOCKET=/run/libvirt/libvirt-sock)"
                )
            pytest.fail(f"libvirtd did not start{hint}: {tail}\n{log}")
        with contextlib.suppress(libvirt.libvirtError):
            libvirt.open(uri).close()
            return uri
        time.sleep(0.1)


def _remove(conn: libvirt.virConnect, doomed: Callable[[str], bool]) -> None:
    """Destroy and undefine the domains, networks and pools whose names are doomed."""
    undefine = (
        libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE
        | libvirt.VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA
        | libvirt.VIR_DOMAIN_UNDEFINE_NVRAM
    )
    for dom in conn.listAllDomains():
        if doomed(dom.name()):
            with contextlib.suppress(libvirt.libvirtError):
                dom.destroy()
            with contextlib.suppress(libvirt.libvirtError):
                dom.undefineFlags(undefine)
    for obj in [*conn.listAllNetworks(), *conn.listAllStoragePools()]:
        if doomed(obj.name()):
            with contextlib.suppress(libvirt.libvirtError):
                obj.destroy()
            with contextlib.suppress(libvirt.libvirtError):
                obj.undefine()


def _remove_residue() -> None:
    """What libvirtd leaves of destroyed test objects: dnsmasq pid files, network port dirs,
    QEMU logs. (The empty LIBVIRT_* iptables chains stay: libvirt shares them.)"""
    for pattern in ("/run/libvirt/network/", "/var/log/libvirt/qemu/"):
        for path in glob.glob(f"{pattern}{PREFIX}*"):
            if Path(path).is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                Path(path).unlink(missing_ok=True)


def _names(conn: libvirt.virConnect) -> set[str]:
    objs = [*conn.listAllDomains(), *conn.listAllNetworks(), *conn.listAllStoragePools()]
    return {o.name() for o in objs}


def _define_network(conn: libvirt.virConnect, name: str, bridge: str) -> tuple[str, str]:
    """NAT with DHCP if libvirt can set up its firewall, else open mode; returns (mode, addr)."""
    message = ""
    for mode in ("nat", "open"):
        for _ in range(8):
            n = random.randint(100, 250)
            xml = (
                f"<network><name>{name}</name><forward mode='{mode}'/>"
                f"<bridge name='{bridge}' stp='off' delay='0'/>"
                f"<ip address='192.168.{n}.1' netmask='255.255.255.0'><dhcp>"
                f"<range start='192.168.{n}.10' end='192.168.{n}.250'/></dhcp></ip></network>"
            )
            net = conn.networkDefineXML(xml)
            try:
                net.create()
                return mode, f"192.168.{n}.1"
            except libvirt.libvirtError as exc:
                net.undefine()
                message = str(exc)
            if "in use" not in message:
                break  # not a subnet clash: try the next mode
    pytest.fail(f"no libvirt network could start here: {message}")


@pytest.fixture(scope="session")
def libvirtd() -> Iterator[LibvirtDaemon]:
    """A real libvirtd for the session, or the running one at TEST_LIBVIRT_SOCKET (then the
    fixture only adds and removes its pool and network). See LibvirtDaemon for networking.

    Set up like a Debian host, with the least change to this machine: the libvirt-qemu user
    and kvm group exist (created if missing), /etc/libvirt/qemu.conf is left alone, so QEMU
    runs as libvirt-qemu and libvirt chowns each disk file while its domain runs; the pool
    lives in a 0755 dir under /tmp for that reason. `virtlogd` and `libvirtd -f CONF` run in
    the foreground as our children, stopped by pid at teardown (and by SIGTERM if pytest
    dies). Their sockets sit in a 0700 dir, `auth_unix_rw = "none"`, no TCP. One session at a
    time per machine (a lock file); the next one undoes what a crashed one left behind.

    Measured here: libvirtd answers within 0.2 s; the first QEMU capability probe takes ~8 s
    (cached in /var/cache/libvirt/qemu afterwards); define ~40 ms, start ~0.7 s under TCG.
    """
    libvirt.registerErrorHandler(_quiet, None)
    given = os.environ.get("TEST_LIBVIRT_SOCKET")
    if not given and (reason := _missing_prerequisites()):
        pytest.skip(reason)
    with contextlib.ExitStack() as stack:
        # Private dir, 0755: QEMU runs as libvirt-qemu and must traverse to the pool's disks
        # (pytest's own tmp dirs are 0700). The socket dir inside stays 0700: root only.
        if not given:
            _lock_session(stack)
            _clean_stale_dirs()
        base = Path(tempfile.mkdtemp(prefix=_BASE_PREFIX, dir="/tmp"))
        stack.callback(shutil.rmtree, base, ignore_errors=True)
        base.chmod(0o755)
        sock_dir, pool_path = base / "s", base / "pool"
        sock_dir.mkdir(mode=0o700)
        pool_path.mkdir(mode=0o755)
        session = f"{PREFIX}{secrets.token_hex(3)}-"
        netns = ""
        if given:
            uri = f"qemu:///system?socket={given}"
            # libvirt turns IPv4 forwarding on for a NAT network and never off: undo that
            _undoable(stack, base, "write", str(_IP_FORWARD), _IP_FORWARD.read_text().strip())
        else:
            _ensure_qemu_user()
            _grant_kvm_group(stack, base)
            _start_virtlogd(stack, base)
            stack.callback(_remove_residue)  # after libvirtd stops
            netns = f"{session}ns"
            _make_netns(stack, netns)  # deleted after libvirtd stops (callbacks run LIFO)
            uri = _start_libvirtd(stack, base, sock_dir, netns)
        conn = libvirt.open(uri)
        stack.callback(conn.close)
        conn.getCapabilities()  # the QEMU capability probe (seconds, cached in /var/cache)
        owned = not given
        if owned:  # we hold the lock: any pftest- object is a crashed session's leftover
            _remove(conn, lambda name: name.startswith(PREFIX))
        existing = _names(conn)
        stack.callback(
            _remove, conn, lambda n: n.startswith(session) or (owned and n not in existing)
        )
        pool = conn.storagePoolDefineXML(
            f"<pool type='dir'><name>{session}pool</name>"
            f"<target><path>{pool_path}</path></target></pool>"
        )
        pool.create()
        bridge = f"pft{session[7:13]}"
        mode, address = _define_network(conn, f"{session}net", bridge)
        yield LibvirtDaemon(
            socket_path=given or f"{sock_dir}/libvirt-sock",
            uri=uri,
            pool_name=pool.name(),
            pool_path=pool_path,
            network_name=f"{session}net",
            name_prefix=session,
            network_mode=mode,
            bridge_address=address,
            bridge=bridge,
            netns=netns,
        )


# --- SSH ----------------------------------------------------------------------------------


class _ForwardingServer(asyncssh.SSHServer):
    """Public key auth for one user; direct unix-socket forwarding to any path."""

    def __init__(
        self, user: str, keys: asyncssh.SSHAuthorizedKeys, conns: set[asyncssh.SSHServerConnection]
    ) -> None:
        self._user, self._keys, self._conns = user, keys, conns
        self._conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._conn = conn
        self._conns.add(conn)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._conn is not None:
            self._conns.discard(self._conn)

    def begin_auth(self, username: str) -> bool:
        if username == self._user and self._conn is not None:
            self._conn.set_authorized_keys(self._keys)
        return True

    def unix_connection_requested(self, dest_path: str) -> bool:
        return True


@pytest.fixture(scope="session")
async def ssh_server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SshServer]:
    """An in-process SSH server on a free loopback port (ed25519 host and client keys)."""
    keys_dir = tmp_path_factory.mktemp("ssh")
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    key_file = keys_dir / "id_ed25519"
    client_key.write_private_key(str(key_file))
    key_file.chmod(0o600)
    authorized = asyncssh.import_authorized_keys(client_key.export_public_key().decode())
    user = "proxyfleet"
    conns: set[asyncssh.SSHServerConnection] = set()
    acceptor = await asyncssh.listen(
        "127.0.0.1",
        0,
        server_host_keys=[host_key],
        server_factory=lambda: _ForwardingServer(user, authorized, conns),
    )
    try:
        yield SshServer(
            address=f"127.0.0.1:{acceptor.get_port()}",
            user=user,
            key_file=key_file,
            host_key=host_key.export_public_key().decode().strip(),
            wrong_host_key=(
                asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
            ),
            _connections=conns,
        )
    finally:
        acceptor.close()
        await acceptor.wait_closed()


@pytest.fixture
def test_pool(libvirtd: LibvirtDaemon) -> Iterator[str]:
    """A storage pool of this test's own (a dir under the session's pool dir), removed with
    every volume in it at teardown: no test sees another's base images, overlays or seeds,
    whatever the order they run in."""
    name = f"{libvirtd.name_prefix}pool-{secrets.token_hex(3)}"
    path = libvirtd.pool_path / name
    path.mkdir(mode=0o755)
    conn = libvirt.open(libvirtd.uri)
    try:
        pool = conn.storagePoolDefineXML(
            f"<pool type='dir'><name>{name}</name><target><path>{path}</path></target></pool>"
        )
        pool.create()
        yield name
        with contextlib.suppress(libvirt.libvirtError):
            pool.refresh()
            for volume in pool.listAllVolumes():
                with contextlib.suppress(libvirt.libvirtError):
                    volume.delete()
        _remove(conn, lambda n: n == name)
    finally:
        conn.close()
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def kvm_host(libvirtd: LibvirtDaemon, ssh_server: SshServer, test_pool: str) -> KvmHost:
    """Host h1 (zone kvm-a): the session's libvirtd behind the in-process SSH server, with a
    storage pool of this test's own."""
    return KvmHost(
        name="h1",
        zone="kvm-a",
        ssh_address=ssh_server.address,
        ssh_user=ssh_server.user,
        ssh_key_file=str(ssh_server.key_file),
        host_key=ssh_server.host_key,
        libvirt_socket=libvirtd.socket_path,
        storage_pool=test_pool,
        network=libvirtd.network_name,
        domain_type="qemu",
    )
