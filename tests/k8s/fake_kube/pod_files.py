"""What a pod's Squid container needs on this machine: its volumes as files, its mounts as
folders, its command with the config path moved. Pure: no I/O."""

from __future__ import annotations

import base64
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field

from .objects import Json

Lookup = Callable[[str, str], Json | None]
"""(resource, name) → the object in the pod's namespace, or None."""


class MissingVolume(Exception):
    """A configMap or secret a volume names does not exist (yet): the kubelet waits."""


@dataclass(frozen=True)
class VolumeFile:
    path: str
    """Relative to the volume's folder."""
    content: bytes
    mode: int


@dataclass
class PodFiles:
    volumes: dict[str, list[VolumeFile]] = field(default_factory=dict)
    """Volume name → its files (an emptyDir has none)."""


def squid_container(pod: Json) -> tuple[int, Json, str] | None:
    """(index, container, config path in the container) of the first container whose
    command runs `squid ... -f PATH`; None when no container does."""
    for i, c in enumerate(pod["spec"].get("containers") or []):
        argv = [str(a) for a in (c.get("command") or []) + (c.get("args") or [])]
        if not argv or posixpath.basename(argv[0]) != "squid":
            continue
        for j, word in enumerate(argv[:-1]):
            if word == "-f":
                return i, c, argv[j + 1]
    return None


def squid_argv(container: Json, squid: str, conf: str, service: str) -> list[str]:
    """The container's Squid command run here: this machine's binary, the rewritten
    config, in the foreground (-N), with a service name of its own (-n)."""
    argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    out = [squid]
    skip = False
    for word in argv[1:]:
        if skip:
            skip = False
            continue
        if word in ("-f", "-n"):
            skip = True
            continue
        if word != "-N":
            out.append(word)
    return [*out, "-N", "-f", conf, "-n", service]


def volume_files(pod: Json, lookup: Lookup) -> PodFiles:
    """Every configMap, secret and emptyDir volume's files; MissingVolume names the first
    object that is not there (optional ones are skipped, as a kubelet does)."""
    files = PodFiles()
    for volume in pod["spec"].get("volumes") or []:
        name = str(volume.get("name"))
        if (source := volume.get("configMap")) is not None:
            files.volumes[name] = _from_object(source, "configmaps", lookup, decode=False)
        elif (source := volume.get("secret")) is not None:
            source = {**source, "name": source.get("secretName")}
            files.volumes[name] = _from_object(source, "secrets", lookup, decode=True)
        else:
            files.volumes[name] = []  # emptyDir and anything else: an empty folder
    return files


def _from_object(source: Json, resource: str, lookup: Lookup, *, decode: bool) -> list[VolumeFile]:
    obj = lookup(resource, str(source.get("name")))
    mode = int(source.get("defaultMode", 0o644))
    if obj is None:
        if source.get("optional"):
            return []
        kind = "configmap" if resource == "configmaps" else "secret"
        raise MissingVolume(f'{kind} "{source.get("name")}" not found')
    data: dict[str, bytes] = {}
    for key, value in (obj.get("data") or {}).items():
        data[key] = base64.b64decode(value) if decode else str(value).encode()
    for key, value in (obj.get("binaryData") or {}).items():
        data[key] = base64.b64decode(value)
    items = source.get("items")
    if not items:
        return [VolumeFile(k, v, mode) for k, v in sorted(data.items())]
    out = []
    for item in items:
        key = str(item.get("key"))
        if key not in data:
            raise MissingVolume(f"key {key!r} not in {resource} {source.get('name')}")
        out.append(VolumeFile(str(item.get("path", key)), data[key], int(item.get("mode", mode))))
    return out


def mounts(container: Json, volume_dirs: dict[str, str]) -> dict[str, str]:
    """Mount path in the container → folder here (with subPath followed)."""
    out: dict[str, str] = {}
    for m in container.get("volumeMounts") or []:
        folder = volume_dirs.get(str(m.get("name")))
        if folder is None:
            continue
        if sub := m.get("subPath"):
            folder = posixpath.join(folder, str(sub))
        out[str(m.get("mountPath")).rstrip("/") or "/"] = folder
    return out


def local_path(path: str, mounted: dict[str, str]) -> str | None:
    """Where `path` (in the container) is here; None when no mount holds it."""
    for mount in sorted(mounted, key=len, reverse=True):
        if path == mount or path.startswith(mount + "/"):
            return mounted[mount] + path[len(mount) :]
    return None


def probe_port(container: Json, default: int) -> int:
    """The TCP readiness probe's port (a number or a named container port)."""
    probe = (container.get("readinessProbe") or {}).get("tcpSocket") or {}
    port = probe.get("port")
    if isinstance(port, int):
        return port
    if isinstance(port, str):
        if port.isdigit():
            return int(port)
        for p in container.get("ports") or []:
            if p.get("name") == port:
                return int(p["containerPort"])
    return default
