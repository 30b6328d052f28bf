"""A child started through `tied` ends when its launcher is SIGKILLed; one
started without it lives on (what `proxyfleet-dev run` left behind before)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.devstack.procs import alive, command_name

LAUNCHER = """
import os, signal, subprocess, sys
from proxyfleet.devstack.tie import tied
argv = ["sleep", "30"]
child = subprocess.Popen(tied(argv) if sys.argv[1] == "tied" else argv, start_new_session=True)
print(child.pid, flush=True)
sys.stdin.readline()
os.kill(os.getpid(), signal.SIGKILL)
"""


def _orphan(mode: str) -> int:
    """Start a launcher that starts `sleep`, SIGKILL the launcher; the sleep's pid."""
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert launcher.stdout is not None
    assert launcher.stdin is not None
    pid = int(launcher.stdout.readline())
    # setpriv asks for the signal, then execs the command: once the child is `sleep`,
    # the request is made (a launcher killed before it would leave the child untied).
    deadline = time.monotonic() + 10
    while command_name(pid) != "sleep":
        assert time.monotonic() < deadline, f"{pid} is {command_name(pid)!r}"
        time.sleep(0.01)
    launcher.stdin.write("\n")
    launcher.stdin.flush()
    assert launcher.wait(10) == -signal.SIGKILL
    return pid


def _ends_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_tied_child_ends_with_its_sigkilled_launcher() -> None:
    assert _ends_within(_orphan("tied"), 5.0)


def test_an_untied_child_outlives_it() -> None:
    pid = _orphan("untied")
    try:
        assert not _ends_within(pid, 0.5)
    finally:
        os.kill(pid, signal.SIGKILL)
