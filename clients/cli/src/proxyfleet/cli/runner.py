"""`proxyfleet lease -- CMD`: grant (waiting with a progress line), run CMD with the proxy
in its environment, renew meanwhile, pass signals on, report `failed` when CMD fails,
release, and give back CMD's exit code.

Signals: the ones passed on (and SIGCHLD) are blocked in every thread of ours and taken
with sigtimedwait, which says who sent each one (see childenv.should_forward); CMD starts
with the mask we had. The renewer thread is started after the block, so inherits it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from proxyfleet.cli import exitcodes
from proxyfleet.cli.childenv import FORWARDED, child_env, should_forward
from proxyfleet.cli.exitcodes import message
from proxyfleet.client import ApiError, Client, HeldLease, Lease, ProxyfleetError
from proxyfleet.client.calls import wait_before_retry

WAITED = {*FORWARDED, signal.SIGCHLD}
POLL = 0.5
"""Seconds between two looks at CMD and the renewer when no signal comes."""


class Interrupted(Exception):
    """A passed-on signal arrived before CMD ran: nothing to pass it to."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Progress:
    """Lines for the person on stderr; on a terminal, each waiting line replaces the last."""

    def __init__(self) -> None:
        self._tty = sys.stderr.isatty()
        self._open = False

    def waiting(self, text: str) -> None:
        if self._tty:
            sys.stderr.write("\r\033[K" + text)
            self._open = True
            sys.stderr.flush()
        else:
            self.say(text)

    def say(self, text: str) -> None:
        self.end()
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def end(self) -> None:
        """Close a waiting line (before CMD writes to the terminal)."""
        if self._open:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._open = False


@dataclass
class LeaseRun:
    """What `proxyfleet lease` was asked."""

    command: Sequence[str]
    request: dict[str, Any]
    """grant_lease's selector and options: ttl, target, holder, zone, provider, labels..."""
    wait: float
    """Seconds to wait for a proxy (503, or a busy named proxy) before giving up."""
    report_failures: bool = True
    keep_no_proxy: bool = False
    """Leave NO_PROXY / no_proxy in CMD's environment."""
    quiet: bool = False
    """No `leased` / `released` lines on stderr (waiting and errors still show)."""
    progress: Progress = field(default_factory=Progress)


def run(client: Client, job: LeaseRun) -> int:
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, WAITED)
    try:
        try:
            lease = _grant(client, job)
        except Interrupted as e:
            return exitcodes.for_signal(e.signum)
        if not job.quiet:
            job.progress.say(
                f"proxyfleet: leased {lease.proxy.id} (lease {lease.lease_id}, epoch "
                f"{lease.epoch}, {lease.ttl:g}s, renewed while CMD runs)"
            )
        code: int | None = None
        try:
            with client.hold(lease, ttl=job.request.get("ttl")) as held:
                code = _run_command(held, lease, job, old_mask)
        except ProxyfleetError as e:
            if code is None:
                raise
            # CMD's code is what the caller needs; the lease expires at its TTL anyway.
            job.progress.say(f"proxyfleet: could not release {lease.lease_id}: {message(e)}")
            return code
        if not job.quiet:
            job.progress.say(f"proxyfleet: released {lease.lease_id}")
        return code
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


def _grant(client: Client, job: LeaseRun) -> Lease:
    """The grant, retried as Retry-After says within job.wait (one Idempotency-Key for
    all tries), a progress line per wait; a passed-on signal while waiting stops it."""
    key = str(uuid.uuid4())
    started = time.monotonic()
    while True:
        try:
            lease = client.grant_lease(max_wait=0, idempotency_key=key, **job.request)
        except ApiError as e:
            waited = time.monotonic() - started
            delay = wait_before_retry(e, waited, job.wait)
            if delay is None:
                job.progress.end()
                raise
            job.progress.waiting(
                f"proxyfleet: waiting for a proxy ({e.message}); "
                f"{waited:.0f}s of {job.wait:g}s, next try in {delay:.1f}s"
            )
            info = signal.sigtimedwait(FORWARDED, delay)
            if info is not None:
                raise Interrupted(info.si_signo) from None
            continue
        job.progress.end()
        if lease.ttl_capped:
            job.progress.say(f"proxyfleet: the API capped the lease's TTL to {lease.ttl:g}s")
        return lease


def _run_command(
    held: HeldLease, lease: Lease, job: LeaseRun, mask: set[int | signal.Signals]
) -> int:
    pending = signal.sigpending() & set(FORWARDED)
    if pending:  # a signal came during the grant: honour it before CMD starts
        signum = min(pending)
        signal.sigtimedwait({signum}, 0)
        return exitcodes.for_signal(signum)
    try:
        pid = os.posix_spawnp(
            job.command[0],
            list(job.command),
            child_env(os.environ, lease, keep_no_proxy=job.keep_no_proxy),
            setsigmask=mask,
        )
    except FileNotFoundError:
        job.progress.say(f"proxyfleet: {job.command[0]}: command not found")
        return exitcodes.COMMAND_NOT_FOUND
    except PermissionError:
        job.progress.say(f"proxyfleet: {job.command[0]}: permission denied")
        return exitcodes.CANNOT_EXECUTE
    status, interrupted = _wait(pid, held, job)
    code = exitcodes.of_wait_status(status)
    if code != 0 and job.report_failures and not interrupted:
        try:
            held.report("failed")
        except ProxyfleetError as e:
            job.progress.say(f"proxyfleet: could not report the failure: {message(e)}")
    return code


def _wait(pid: int, held: HeldLease, job: LeaseRun) -> tuple[int, bool]:
    """CMD's wait status, and whether a passed-on signal came meanwhile."""
    interrupted = False
    warned = False
    while True:
        info = signal.sigtimedwait(WAITED, POLL)
        if info is not None and info.si_signo != signal.SIGCHLD:
            interrupted = True
            if should_forward(info.si_code):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, info.si_signo)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return status, interrupted
        if held.renew_error is not None and not warned:
            warned = True
            job.progress.say(f"proxyfleet: the lease ended: {message(held.renew_error)}")
