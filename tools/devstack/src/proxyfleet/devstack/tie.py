"""Children that end with their launcher: `proxyfleet-dev run` starts every server and
service in a session of its own (a terminal's Ctrl-C reaches only the launcher, which
stops them in order), so a launcher that is SIGKILLed would leave them all running, ports
taken. util-linux's `setpriv --pdeathsig` asks the kernel to SIGTERM the child when the
thread that started it ends, then execs the command (the same process): no `preexec_fn`,
which is unsafe beside the launcher's log threads."""

from __future__ import annotations

import shutil


def tied(argv: list[str]) -> list[str]:
    """`argv` run so that it gets SIGTERM when the calling thread ends (call it on the
    thread that lives as long as the launcher, its main one); `argv` itself where there is
    no setpriv (not Linux, or no util-linux). A launcher killed in the instant between
    setpriv's start and its request leaves that child untied."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *argv] if setpriv else argv
