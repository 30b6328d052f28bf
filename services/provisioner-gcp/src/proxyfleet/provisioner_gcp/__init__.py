"""proxyfleet-provisioner-gcp: proxies as GCE VMs (see docs/gcp-provider.md)."""
