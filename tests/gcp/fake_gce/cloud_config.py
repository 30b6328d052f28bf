"""What booting an instance means to the fake: the `#cloud-config` user-data's write_files,
and the Squid config among them rewritten to run on this machine. Pure: no I/O.

A real VM runs Squid as written, on every interface at the config's `http_port`. Here each
instance gets a loopback address of its own, so every instance keeps its port; the paths the
config names (pid file, logs, the htpasswd file it got from the same user-data) move into
the instance's folder. The "deny the proxy's own host" rule goes by default: on a VM it
guards the VM, here the whole test machine (and its loopback test target) would be denied.
"""

from __future__ import annotations

import base64
import binascii
import gzip
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import yaml

SQUID_CONF_NAME = "squid.conf"


class CloudConfigError(ValueError):
    """The user-data cannot be booted (reported as the instance's boot error)."""


@dataclass(frozen=True)
class WriteFile:
    path: str
    content: str
    permissions: int


@dataclass(frozen=True)
class BootPlan:
    files: dict[str, WriteFile]
    """By local file name (in the instance folder)."""
    squid_conf: str
    port: int


def parse_write_files(user_data: str) -> list[WriteFile]:
    if not user_data.startswith("#cloud-config"):
        raise CloudConfigError("user-data: expected a '#cloud-config' document")
    try:
        doc: Any = yaml.safe_load(user_data)
    except yaml.YAMLError as exc:
        raise CloudConfigError(f"user-data: not YAML ({exc.__class__.__name__})") from exc
    if not isinstance(doc, dict):
        raise CloudConfigError("user-data: expected a mapping")
    files = []
    for entry in doc.get("write_files") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise CloudConfigError("write_files: expected entries with a path")
        files.append(
            WriteFile(
                path=entry["path"],
                content=_decode(entry.get("content", ""), str(entry.get("encoding", ""))),
                permissions=int(str(entry.get("permissions", "0644")), 8),
            )
        )
    return files


def plan_boot(
    user_data: str, directory: str, bind: str, *, allow_local_destinations: bool = True
) -> BootPlan:
    """The files to write into `directory` and the Squid config to run there on `bind`."""
    written = parse_write_files(user_data)
    confs = [f for f in written if PurePosixPath(f.path).name == SQUID_CONF_NAME]
    if not confs:
        raise CloudConfigError("user-data: writes no squid.conf")
    files: dict[str, WriteFile] = {}
    moved: dict[str, str] = {}
    for f in written:
        local = _local_name(f.path, files)
        files[local] = f
        moved[f.path] = f"{directory}/{local}"
    conf_local = next(k for k, v in files.items() if v is confs[-1])
    text, port = _rewrite(confs[-1].content, moved, directory, bind, allow_local_destinations)
    del files[conf_local]
    return BootPlan(files=files, squid_conf=text, port=port)


def _rewrite(
    conf: str, moved: dict[str, str], directory: str, bind: str, allow_local: bool
) -> tuple[str, int]:
    out: list[str] = []
    port: int | None = None
    for line in conf.splitlines():
        words = line.split()
        key = words[0] if words else ""
        if key == "http_port" and len(words) > 1:
            if port is not None:
                continue  # one listener per instance is all the fake maps
            port = int(words[1].rsplit(":", 1)[-1])
            out.append(" ".join(["http_port", f"{bind}:{port}", *words[2:]]))
        elif allow_local and words == ["http_access", "deny", "local_destinations"]:
            continue
        else:
            out.append(_rewrite_line(line, key, words, moved, directory))
    if port is None:
        raise CloudConfigError("squid.conf: no http_port")
    out.append(f"coredump_dir {directory}")
    return "\n".join(out) + "\n", port


def _rewrite_line(
    line: str, key: str, words: list[str], moved: dict[str, str], directory: str
) -> str:
    if key == "pid_filename":
        return f"pid_filename {directory}/squid.pid"
    if key == "cache_log":
        return f"cache_log {directory}/cache.log"
    if key == "access_log" and words[1:2] != ["none"]:
        return f"access_log stdio:{directory}/access.log"
    if key == "coredump_dir":
        return ""
    for old, new in moved.items():
        line = line.replace(old, new)
    return line


def _local_name(path: str, taken: dict[str, WriteFile]) -> str:
    name = PurePosixPath(path).name or "file"
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{n}-{name}"
    return candidate


def _decode(content: object, encoding: str) -> str:
    if not isinstance(content, str):
        raise CloudConfigError("write_files: content must be a string")
    try:
        if encoding in ("b64", "base64"):
            return base64.b64decode(content).decode()
        if encoding in ("gz+b64", "gzip+base64", "gz+base64", "gzip+b64"):
            return gzip.decompress(base64.b64decode(content)).decode()
    except (binascii.Error, OSError, UnicodeDecodeError) as exc:
        raise CloudConfigError(f"write_files: cannot decode {encoding} content") from exc
    return content
