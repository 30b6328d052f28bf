"""How the operator reaches the API server: the in-cluster service account, or a kubeconfig
file and context, loaded by the `kubernetes` client into a Configuration of its own (never
the client's global default) and handed to kopf as its credentials; the namespace it
serves by default; and whether the ProxyPool CRD is served yet."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import kopf
import urllib3
from kubernetes import client, config

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.pool_operator import crd
from proxyfleet.pool_operator.settings import PoolOperatorSettings

USER_AGENT = "proxyfleet-pool-operator"
"""The User-Agent of its own calls (kopf's say kopf/<version>)."""
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


@dataclass(frozen=True, slots=True)
class Access:
    configuration: client.Configuration
    namespace: str
    """The service account's namespace, or the kubeconfig context's ("default")."""

    def connection(self) -> kopf.ConnectionInfo:
        """The credentials as kopf takes them (as its own login_via_client reads them)."""
        cfg = self.configuration
        header = cfg.get_api_key_with_prefix("BearerToken") or cfg.get_api_key_with_prefix(
            "authorization"
        )
        parts = header.split(" ", 1) if header else []
        scheme, token = (parts[0], parts[1]) if len(parts) == 2 else (None, header or None)
        return kopf.ConnectionInfo(
            server=cfg.host,
            ca_path=cfg.ssl_ca_cert,
            insecure=not cfg.verify_ssl,
            username=cfg.username or None,
            password=cfg.password or None,
            scheme=scheme,
            token=token,
            certificate_path=cfg.cert_file,
            private_key_path=cfg.key_file,
            default_namespace=self.namespace,
        )


def load_access(s: PoolOperatorSettings) -> Access:
    """Read the credentials now (a rotated service-account token is read again at each
    login); ConfigError when they cannot be."""
    cfg = client.Configuration()
    try:
        if s.kubeconfig:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=s.kubeconfig,
                context=s.context or None,
                client_configuration=cfg,
                persist_config=False,
            )
            contexts, active = config.list_kube_config_contexts(s.kubeconfig)  # type: ignore[no-untyped-call]
            chosen = next((c for c in contexts if c["name"] == s.context), active)
            namespace = str((chosen.get("context") or {}).get("namespace") or "default")
        else:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
            namespace = SERVICE_ACCOUNT_NAMESPACE.read_text().strip()
    except (config.ConfigException, OSError, ValueError, KeyError, TypeError) as exc:
        where = f"kubeconfig {s.kubeconfig}" if s.kubeconfig else "in-cluster config"
        raise ConfigError(f"cannot load the {where}: {exc}") from None
    return Access(cfg, namespace)


def namespaces(s: PoolOperatorSettings, access: Access) -> list[str]:
    """The namespaces served: --watch-namespaces, or the operator's own."""
    return list(s.watch_namespaces) or [access.namespace]


async def crd_missing(access: Access, namespace: str) -> str:
    """Why ProxyPools cannot be served yet ("" once they can): a list of one of them in
    `namespace` (a call the operator's Role grants) answers 404 until the CRD is in."""

    def look() -> str:
        with client.ApiClient(access.configuration) as api:
            api.user_agent = USER_AGENT
            try:
                client.CustomObjectsApi(api).list_namespaced_custom_object(
                    crd.GROUP, crd.VERSION, namespace, crd.PLURAL, limit=1, _request_timeout=10
                )
            except client.ApiException as exc:
                if exc.status == 404:
                    return f"the {crd.NAME} CRD is not installed (kubectl apply -f {crd.DOCUMENT})"
                return f"listing {crd.PLURAL} in {namespace}: {exc.status} {exc.reason}"
            except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
                return f"the API server is out of reach: {exc}"
        return ""

    return await asyncio.to_thread(look)
