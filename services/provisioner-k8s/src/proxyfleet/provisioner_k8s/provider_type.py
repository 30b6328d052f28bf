"""The provider type `kubernetes`, registered by this package's entry point
(proxyfleet.providers): what the API and every service need to parse and check a
kubernetes entry. Its proxies take no placement. Imports no Kubernetes client."""

from __future__ import annotations

from proxyfleet.common.providers import ProviderType
from proxyfleet.provisioner_k8s.pure.config import K8sProviderConfig, check_kubernetes_provider

PROVIDER_TYPE = ProviderType(
    name="kubernetes", config=K8sProviderConfig, check=check_kubernetes_provider
)
