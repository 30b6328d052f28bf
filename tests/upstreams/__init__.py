"""Real upstream proxies on loopback for the tests of issue 23 (proxies brought by their
owners: lists, vendors, SOCKS5 and TLS upstreams), registered for every test under tests/
by `pytest_plugins` in tests/conftest.py:

- `socks5_upstream` (session): Debian's microsocks with username/password auth, a
  `Socks5Upstream` (`url("socks5")`, `url("socks5h")`).
- `tls_upstream` (session): Squid's `https_port` (CONNECT inside TLS to the proxy) with
  basic auth and a per-session CA, a `TlsUpstream` (`url()`, `ca_file`).
- `vendor_gateway` (per test): a residential vendor's rotating gateway stand-in, a
  `VendorGateway` (one exit address per session id, `sessions()` for assertions).

Each leaves for loopback destinations only from an exit address of its own (127.0.0.5,
127.0.0.6, 127.0.0.10 and up), so the `target` echo tells which one a tunnel went through.
Each is also a context manager of its own (`running_socks5`, `running_tls_upstream`,
`running_vendor_gateway`) for a test that needs a private one (to kill it, say).
"""
