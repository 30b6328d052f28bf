#!/usr/bin/env python3
"""Minimal QEMU guest agent client (stdlib only), for boot-check.sh.

    qga.py SOCKET ping                       -> exit 0 when the agent answers guest-ping
    qga.py SOCKET cmd '{"execute": ...}'     -> print the command's "return" as JSON
    qga.py SOCKET exec PROG [ARG...]         -> run PROG in the guest (guest-exec), print
                                                its stdout/stderr, exit with its exit code

The socket is the host side of a virtio-serial port named org.qemu.guest_agent.0
(qemu: -chardev socket,path=SOCKET,server=on,wait=off). Every connection starts
with guest-sync-delimited so stale bytes from earlier attempts are skipped.
"""

from __future__ import annotations

import base64
import json
import os
import random
import socket
import sys
import time
from typing import Any

SYNC_MARK = b"\xff"


class AgentError(Exception):
    pass


class Agent:
    def __init__(self, path: str, timeout: float) -> None:
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def _read_line(self, deadline: float) -> bytes:
        while b"\n" not in self.buf:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from the guest agent")
            self.sock.settimeout(max(0.05, deadline - time.monotonic()))
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AgentError("guest agent socket closed")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def sync(self) -> None:
        sync_id = random.randint(1, 2**31 - 1)
        msg = {"execute": "guest-sync-delimited", "arguments": {"id": sync_id}}
        self.sock.sendall(SYNC_MARK + json.dumps(msg).encode())
        deadline = time.monotonic() + self.timeout
        while True:
            line = self._read_line(deadline)
            if SYNC_MARK in line:
                line = line.rsplit(SYNC_MARK, 1)[1]
            try:
                reply = json.loads(line)
            except ValueError:
                continue
            if reply.get("return") == sync_id:
                return

    def call(self, execute: str, arguments: dict[str, Any] | None = None) -> Any:
        msg: dict[str, Any] = {"execute": execute}
        if arguments is not None:
            msg["arguments"] = arguments
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        deadline = time.monotonic() + self.timeout
        while True:
            line = self._read_line(deadline)
            try:
                reply = json.loads(line.replace(SYNC_MARK, b""))
            except ValueError:
                continue
            if "error" in reply:
                raise AgentError(json.dumps(reply["error"]))
            if "return" in reply:
                return reply["return"]


def guest_exec(agent: Agent, path: str, args: list[str], limit: float = 60) -> int:
    """Run PATH ARGS in the guest, copy its output to ours, return its exit code."""
    started = agent.call("guest-exec", {"path": path, "arg": args, "capture-output": True})
    pid = started["pid"]
    deadline = time.monotonic() + limit
    while True:
        st = agent.call("guest-exec-status", {"pid": pid})
        if st.get("exited"):
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not exit in {limit:.0f} s")
        time.sleep(0.5)
    for key, stream in (("out-data", sys.stdout), ("err-data", sys.stderr)):
        if key in st:
            stream.write(base64.b64decode(st[key]).decode(errors="replace"))
    return int(st.get("exitcode", 0))


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, mode, rest = argv[1], argv[2], argv[3:]
    timeout = float(os.environ.get("QGA_TIMEOUT", "5"))
    try:
        agent = Agent(path, timeout)
    except OSError as e:
        print(f"qga: cannot connect to {path}: {e}", file=sys.stderr)
        return 3
    try:
        agent.sync()
        if mode == "ping":
            agent.call("guest-ping")
            return 0
        if mode == "cmd":
            msg = json.loads(rest[0])
            print(json.dumps(agent.call(msg["execute"], msg.get("arguments")), indent=2))
            return 0
        if mode == "exec":
            return guest_exec(agent, rest[0], rest[1:])
        print(f"qga: unknown mode {mode!r}", file=sys.stderr)
        return 2
    except (OSError, TimeoutError, AgentError) as e:
        print(f"qga: {e}", file=sys.stderr)
        return 1
    finally:
        agent.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
