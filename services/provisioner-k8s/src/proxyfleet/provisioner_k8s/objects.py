"""Create-or-adopt, read, list and delete of the four kinds of object a proxy has.

A create that meets AlreadyExists (409) reads the object back and adopts it when its
labels say this installation and this proxy; an object of that name that is not ours is
a permanent error (never adopted, never deleted). A dependent (Secret, ConfigMap,
Service) adopted with an owner reference to another pod (an earlier pod of the same
name) or other credentials is replaced: kept, the cluster would delete it with its old
owner, or Squid would check other credentials.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from proxyfleet.common.core.errors import PermanentProviderError, TemporaryProviderError
from proxyfleet.common.observability.logging import get_logger
from proxyfleet.common.runner.failures import (
    ClassifiedPermanentError,
    Kind,
    ResourceMissing,
    failure_kind,
)
from proxyfleet.provisioner_k8s.calls import Json, Kube
from proxyfleet.provisioner_k8s.metrics import ADOPTED_OBJECTS
from proxyfleet.provisioner_k8s.pure import names

log = get_logger("proxyfleet.k8s")
LIST_PAGE = 500
DELETE_GRACE_SECONDS = 5
"""A proxy pod's grace period at delete (Squid's shutdown_lifetime is 1 s)."""


@dataclass(frozen=True, slots=True)
class Api:
    """The client calls of one resource."""

    create: Callable[..., Any]
    read: Callable[..., Any]
    list: Callable[..., Any]
    delete: Callable[..., Any]
    model: Any


def _apis(core: client.CoreV1Api) -> dict[str, Api]:
    return {
        "pods": Api(core.create_namespaced_pod, core.read_namespaced_pod,
                    core.list_namespaced_pod, core.delete_namespaced_pod, client.V1Pod),
        "secrets": Api(core.create_namespaced_secret, core.read_namespaced_secret,
                       core.list_namespaced_secret, core.delete_namespaced_secret,
                       client.V1Secret),
        "configmaps": Api(core.create_namespaced_config_map, core.read_namespaced_config_map,
                          core.list_namespaced_config_map, core.delete_namespaced_config_map,
                          client.V1ConfigMap),
        "services": Api(core.create_namespaced_service, core.read_namespaced_service,
                        core.list_namespaced_service, core.delete_namespaced_service,
                        client.V1Service),
    }  # fmt: skip


class Objects:
    def __init__(self, kube: Kube, namespace: str, installation_id: str) -> None:
        self._kube = kube
        self._ns = namespace
        self._installation = installation_id
        self._apis = _apis(kube.core)

    async def create_or_adopt(
        self,
        resource: str,
        manifest: Json,
        proxy_id: str,
        keep: Callable[[Json], bool] = lambda _: True,
    ) -> Json:
        """The object as created, or the existing one of ours; an existing one that
        `keep` refuses is deleted and made again (once)."""
        name = manifest["metadata"]["name"]
        for attempt in (1, 2):
            try:
                return await self._create(resource, manifest)
            except ClassifiedPermanentError as exc:
                if failure_kind(exc) is not Kind.EXISTS:
                    raise
            found = await self.get(resource, name)
            if found is None:
                continue  # deleted between the two calls: create again
            labels = (found.get("metadata") or {}).get("labels")
            if not names.is_ours(labels, self._installation, proxy_id):
                raise PermanentProviderError(
                    f"{resource} {self._ns}/{name} exists and is not this installation's"
                    f" (proxy {proxy_id}): not adopted"
                )
            if keep(found):
                ADOPTED_OBJECTS.labels(resource).inc()
                log.info("k8s.object_adopted", resource=resource, name=name)
                return found
            if attempt == 2:
                break
            log.info("k8s.object_replaced", resource=resource, name=name)
            await self.delete(resource, name)
        raise TemporaryProviderError(f"{resource} {self._ns}/{name}: could not be made or adopted")

    async def _create(self, resource: str, manifest: Json) -> Json:
        api = self._apis[resource]
        name = manifest["metadata"]["name"]
        return await self._kube.call(
            "create", resource, api.create, self._ns, api.model.from_dict(manifest),
            what=f"create {resource} {self._ns}/{name}",
        )  # fmt: skip

    async def get(self, resource: str, name: str) -> Json | None:
        api = self._apis[resource]
        try:
            return await self._kube.call(
                "get", resource, api.read, name, self._ns, what=f"get {resource} {self._ns}/{name}"
            )
        except ResourceMissing:
            return None

    async def list(self, resource: str, selector: str) -> list[Json]:
        api = self._apis[resource]
        items: list[Json] = []
        token = ""
        while True:
            kw: dict[str, Any] = {"label_selector": selector, "limit": LIST_PAGE}
            if token:
                kw["_continue"] = token
            doc = await self._kube.call("list", resource, api.list, self._ns, **kw)
            items += doc.get("items") or []
            token = str((doc.get("metadata") or {}).get("continue") or "")
            if not token:
                return items

    async def delete(self, resource: str, name: str) -> bool:
        """Delete one object (its dependents in the background); False when it was not there."""
        api = self._apis[resource]
        options = client.V1DeleteOptions(
            propagation_policy="Background",
            grace_period_seconds=DELETE_GRACE_SECONDS if resource == "pods" else None,
        )
        try:
            await self._kube.call(
                "delete", resource, api.delete, name, self._ns, body=options,
                what=f"delete {resource} {self._ns}/{name}",
            )  # fmt: skip
        except ResourceMissing:
            return False
        return True


def owned_by(obj: Json, pod_uid: str) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(r.get("uid") == pod_uid and r.get("kind") == "Pod" for r in refs)
