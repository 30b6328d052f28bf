"""ProxyPool custom resources as Proxyfleet pools: a kopf operator (issue 20)."""
