"""A vendor's rotating gateway as sticky proxies: one endpoint, a username template with a
session slot (`customer-{user}-session-{session}`, Bright Data's, Oxylabs' and Decodo's
grammar), one session id per proxy. Pure: no I/O."""

from __future__ import annotations

import hashlib
import string
from collections.abc import Mapping

SESSION = "session"
"""The slot every template must have: each proxy keeps one vendor session (one exit IP)."""


def template_keys(template: str) -> list[str]:
    """The `{key}` slots of a template, in order; ValueError for a malformed one (a lone
    brace, a positional `{}`, a format spec or an attribute)."""
    keys = []
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:  # a lone brace
        raise ValueError(f"malformed template: {exc}") from None
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise ValueError(f"slot {{{name}}}: expected {{name}} with a plain name")
        keys.append(name)
    return keys


def check_template(template: str, params: Mapping[str, str]) -> None:
    """ValueError unless the template has `{session}` and every other slot is in params."""
    keys = template_keys(template)
    if SESSION not in keys:
        raise ValueError("expected a {session} slot (each proxy keeps its own session)")
    if missing := sorted(set(keys) - {SESSION} - set(params)):
        raise ValueError(f"slot {{{missing[0]}}} is not in params: expected it there")


def expand(template: str, session: str, params: Mapping[str, str]) -> str:
    """The username of one session."""
    return template.format_map({**params, SESSION: session})


def session_id(provider: str, seed: str, length: int) -> str:
    """A session id of `length` hex digits for `seed` (a slot of the vendor list, or the id
    of a proxy a pool created): the same seed gives the same session, so a redelivered
    create or a restarted provisioner keeps it, and a new proxy gets a new one."""
    digest = hashlib.sha256(f"{provider}\n{seed}".encode()).hexdigest()
    return digest[:length]


def slot_seed(slot: int) -> str:
    """The seed of the vendor list's `slot`th session (0-based)."""
    return f"slot-{slot}"
