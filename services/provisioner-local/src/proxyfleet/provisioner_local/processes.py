"""Detached proxy processes: start, find again (even after our own restart), wait for,
stop. Blocking calls: the adapter runs them in threads."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

PROC = Path("/proc")


class ProcessExited(Exception):
    """The process ended before it listened."""


def spawn_detached(argv: list[str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    """Start `argv` in a session of its own (it survives us, even a kill -9), output to `log`."""
    with open(log, "ab") as out:  # the child keeps its own copy of the descriptor
        os.chmod(log, 0o640)
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
        )


def _stat_fields(pid: int) -> list[str] | None:
    """state, ppid, pgrp, session, ... of /proc/<pid>/stat (None: no such process)."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def is_running(pid: int, child: subprocess.Popen[bytes] | None = None) -> bool:
    """Alive and not a zombie."""
    if pid <= 0:
        return False
    if child is not None and child.poll() is not None:
        return False
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def is_engine(pid: int, signatures: Iterable[str]) -> bool:
    """`pid` runs (not a zombie) with one of `signatures` in its argv: a recycled pid of
    some other program does not count as the proxy being alive."""
    if not is_running(pid):
        return False
    try:
        argv = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return bool(set(signatures).intersection(a.decode(errors="replace") for a in argv))


def kill_leftovers(pgid: int, folder: Path, wait: float = 5.0) -> None:
    """SIGKILL what a dead engine left in its process group (proxy.py's acceptors keep its
    port), only processes whose argv names something in `folder`: a recycled group id of
    another program is left alone."""
    inside = str(folder)
    for entry in os.scandir(PROC):
        fields = _stat_fields(int(entry.name)) if entry.name.isdigit() else None
        if fields is None or int(fields[2]) != pgid or fields[0] in ("Z", "X"):
            continue
        try:
            argv = (PROC / entry.name / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if inside in argv:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)
            deadline = time.monotonic() + wait
            while is_running(int(entry.name)) and time.monotonic() < deadline:
                time.sleep(0.02)


def find_session_leader(signatures: Iterable[str]) -> list[int]:
    """Running session leaders whose argv contains one of `signatures`: our detached
    engines. Their workers are not session leaders; their helpers lack the argument once
    they have exec'd, and are children of the engine before that."""
    wanted = set(signatures)
    found: dict[int, int] = {}
    for entry in os.scandir(PROC):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            argv = (PROC / entry.name / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not wanted.intersection(a.decode(errors="replace") for a in argv):
            continue
        fields = _stat_fields(pid)
        if fields is not None and fields[0] not in ("Z", "X") and int(fields[3]) == pid:
            found[pid] = int(fields[1])
    return sorted(pid for pid, parent in found.items() if parent not in found)


def wait_listening(
    pid: int,
    host: str,
    port: int,
    timeout: float,
    child: subprocess.Popen[bytes] | None = None,
) -> None:
    """Return once host:port accepts TCP; ProcessExited if the process ends first,
    TimeoutError if neither happens within `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        if not is_running(pid, child):
            raise ProcessExited(f"process {pid} exited")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{host}:{port} not listening after {timeout:g}s")
        time.sleep(0.02)


def stop_process_group(
    pid: int, grace: float, child: subprocess.Popen[bytes] | None = None
) -> None:
    """SIGTERM the process group led by `pid`; SIGKILL it after `grace` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while is_running(pid, child):
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        else:
            return


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could listen on host:port now (SO_REUSEADDR, as servers do)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def wait_port_free(host: str, port: int, within: float) -> bool:
    """Whether host:port becomes free within `within` seconds (polled): workers a killed
    engine left (proxy.py's acceptors) may hold its port a moment after it died, until
    they notice and exit."""
    deadline = time.monotonic() + within
    while not port_is_free(host, port):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def log_tail(path: Path, secrets: Iterable[str], max_lines: int = 8) -> str:
    """The last lines of a log, with any of `secrets` masked."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-max_lines:])
