"""Label and field selectors as the API server parses them. Pure: no I/O.

Label selectors: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a` (exists), `!a`
(does not exist), joined by commas (all must hold). Field selectors: `f=v`, `f==v`, `f!=v`
on dotted paths such as metadata.name, metadata.namespace, status.phase, spec.nodeName.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import KubeError, bad_request

_TOKEN = re.compile(
    r"\s*(?:(?P<open>\()|(?P<close>\))|(?P<comma>,)|(?P<op>==|!=|=|!)|(?P<word>[^\s=!(),]+))"
)


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str
    """"=", "!=", "in", "notin", "exists", "!"."""
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        # != and notin also hold where the label is missing, as in the API server.
        return not present or value not in self.values


LabelSelector = list[Requirement]


def parse_label_selector(text: str) -> LabelSelector:
    """The requirements of `text`; KubeError 400 (as the API server answers) if malformed."""
    tokens = _tokens(text)
    out: list[Requirement] = []
    i = 0

    def fail(why: str) -> KubeError:
        return bad_request(f'unable to parse requirement: {why} in selector "{text}"')

    while i < len(tokens):
        kind, value = tokens[i]
        if kind == "op" and value == "!":
            if i + 1 >= len(tokens) or tokens[i + 1][0] != "word":
                raise fail("expected a key after '!'")
            out.append(Requirement(_key(tokens[i + 1][1], text), "!"))
            i += 2
        elif kind == "word":
            key = _key(value, text)
            nxt = tokens[i + 1] if i + 1 < len(tokens) else ("comma", ",")
            if nxt[0] == "comma":
                out.append(Requirement(key, "exists"))
                i += 1
            elif nxt[0] == "op" and nxt[1] in ("=", "==", "!="):
                if i + 2 < len(tokens) and tokens[i + 2][0] == "word":
                    val, i = tokens[i + 2][1], i + 3
                else:
                    val, i = "", i + 2
                out.append(Requirement(key, "!=" if nxt[1] == "!=" else "=", (_value(val, text),)))
            elif nxt[0] == "word" and nxt[1] in ("in", "notin"):
                values, i = _set(tokens, i + 2, fail)
                out.append(Requirement(key, nxt[1], values))
            else:
                raise fail(f"unexpected {nxt[1]!r} after key {key!r}")
        else:
            raise fail(f"unexpected {value!r}")
        if i < len(tokens):
            if tokens[i][0] != "comma":
                raise fail(f"expected ',' but found {tokens[i][1]!r}")
            i += 1
            if i == len(tokens):
                raise fail("trailing ','")
    return out


def label_matches(selector: LabelSelector, labels: Mapping[str, str] | None) -> bool:
    have = labels or {}
    return all(r.matches(have) for r in selector)


def selector_from_map(labels: Mapping[str, str]) -> LabelSelector:
    """A Service's `spec.selector` (every pair must match)."""
    return [Requirement(k, "=", (v,)) for k, v in labels.items()]


FieldSelector = list[tuple[str, bool, str]]
"""(dotted path, equal?, value)."""

FIELDS = {"metadata.name", "metadata.namespace", "status.phase", "spec.nodeName", "type"}
"""The fields this fake filters on (real servers allow a few per resource)."""


def parse_field_selector(text: str) -> FieldSelector:
    out: FieldSelector = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = re.fullmatch(r"([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*)", part)
        if m is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        path, op, value = m.groups()
        if path not in FIELDS:
            raise bad_request(f"field label not supported: {path}")
        out.append((path, op != "!=", value))
    return out


def field_matches(selector: FieldSelector, obj: Mapping[str, Any]) -> bool:
    for path, equal, value in selector:
        have = _dig(obj, path)
        if ((str(have) if have is not None else "") == value) != equal:
            return False
    return True


def object_filter(
    label_selector: str | None, field_selector: str | None
) -> Callable[[Mapping[str, Any]], bool]:
    """One predicate from a request's labelSelector and fieldSelector (either may be empty)."""
    labels = parse_label_selector(label_selector) if label_selector else []
    fields = parse_field_selector(field_selector) if field_selector else []

    def keep(obj: Mapping[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        return label_matches(labels, meta.get("labels")) and field_matches(fields, obj)

    return keep


def _dig(obj: Mapping[str, Any], path: str) -> Any:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise bad_request(f'unable to parse requirement: bad character in "{text}"')
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _set(
    tokens: list[tuple[str, str]], i: int, fail: Callable[[str], KubeError]
) -> tuple[tuple[str, ...], int]:
    if i >= len(tokens) or tokens[i][0] != "open":
        raise fail("expected '(' after in/notin")
    values: list[str] = []
    i += 1
    while i < len(tokens) and tokens[i][0] != "close":
        if tokens[i][0] == "word":
            values.append(tokens[i][1])
        elif tokens[i][0] != "comma":
            raise fail(f"unexpected {tokens[i][1]!r} in a set")
        i += 1
    if i >= len(tokens):
        raise fail("expected ')'")
    if not values:
        raise fail("for 'in', 'notin' operators, values set can't be empty")
    return tuple(values), i + 1


_KEY = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
)
_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def _key(key: str, text: str) -> str:
    if not _KEY.fullmatch(key):
        raise bad_request(f'unable to parse requirement: invalid label key "{key}" in "{text}"')
    return key


def _value(value: str, text: str) -> str:
    if not _VALUE.fullmatch(value) or len(value) > 63:
        raise bad_request(f'unable to parse requirement: invalid label value "{value}" in "{text}"')
    return value
