"""proxyfleet-provisioner-k8s: proxies as Kubernetes pods (see docs/kubernetes-provider.md)."""
