"""A pod's status as a kubelet reports it, from what the fake kubelet knows. Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .objects import Json, rfc3339


@dataclass
class PodView:
    """What the kubelet knows about one pod; `render` turns it into `status`."""

    phase: str = "Pending"
    pod_ip: str = ""
    ready: bool = False
    started: bool = False
    state: Json = field(default_factory=lambda: waiting("ContainerCreating"))
    last_state: Json = field(default_factory=dict)
    restarts: int = 0
    reason: str = ""
    message: str = ""
    initialized: bool = False
    disruption: str = ""
    """Reason of a DisruptionTarget condition (an eviction), "" for none."""


def waiting(reason: str, message: str = "") -> Json:
    body: Json = {"reason": reason}
    if message:
        body["message"] = message
    return {"waiting": body}


def running(started_at: float) -> Json:
    return {"running": {"startedAt": rfc3339(started_at)}}


def terminated(
    reason: str, exit_code: int, started_at: float, finished_at: float, message: str = ""
) -> Json:
    body: Json = {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": rfc3339(started_at),
        "finishedAt": rfc3339(finished_at),
    }
    if message:
        body["message"] = message
    return {"terminated": body}


def crash_loop_backoff(delay: float, pod: Json) -> Json:
    meta = pod["metadata"]
    container = pod["spec"]["containers"][0].get("name", "")
    return waiting(
        "CrashLoopBackOff",
        f"back-off {delay:g}s restarting failed container={container} "
        f"pod={meta['name']}_{meta['namespace']}({meta['uid']})",
    )


def evicted_message(pod: Json) -> str:
    container = pod["spec"]["containers"][0].get("name", "")
    return (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 42Mi. "
        f"Container {container} was using 120Mi, request is 64Mi, has larger consumption of "
        "memory."
    )


def render(pod: Json, view: PodView, now: float) -> Json:
    """The new `status` of `pod` (conditions keep their transition times while unchanged)."""
    old: Json = pod.get("status") or {}
    previous = {c.get("type"): c for c in old.get("conditions") or []}
    wanted = {
        "PodReadyToStartContainers": bool(view.pod_ip),
        "Initialized": view.initialized or bool(view.pod_ip),
        "Ready": view.ready,
        "ContainersReady": view.ready,
        "PodScheduled": True,
    }
    conditions: list[Json] = []
    for kind, ok in wanted.items():
        flag = "True" if ok else "False"
        before = previous.get(kind)
        cond: Json = {"type": kind, "status": flag, "lastProbeTime": None}
        if before is not None and before.get("status") == flag:
            cond["lastTransitionTime"] = before.get("lastTransitionTime") or rfc3339(now)
        else:
            cond["lastTransitionTime"] = rfc3339(now)
        if kind in ("Ready", "ContainersReady") and not ok and view.pod_ip:
            cond["reason"] = "ContainersNotReady"
            cond["message"] = "containers with unready status: [" + " ".join(_names(pod)) + "]"
        conditions.append(cond)
    if view.disruption:
        conditions.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": rfc3339(now),
                "reason": view.disruption,
                "message": "Pod was terminated in response to imminent node shutdown."
                if view.disruption != "TerminationByKubelet"
                else view.message,
            }
        )
    status: Json = {
        "phase": view.phase,
        "conditions": conditions,
        "hostIP": "127.0.0.1",
        "hostIPs": [{"ip": "127.0.0.1"}],
        "qosClass": old.get("qosClass", "BestEffort"),
        "startTime": old.get("startTime") or rfc3339(now),
        "containerStatuses": [
            _container(pod, c, view) for c in pod["spec"].get("containers") or []
        ],
    }
    if view.pod_ip:
        status["podIP"] = view.pod_ip
        status["podIPs"] = [{"ip": view.pod_ip}]
    if view.reason:
        status["reason"] = view.reason
    if view.message:
        status["message"] = view.message
    return status


def _container(pod: Json, container: Json, view: PodView) -> Json:
    out: dict[str, Any] = {
        "name": container.get("name", ""),
        "image": container.get("image", ""),
        "imageID": "",
        "ready": view.ready,
        "started": view.started,
        "restartCount": view.restarts,
        "state": view.state,
        "lastState": view.last_state,
    }
    if view.started or view.restarts or "terminated" in view.state:
        out["containerID"] = "containerd://" + pod["metadata"]["uid"].replace("-", "")
    return out


def _names(pod: Json) -> list[str]:
    return [str(c.get("name", "")) for c in pod["spec"].get("containers") or []]
