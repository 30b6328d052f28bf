"""What the API server refuses with 422 Invalid, worded as it words it. Pure: no I/O.

Checked: object names (DNS-1123 subdomain; DNS-1035 label for Services), label keys and
values, a pod's containers (at least one, each with a DNS-1123 label name and an image),
volume names, a Service's ports, ConfigMap and Secret keys.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import Cause, KubeError, bad_request, conflict, invalid

SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
LABEL_1123 = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
LABEL_1035 = r"[a-z]([-a-z0-9]*[a-z0-9])?"
LABEL_VALUE = r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
QUALIFIED = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
CONFIG_KEY = r"[-._a-zA-Z0-9]+"

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    f"used for validation is '{SUBDOMAIN}')"
)
LABEL_1123_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    f"regex used for validation is '{LABEL_1123}')"
)
LABEL_1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    f"'abc-123', regex used for validation is '{LABEL_1035}')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '{LABEL_VALUE}')"
)


def validate(kind: str, obj: dict[str, Any]) -> None:
    """Raise 422 with every cause found (the API server lists them all)."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or meta.get("generateName") or "")
    causes = _name_causes(kind, str(meta.get("name") or ""))
    causes += _label_causes(meta.get("labels") or {})
    if kind == "Pod":
        causes += _pod_causes(obj.get("spec") or {})
    elif kind == "Service":
        causes += _service_causes(obj.get("spec") or {})
    elif kind in ("ConfigMap", "Secret"):
        for field in ("data", "binaryData", "stringData"):
            for key in obj.get(field) or {}:
                if not re.fullmatch(CONFIG_KEY, key) or len(key) > 253:
                    causes.append(
                        _bad(
                            f"{field}[{key}]",
                            key,
                            "a valid config key must consist of alphanumeric characters, "
                            f"'-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or "
                            f"'key-name', regex used for validation is '{CONFIG_KEY}')",
                        )
                    )
    if causes:
        raise invalid(kind, name, causes)


def check_put(resource: str, name: str, current: dict[str, Any], body: dict[str, Any]) -> None:
    """A PUT names the object of its URL, at its current resourceVersion when it names one."""
    meta = body.get("metadata") or {}
    if meta.get("name") not in (None, "", name):
        raise bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on "
            f"the URL ({name})"
        )
    wanted = meta.get("resourceVersion")
    if wanted not in (None, "") and str(wanted) != current["metadata"]["resourceVersion"]:
        raise conflict(resource, name)


def require_name(kind: str, obj: dict[str, Any]) -> KubeError | None:
    meta = obj.get("metadata") or {}
    if meta.get("name") or meta.get("generateName"):
        return None
    return invalid(
        kind,
        "",
        [
            Cause(
                "metadata.name",
                "FieldValueRequired",
                "Required value: name or generateName is required",
            )
        ],
    )


def _name_causes(kind: str, name: str) -> list[Cause]:
    if not name:
        return []
    if kind == "Service":
        if len(name) > 63:
            return [_bad("metadata.name", name, "must be no more than 63 characters")]
        if not re.fullmatch(LABEL_1035, name):
            return [_bad("metadata.name", name, LABEL_1035_MSG)]
        return []
    if len(name) > 253:
        return [_bad("metadata.name", name, "must be no more than 253 characters")]
    if not re.fullmatch(SUBDOMAIN, name):
        return [_bad("metadata.name", name, SUBDOMAIN_MSG)]
    return []


def _label_causes(labels: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for key, value in labels.items():
        prefix, _, base = key.rpartition("/")
        if (
            not re.fullmatch(QUALIFIED, base)
            or len(base) > 63
            or (prefix and (not re.fullmatch(SUBDOMAIN, prefix) or len(prefix) > 253))
        ):
            causes.append(
                _bad(
                    "metadata.labels",
                    key,
                    "name part must consist of alphanumeric characters, '-', '_' or '.', and "
                    "must start and end with an alphanumeric character",
                )
            )
        if not isinstance(value, str) or not re.fullmatch(LABEL_VALUE, value) or len(value) > 63:
            causes.append(_bad("metadata.labels", str(value), LABEL_VALUE_MSG))
    return causes


def _pod_causes(spec: dict[str, Any]) -> list[Cause]:
    containers = spec.get("containers") or []
    if not containers:
        return [Cause("spec.containers", "FieldValueRequired", "Required value")]
    causes: list[Cause] = []
    for i, c in enumerate(containers):
        cname = str(c.get("name") or "")
        if not cname:
            causes.append(
                Cause(f"spec.containers[{i}].name", "FieldValueRequired", "Required value")
            )
        elif not re.fullmatch(LABEL_1123, cname) or len(cname) > 63:
            causes.append(_bad(f"spec.containers[{i}].name", cname, LABEL_1123_MSG))
        if not c.get("image"):
            causes.append(
                Cause(f"spec.containers[{i}].image", "FieldValueRequired", "Required value")
            )
    volumes = {str(v.get("name")) for v in spec.get("volumes") or []}
    for i, c in enumerate(containers):
        for j, mount in enumerate(c.get("volumeMounts") or []):
            if mount.get("name") not in volumes:
                causes.append(
                    Cause(
                        f"spec.containers[{i}].volumeMounts[{j}].name",
                        "FieldValueNotFound",
                        f'Not found: "{mount.get("name")}"',
                    )
                )
    policy = spec.get("restartPolicy")
    if policy is not None and policy not in ("Always", "OnFailure", "Never"):
        causes.append(
            Cause(
                "spec.restartPolicy",
                "FieldValueNotSupported",
                f'Unsupported value: "{policy}": supported values: "Always", "OnFailure", "Never"',
            )
        )
    return causes


def _service_causes(spec: dict[str, Any]) -> list[Cause]:
    kind = spec.get("type", "ClusterIP")
    if kind not in ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"):
        return [
            Cause(
                "spec.type",
                "FieldValueNotSupported",
                f'Unsupported value: "{kind}": supported values: "ClusterIP", '
                '"ExternalName", "LoadBalancer", "NodePort"',
            )
        ]
    ports = spec.get("ports") or []
    if not ports and kind != "ExternalName":
        return [Cause("spec.ports", "FieldValueRequired", "Required value")]
    causes: list[Cause] = []
    for i, p in enumerate(ports):
        port = p.get("port")
        if not isinstance(port, int) or not 1 <= port <= 65535:
            causes.append(
                _bad(f"spec.ports[{i}].port", str(port), "must be between 1 and 65535, inclusive")
            )
    return causes


def _bad(field: str, value: str, why: str) -> Cause:
    return Cause(field, "FieldValueInvalid", f'Invalid value: "{value}": {why}')


POD_UPDATE_MSG = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)


def validate_pod_update(name: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    """A pod's spec is immutable but for images, the deadline and added tolerations."""
    before, after = dict(old.get("spec") or {}), dict(new.get("spec") or {})
    for spec in (before, after):
        for field in ("activeDeadlineSeconds", "terminationGracePeriodSeconds"):
            spec.pop(field, None)
        for key in ("containers", "initContainers"):
            spec[key] = [{**c, "image": None} for c in spec.get(key) or []]
    old_tolerations = before.pop("tolerations", None) or []
    new_tolerations = after.pop("tolerations", None) or []
    added_only = new_tolerations[: len(old_tolerations)] == old_tolerations
    if before != after or not added_only:
        raise invalid("Pod", name, [Cause("spec", "FieldValueForbidden", POD_UPDATE_MSG)])
