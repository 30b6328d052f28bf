"""A safety net for messages about a proxy line an admin sent: the provider type's parser
promises never to name the password, and this makes sure no answer does if it slips.
Pure."""

from __future__ import annotations

import re
from urllib.parse import unquote

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")

GENERIC = "not a proxy line this provider takes (its message was withheld: it held a credential)"


def line_passwords(line: str) -> set[str]:
    """The password each reading of `line` would give: `[scheme://]user:pass@host:port`
    (up to the last `@`) or `host:port:user:pass`; raw and percent-decoded."""
    text = _SCHEME.sub("", line.strip(), count=1)
    found: set[str] = set()
    if "@" in text:
        _, sep, password = text[: text.rfind("@")].partition(":")
        if sep:
            found.add(password)
    fields = text.split(":")
    if len(fields) >= 4:
        found.add(":".join(fields[3:]))
    return {form for p in found for form in (p, unquote(p)) if form}


def safe_message(message: str, line: str) -> str:
    """`message`, unless it holds the line's password: then a generic one, since no
    substitution inside it can be trusted to leave nothing out."""
    if any(p in message for p in line_passwords(line)):
        return GENERIC
    return message
