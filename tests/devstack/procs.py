"""Processes as /proc shows them (Linux), for tests of what outlives a launcher."""

from __future__ import annotations

from pathlib import Path


def _stat(pid: int | str) -> list[str] | None:
    """The fields after the command name: state, ppid, ..."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def alive(pid: int) -> bool:
    """Running and not a zombie (init may be slow to reap an orphan)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def children(pid: int) -> list[int]:
    """Live processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        fields = _stat(entry.name) if entry.name.isdigit() else None
        if fields and fields[0] != "Z" and int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def command_name(pid: int) -> str:
    """The process's command name ("" once it is gone)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""
