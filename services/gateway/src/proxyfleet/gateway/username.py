"""The proxy username grammar: `NAME(-key-value)*`. Pure: no I/O.

The convention commercial proxy networks share: the name first, then parameters, each a
key and a value separated by `-`:

- `session-<id>`: a sticky session (1-64 letters and digits); without one, every
  connection gets a proxy of its own.
- `sesstime-<minutes>`: how long the session lives (1-1440; needs `session`).
- `zone-<zone>`, `provider-<name>`, `pool-<name>`: the selector, as in the lease API.
- `label-<key>=<value>`: the proxy carries this label (repeatable, one per key).

Zones, providers, pools and labels may contain `-` themselves (`zone-us-east1-b`), so their value
runs up to the next `-` followed by a parameter name: a value with a segment that *is* a
parameter name (a zone called `eu-zone-1`) cannot be selected here. The name is the first
segment (no `-`); anything after it must be a parameter, so a typo (`-sesion-x`) is an
error, never a silent rotation. Errors name the parameter (the gateway answers 400).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_USERNAME = 512
MAX_SESSTIME_MINUTES = 1440
MAX_LABELS = 32

NAME = re.compile(r"[A-Za-z0-9_.]{1,64}")
SESSION = re.compile(r"[A-Za-z0-9]{1,64}")
SESSTIME = re.compile(r"[0-9]{1,5}")
# The lease API's own patterns (services/api fields.py), so a selector means the same.
PROVIDER = re.compile(r"[a-z][a-z0-9-]{0,30}")
ZONE = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
POOL = re.compile(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?")
LABEL_KEY = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._/-]{0,61}[A-Za-z0-9])?")
LABEL_VALUE = re.compile(r"[A-Za-z0-9._-]{0,63}")

SINGLE = frozenset({"session", "sesstime"})
"""Parameters whose value is one segment."""
SPANNING = frozenset({"zone", "provider", "pool", "label"})
"""Parameters whose value may contain `-` (it runs to the next parameter name)."""
KEYS = SINGLE | SPANNING


class UsernameError(ValueError):
    """A username the grammar refuses; `param` is the parameter at fault."""

    def __init__(self, param: str, reason: str) -> None:
        super().__init__(f"{param}: {reason}")
        self.param = param
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Selector:
    """What a username asks for."""

    name: str
    session: str = ""
    sesstime: int = 0
    """Minutes the session lives; 0: the gateway's default (only with a session)."""
    zone: str = ""
    provider: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    pool: str = ""

    def format(self) -> str:
        """The username that parses back to this selector."""
        parts = [self.name]
        if self.session:
            parts += ["session", self.session]
        if self.sesstime:
            parts += ["sesstime", str(self.sesstime)]
        if self.zone:
            parts += ["zone", self.zone]
        if self.provider:
            parts += ["provider", self.provider]
        if self.pool:
            parts += ["pool", self.pool]
        for key, value in self.labels.items():
            parts += ["label", f"{key}={value}"]
        return "-".join(parts)


def parse_username(username: str) -> Selector:
    """The selector a username spells; UsernameError naming the bad parameter."""
    if len(username) > MAX_USERNAME:
        raise UsernameError("username", f"longer than {MAX_USERNAME} characters")
    segments = username.split("-")
    name = segments[0]
    if not NAME.fullmatch(name):
        raise UsernameError(
            "name", "expected 1-64 letters, digits, '_' or '.' before the first '-'"
        )
    values: dict[str, str] = {}
    labels: dict[str, str] = {}
    i = 1
    while i < len(segments):
        key = segments[i]
        if key not in KEYS:
            raise UsernameError(
                _shown(key), f"unknown parameter (expected one of {', '.join(sorted(KEYS))})"
            )
        end = i + 2 if key in SINGLE else _span_end(segments, i + 1)
        if end > len(segments) or end == i + 1:
            raise UsernameError(key, "a value is missing")
        value = "-".join(segments[i + 1 : end])
        if key == "label":
            _add_label(labels, value)
        elif key in values:
            raise UsernameError(key, "given twice")
        else:
            values[key] = value
        i = end
    return _checked(name, values, labels)


def _span_end(segments: list[str], start: int) -> int:
    """Index past a spanning value starting at `start`: up to the next parameter name."""
    end = start
    while end < len(segments) and segments[end] not in KEYS:
        end += 1
    return end


def _shown(text: str) -> str:
    """A client-supplied name safe to echo in an error (bounded, printable)."""
    cleaned = "".join(c if c.isprintable() else "?" for c in text[:32])
    return cleaned or "(empty)"


def _add_label(labels: dict[str, str], value: str) -> None:
    key, sep, val = value.partition("=")
    if not sep:
        raise UsernameError("label", "expected label-<key>=<value>")
    if not LABEL_KEY.fullmatch(key):
        raise UsernameError("label", "a key is 1-63 letters, digits, '.', '_', '/' or '-'")
    if not LABEL_VALUE.fullmatch(val):
        raise UsernameError(f"label {key}", "a value is 0-63 letters, digits, '.', '_' or '-'")
    if key in labels:
        raise UsernameError(f"label {key}", "given twice")
    if len(labels) >= MAX_LABELS:
        raise UsernameError("label", f"more than {MAX_LABELS} labels")
    labels[key] = val


def _checked(name: str, values: dict[str, str], labels: dict[str, str]) -> Selector:
    session = values.get("session", "")
    if "session" in values and not SESSION.fullmatch(session):
        raise UsernameError("session", "expected 1-64 letters and digits")
    sesstime = 0
    if "sesstime" in values:
        raw = values["sesstime"]
        if not SESSTIME.fullmatch(raw) or not 1 <= int(raw) <= MAX_SESSTIME_MINUTES:
            raise UsernameError("sesstime", f"expected minutes, 1-{MAX_SESSTIME_MINUTES}")
        if not session:
            raise UsernameError("sesstime", "needs a session")
        sesstime = int(raw)
    zone = values.get("zone", "")
    if "zone" in values and not ZONE.fullmatch(zone):
        raise UsernameError("zone", "expected lower-case letters, digits and '-' (1-63)")
    provider = values.get("provider", "")
    if "provider" in values and not PROVIDER.fullmatch(provider):
        raise UsernameError("provider", "expected a provider name (lower-case, 1-31)")
    pool = values.get("pool", "")
    if "pool" in values and not POOL.fullmatch(pool):
        raise UsernameError(
            "pool", "expected a pool name (lower-case letters, digits and '-', 1-63)"
        )
    return Selector(name, session, sesstime, zone, provider, labels, pool)
