"""The API server's deletion rules, as pure functions: preconditions, propagation policy
and its finalizers, grace periods, what a DELETE answers. Pure: no I/O."""

from __future__ import annotations

from . import errors
from .errors import Cause, KubeError
from .objects import Json

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"


def check_preconditions(resource: str, current: Json, options: Json) -> None:
    pre = options.get("preconditions") or {}
    meta = current["metadata"]
    if pre.get("uid") not in (None, meta["uid"]):
        raise KubeError(
            409,
            "Conflict",
            f"Precondition failed: UID in precondition: {pre['uid']}, UID in object "
            f"meta: {meta['uid']}",
            {"name": meta["name"], "kind": resource},
        )
    if pre.get("resourceVersion") not in (None, meta["resourceVersion"]):
        raise errors.conflict(resource, meta["name"])


def policy(options: Json) -> str:
    """Background (the default for core/v1), Foreground or Orphan."""
    chosen = options.get("propagationPolicy")
    if chosen is None and options.get("orphanDependents") is not None:
        chosen = "Orphan" if options["orphanDependents"] else "Background"
    if chosen not in (None, "Background", "Foreground", "Orphan"):
        raise errors.bad_request(f'unsupported propagationPolicy "{chosen}"')
    return str(chosen or "Background")


def finalizers_for(existing: list[str], chosen: str) -> list[str]:
    """The object's finalizers once deleted with policy `chosen` (the garbage collector's
    own finalizers say how its dependents go)."""
    out = [f for f in existing if f not in (ORPHAN, FOREGROUND)]
    if chosen == "Orphan":
        out.append(ORPHAN)
    elif chosen == "Foreground":
        out.append(FOREGROUND)
    return out


def grace_seconds(options: Json, pod: Json) -> int:
    """A pod's grace period: the request's, else its spec's; 0 for a finished pod."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    value = options.get("gracePeriodSeconds")
    if value is None:
        value = pod["spec"].get("terminationGracePeriodSeconds", 30)
    return max(0, int(value))


def success(resource: str, meta: Json) -> Json:
    """What deleting a secret or configmap answers (pods and services answer the object)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": meta["name"], "kind": resource, "uid": meta["uid"]},
    }


def check_no_new_finalizers(kind: str, current: Json, new: Json) -> None:
    """An object being deleted may lose finalizers, never gain one."""
    if "deletionTimestamp" not in current["metadata"]:
        return
    before = set(current["metadata"].get("finalizers") or [])
    added = set(new["metadata"].get("finalizers") or []) - before
    if added:
        raise errors.invalid(
            kind,
            current["metadata"]["name"],
            [
                Cause(
                    "metadata.finalizers",
                    "FieldValueForbidden",
                    "Forbidden: no new finalizers can be added if the object is being "
                    f"deleted, found new finalizers {sorted(added)}",
                )
            ],
        )
