"""What booting an instance means to the fake: the `#cloud-config` user-data's write_files,
and the Squid config among them rewritten to run on this machine (tests/loopback_squid/conf.py
says how: the files the user-data writes move into the instance's folder). Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import gzip
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import yaml
from tests.loopback_squid.conf import SquidConfError, rewrite_squid_conf

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
    user_data: str,
    directory: str,
    bind: str,
    *,
    allow_local_destinations: bool = True,
    egress: str = "",
) -> BootPlan:
    """The files to write into `directory` and the Squid config to run there on `bind`,
    leaving from `egress` for loopback destinations ("" the kernel's choice)."""
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
    try:
        text, port = rewrite_squid_conf(
            confs[-1].content,
            moved,
            directory,
            bind,
            allow_local_destinations=allow_local_destinations,
            egress=egress,
        )
    except SquidConfError as exc:
        raise CloudConfigError(str(exc)) from exc
    del files[conf_local]
    return BootPlan(files=files, squid_conf=text, port=port)


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
