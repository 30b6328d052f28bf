"""The Proxyfleet REST API: proxies, leases, providers, health and metrics (Litestar)."""
