"""What a pod (as the watch delivers it, a JSON dict) says about its proxy: its address,
whether it is ready, and the reason it failed for good. Pure: no I/O.

Failing for good: the image cannot be pulled (ImagePullBackOff, ErrImagePull,
InvalidImageName), Squid keeps exiting (CrashLoopBackOff), the container was OOM-killed,
or the pod was evicted or otherwise ended (phase Failed, a DisruptionTarget condition).
The kubelet would keep retrying most of them; a proxy would only stay unusable meanwhile.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from proxyfleet.provisioner_k8s.pure import names

WAITING_FAILURES = frozenset(
    {"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CrashLoopBackOff",
     "CreateContainerConfigError", "CreateContainerError"}
)  # fmt: skip
OOM = "OOMKilled"


@dataclass(frozen=True, slots=True)
class PodState:
    name: str
    uid: str
    proxy_id: str
    installation_id: str
    phase: str
    pod_ip: str
    host_ip: str
    ready: bool
    failure: str
    """Why the proxy failed for good ("" while it has not)."""
    deleting: bool
    """The pod has a deletionTimestamp (it is going away)."""
    resource_version: str
    labels: dict[str, str]
    annotations: dict[str, str]
    created_at: float
    """Our created-at annotation, else the API server's creationTimestamp (0: neither)."""


def pod_state(pod: Mapping[str, Any]) -> PodState:
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    labels = dict(meta.get("labels") or {})
    annotations = dict(meta.get("annotations") or {})
    conditions = status.get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return PodState(
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        proxy_id=labels.get(names.LABEL_PROXY, ""),
        installation_id=labels.get(names.LABEL_INSTALLATION, ""),
        phase=str(status.get("phase", "")),
        pod_ip=str(status.get("podIP") or ""),
        host_ip=str(status.get("hostIP") or ""),
        ready=ready,
        # A pod being deleted has its containers killed: that is not a failure of its own.
        failure="" if meta.get("deletionTimestamp") else failure_reason(status),
        deleting=bool(meta.get("deletionTimestamp")),
        resource_version=str(meta.get("resourceVersion", "")),
        labels=labels,
        annotations=annotations,
        created_at=created_at(meta),
    )


def sticky(previous: PodState | None, state: PodState) -> PodState:
    """`state`, except that a pod that failed for good keeps its first reason (an OOM kill
    stays the reason when the restarted container then crash-loops)."""
    kept = previous is not None and previous.uid == state.uid and previous.failure
    if previous is not None and kept and state.failure != previous.failure:
        return dataclasses.replace(state, failure=previous.failure)
    return state


def failure_reason(status: Mapping[str, Any]) -> str:
    """ "Reason: message" of a pod that failed for good, "" otherwise."""
    if status.get("phase") == "Failed":
        reason = str(status.get("reason") or "Failed")
        return _text(reason, status.get("message"))
    for c in status.get("conditions") or []:
        if c.get("type") == "DisruptionTarget" and c.get("status") == "True":
            return _text(f"Evicted ({c.get('reason') or 'disruption'})", c.get("message"))
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        last = (cs.get("lastState") or {}).get("terminated") or {}
        terminated = state.get("terminated") or {}
        waiting = state.get("waiting") or {}
        if terminated.get("reason") == OOM or last.get("reason") == OOM:
            return _text(OOM, f"container {cs.get('name', '')} exceeded its memory limit")
        if waiting.get("reason") in WAITING_FAILURES:
            return _text(str(waiting["reason"]), waiting.get("message"))
    return ""


def created_at(meta: Mapping[str, Any]) -> float:
    ours = (meta.get("annotations") or {}).get(names.ANNOTATION_CREATED)
    try:
        if ours:
            return float(ours)
    except ValueError:
        pass
    return parse_timestamp(str(meta.get("creationTimestamp") or ""))


def parse_timestamp(text: str) -> float:
    """An RFC 3339 timestamp (2026-01-02T03:04:05Z) as Unix seconds; 0 when unreadable."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else 0.0
    except ValueError:
        return 0.0


def _text(reason: str, message: object) -> str:
    return f"{reason}: {message}" if message else reason
