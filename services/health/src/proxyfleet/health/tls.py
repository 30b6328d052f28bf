"""The probes' TLS client: a verifying context, and TLS session resumption across probes.

A full handshake (certificate chain parsed and verified, two ECDSA or RSA operations) is
most of a probe's CPU here. Resuming a session still makes a real handshake on every new
connection through every proxy, authenticated by a secret only the target and this
process share (a proxy that intercepts TLS cannot complete it, so it still fails the
probe), but skips the certificate work. The session comes from a full handshake and is
used for at most `resume_for` seconds; then the next probe does a full handshake again,
so a target certificate problem shows within that time.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable

from proxyfleet.common.core.errors import ConfigError


class ProbeTlsContext(ssl.SSLContext):
    """A verifying client context whose connections offer the remembered session.

    asyncio and uvloop both create each connection's TLS object through `wrap_bio`, which
    is where the session is handed over; `remember` is given the TLS object of every
    finished probe.
    """

    resume_for: float
    _session: ssl.SSLSession | None
    _since: float
    _now: Callable[[], float]

    def configure(self, resume_for: float, now: Callable[[], float] = time.monotonic) -> None:
        self.resume_for = resume_for
        self._session = None
        self._since = 0.0
        self._now = now

    @property
    def session(self) -> ssl.SSLSession | None:
        """The session new connections offer (None: they make a full handshake)."""
        if self._session is not None and self._now() - self._since >= self.resume_for:
            self._session = None
        return self._session

    def remember(self, tls: ssl.SSLObject) -> None:
        """Keep the session of a full handshake that ended well (a resumed one keeps the
        age of the full handshake it came from)."""
        if self.resume_for <= 0 or tls.session_reused:
            return
        session = tls.session
        if session is not None and session.has_ticket:
            self._session = session
            self._since = self._now()

    def forget(self) -> None:
        self._session = None

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        if session is None and not server_side:
            session = self.session
        return super().wrap_bio(incoming, outgoing, server_side, server_hostname, session)


def make_ssl_context(
    ca_file: str = "", resume_for: float = 0.0, flag: str = "--ca-file"
) -> ProbeTlsContext:
    """Verifying client context, built once per process (CA file: the target's, or the
    https proxies', private CA; none: the system's). `resume_for` > 0 turns session
    resumption on. `flag`: the setting that named the file, for the error."""
    ctx = ProbeTlsContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the chain and the host name
    try:
        if ca_file:
            ctx.load_verify_locations(cafile=ca_file)
        else:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"{flag} {ca_file}: cannot load CA certificates: {exc}") from None
    ctx.configure(resume_for)
    return ctx
